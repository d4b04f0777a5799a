//! The namespace commands (HBase's `namespace` group): create and drop
//! through the server's admin calls, list and describe from its
//! `GET /namespaces` (Thrift v1 has no namespace calls). Tables of a
//! namespace are named `ns:table` in every other command.

use std::io::Write;

use super::Shell;
use super::args::Args;
use super::parse::Command;
use super::text;

impl<W: Write> Shell<W> {
    /// `create_namespace 'ns'`.
    pub(super) fn create_namespace(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let ns = Args::parse(cmd, 1, &[])?.bytes(0, "namespace")?;
        self.http.admin("create_namespace", &[("name", &ns)]).map(|_| ())
    }

    /// `drop_namespace 'ns'`: only an empty namespace, never `default` or
    /// `hbase` (the server says why it refuses).
    pub(super) fn drop_namespace(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let ns = Args::parse(cmd, 1, &[])?.bytes(0, "namespace")?;
        self.http.admin("drop_namespace", &[("name", &ns)]).map(|_| ())
    }

    /// `list_namespace`, as HBase's shell prints it.
    pub(super) fn list_namespace(&mut self, cmd: &Command) -> anyhow::Result<()> {
        Args::parse(cmd, 0, &[])?;
        let namespaces = self.http.namespaces(None)?;
        writeln!(self.out, "NAMESPACE")?;
        for ns in &namespaces {
            writeln!(self.out, "{}", ns.name)?;
        }
        writeln!(self.out, "{} row(s)", namespaces.len())?;
        Ok(())
    }

    /// `describe_namespace 'ns'`: its name and configuration.
    pub(super) fn describe_namespace(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let ns = Args::parse(cmd, 1, &[])?.bytes(0, "namespace")?;
        let found = self.http.namespaces(Some(&ns))?;
        writeln!(self.out, "DESCRIPTION")?;
        for ns in found {
            let settings: String =
                ns.configuration.iter().map(|(k, v)| format!(", {k} => '{}'", v.escape_debug())).collect();
            writeln!(self.out, "{{NAME => '{}'{settings}}}", ns.name)?;
        }
        Ok(())
    }

    /// `list_namespace_tables 'ns'`: the tables' names within it.
    pub(super) fn list_namespace_tables(&mut self, cmd: &Command) -> anyhow::Result<()> {
        let ns = Args::parse(cmd, 1, &[])?.bytes(0, "namespace")?;
        let found = self.http.namespaces(Some(&ns))?;
        let tables: Vec<String> = found.into_iter().flat_map(|n| n.tables).collect();
        writeln!(self.out, "TABLE")?;
        for t in &tables {
            // Within the namespace, as HBase's shell lists them.
            let qualifier = t.split_once(':').map_or(t.as_str(), |(_, q)| q);
            writeln!(self.out, "{}", text(qualifier.as_bytes()))?;
        }
        writeln!(self.out, "{} row(s)", tables.len())?;
        Ok(())
    }
}
