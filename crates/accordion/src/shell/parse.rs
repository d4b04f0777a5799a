//! The HBase shell's argument syntax (a slice of Ruby): `create 't1', 'f1',
//! {NAME => 'f2', VERSIONS => 3}`, `scan 't', {STARTROW => 'a', LIMIT => 5,
//! COLUMNS => ['f:q']}`. Strings in single or double quotes (with `\xNN`
//! escapes in double quotes, as HBase's shell prints binary keys), numbers,
//! true/false, bare constants, lists and `=>` dictionaries.
//!
//! As in Ruby, `KEY => value` pairs after the positional arguments need no
//! braces: `scan 't', LIMIT => 5, COLUMNS => ['f']` is `scan 't', {LIMIT =>
//! 5, COLUMNS => ['f']}` — the trailing pairs form one dictionary, the last
//! argument. Once a pair has started it, every further argument must be a
//! pair too (Ruby refuses a positional argument after it). Dictionary keys
//! are upper-cased: HBase's keys are constants (`NAME`, `VERSIONS`) and
//! `'delete' => 'f'` reads as `DELETE => 'f'`.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Vec<u8>),
    Int(i64),
    Bool(bool),
    Word(String),
    List(Vec<Value>),
    Dict(BTreeMap<String, Value>),
}

impl Value {
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Value::Str(s) => Some(s.clone()),
            Value::Word(w) => Some(w.clone().into_bytes()),
            Value::Int(i) => Some(i.to_string().into_bytes()),
            _ => None,
        }
    }
}

/// A value as it would be typed (for error messages): `'text'`, or
/// `"\x00a"` for bytes that need escapes, `3`, `true`, `[...]`, `{K => v}`.
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Str(s) if s.iter().all(|&c| (0x20..0x7f).contains(&c) && c != b'\'' && c != b'\\') => {
                write!(f, "'{}'", String::from_utf8_lossy(s))
            }
            Value::Str(s) => {
                f.write_str("\"")?;
                for &c in s {
                    match c {
                        b'"' | b'\\' => write!(f, "\\{}", c as char)?,
                        0x20..0x7f => write!(f, "{}", c as char)?,
                        _ => write!(f, "\\x{c:02X}")?,
                    }
                }
                f.write_str("\"")
            }
            Value::Int(i) => write!(f, "{i}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Word(w) => f.write_str(w),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    write!(f, "{}{v}", if i > 0 { ", " } else { "" })?;
                }
                f.write_str("]")
            }
            Value::Dict(map) => {
                f.write_str("{")?;
                for (i, (k, v)) in map.iter().enumerate() {
                    write!(f, "{}{k} => {v}", if i > 0 { ", " } else { "" })?;
                }
                f.write_str("}")
            }
        }
    }
}

/// One shell command: its name and arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub name: String,
    pub args: Vec<Value>,
}

/// Parses one line; `Ok(None)` for a blank line or a comment.
pub fn parse_line(line: &str) -> Result<Option<Command>, String> {
    let mut p = Parser { s: line.as_bytes(), pos: 0 };
    p.ws();
    if p.pos == p.s.len() || p.s[p.pos] == b'#' {
        return Ok(None);
    }
    let name = p.word().ok_or_else(|| "expected a command name".to_string())?;
    let mut args = Vec::new();
    // The brace-less `KEY => value` pairs at the end, once one has started.
    let mut trailing: Option<BTreeMap<String, Value>> = None;
    p.ws();
    while p.pos < p.s.len() {
        if !args.is_empty() || trailing.is_some() {
            p.expect(b',')?;
        }
        p.ws();
        let start = p.pos;
        let value = p.value()?;
        p.ws();
        if p.at_arrow() {
            let key = dict_key(value)?;
            p.pos += 2;
            trailing.get_or_insert_default().insert(key, p.value()?);
        } else if trailing.is_some() {
            return Err(format!(
                "expected KEY => value at column {}: positional arguments come before the options",
                start + 1
            ));
        } else {
            args.push(value);
        }
        p.ws();
    }
    args.extend(trailing.map(Value::Dict));
    Ok(Some(Command { name, args }))
}

