//! How the shell reads its commands: a script (`-e` or a file) runs every
//! statement in order, printing `ERROR: ...` for each that fails and going
//! on; the interactive shell reads lines with editing and a history kept
//! in `~/.accordion_shell_history` (rustyline; without a terminal it reads
//! plain lines from standard input, with no prompt) and tab completion of
//! command and table names (`completion.rs`). `exit` or `quit` ends
//! either.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, anyhow};
use rustyline::Editor;
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;

use super::Shell;
use super::completion::ShellCompleter;
use super::parse::{is_incomplete, split_statements};

const PROMPT: &str = "accordion> ";
/// The prompt of a statement's next line (after a trailing comma or an
/// open bracket), as HBase's shell shows IRB's.
const CONTINUATION_PROMPT: &str = "accordion* ";

/// The history file's name, in the home directory.
const HISTORY_FILE: &str = ".accordion_shell_history";

/// What to do after a statement.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Exit,
}

/// Runs `text`'s statements; true if none failed.
pub fn run_script<W: Write>(shell: &mut Shell<W>, text: &str) -> anyhow::Result<bool> {
    let (succeeded, _) = run_statements(shell, text)?;
    Ok(succeeded)
}

/// Runs `text`'s statements, reporting each failure; whether all succeeded,
/// and whether one asked to exit (the rest are not run then).
fn run_statements<W: Write>(shell: &mut Shell<W>, text: &str) -> anyhow::Result<(bool, Flow)> {
    let mut succeeded = true;
    for stmt in split_statements(text) {
        match shell.run_line(&stmt) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Exit) => return Ok((succeeded, Flow::Exit)),
            Err(e) => {
                shell.report(&e)?;
                succeeded = false;
            }
        }
    }
    Ok((succeeded, Flow::Continue))
}

fn history_path() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(HISTORY_FILE))
}

/// The interactive shell, until `exit`, `quit` or end of input. A failed
/// command does not end it.
pub fn interactive<W: Write>(shell: &mut Shell<W>) -> anyhow::Result<()> {
    let mut editor: Editor<ShellCompleter, DefaultHistory> = Editor::new().context("cannot start the line editor")?;
    editor.set_helper(Some(ShellCompleter::default()));
    let history = history_path();
    if let Some(path) = &history
        && path.exists()
    {
        // An unreadable history is no reason not to start; say so once.
        if let Err(e) = editor.load_history(path) {
            eprintln!("WARNING: cannot read the history file {}: {e}", path.display());
        }
    }
    let mut history_failed = false;
    loop {
        // The tables to complete, as the server lists them now (the last
        // list if it cannot be asked).
        if let (Some(helper), Ok(tables)) = (editor.helper_mut(), shell.table_names()) {
            helper.tables = tables;
        }
        let mut line = String::new();
        loop {
            let prompt = if line.is_empty() { PROMPT } else { CONTINUATION_PROMPT };
            match editor.readline(prompt) {
                Ok(more) => {
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    line.push_str(&more);
                }
                // Ctrl-C drops the statement being typed, as in HBase's shell.
                Err(ReadlineError::Interrupted) => line.clear(),
                // End of input ends an unfinished statement too.
                Err(ReadlineError::Eof) => return Ok(()),
                Err(e) => return Err(anyhow!("cannot read a line: {e}")),
            }
            if !is_incomplete(&line) {
                break;
            }
        }
        if !line.trim().is_empty() {
            let _ = editor.add_history_entry(line.as_str());
            // Appended after every line, so that a killed shell keeps it.
            if let Some(path) = &history
                && let Err(e) = editor.append_history(path)
                && !history_failed
            {
                history_failed = true;
                eprintln!("WARNING: cannot write the history file {}: {e}", path.display());
            }
        }
        if run_statements(shell, &line)?.1 == Flow::Exit {
            return Ok(());
        }
    }
}
