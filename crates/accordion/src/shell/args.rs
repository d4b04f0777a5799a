//! A command's arguments, checked before anything is sent to the server:
//! positional arguments by position (a missing one, or one too many, is an
//! error naming it), and the options dictionary — `{...}` or the brace-less
//! trailing `KEY => value` pairs, the last argument — against the keys and
//! value types the command takes.
//!
//! Rule: an unknown key or a value of the wrong type is an error naming it,
//! never ignored, so that a typo like `LIMT => 5` cannot quietly scan a
//! whole table.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail};

use super::parse::{Command, Value};

/// The type an option's value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    /// A string (a number is taken as its digits, as Ruby's `to_s` would).
    Bytes,
    /// `true`/`false`, or those words quoted.
    Bool,
    /// A string or a list of strings.
    BytesList,
    /// Two integers in a list, `[a, b]` (TIMERANGE).
    IntPair,
}

impl Kind {
    fn describe(self) -> &'static str {
        match self {
            Kind::Int => "an integer",
            Kind::Bytes => "a string",
            Kind::Bool => "true or false",
            Kind::BytesList => "a string or a list of strings",
            Kind::IntPair => "a list of two integers, [from, to]",
        }
    }

    fn accepts(self, v: &Value) -> bool {
        match self {
            Kind::Int => as_int(v).is_some(),
            Kind::Bytes => as_bytes(v).is_some(),
            Kind::Bool => as_bool(v).is_some(),
            Kind::BytesList => as_bytes_list(v).is_some(),
            Kind::IntPair => as_int_pair(v).is_some(),
        }
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn as_int_pair(v: &Value) -> Option<(i64, i64)> {
    match v {
        Value::List(items) => match items.as_slice() {
            [a, b] => Some((as_int(a)?, as_int(b)?)),
            _ => None,
        },
        _ => None,
    }
}

fn as_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Str(s) if s.eq_ignore_ascii_case(b"true") => Some(true),
        Value::Str(s) if s.eq_ignore_ascii_case(b"false") => Some(false),
        _ => None,
    }
}

fn as_bytes_list(v: &Value) -> Option<Vec<Vec<u8>>> {
    match v {
        Value::List(items) => items.iter().map(as_bytes).collect(),
        v => as_bytes(v).map(|b| vec![b]),
    }
}

/// An options dictionary whose keys and value types have been checked.
#[derive(Debug, Default)]
pub struct Options {
    map: BTreeMap<String, Value>,
}

impl Options {
    /// `map` if every key is one of `known` and holds a value of its kind.
    pub fn check(what: &str, map: &BTreeMap<String, Value>, known: &[(&str, Kind)]) -> anyhow::Result<Options> {
        for (key, value) in map {
            let Some((_, kind)) = known.iter().find(|(k, _)| k == key) else {
                if known.is_empty() {
                    bail!("{what}: unknown option {key} ({what} takes no options)");
                }
                let names: Vec<&str> = known.iter().map(|(k, _)| *k).collect();
                bail!("{what}: unknown option {key} (known: {})", names.join(", "));
            };
            if !kind.accepts(value) {
                bail!("{what}: {key} must be {}, got {value}", kind.describe());
            }
        }
        Ok(Options { map: map.clone() })
    }

    pub fn int(&self, key: &str) -> Option<i64> {
        self.map.get(key).and_then(as_int)
    }

    pub fn bytes(&self, key: &str) -> Option<Vec<u8>> {
        self.map.get(key).and_then(as_bytes)
    }

    pub fn int_pair(&self, key: &str) -> Option<(i64, i64)> {
        self.map.get(key).and_then(as_int_pair)
    }

    pub fn flag(&self, key: &str) -> Option<bool> {
        self.map.get(key).and_then(as_bool)
    }

    /// The strings under `key`; none if it is absent.
    pub fn bytes_list(&self, key: &str) -> Vec<Vec<u8>> {
        self.map.get(key).and_then(as_bytes_list).unwrap_or_default()
    }
}

/// A command's positional arguments and its checked options.
pub struct Args<'a> {
    command: &'a str,
    positional: &'a [Value],
    pub options: Options,
}

impl<'a> Args<'a> {
    /// `cmd`'s arguments: at most `max_positional` of them before an
    /// optional options dictionary holding only `known` keys.
    pub fn parse(cmd: &'a Command, max_positional: usize, known: &[(&str, Kind)]) -> anyhow::Result<Args<'a>> {
        let (positional, options) = match cmd.args.split_last() {
            Some((Value::Dict(map), rest)) => (rest, Options::check(&cmd.name, map, known)?),
            _ => (&cmd.args[..], Options::default()),
        };
        if positional.len() > max_positional && max_positional == 0 {
            bail!("{}: takes no arguments, got {}", cmd.name, positional.len());
        }
        if positional.len() > max_positional {
            bail!(
                "{}: takes at most {max_positional} argument{} before its options, got {}",
                cmd.name,
                if max_positional == 1 { "" } else { "s" },
                positional.len()
            );
        }
        Ok(Args { command: &cmd.name, positional, options })
    }

    pub fn positional(&self) -> &'a [Value] {
        self.positional
    }

