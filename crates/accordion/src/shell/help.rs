//! `help`, as HBase's shell gives it: `help` lists the commands by group,
//! `help 'get'` prints one command's usage with examples, `help 'dml'` a
//! group's. The catalog here is also the list of commands the shell knows:
//! a command missing from it is not one (a test checks the dispatch and the
//! catalog agree).

/// One command's entry.
pub struct CommandHelp {
    pub name: &'static str,
    pub group: &'static str,
    pub usage: &'static str,
}

/// The groups, in HBase's order, with what they hold.
const GROUPS: &[(&str, &str)] = &[
    ("general", "The shell and the server."),
    ("ddl", "Tables: create, describe, enable and disable, drop."),
    ("namespace", "Namespaces: create, describe, list, drop; their tables are named 'ns:table'."),
    ("dml", "Data: put, get, scan, count, delete, counters."),
    ("tools", "Flushes, compactions and regions."),
];

pub const COMMANDS: &[CommandHelp] = &[
    CommandHelp {
        name: "help",
        group: "general",
        usage: "List the commands by group; with a command or group name, its usage. Examples:

  accordion> help
  accordion> help 'get'
  accordion> help 'dml'",
    },
    CommandHelp {
        name: "status",
        group: "general",
        usage: "Show the server's tables, regions, memstore and flush and compaction counts (from its HTTP port); \
                in a cluster, the active master and each live server. HBase's 'summary', 'simple' and \
                'detailed' are accepted (the same summary). Examples:

  accordion> status
  accordion> status 'simple'",
    },
    CommandHelp {
        name: "version",
        group: "general",
        usage: "Show the shell's version and the server's. Example:

  accordion> version",
    },
    CommandHelp {
        name: "table_help",
        group: "general",
        usage: "HBase's shell can keep a table reference (t = get_table 't1') and call the commands on it \
                without the table name (t.put 'r1', 'c1', 'v'; t.scan). This shell keeps no references: \
                name the table in each command, with the same arguments after it. Examples:

  accordion> table_help
  accordion> put 't1', 'r1', 'c1', 'v'
  accordion> scan 't1', LIMIT => 5
  accordion> describe 't1'",
    },
    CommandHelp {
        name: "whoami",
        group: "general",
        usage: "Show the user this shell runs as and what its admin calls carry (a token, a certificate). \
                Example:

  accordion> whoami",
    },
    CommandHelp {
        name: "exit",
        group: "general",
        usage: "Leave the shell (also `quit`, or Ctrl-D); in a script, stop there. Example:

  accordion> exit",
    },
    CommandHelp {
        name: "alter",
        group: "ddl",
        usage: "Change a table's column families: NAME => 'f' with settings (VERSIONS, TTL, BLOOMFILTER, \
                COMPRESSION, IN_MEMORY, BLOCKCACHE, BLOCKSIZE, IN_MEMORY_COMPACTION) changes family f, or adds it \
                with the server's defaults for the rest (INDEX_BLOCK_ENCODING, DATA_BLOCK_ENCODING => 'NONE', \
                KEEP_DELETED_CELLS => false, MIN_VERSIONS, REPLICATION_SCOPE => 0 are what the store does; other \
                values are refused with the reason); 'delete' => 'f' (or METHOD => 'delete') removes it and its \
                data. The table may be enabled: the server flushes it and opens its regions again under the new \
                families, refusing its calls meanwhile (a few seconds). Examples:

  accordion> alter 't1', NAME => 'f1', VERSIONS => 5
  accordion> alter 't1', 'delete' => 'f1'
  accordion> alter 't1', METHOD => 'delete', NAME => 'f1'",
    },
    CommandHelp {
        name: "create",
        group: "ddl",
        usage: "Create a table. Pass the table name, then column families: names, or dictionaries of family \
                options (NAME, VERSIONS, TTL, BLOOMFILTER, COMPRESSION, IN_MEMORY, BLOCKCACHE, BLOCKSIZE, \
                IN_MEMORY_COMPACTION; the encodings, KEEP_DELETED_CELLS, MIN_VERSIONS and REPLICATION_SCOPE only \
                with the one value the store has), and optionally table options: SPLITS => [keys], SPLITS_FILE \
                => 'path' (a key a line), or NUMREGIONS => n with SPLITALGO => 'HexStringSplit', \
                'DecimalStringSplit' or 'UniformSplit' (HBase's RegionSplitter keys). The server's \
                Thrift createTable takes neither split keys nor BLOCKSIZE and IN_MEMORY_COMPACTION, so the shell \
                creates the table, sets those with an admin alter, and splits it at each key through the admin \
                split call. Examples:

  accordion> create 't1', 'f1', 'f2', 'f3'
  accordion> create 't1', {NAME => 'f1', VERSIONS => 5}
  accordion> create 't1', NAME => 'f1', VERSIONS => 5, TTL => 86400
  accordion> create 't1', 'f1', SPLITS => ['10', '20', '30', '40']
  accordion> create 't1', {NAME => 'f1', VERSIONS => 3}, SPLITS => ['b', 'm']
  accordion> create 't1', 'f1', {NUMREGIONS => 15, SPLITALGO => 'HexStringSplit'}
  accordion> create 't1', 'f1', SPLITS_FILE => 'splits.txt'
  accordion> create 't1', {NAME => 'f1', BLOCKSIZE => 16384, IN_MEMORY_COMPACTION => 'ADAPTIVE'}",
    },
    CommandHelp {
        name: "describe",
        group: "ddl",
        usage: "Describe the named table (also `desc`): every family setting, as HBase's shell shows them, \
                with the family's in-memory compaction policy. Example:

  accordion> describe 't1'",
    },
    CommandHelp {
        name: "disable",
        group: "ddl",
        usage: "Disable the named table. Example:

  accordion> disable 't1'",
    },
    CommandHelp {
        name: "drop",
        group: "ddl",
        usage: "Drop the named table; it must be disabled first. Example:

  accordion> drop 't1'",
    },
    CommandHelp {
        name: "enable",
        group: "ddl",
        usage: "Enable the named table. Example:

  accordion> enable 't1'",
    },
    CommandHelp {
        name: "exists",
        group: "ddl",
        usage: "Does the named table exist? Example:

  accordion> exists 't1'",
    },
    CommandHelp {
        name: "is_disabled",
        group: "ddl",
        usage: "Is the named table disabled? Example:

  accordion> is_disabled 't1'",
    },
    CommandHelp {
        name: "is_enabled",
        group: "ddl",
        usage: "Is the named table enabled? Example:

  accordion> is_enabled 't1'",
    },
    CommandHelp {
        name: "list",
        group: "ddl",
        usage: "List the tables; with a regular expression, those whose whole name matches it. Examples:

  accordion> list
  accordion> list 'abc.*'
  accordion> list 't[0-9]'",
    },
    CommandHelp {
        name: "create_namespace",
        group: "namespace",
        usage: "Create a namespace; its tables are then named 'ns:table' in every command. Example:

  accordion> create_namespace 'ns1'
  accordion> create 'ns1:t1', 'f1'",
    },
    CommandHelp {
        name: "describe_namespace",
        group: "namespace",
        usage: "Describe a namespace. Example:

  accordion> describe_namespace 'ns1'",
    },
    CommandHelp {
        name: "drop_namespace",
        group: "namespace",
        usage: "Drop a namespace; it must hold no table, and 'default' and 'hbase' cannot be dropped. Example:

  accordion> drop_namespace 'ns1'",
    },
    CommandHelp {
        name: "list_namespace",
        group: "namespace",
        usage: "List the namespaces ('default' and 'hbase' always exist). Example:

  accordion> list_namespace",
    },
    CommandHelp {
        name: "list_namespace_tables",
        group: "namespace",
        usage: "List the tables of a namespace. Example:

  accordion> list_namespace_tables 'ns1'",
    },
    CommandHelp {
        name: "list_regions",
        group: "ddl",
        usage: "List a table's regions: encoded name, state, start and end keys, file size. Example:

  accordion> list_regions 't1'",
    },
    CommandHelp {
        name: "count",
        group: "dml",
        usage: "Count the rows of a table. The count so far is shown every INTERVAL rows (1000 by default); \
                CACHE is how many rows each call fetches (100 by default). Examples:

  accordion> count 't1'
  accordion> count 't1', INTERVAL => 100000
  accordion> count 't1', CACHE => 1000
  accordion> count 't1', INTERVAL => 10, CACHE => 1000
  accordion> count 't1', FILTER => \"QualifierFilter(>=, 'binary:xyz')\"
  accordion> count 't1', COLUMNS => ['c1', 'c2'], STARTROW => 'abc', STOPROW => 'xyz'",
    },
    CommandHelp {
        name: "delete",
        group: "dml",
        usage: "Delete a cell's versions at or before the timestamp (all of them without one). Examples:

  accordion> delete 't1', 'r1', 'c1'
  accordion> delete 't1', 'r1', 'c1', 1417516188",
    },
    CommandHelp {
        name: "deleteall",
        group: "dml",
        usage: "Delete a whole row, or one column of it, optionally at or before a timestamp. Examples:

  accordion> deleteall 't1', 'r1'
  accordion> deleteall 't1', 'r1', 'c1'
  accordion> deleteall 't1', 'r1', 'c1', 1417516188",
    },
    CommandHelp {
        name: "get",
        group: "dml",
        usage: "Get a row's cells; pass the table name, the row, and optionally columns and a dictionary of \
                COLUMN (or COLUMNS), TIMESTAMP, TIMERANGE, VERSIONS and FILTER. Examples:

  accordion> get 't1', 'r1'
  accordion> get 't1', 'r1', 'c1'
  accordion> get 't1', 'r1', 'c1', 'c2'
  accordion> get 't1', 'r1', ['c1', 'c2']
  accordion> get 't1', 'r1', COLUMN => 'c1'
  accordion> get 't1', 'r1', {COLUMN => ['c1', 'c2', 'c3']}
  accordion> get 't1', 'r1', COLUMN => 'c1', VERSIONS => 4
  accordion> get 't1', 'r1', COLUMN => 'c1', TIMESTAMP => 1417516188, VERSIONS => 4
  accordion> get 't1', 'r1', {TIMERANGE => [1417516188, 1417516288], VERSIONS => 4}
  accordion> get 't1', 'r1', {FILTER => \"ValueFilter(=, 'binary:abc')\"}",
    },
    CommandHelp {
        name: "get_counter",
        group: "dml",
        usage: "Return a counter cell's value (an 8-byte big-endian number, as incr writes it). Example:

  accordion> get_counter 't1', 'r1', 'c1'",
    },
    CommandHelp {
        name: "incr",
        group: "dml",
        usage: "Increment a counter cell by an integer (1 by default). Examples:

  accordion> incr 't1', 'r1', 'c1'
  accordion> incr 't1', 'r1', 'c1', 1
  accordion> incr 't1', 'r1', 'c1', 10",
    },
    CommandHelp {
        name: "put",
        group: "dml",
        usage: "Put a cell's value, optionally at a timestamp. Examples:

  accordion> put 't1', 'r1', 'c1', 'value'
  accordion> put 't1', 'r1', 'c1', 'value', 1417516188",
    },
    CommandHelp {
        name: "scan",
        group: "dml",
        usage: "Scan a table; pass the table name and optionally a dictionary of scanner specifications: \
                COLUMNS (or COLUMN), STARTROW, STOPROW (or ENDROW), LIMIT, FILTER, ROWPREFIXFILTER, REVERSED, CACHE, \
                VERSIONS, TIMERANGE, TIMESTAMP. RAW is refused (reads drop delete markers). Examples:

  accordion> scan 't1'
  accordion> scan 't1', LIMIT => 5
  accordion> scan 't1', COLUMNS => ['c1', 'c2'], LIMIT => 10, STARTROW => 'xyz'
  accordion> scan 't1', STARTROW => 'a', STOPROW => 'c', COLUMNS => ['f']
  accordion> scan 't1', {ROWPREFIXFILTER => 'row2', REVERSED => true}
  accordion> scan 't1', {VERSIONS => 3, TIMERANGE => [1303668804000, 1303668904000]}
  accordion> scan 't1', FILTER => \"(PrefixFilter('row2') AND (QualifierFilter(>=, 'binary:xyz')))\"",
    },
    CommandHelp {
        name: "truncate",
        group: "dml",
        usage: "Disable, drop and recreate the table with the same column families and settings (those the \
                server's Thrift column descriptors carry). Example:

  accordion> truncate 't1'",
    },
    CommandHelp {
        name: "assign",
        group: "tools",
        usage: "Open a closed region again, by its encoded name or full name (table,startkey,id) (in a cluster, through the active master, on \
                the least loaded server). Example:

  accordion> assign '0000000000000002'",
    },
    CommandHelp {
        name: "close_region",
        group: "tools",
        usage: "Close a region, by its encoded name or full name (the same as unassign). Example:

  accordion> close_region '0000000000000002'",
    },
    CommandHelp {
        name: "compact",
        group: "tools",
        usage: "Compact all regions of a table, or one region (encoded or full name); with a column family, \
                only that family's files. Examples:

  accordion> compact 't1'
  accordion> compact 't1', 'c1'
  accordion> compact 'r1'
  accordion> compact 'r1', 'c1'",
    },
    CommandHelp {
        name: "flush",
        group: "tools",
        usage: "Flush all regions of a table. Example:

  accordion> flush 't1'",
    },
    CommandHelp {
        name: "get_splits",
        group: "tools",
        usage: "Show a table's split keys (each region's start key but the first). Example:

  accordion> get_splits 't1'",
    },
    CommandHelp {
        name: "locate_region",
        group: "tools",
        usage: "Show the region holding a row and the server serving it. Example:

  accordion> locate_region 't1', 'row1'",
    },
    CommandHelp {
        name: "major_compact",
        group: "tools",
        usage: "Major compact all regions of a table, or one region (encoded or full name); with a column \
                family, only that family's files. Examples:

  accordion> major_compact 't1'
  accordion> major_compact 't1', 'c1'
  accordion> major_compact 'r1', 'c1'",
    },
    CommandHelp {
        name: "balancer",
        group: "tools",
        usage: "In a cluster, run the balancer now, through the active master: it moves regions from the most \
                to the least loaded servers when it is switched on and no region is in transition, and says \
                true and what it moved, or false and why not. Example:

  accordion> balancer",
    },
    CommandHelp {
        name: "balance_switch",
        group: "tools",
        usage: "In a cluster, switch the periodic balancer on or off (kept in ZooKeeper, so a new active \
                master keeps it); prints the previous state. Examples:

  accordion> balance_switch false
  accordion> balance_switch true",
    },
    CommandHelp {
        name: "move",
        group: "tools",
        usage: "In a cluster, move a region, by its encoded name or full name (table,startkey,id), to the named server (host,port,startcode, as \
                status lists them) or, without one, to the least loaded other server; through the active master. \
                Examples:

  accordion> move '0000010000000002'
  accordion> move '0000010000000002', '127.0.0.1,4242,1764150000000'",
    },
    CommandHelp {
        name: "merge_region",
        group: "tools",
        usage: "Merge two adjacent regions, by their encoded names or full names (table,startkey,id). Example:

  accordion> merge_region '0000000000000002', '0000000000000003'",
    },
    CommandHelp {
        name: "split",
        group: "tools",
        usage: "Split each region of a table at its midpoint, or the region holding a key at that key. \
                Examples:

  accordion> split 't1'
  accordion> split 't1', 'splitKey'",
    },
    CommandHelp {
        name: "unassign",
        group: "tools",
        usage: "Close a region, by its encoded name or full name, until assign opens it again (in a cluster, through the \
                active master). Example:

  accordion> unassign '0000000000000002'",
    },
];

/// Other names a command answers to.
pub const ALIASES: &[(&str, &str)] = &[("desc", "describe"), ("quit", "exit")];

/// The entry of `name` (or of the command it is an alias of).
pub fn find(name: &str) -> Option<&'static CommandHelp> {
    let name = ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, real)| real);
    COMMANDS.iter().find(|c| c.name == name)
}

