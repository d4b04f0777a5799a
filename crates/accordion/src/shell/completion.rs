//! Tab completion for the interactive shell: the command names (from the
//! help catalog, which is the list of commands) where a statement starts,
//! and the server's table names inside a command's first quoted argument
//! (`scan 'us<TAB>`), as HBase's IRB shell completes what it can.
//!
//! The table names are a snapshot the session takes before each prompt
//! (one `getTableNames` call): the completer runs inside the line editor,
//! which owns it, and cannot use the shell's Thrift connection then.
//!
//! Thread safety: owned by the line editor, on the shell's one thread.

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

/// Commands whose first argument is not a table: no table names offered.
const NOT_TABLE_FIRST: &[&str] = &[
    "help",
    "status",
    "version",
    "whoami",
    "list",
    "exit",
    "quit",
    "assign",
    "unassign",
    "close_region",
    "move",
    "merge_region",
    "create_namespace",
    "drop_namespace",
    "describe_namespace",
    "list_namespace",
    "list_namespace_tables",
];

/// The line editor's helper: completion only (no hints, colours or
/// validation).
#[derive(Debug, Default)]
pub struct ShellCompleter {
    /// The server's tables as the last snapshot listed them.
    pub tables: Vec<String>,
}

impl Completer for ShellCompleter {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, words) = candidates(&line[..pos], &self.tables);
        Ok((start, words.into_iter().map(|w| Pair { display: w.clone(), replacement: w }).collect()))
    }
}

impl Hinter for ShellCompleter {
    type Hint = String;
}

impl Highlighter for ShellCompleter {}

impl Validator for ShellCompleter {}

impl Helper for ShellCompleter {}

/// Where the word being completed starts in `before` (the line up to the
/// cursor), and what may replace it: command names at a statement's start,
/// table names in a command's first quoted argument, nothing elsewhere.
pub fn candidates(before: &str, tables: &[String]) -> (usize, Vec<String>) {
    // The statement the cursor is in begins after the last `;`.
    let stmt_start = before.rfind(';').map_or(0, |i| i + 1);
    let stmt = &before[stmt_start..];
    let lead = stmt.len() - stmt.trim_start().len();
    let body = &stmt[lead..];
    let word_start = stmt_start + lead;
    if !body.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
        let names = super::help::COMMANDS.iter().map(|c| c.name).filter(|n| n.starts_with(body));
        return (word_start, names.map(str::to_string).collect());
    }
    // `cmd 'partial` (or with a double quote), no comma yet.
    let command = body.split(|c: char| c.is_whitespace() || c == '\'' || c == '"').next().unwrap_or_default();
    let rest = body[command.len()..].trim_start();
    let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
        return (before.len(), Vec::new());
    };
    let partial = &rest[1..];
    if NOT_TABLE_FIRST.contains(&command) || partial.contains(quote) || partial.contains(',') {
        return (before.len(), Vec::new());
    }
    let start = before.len() - partial.len();
    (start, tables.iter().filter(|t| t.starts_with(partial)).cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::candidates;

    fn tables() -> Vec<String> {
        ["users", "usage", "t"].map(str::to_string).to_vec()
    }

    #[test]
    fn a_statement_start_completes_command_names() {
        let (start, words) = candidates("sc", &tables());
        assert_eq!((start, words), (0, vec!["scan".to_string()]));
        let (start, words) = candidates("put 't', 'r', 'f:q', 'v'; des", &tables());
        assert_eq!(start, 26);
        assert!(words.contains(&"describe".to_string()), "{words:?}");
        assert!(candidates("", &tables()).1.len() > 20, "every command at an empty prompt");
        assert!(candidates("zzz", &tables()).1.is_empty());
    }

    #[test]
    fn a_first_quoted_argument_completes_table_names() {
        assert_eq!(candidates("scan 'us", &tables()), (6, vec!["users".to_string(), "usage".to_string()]));
        assert_eq!(candidates("get \"u", &tables()).1, ["users", "usage"]);
        assert_eq!(candidates("  count 't", &tables()), (9, vec!["t".to_string()]));
        // Past the first argument, in a region command, or after a closed
        // quote: nothing.
        assert!(candidates("get 't', 'u", &tables()).1.is_empty());
        assert!(candidates("unassign 'u", &tables()).1.is_empty());
        assert!(candidates("scan 'users' ", &tables()).1.is_empty());
        assert!(candidates("scan ", &tables()).1.is_empty());
    }
}
