//! A Java regex, as HBase's `RegexStringComparator` runs it, turned into a
//! pattern for the `regex` crate that matches the same values.
//!
//! HBase 2.6 compiles the pattern with `Pattern.DOTALL` and looks for a match
//! anywhere (`find`) in the value decoded as UTF-8 (malformed bytes become
//! U+FFFD); recorded against HBase 2.6.4 in
//! `tests/data/filters/hbase-2.6.4-answers.json`. The translation:
//!
//! - `.` matches any character, line terminators included (`(?s)`);
//! - `$` and `\Z` get Java's meaning without MULTILINE: the end of the
//!   input, or just before a line terminator (`\n`, `\r\n`, `\r`, U+0085,
//!   U+2028, U+2029) that ends it;
//! - `\w`, `\d`, `\s` and their negations are ASCII, as Java's are without
//!   UNICODE_CHARACTER_CLASS (the regex crate's are Unicode);
//! - Java's `\Q…\E` quoting, `\e`, `\0` octal, `\uXXXX`, `\h`, `\v`, `\R`,
//!   the POSIX `\p{Lower}`-style classes (ASCII) and `\p{IsX}` scripts and
//!   categories are rewritten;
//! - what Java has and the regex crate has not (look-around,
//!   back-references, possessive quantifiers, atomic groups, Unicode
//!   blocks) is refused when the filter is parsed, by our error or the regex
//!   crate's.
//!
//! `(?i)` is Unicode in the regex crate and ASCII-only in Java (without
//! UNICODE_CASE): that difference is left.

/// Java's line terminators, as a class body.
const TERMINATORS: &str = r"\n\r\x{85}\x{2028}\x{2029}";