/// `help`: the commands by group.
pub fn overview() -> String {
    let mut out = String::from(
        "Accordion shell: HBase shell's commands against an accordion server.\n\
         Type 'help \"COMMAND\"', (e.g. 'help \"get\"' -- the quotes are necessary) for help on a specific command.\n\
         Commands are grouped. Type 'help \"COMMAND_GROUP\"', (e.g. 'help \"general\"') for help on a command group.\n\
         \n\
         COMMAND GROUPS:\n",
    );
    for (group, _) in GROUPS {
        let mut names: Vec<&str> = COMMANDS.iter().filter(|c| c.group == *group).map(|c| c.name).collect();
        names.sort_unstable();
        out.push_str(&format!("  Group name: {group}\n  Commands: {}\n\n", names.join(", ")));
    }
    out.push_str(
        "SHELL USAGE:\n\
         Quote all names such as table and column names; commas delimit arguments; dictionaries of options\n\
         take KEY => value pairs, in braces or, as the last arguments, without:\n\
         \n\
         \x20 accordion> get 't1', 'r1', {COLUMN => 'f:q', VERSIONS => 3}\n\
         \x20 accordion> get 't1', 'r1', COLUMN => 'f:q', VERSIONS => 3\n",
    );
    out
}

/// Help text is wrapped to this width, as HBase's is.
const WIDTH: usize = 78;