/// A dictionary key: a bare constant or a string, upper-cased.
fn dict_key(key: Value) -> Result<String, String> {
    match key {
        Value::Word(w) => Ok(w.to_ascii_uppercase()),
        Value::Str(s) => Ok(String::from_utf8_lossy(&s).to_ascii_uppercase()),
        other => Err(format!("dictionary keys are names, got {other}")),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.pos).is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at column {}", c as char, self.pos + 1))
        }
    }

    fn at_arrow(&self) -> bool {
        self.s[self.pos..].starts_with(b"=>")
    }

    fn word(&mut self) -> Option<String> {
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.') {
            self.pos += 1;
        }
        (self.pos > start).then(|| String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn value(&mut self) -> Result<Value, String> {
        self.ws();
        match self.s.get(self.pos) {
            None => Err("expected a value at the end of the line".into()),
            Some(b'\'') | Some(b'"') => self.string().map(Value::Str),
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    if self.s.get(self.pos) == Some(&b']') {
                        self.pos += 1;
                        return Ok(Value::List(items));
                    }
                    if !items.is_empty() {
                        self.expect(b',')?;
                    }
                    items.push(self.value()?);
                }
            }
            Some(b'{') => {
                self.pos += 1;
                let mut map = BTreeMap::new();
                loop {
                    self.ws();
                    if self.s.get(self.pos) == Some(&b'}') {
                        self.pos += 1;
                        return Ok(Value::Dict(map));
                    }
                    if !map.is_empty() {
                        self.expect(b',')?;
                        self.ws();
                    }
                    let key = dict_key(self.value()?)?;
                    self.ws();
                    if !self.at_arrow() {
                        return Err(format!("expected '=>' after {key} at column {}", self.pos + 1));
                    }
                    self.pos += 2;
                    map.insert(key, self.value()?);
                }
            }
            Some(b) if b.is_ascii_digit() || *b == b'-' => {
                let start = self.pos;
                self.pos += 1;
                while self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default();
                text.parse().map(Value::Int).map_err(|_| format!("bad number {text:?}"))
            }
            Some(_) => match self.word() {
                Some(w) if w == "true" => Ok(Value::Bool(true)),
                Some(w) if w == "false" => Ok(Value::Bool(false)),
                Some(w) => Ok(Value::Word(w)),
                None => Err(format!("unexpected {:?} at column {}", self.s[self.pos] as char, self.pos + 1)),
            },
        }
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        let quote = self.s[self.pos];
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.pos) {
                None => return Err("unterminated string".into()),
                Some(&c) if c == quote => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') if quote == b'"' => {
                    let (bytes, used) = double_quoted_escape(&self.s[self.pos + 1..])?;
                    out.extend_from_slice(&bytes);
                    self.pos += 1 + used;
                }
                // Ruby's single quotes know two escapes: \\ and \'.
                Some(b'\\') if matches!(self.s.get(self.pos + 1), Some(b'\\' | b'\'')) => {
                    out.push(self.s[self.pos + 1]);
                    self.pos += 2;
                }
                Some(&c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }
}

/// The bytes of the escape after a backslash in a double-quoted string, as
/// Ruby (HBase's shell) reads it, and how many bytes of `after` it took:
/// `\n \t \r \0 \a \b \e \f \v \s`, octal `\nnn`, hex `\xH[H]`,
/// `\uHHHH` (UTF-8); any other character stands for itself (`\" \\`).
fn double_quoted_escape(after: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let Some(&c) = after.first() else { return Err("unterminated string".into()) };
    let digits = |radix: u32, max: usize| -> (u32, usize) {
        let n = after[1..].iter().take(max).take_while(|b| (**b as char).is_digit(radix)).count();
        let text = std::str::from_utf8(&after[1..1 + n]).unwrap_or("0");
        (u32::from_str_radix(text, radix).unwrap_or(0), n)
    };
    Ok(match c {
        b'n' => (vec![b'\n'], 1),
        b't' => (vec![b'\t'], 1),
        b'r' => (vec![b'\r'], 1),
        b'a' => (vec![7], 1),
        b'b' => (vec![8], 1),
        b'e' => (vec![27], 1),
        b'f' => (vec![12], 1),
        b'v' => (vec![11], 1),
        b's' => (vec![b' '], 1),
        b'0'..=b'7' => {
            let n = after.iter().take(3).take_while(|b| (b'0'..=b'7').contains(*b)).count();
            let value = u32::from_str_radix(std::str::from_utf8(&after[..n]).unwrap_or("0"), 8).unwrap_or(0);
            (vec![(value & 0xff) as u8], n)
        }
        b'x' => match digits(16, 2) {
            (_, 0) => return Err("bad \\x escape: no hex digit".into()),
            (value, n) => (vec![value as u8], 1 + n),
        },
        b'u' => match digits(16, 4) {
            (value, 4) => {
                let ch = char::from_u32(value).ok_or("bad \\u escape: not a character")?;
                (ch.to_string().into_bytes(), 5)
            }
            _ => return Err("bad \\u escape: four hex digits expected".into()),
        },
        other => (vec![other], 1),
    })
}