    /// Required argument `i` (0-based), a string.
    pub fn bytes(&self, i: usize, what: &str) -> anyhow::Result<Vec<u8>> {
        self.opt_bytes(i, what)?.ok_or_else(|| anyhow!("{}: argument {} ({what}) is missing", self.command, i + 1))
    }

    /// Optional argument `i`, a string.
    pub fn opt_bytes(&self, i: usize, what: &str) -> anyhow::Result<Option<Vec<u8>>> {
        self.typed(i, what, Kind::Bytes, as_bytes)
    }

    /// Optional argument `i`, `true` or `false` (bare or quoted).
    pub fn opt_bool(&self, i: usize, what: &str) -> anyhow::Result<Option<bool>> {
        self.typed(i, what, Kind::Bool, as_bool)
    }

    /// Optional argument `i`, an integer.
    pub fn opt_int(&self, i: usize, what: &str) -> anyhow::Result<Option<i64>> {
        self.typed(i, what, Kind::Int, as_int)
    }

    fn typed<T>(&self, i: usize, what: &str, kind: Kind, get: fn(&Value) -> Option<T>) -> anyhow::Result<Option<T>> {
        match self.positional.get(i) {
            None => Ok(None),
            // A bare word is taken as typed (HBase constants are strings).
            Some(Value::Word(w)) if kind == Kind::Bytes => Ok(get(&Value::Str(w.clone().into_bytes()))),
            Some(v) => get(v).map(Some).ok_or_else(|| {
                anyhow!("{}: argument {} ({what}) must be {}, got {v}", self.command, i + 1, kind.describe())
            }),
        }
    }
}

/// The first argument, the table, of a command whose other arguments are
/// read by hand (create's families and options, alter's).
pub fn table_arg(cmd: &Command) -> anyhow::Result<Vec<u8>> {
    match cmd.args.first() {
        Some(v @ (Value::Str(_) | Value::Word(_))) => Ok(v.bytes().unwrap_or_default()),
        Some(v) => bail!("{}: argument 1 (table) must be a string, got {v}", cmd.name),
        None => bail!("{}: argument 1 (table) is missing", cmd.name),
    }
}

/// The strings of `v` (a string or a list of them), for arguments that
/// take either.
pub fn bytes_list(v: &Value) -> Option<Vec<Vec<u8>>> {
    as_bytes_list(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse::parse_line;

    fn args_of(line: &str, max: usize, known: &[(&str, Kind)]) -> anyhow::Result<()> {
        let cmd = parse_line(line).expect("parses").expect("a command");
        Args::parse(&cmd, max, known).map(|_| ())
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_named() {
        let known = [("LIMIT", Kind::Int), ("COLUMNS", Kind::BytesList)];
        let e = args_of("scan 't', LIMT => 5", 1, &known).expect_err("unknown key");
        assert_eq!(e.to_string(), "scan: unknown option LIMT (known: LIMIT, COLUMNS)");
        let e = args_of("scan 't', LIMIT => 'x'", 1, &known).expect_err("wrong type");
        assert_eq!(e.to_string(), "scan: LIMIT must be an integer, got 'x'");
        let e = args_of("scan 't', TIMERANGE => [1]", 1, &[("TIMERANGE", Kind::IntPair)]).expect_err("one number");
        assert_eq!(e.to_string(), "scan: TIMERANGE must be a list of two integers, [from, to], got [1]");
        assert!(args_of("scan 't', TIMERANGE => [1, 5]", 1, &[("TIMERANGE", Kind::IntPair)]).is_ok());
        let e = args_of("scan 't', COLUMNS => [1, {A => 1}]", 1, &known).expect_err("wrong type");
        assert!(e.to_string().contains("COLUMNS must be a string or a list of strings"), "{e}");
        assert!(args_of("scan 't', LIMIT => 5, COLUMNS => ['f', 'g']", 1, &known).is_ok());
        let e = args_of("flush 't', X => 1", 1, &[]).expect_err("no options");
        assert_eq!(e.to_string(), "flush: unknown option X (flush takes no options)");
        let e = args_of("flush 't', 'u'", 1, &[]).expect_err("too many");
        assert_eq!(e.to_string(), "flush: takes at most 1 argument before its options, got 2");
    }

    #[test]
    fn positional_arguments_are_typed() {
        let cmd = parse_line("incr 't', 'r', 'f:q', 'x'").expect("parses").expect("a command");
        let args = Args::parse(&cmd, 4, &[]).expect("shape");
        assert_eq!(args.bytes(0, "table").expect("table"), b"t");
        let e = args.opt_int(3, "increment").expect_err("not a number");
        assert_eq!(e.to_string(), "incr: argument 4 (increment) must be an integer, got 'x'");
        assert!(args.bytes(4, "more").is_err());
    }
}