/// `usage` with its prose lines wrapped at word boundaries to [`WIDTH`];
/// the indented example lines are left as they are.
fn wrapped(usage: &str) -> String {
    let mut out = String::new();
    for line in usage.lines() {
        if line.starts_with(' ') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut width = 0;
        for word in line.split_whitespace() {
            if width > 0 && width + 1 + word.len() > WIDTH {
                out.push('\n');
                width = 0;
            } else if width > 0 {
                out.push(' ');
                width += 1;
            }
            out.push_str(word);
            width += word.len();
        }
        out.push('\n');
    }
    out
}

/// `help 'name'`: a command's usage, or every command of a group.
pub fn topic(name: &str) -> Option<String> {
    if let Some(c) = find(name) {
        return Some(wrapped(c.usage));
    }
    let (group, about) = GROUPS.iter().find(|(g, _)| *g == name)?;
    let mut out = format!("Command group: {group} -- {about}\n");
    for c in COMMANDS.iter().filter(|c| c.group == *group) {
        out.push_str(&format!("\nCommand: {}\n{}", c.name, wrapped(c.usage)));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_known_group_and_examples() {
        for c in COMMANDS {
            assert!(GROUPS.iter().any(|(g, _)| *g == c.group), "{} is in no group", c.name);
            assert!(c.usage.contains(&format!("accordion> {}", c.name)), "{} has no example", c.name);
        }
        assert_eq!(find("desc").map(|c| c.name), Some("describe"));
        assert!(topic("dml").is_some_and(|t| t.contains("Command: get_counter")));
        assert!(topic("nope").is_none());
        let get = topic("get").expect("get's help");
        assert!(get.lines().filter(|l| !l.starts_with(' ')).all(|l| l.len() <= WIDTH), "{get}");
        assert!(get.contains("\n\n  accordion> get 't1', 'r1'\n"), "{get}");
        assert!(overview().contains("  Group name: dml\n  Commands: count, delete, deleteall, get, get_counter"));
    }
}
