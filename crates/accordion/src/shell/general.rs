//! The general group's `version` and `whoami`, as HBase's shell has them.

use std::io::Write;

use super::Shell;
use super::args::Args;
use super::parse::Command;

impl<W: Write> Shell<W> {
    /// `version`: the shell's version and, when its HTTP port answers, the
    /// server's.
    pub(super) fn version(&mut self, cmd: &Command) -> anyhow::Result<()> {
        Args::parse(cmd, 0, &[])?;
        let server = self.http.status().ok().map(|s| s.server.version);
        writeln!(
            self.out,
            "accordion {} (HBase Thrift v1 API); server {}",
            env!("CARGO_PKG_VERSION"),
            server.as_deref().unwrap_or("unknown (its HTTP port did not answer)")
        )?;
        Ok(())
    }

    /// `whoami`: who this shell is to the server — the operating system's
    /// user (Thrift v1 has no authentication of its own: HBase's shell says
    /// `auth:SIMPLE` likewise) and what its admin calls carry.
    pub(super) fn whoami(&mut self, cmd: &Command) -> anyhow::Result<()> {
        Args::parse(cmd, 0, &[])?;
        let user = ["USER", "LOGNAME"].iter().find_map(|v| std::env::var(v).ok()).unwrap_or_else(|| "unknown".into());
        writeln!(self.out, "{user} (auth:SIMPLE)")?;
        writeln!(self.out, "    admin calls: {}", self.http.credentials())?;
        Ok(())
    }
}
