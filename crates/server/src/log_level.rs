//! `/logLevel`, HBase's log level servlet: `GET` shows the log filter in
//! force (tracing's `EnvFilter` directives, e.g. `info,store=debug`);
//! `POST /logLevel?log=<module>&level=<level>` (HBase's parameter names)
//! sets one module's level, keeping every other directive. The module is a
//! Rust module path (`store`, `store::jobs::flush`), the level one of
//! `trace`, `debug`, `info`, `warn`, `error`, `off` in any case (log4j's
//! `ALL` and `FATAL` read as `trace` and `error`).
//!
//! The logger belongs to the binary, which installs it: it hands the
//! server a [`LogLevelControl`] (the server crate knows no subscriber).
//! Changing the level changes the process: the call is admitted as an
//! admin call is (`admin_auth.rs`; the caller, `http.rs`, checks).
//!
//! Invariants: a refused change (a bad module or level: 400) leaves the
//! filter as it was; an accepted one replaces the module's directives
//! (those naming exactly that target, with or without span filters) by one
//! `module=level`.
//!
//! Thread safety: stateless here; the control serialises its own changes.

/// Reads and replaces the process's log filter (the binary's logger).
pub trait LogLevelControl: Send + Sync {
    /// The filter in force, as directives (`info,store=debug`).
    fn current(&self) -> String;
    /// Replaces the filter by `filter`; on an error (the text is not a
    /// filter, the logger is gone) the old one stays, and the error says why.
    fn set(&self, filter: &str) -> Result<(), String>;
}

/// Why a `/logLevel` change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogLevelError {
    #[error("missing ?log=<module> (a Rust module path such as store or store::jobs)")]
    MissingModule,
    #[error("missing ?level=<level> (trace, debug, info, warn, error or off)")]
    MissingLevel,
    #[error("{0:?} is not a module path (identifiers joined by ::, such as store::jobs)")]
    BadModule(String),
    #[error("{0:?} is not a level: trace, debug, info, warn, error or off")]
    BadLevel(String),
    #[error("the logger refused the filter {filter:?}: {why}")]
    Refused { filter: String, why: String },
}

/// `level` as tracing names it.
pub fn parse_level(level: &str) -> Result<&'static str, LogLevelError> {
    Ok(match level.to_ascii_lowercase().as_str() {
        "trace" | "all" => "trace",
        "debug" => "debug",
        "info" => "info",
        "warn" | "warning" => "warn",
        "error" | "fatal" => "error",
        "off" => "off",
        _ => return Err(LogLevelError::BadLevel(level.to_string())),
    })
}