/// Whether `text` is an unfinished statement that goes on on the next line,
/// as Ruby (HBase's shell) reads it: it ends with a comma, or a `{` or `[`
/// is still open, outside quotes.
pub fn is_incomplete(text: &str) -> bool {
    let (mut quote, mut escaped, mut depth, mut last) = (None::<char>, false, 0i32, None::<char>);
    for c in text.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match (c, quote) {
            ('\\', Some(_)) => escaped = true,
            (q, Some(open)) if q == open => {
                quote = None;
                last = Some(q);
            }
            (_, Some(_)) => {}
            ('\'' | '"', None) => {
                quote = Some(c);
                last = Some(c);
            }
            ('{' | '[', None) => {
                depth += 1;
                last = Some(c);
            }
            ('}' | ']', None) => {
                depth -= 1;
                last = Some(c);
            }
            (c, None) if !c.is_whitespace() => last = Some(c),
            _ => {}
        }
    }
    quote.is_none() && (depth > 0 || last == Some(','))
}

/// Splits a script into commands: one per line, or several on a line
/// separated by `;` outside quotes; a line that [`is_incomplete`] goes on
/// on the next.
pub fn split_statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        if !pending.is_empty() {
            pending.push(' ');
        }
        pending.push_str(line);
        if is_incomplete(&pending) {
            continue;
        }
        split_line(&std::mem::take(&mut pending), &mut out);
    }
    // An unfinished last statement is run as it is: the parser says what
    // it lacks.
    split_line(&pending, &mut out);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// Appends `line`'s statements (split at `;` outside quotes) to `out`.
