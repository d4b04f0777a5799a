//! JMX object names and the patterns `/jmx?qry=` takes, as
//! `javax.management.ObjectName` reads them (HBase's `JMXJsonServlet`
//! hands `qry` to `MBeanServer.queryNames`):
//! `domain:key=value[,key=value]*`, where
//! - the domain may hold the wildcards `*` (any run of characters) and `?`
//!   (one character);
//! - a value may hold them too (`sub=*`);
//! - an element `*` in the key list makes it a property-list pattern: the
//!   name may have more keys than the pattern lists (`Hadoop:*` is every
//!   bean of the domain, `*:*` every bean).
//!
//! Otherwise a name matches when its keys are exactly the pattern's, in any
//! order, each value matching. Quoted values are not supported (no bean of
//! ours has one); a pattern that uses them, or is not `domain:keys`, is
//! malformed.
//!
//! Thread safety: plain data.

/// Why a `qry` pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("an object name is domain:key=value[,key=value...]; {0:?} has no ':'")]
    NoDomain(String),
    #[error("{0:?} has an empty key property list")]
    NoKeys(String),
    #[error("{element:?} in {pattern:?} is not key=value or *")]
    BadElement { pattern: String, element: String },
    #[error("key {key:?} appears twice in {pattern:?}")]
    DuplicateKey { pattern: String, key: String },
}

/// A parsed object name pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectNamePattern {
    domain: String,
    keys: Vec<(String, String)>,
    /// The key list ended in `*`: other keys may be present.
    more_keys: bool,
}

impl std::str::FromStr for ObjectNamePattern {
    type Err = PatternError;

    fn from_str(pattern: &str) -> Result<Self, PatternError> {
        let (domain, list) = pattern.split_once(':').ok_or_else(|| PatternError::NoDomain(pattern.into()))?;
        if list.is_empty() {
            return Err(PatternError::NoKeys(pattern.into()));
        }
        let mut keys: Vec<(String, String)> = Vec::new();
        let mut more_keys = false;
        for element in list.split(',') {
            if element == "*" {
                more_keys = true;
                continue;
            }
            let bad = || PatternError::BadElement { pattern: pattern.into(), element: element.into() };
            let (key, value) = element.split_once('=').ok_or_else(bad)?;
            let illegal = |s: &str, wild: bool| s.contains(['"', ':', '=', '\n']) || (!wild && s.contains(['*', '?']));
            if key.is_empty() || value.is_empty() || illegal(key, false) || illegal(value, true) {
                return Err(bad());
            }
            if keys.iter().any(|(k, _)| k == key) {
                return Err(PatternError::DuplicateKey { pattern: pattern.into(), key: key.into() });
            }
            keys.push((key.to_string(), value.to_string()));
        }
        Ok(ObjectNamePattern { domain: domain.to_string(), keys, more_keys })
    }
}

impl ObjectNamePattern {
    /// Every name (`*:*`).
    pub fn all() -> ObjectNamePattern {
        ObjectNamePattern { domain: "*".into(), keys: Vec::new(), more_keys: true }
    }

    /// Whether the object name `name` (no wildcards) matches.
    pub fn matches(&self, name: &str) -> bool {
        let Some((domain, list)) = name.split_once(':') else { return false };
        if !glob(&self.domain, domain) {
            return false;
        }
        let props: Vec<(&str, &str)> = list.split(',').filter_map(|e| e.split_once('=')).collect();
        let listed = self.keys.iter().all(|(k, pattern)| props.iter().any(|(pk, v)| pk == k && glob(pattern, v)));
        listed && (self.more_keys || props.len() == self.keys.len())
    }
}

/// `*` any run of characters, `?` one character, the rest literally.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The classic greedy match with one backtrack point, the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = "Hadoop:service=HBase,name=RegionServer,sub=Server";

    fn matches(pattern: &str, name: &str) -> bool {
        pattern.parse::<ObjectNamePattern>().expect("a pattern").matches(name)
    }

    #[test]
    fn exact_names_globs_and_property_list_patterns_match_as_jmx_does() {
        assert!(matches(SERVER, SERVER));
        assert!(matches("Hadoop:sub=Server,name=RegionServer,service=HBase", SERVER), "keys in any order");
        assert!(!matches("Hadoop:service=HBase,name=RegionServer", SERVER), "a key missing, no `*`");
        assert!(matches("Hadoop:service=HBase,name=RegionServer,*", SERVER));
        assert!(matches("Hadoop:*", SERVER) && !matches("Hadoop:*", "accordion:type=Process"));
        assert!(matches("*:*", "accordion:type=Process") && ObjectNamePattern::all().matches(SERVER));
        assert!(matches("Hadoop:service=HBase,name=RegionServer,sub=*", SERVER));
        assert!(matches("Hadoop:service=HBase,name=RegionServer,sub=Se?ver", SERVER));
        assert!(!matches("Hadoop:service=HBase,name=RegionServer,sub=WAL", SERVER));
        assert!(matches("H*p:*", SERVER) && matches("*:type=Process", "accordion:type=Process"));
        assert!(!matches("*:type=Proc", "accordion:type=Process"));
    }

    #[test]
    fn malformed_patterns_are_refused() {
        for bad in ["Hadoop", "Hadoop:", "Hadoop:sub", "Hadoop:=x", "Hadoop:sub=", "Hadoop:a=1,a=2", "Hadoop:s*b=x"] {
            assert!(bad.parse::<ObjectNamePattern>().is_err(), "{bad}");
        }
    }

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("*", "", true),
            ("a*c", "abbbc", true),
            ("a*c", "abbbd", false),
            ("*b*", "abc", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("**", "x", true),
        ] {
            assert_eq!(glob(p, t), want, "{p} {t}");
        }
    }
}