/// Whether `module` is a path of identifiers (`a`, `a::b_c`).
fn is_module_path(module: &str) -> bool {
    module.split("::").all(|part| {
        let mut chars = part.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `filter`'s directives, split at the commas between them (not those
/// inside a span filter's `[...]` or `{...}`).
fn directives(filter: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in filter.char_indices() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&filter[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&filter[start..]);
    out.into_iter().map(str::trim).filter(|d| !d.is_empty()).collect()
}

/// `current` with `module`'s directives replaced by `module=level`.
pub fn with_module(current: &str, module: &str, level: &str) -> String {
    let mut kept: Vec<String> = directives(current)
        .into_iter()
        .filter(|d| {
            // A bare level (`info`) names no target and stays.
            let target = d.split(['[', '=']).next().unwrap_or(d);
            !(target == module && d.len() > target.len())
        })
        .map(str::to_string)
        .collect();
    kept.push(format!("{module}={level}"));
    kept.join(",")
}

/// Sets `module` to `level` through `control`; the new filter.
pub fn set_module_level(
    control: &dyn LogLevelControl,
    module: Option<&str>,
    level: Option<&str>,
) -> Result<String, LogLevelError> {
    let module = module.filter(|m| !m.is_empty()).ok_or(LogLevelError::MissingModule)?;
    let level = level.filter(|l| !l.is_empty()).ok_or(LogLevelError::MissingLevel)?;
    if !is_module_path(module) {
        return Err(LogLevelError::BadModule(module.to_string()));
    }
    let level = parse_level(level)?;
    let filter = with_module(&control.current(), module, level);
    control.set(&filter).map_err(|why| LogLevelError::Refused { filter: filter.clone(), why })?;
    Ok(filter)
}

/// An HTTP answer: body, content type, status.
type Response = (String, &'static str, u16);

const NO_CONTROL: &str = "this process's logger cannot be changed at run time (no log level control was installed)\n";

/// `GET /logLevel`: the filter in force. A `level` asks for a change, which
/// is a `POST`.
pub fn get(control: Option<&dyn LogLevelControl>, query: &str) -> Response {
    if crate::admin::param(query, "level").is_some() {
        return ("changing a level is POST /logLevel?log=<module>&level=<level>\n".into(), "text/plain", 405);
    }
    match control {
        Some(c) => (format!("{}\n", c.current()), "text/plain; charset=utf-8", 200),
        None => (NO_CONTROL.into(), "text/plain", 501),
    }
}

/// `POST /logLevel?log=<module>&level=<level>`, once admitted.
pub fn post(control: Option<&dyn LogLevelControl>, query: &str) -> Response {
    let Some(control) = control else { return (NO_CONTROL.into(), "text/plain", 501) };
    let text = |key: &str| crate::admin::param(query, key).map(|v| String::from_utf8_lossy(&v).into_owned());
    let (module, level) = (text("log"), text("level"));
    match set_module_level(control, module.as_deref(), level.as_deref()) {
        Ok(filter) => {
            tracing::info!(module = module.as_deref(), level = level.as_deref(), %filter, "log level changed");
            (format!("{filter}\n"), "text/plain; charset=utf-8", 200)
        }
        Err(e) => (format!("{e}\n"), "text/plain; charset=utf-8", 400),
    }
}

#[cfg(test)]
mod tests {
    use parking_lot::Mutex;

    use super::*;

    struct Fake(Mutex<String>);

    impl LogLevelControl for Fake {
        fn current(&self) -> String {
            self.0.lock().clone()
        }

        fn set(&self, filter: &str) -> Result<(), String> {
            *self.0.lock() = filter.to_string();
            Ok(())
        }
    }

    #[test]
    fn a_module_directive_is_added_or_replaced_and_the_rest_kept() {
        assert_eq!(with_module("info", "store", "debug"), "info,store=debug");
        assert_eq!(with_module("info,store=debug,server=warn", "store", "trace"), "info,server=warn,store=trace");
        assert_eq!(
            with_module("warn,store[flush{region=1,x=2}]=trace,store::jobs=info", "store", "error"),
            "warn,store::jobs=info,store=error",
            "a span-filtered directive of the module goes too; a submodule's stays"
        );
        assert_eq!(with_module("", "store", "off"), "store=off");
    }

    #[test]
    fn bad_modules_and_levels_are_refused_and_the_filter_stays() {
        let fake = Fake(Mutex::new("info".into()));
        for (module, level, want) in [
            (None, Some("debug"), LogLevelError::MissingModule),
            (Some("store"), None, LogLevelError::MissingLevel),
            (Some("store=debug"), Some("debug"), LogLevelError::BadModule("store=debug".into())),
            (Some("a::"), Some("debug"), LogLevelError::BadModule("a::".into())),
            (Some("store"), Some("loud"), LogLevelError::BadLevel("loud".into())),
        ] {
            assert_eq!(set_module_level(&fake, module, level), Err(want));
        }
        assert_eq!(fake.current(), "info");
        assert_eq!(
            set_module_level(&fake, Some("store::jobs"), Some("DEBUG")).as_deref(),
            Ok("info,store::jobs=debug")
        );
        assert_eq!(fake.current(), "info,store::jobs=debug");
        assert_eq!(parse_level("FATAL"), Ok("error"));
    }
}