/// The `regex` pattern for Java pattern `java`, or why it cannot be.
pub fn translate(java: &str) -> Result<String, String> {
    let mut out = String::from("(?s)");
    let chars: Vec<char> = java.chars().collect();
    let mut class_depth = 0usize;
    // Whether the last token was a quantifier (`*`, `+`, `?`, `{…}`): a
    // `+` right after one makes it possessive.
    let mut after_quantifier = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let quantifier = class_depth == 0 && matches!(c, '*' | '+' | '?' | '}');
        if c == '+' && quantifier && after_quantifier {
            return Err("possessive quantifiers (such as a*+) are not supported".into());
        }
        after_quantifier = quantifier;
        match c {
            '\\' => {
                let Some(&e) = chars.get(i) else { return Err("pattern ends with a lone backslash".into()) };
                i = escape(&chars, i + 1, e, class_depth > 0, &mut out)?;
            }
            '[' => {
                class_depth += 1;
                out.push('[');
                // A ']' or '^]' right after '[' is literal in both dialects.
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            ']' if class_depth > 0 => {
                class_depth -= 1;
                out.push(']');
            }
            '$' if class_depth == 0 => out.push_str(&end_of_input()),
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Java's `$` (and `\Z`) without MULTILINE, as a consuming pattern: only
/// whether a match exists is asked, so consuming the terminator is the same.
fn end_of_input() -> String {
    format!(r"(?:\r\n|[{TERMINATORS}])?\z")
}

/// Translates the escape whose letter `e` was just read; `i` is the index
/// after it. Returns where the pattern goes on.
fn escape(chars: &[char], mut i: usize, e: char, in_class: bool, out: &mut String) -> Result<usize, String> {
    // A class written as a nested class is a union inside an enclosing
    // class, so the same text works inside and outside one.
    match e {
        'Q' => {
            // Quoted up to \E (or the end).
            while i < chars.len() {
                if chars[i] == '\\' && chars.get(i + 1) == Some(&'E') {
                    return Ok(i + 2);
                }
                let c = chars[i];
                if c.is_ascii() && !c.is_ascii_alphanumeric() {
                    out.push('\\');
                }
                out.push(c);
                i += 1;
            }
        }
        'E' => {} // an \E without \Q is ignored by Java
        'Z' if !in_class => out.push_str(&end_of_input()),
        'e' => out.push_str(r"\x1B"),
        'w' => out.push_str("[a-zA-Z_0-9]"),
        'W' => out.push_str("[^a-zA-Z_0-9]"),
        'd' => out.push_str("[0-9]"),
        'D' => out.push_str("[^0-9]"),
        's' => out.push_str(r"[ \t\n\x0B\f\r]"),
        'S' => out.push_str(r"[^ \t\n\x0B\f\r]"),
        'h' => out.push_str(r"[\t \x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]"),
        'H' => out.push_str(r"[^\t \x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]"),
        'v' => out.push_str(&format!(r"[\x0B\f{TERMINATORS}]")),
        'V' => out.push_str(&format!(r"[^\x0B\f{TERMINATORS}]")),
        'R' if !in_class => out.push_str(&format!(r"(?:\r\n|[\x0B\f{TERMINATORS}])")),
        '0' => {
            // Java's octal escape: \0n, \0nn or \0mnn (m ≤ 3).
            let mut v = 0u32;
            let mut n = 0;
            while n < 3 && i < chars.len() && chars[i].is_digit(8) {
                let next = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                if next > 0o377 {
                    break;
                }
                v = next;
                i += 1;
                n += 1;
            }
            if n == 0 {
                return Err("\\0 needs an octal value".into());
            }
            out.push_str(&format!("\\x{{{v:X}}}"));
        }
        'u' => {
            let hex: String = chars.get(i..i + 4).ok_or("\\u needs four hex digits")?.iter().collect();
            u32::from_str_radix(&hex, 16).map_err(|_| "\\u needs four hex digits".to_string())?;
            i += 4;
            out.push_str(&format!("\\x{{{hex}}}"));
        }
        'p' | 'P' => {
            let (name, next) = if chars.get(i) == Some(&'{') {
                let end = chars[i..].iter().position(|&c| c == '}').ok_or("\\p{ is not closed")?;
                (chars[i + 1..i + end].iter().collect::<String>(), i + end + 1)
            } else {
                (chars.get(i).map(|c| c.to_string()).ok_or("\\p needs a class name")?, i + 1)
            };
            i = next;
            let negate = if e == 'P' { "^" } else { "" };
            match posix_class(&name) {
                Some(body) => out.push_str(&format!("[{negate}{body}]")),
                None if name.starts_with("In") => {
                    return Err(format!("\\p{{{name}}}: Unicode blocks are not supported"));
                }
                // Scripts and categories (`IsLatin`, `L`, `Lu`) the regex
                // crate knows by the same names.
                None => out.push_str(&format!("\\{e}{{{}}}", name.strip_prefix("Is").unwrap_or(&name))),
            }
        }
        c if c.is_ascii_digit() => return Err("back-references (\\1 …) are not supported".into()),
        c => {
            out.push('\\');
            out.push(c);
        }
    }
    Ok(i)
}

/// Java's POSIX character classes (US-ASCII only, Java's default).
fn posix_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "Lower" => "a-z",
        "Upper" => "A-Z",
        "ASCII" => r"\x00-\x7F",
        "Alpha" => "a-zA-Z",
        "Digit" => "0-9",
        "Alnum" => "a-zA-Z0-9",
        "Punct" => r"!-/:-@\[-`{-~",
        "Graph" => r"!-~",
        "Print" => r" -~",
        "Blank" => r" \t",
        "Cntrl" => r"\x00-\x1F\x7F",
        "XDigit" => "0-9a-fA-F",
        "Space" => r" \t\n\x0B\f\r",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    use super::translate;

    fn finds(java: &str, value: &str) -> bool {
        let p = translate(java).unwrap_or_else(|e| panic!("{java}: {e}"));
        Regex::new(&p).unwrap_or_else(|e| panic!("{java} → {p}: {e}")).is_match(value)
    }

    #[test]
    fn dot_matches_every_character_as_with_dotall() {
        assert!(finds("a.b", "a\nb"));
        assert!(finds("^.{3}$", "\u{e9}\u{fffd}\n"));
    }

    #[test]
    fn dollar_allows_a_final_line_terminator() {
        assert!(finds("a$", "a"));
        assert!(finds("a$", "a\n"));
        assert!(finds("a$", "a\r\n"));
        assert!(finds("a$", "a\u{2028}"));
        assert!(!finds("a$", "a\n\n"));
        assert!(!finds("a$", "ab"));
        assert!(finds("a\\Z", "a\r"));
        assert!(!finds("a\\z", "a\n"));
        assert!(finds("[$]", "x$y"), "a $ in a class is a dollar");
    }

    #[test]
    fn java_escapes_and_classes() {
        assert!(finds("caf\u{e9}$", "un caf\u{e9}"));
        assert!(finds("\\u00e9", "\u{e9}"));
        assert!(finds("\\0101", "A"));
        assert!(finds("\\Qa.b\\E", "a.b"));
        assert!(!finds("\\Qa.b\\E", "axb"));
        assert!(finds("\\p{Upper}+", "AB"));
        assert!(!finds("^\\p{Alpha}+$", "\u{e9}"), "POSIX classes are ASCII");
        assert!(finds("^\\p{IsLatin}+$", "\u{e9}t\u{e9}"));
        assert!(!finds("^\\w+$", "\u{e9}"), "Java's \\w is ASCII");
        assert!(finds("^[\\w-]+$", "a-b_c"));
        assert!(!finds("\\d", "\u{661}"), "Java's \\d is ASCII");
    }

    #[test]
    fn what_the_regex_crate_lacks_is_refused() {
        for p in ["a*+", "a{2}+", "(a)\\1", "\\p{InGreek}"] {
            assert!(translate(p).is_err(), "{p}");
        }
        assert!(translate("\\p{Upper}+").is_ok(), "a class's closing brace is not a quantifier");
        for p in ["(?=a)", "(?<!a)b", "(?>a)"] {
            let t = translate(p).expect("translated");
            assert!(Regex::new(&t).is_err(), "{p}: the regex crate refuses it");
        }
    }
}