fn split_line(line: &str, out: &mut Vec<String>) {
    let (mut cur, mut quote) = (String::new(), None::<char>);
    let mut escaped = false;
    for c in line.chars() {
        if escaped {
            // The character after a backslash inside quotes ends nothing.
            escaped = false;
            cur.push(c);
            continue;
        }
        match (c, quote) {
            ('\\', Some(_)) => {
                escaped = true;
                cur.push(c);
            }
            ('\'' | '"', None) => {
                quote = Some(c);
                cur.push(c);
            }
            (c2, Some(q)) if c2 == q => {
                quote = None;
                cur.push(c);
            }
            (';', None) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_comma_or_an_open_bracket_continues_the_statement() {
        assert!(is_incomplete("put 't', 'r',") && is_incomplete("create 't', {NAME => 'f',"));
        assert!(is_incomplete("scan 't', {COLUMNS => ['f:a'") && !is_incomplete("scan 't', {LIMIT => 1}"));
        assert!(!is_incomplete("put 't', 'r,'") && !is_incomplete("put 't', \"{[\""), "inside quotes");
        assert_eq!(
            split_statements("put 't', 'r',\n  'f:q', 'v'\ncreate 'u', {NAME => 'f',\n VERSIONS => 2}; count 't'"),
            ["put 't', 'r',   'f:q', 'v'", "create 'u', {NAME => 'f',  VERSIONS => 2}", " count 't'"]
        );
        assert_eq!(split_statements("put 't',"), ["put 't',"], "an unfinished last line runs and fails as it is");
    }

    #[test]
    fn double_quotes_take_rubys_escapes_and_single_quotes_two() {
        let value = |text: &str| -> Vec<u8> {
            let c = parse_line(&format!("put 't', {text}")).expect("parses").expect("a command");
            match &c.args[1] {
                Value::Str(b) => b.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(value(r#""a\tb\nc\rd""#), b"a\tb\nc\rd");
        assert_eq!(value(r#""\x41\x7\101\0\e\s""#), b"A\x07A\0\x1b ");
        assert_eq!(value(r#""q\"uote\\ \u00e9""#), "q\"uote\\ \u{e9}".as_bytes());
        assert_eq!(value(r"'it\'s a\\b \n'"), br"it's a\b \n");
        assert!(parse_line(r#"put 't', "\xzz""#).is_err(), "a \\x escape needs a hex digit");
        assert!(parse_line(r#"put 't', "\u12""#).is_err(), "a \\u escape needs four");
        assert_eq!(
            split_statements(r"put 't', 'a\';b'; count 't'"),
            [r"put 't', 'a\';b'", " count 't'"],
            "an escaped quote does not end the string"
        );
    }

    #[test]
    fn parses_the_shells_syntax() {
        let c = parse_line("create 't1', 'f1', {NAME => 'f2', VERSIONS => 3}").expect("ok").expect("cmd");
        assert_eq!(c.name, "create");
        assert_eq!(c.args[0], Value::Str(b"t1".to_vec()));
        let Value::Dict(d) = &c.args[2] else { panic!("dict") };
        assert_eq!(d["VERSIONS"], Value::Int(3));
        let c = parse_line(r#"scan "t", {COLUMNS => ['f:a', 'f:b'], REVERSED => true, STARTROW => "\x00a"}"#)
            .expect("ok")
            .expect("cmd");
        let Value::Dict(d) = &c.args[1] else { panic!("dict") };
        assert_eq!(d["STARTROW"], Value::Str(vec![0, b'a']));
        assert_eq!(d["REVERSED"], Value::Bool(true));
        assert_eq!(parse_line("  # comment").expect("ok"), None);
        assert!(parse_line("put 't' 'r'").is_err());
        assert!(parse_line("get 't', 'unterminated").is_err());
    }

    fn parsed(line: &str) -> Command {
        parse_line(line).expect("parses").expect("a command")
    }

    #[test]
    fn trailing_pairs_without_braces_are_one_dictionary() {
        assert_eq!(parsed("get 't', 'r', COLUMN => 'f:q'"), parsed("get 't', 'r', {COLUMN => 'f:q'}"));
        let c = parsed("get 't', 'r', COLUMN => ['f:a', 'f:b'], VERSIONS => 3");
        assert_eq!(c, parsed("get 't', 'r', {COLUMN => ['f:a', 'f:b'], VERSIONS => 3}"));
        assert_eq!(c.args.len(), 3);
        let Value::Dict(d) = &c.args[2] else { panic!("a dictionary last: {c:?}") };
        assert_eq!(d["VERSIONS"], Value::Int(3));
        assert_eq!(d["COLUMN"], Value::List(vec![Value::Str(b"f:a".to_vec()), Value::Str(b"f:b".to_vec())]));
        assert_eq!(
            parsed("scan 't', LIMIT => 5").args,
            vec![Value::Str(b"t".to_vec()), dict(&[("LIMIT", Value::Int(5))])]
        );
        assert_eq!(
            parsed("scan 't', STARTROW => 'a', STOPROW => 'c', COLUMNS => ['f']"),
            parsed("scan 't', {STARTROW => 'a', STOPROW => 'c', COLUMNS => ['f']}")
        );
        assert_eq!(parsed("count 't', INTERVAL => 1000").args[1], dict(&[("INTERVAL", Value::Int(1000))]));
    }

    #[test]
    fn a_dictionary_argument_may_precede_the_trailing_pairs() {
        let c = parsed("create 't', {NAME => 'f', VERSIONS => 3}, SPLITS => ['b', 'm']");
        assert_eq!(c.args.len(), 3);
        assert_eq!(c.args[1], dict(&[("NAME", Value::Str(b"f".to_vec())), ("VERSIONS", Value::Int(3))]));
        let splits = Value::List(vec![Value::Str(b"b".to_vec()), Value::Str(b"m".to_vec())]);
        assert_eq!(c.args[2], dict(&[("SPLITS", splits)]));
    }

    #[test]
    fn string_keys_are_upper_cased_constants() {
        assert_eq!(parsed("alter 't', 'delete' => 'f'").args[1], dict(&[("DELETE", Value::Str(b"f".to_vec()))]));
        assert_eq!(
            parsed("alter 't', METHOD => 'delete', NAME => 'f'").args[1],
            dict(&[("METHOD", Value::Str(b"delete".to_vec())), ("NAME", Value::Str(b"f".to_vec()))])
        );
    }

    #[test]
    fn a_positional_argument_after_the_pairs_is_an_error() {
        let e = parse_line("get 't', 'r', COLUMN => 'f:q', 'f:x'").expect_err("refused");
        assert!(e.contains("positional arguments come before the options"), "{e}");
        assert!(parse_line("scan 't', LIMIT =>").is_err());
        assert!(parse_line("scan 't', 5 => 1").is_err());
    }

    #[test]
    fn values_print_as_they_are_typed() {
        assert_eq!(
            parsed("x 'a', \"\\x00'\", 3, true, [1, 'b'], {K => 'v'}")
                .args
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>(),
            ["'a'", "\"\\x00'\"", "3", "true", "[1, 'b']", "{K => 'v'}"]
        );
    }

    fn dict(pairs: &[(&str, Value)]) -> Value {
        Value::Dict(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    #[test]
    fn statements_split_on_semicolons_outside_quotes() {
        assert_eq!(
            split_statements("list; put 't','r;1','f:q','v'\n\ncount 't'"),
            ["list", " put 't','r;1','f:q','v'", "count 't'"]
        );
    }
}
