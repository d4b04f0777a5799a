"""The real happybase client against a running `accordion server`.

Usage: client_suite.py HOST PORT TRANSPORT PROTOCOL MODE [ARGS]
  MODE suite          every check below, on tables prefixed by the wire name
  MODE write N T      writes rows 0..N-1 of table T (created if missing)
  MODE verify N T     checks rows 0..N-1 of table T are all there

Each check raises on failure; the script prints one line per check and a
closing "N passed, M failed" line, and exits non-zero if any failed.
"""

import struct
import sys
import time
import traceback

import happybase
from Hbase_thrift import AlreadyExists, IOError as HBaseIOError  # happybase loads the IDL as this module
from thriftpy2.thrift import TApplicationException

HOST, PORT, TRANSPORT, PROTOCOL, MODE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]


def connect(prefix=None):
    return happybase.Connection(HOST, PORT, transport=TRANSPORT, protocol=PROTOCOL, table_prefix=prefix, timeout=30000)


def eq(got, want, what=""):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def raises(exc, fn, contains=None):
    try:
        fn()
    except exc as e:
        text = str(getattr(e, "message", e))
        if contains is not None and contains not in text:
            raise AssertionError(f"{exc.__name__} raised, but {contains!r} not in {text!r}")
        return e
    raise AssertionError(f"{exc.__name__} not raised")


def fresh_table(conn, name, families):
    if name.encode() in [t for t in conn.tables()]:
        conn.delete_table(name, disable=True)
    conn.create_table(name, families)
    return conn.table(name)


def check_tables(conn):
    t = fresh_table(conn, "tables", {"cf": dict(max_versions=5), "other": dict()})
    names = conn.tables()
    assert b"tables" in names, names
    fams = t.families()
    eq(sorted(fams), [b"cf", b"other"], "families")
    eq(fams[b"cf"]["max_versions"], 5, "cf max_versions")
    raises(AlreadyExists, lambda: conn.create_table("tables", {"cf": {}}))
    assert conn.is_table_enabled("tables")
    conn.disable_table("tables")
    assert not conn.is_table_enabled("tables")
    raises(HBaseIOError, lambda: t.put(b"r", {b"cf:a": b"1"}), contains="TableNotEnabledException")
    conn.enable_table("tables")
    t.put(b"r", {b"cf:a": b"1"})
    conn.delete_table("tables", disable=True)
    assert b"tables" not in conn.tables()
    raises(HBaseIOError, lambda: conn.table("tables").row(b"r"), contains="TableNotFoundException")


def check_put_get_versions(conn):
    t = fresh_table(conn, "data", {"cf": dict(max_versions=3), "cf2": dict(max_versions=1)})
    t.put(b"r1", {b"cf:a": b"v1"}, timestamp=100)
    t.put(b"r1", {b"cf:a": b"v2"}, timestamp=200)
    t.put(b"r1", {b"cf:a": b"v3", b"cf:b": b"b1", b"cf2:x": b"x1"}, timestamp=300)
    eq(t.row(b"r1"), {b"cf:a": b"v3", b"cf:b": b"b1", b"cf2:x": b"x1"}, "row")
    eq(t.row(b"r1", columns=[b"cf:a"]), {b"cf:a": b"v3"}, "row columns")
    eq(t.row(b"r1", columns=[b"cf2"]), {b"cf2:x": b"x1"}, "row family")
    eq(t.row(b"r1", timestamp=300), {b"cf:a": b"v2"}, "row before ts (exclusive)")
    eq(t.row(b"r1", include_timestamp=True)[b"cf:b"], (b"b1", 300), "row with timestamps")
    eq(t.cells(b"r1", b"cf:a", versions=3), [b"v3", b"v2", b"v1"], "three versions")
    eq(t.cells(b"r1", b"cf:a", versions=2, include_timestamp=True), [(b"v3", 300), (b"v2", 200)], "cells ts")
    eq(t.cells(b"r1", b"cf:a", versions=5, timestamp=250), [b"v2", b"v1"], "cells before ts")
    t.put(b"r1", {b"cf:a": b"v4"}, timestamp=400)
    eq(t.cells(b"r1", b"cf:a", versions=10), [b"v4", b"v3", b"v2"], "max_versions=3 keeps three")
    eq(t.row(b"missing"), {}, "missing row")
    t.put(b"r2", {b"cf:a": b"two"})
    t.put(b"r3", {b"cf:a": b"three"})
    rows = t.rows([b"r3", b"missing", b"r2"])
    eq([k for k, _ in rows], [b"r3", b"r2"], "rows skips missing, keeps order")
    eq(dict(t.rows([b"r2"], columns=[b"cf:a"]))[b"r2"], {b"cf:a": b"two"}, "rows columns")
    raises(HBaseIOError, lambda: t.put(b"r1", {b"nofam:a": b"1"}), contains="NoSuchColumnFamilyException")
    big = b"x" * (1 << 20)
    t.put(b"big", {b"cf:v": big})
    eq(t.row(b"big")[b"cf:v"], big, "1 MiB value round trip")


def check_scans(conn):
    t = fresh_table(conn, "scans", {"cf": dict(), "meta": dict()})
    with t.batch(batch_size=50) as b:
        for i in range(200):
            b.put(b"row%03d" % i, {b"cf:a": b"%d" % i, b"cf:b": b"b%d" % (i % 7), b"meta:m": b"m"})
    eq(len(list(t.scan())), 200, "full scan")
    keys = [k for k, _ in t.scan(row_start=b"row010", row_stop=b"row020")]
    eq(keys, [b"row%03d" % i for i in range(10, 20)], "start/stop")
    keys = [k for k, _ in t.scan(row_prefix=b"row15")]
    eq(keys, [b"row%03d" % i for i in range(150, 160)], "prefix")
    eq([d for _, d in t.scan(row_prefix=b"row001", columns=[b"cf:a"])], [{b"cf:a": b"1"}], "columns")
    eq(len(list(t.scan(limit=7))), 7, "limit")
    eq(len(list(t.scan(batch_size=3))), 200, "batch size (scanner caching)")
    keys = [k for k, _ in t.scan(reverse=True, limit=3)]
    eq(keys, [b"row199", b"row198", b"row197"], "reverse")
    keys = [k for k, _ in t.scan(row_start=b"row005", reverse=True)]
    eq(keys, [b"row%03d" % i for i in range(5, -1, -1)], "reverse from a start row")
    ts_row = next(iter(t.scan(row_prefix=b"row000", include_timestamp=True)))[1]
    assert isinstance(ts_row[b"cf:a"], tuple), ts_row
    sorted_row = next(iter(t.scan(row_prefix=b"row000", sorted_columns=True)))[1]
    eq(list(sorted_row.keys()), [b"cf:a", b"cf:b", b"meta:m"], "sorted columns")
    # Filters in HBase's filter language.
    eq([k for k, _ in t.scan(filter=b"ValueFilter(=, 'binary:42')")], [b"row042"], "ValueFilter")
    eq(len(list(t.scan(filter=b"PrefixFilter('row19')"))), 10, "PrefixFilter")
    keys = [k for k, _ in t.scan(filter=b"PrefixFilter('row19')", reverse=True)]
    eq(keys, [b"row%03d" % i for i in range(199, 189, -1)], "PrefixFilter on a reverse scan")
    keys = [k for k, _ in t.scan(filter=b"PrefixFilter('row05') OR PrefixFilter('row15')", reverse=True)]
    eq(len(keys), 20, "OR of prefixes, reverse")
    eq(dict(t.scan(row_prefix=b"row001", filter=b"KeyOnlyFilter()"))[b"row001"][b"cf:a"], b"", "KeyOnlyFilter")
    eq(len(dict(t.scan(row_prefix=b"row001", filter=b"FirstKeyOnlyFilter()"))[b"row001"]), 1, "FirstKeyOnlyFilter")
    eq(sorted(dict(t.scan(row_prefix=b"row001", filter=b"ColumnPrefixFilter('b')"))[b"row001"]), [b"cf:b"], "ColumnPrefixFilter")
    eq(sorted(dict(t.scan(row_prefix=b"row001", filter=b"QualifierFilter(=, 'binary:m')"))[b"row001"]), [b"meta:m"], "QualifierFilter")
    scvf = b"SingleColumnValueFilter('cf', 'b', =, 'binary:b3')"
    eq(len(list(t.scan(filter=scvf))), len([i for i in range(200) if i % 7 == 3]), "SingleColumnValueFilter")
    eq(len(list(t.scan(filter=b"PageFilter(5)"))), 5, "PageFilter")
    both = b"PrefixFilter('row1') AND (ValueFilter(=, 'binary:b0') OR ValueFilter(=, 'binary:b1'))"
    got = dict(t.scan(filter=both))
    assert got and all(k.startswith(b"row1") for k in got), got
    # A filter string that does not parse: HBase's gateway raises
    # TApplicationException ("Internal error processing scannerOpenWithScan");
    # ours is the same, naming the cause.
    raises(TApplicationException, lambda: list(t.scan(filter=b"FuzzyRowFilter('x')")), contains="FuzzyRowFilter")
    raises(TApplicationException, lambda: list(t.scan(filter=b"ValueFilter(=")), contains="malformed")


def check_batches_and_deletes(conn):
    t = fresh_table(conn, "batches", {"cf": dict(max_versions=3)})
    with t.batch() as b:
        b.put(b"a", {b"cf:x": b"1", b"cf:y": b"2"})
        b.put(b"b", {b"cf:x": b"3"})
        b.delete(b"b", columns=[b"cf:x"])
    eq(t.row(b"a"), {b"cf:x": b"1", b"cf:y": b"2"}, "batch puts")
    # A transaction that fails sends nothing.
    try:
        with t.batch(transaction=True) as b:
            b.put(b"tx", {b"cf:x": b"1"})
            raise ValueError("abort")
    except ValueError:
        pass
    eq(t.row(b"tx"), {}, "aborted transaction sends nothing")
    with t.batch(transaction=True) as b:
        b.put(b"tx", {b"cf:x": b"1"})
    eq(t.row(b"tx"), {b"cf:x": b"1"}, "committed transaction")
    with t.batch(batch_size=10) as b:
        for i in range(95):
            b.put(b"bs%02d" % i, {b"cf:x": b"%d" % i})
    eq(len(list(t.scan(row_prefix=b"bs"))), 95, "batch_size sends every row")
    t.delete(b"a", columns=[b"cf:x"])
    eq(t.row(b"a"), {b"cf:y": b"2"}, "delete a column")
    t.put(b"c", {b"cf:x": b"old"}, timestamp=10)
    t.put(b"c", {b"cf:x": b"new"}, timestamp=20)
    t.delete(b"c", columns=[b"cf:x"], timestamp=10)
    eq(t.cells(b"c", b"cf:x", versions=3), [b"new"], "delete versions at or below a timestamp")
    t.delete(b"a")
    eq(t.row(b"a"), {}, "delete a row")
    t.put(b"d", {b"cf:x": b"1", b"cf:y": b"2"})
    t.delete(b"d", columns=[b"cf"])
    eq(t.row(b"d"), {}, "delete a family")


def check_counters(conn):
    t = fresh_table(conn, "counters", {"cf": dict()})
    eq(t.counter_get(b"c", b"cf:n"), 0, "missing counter is 0")
    eq(t.counter_inc(b"c", b"cf:n"), 1, "inc")
    eq(t.counter_inc(b"c", b"cf:n", value=41), 42, "inc by 41")
    eq(t.counter_dec(b"c", b"cf:n", value=2), 40, "dec")
    t.counter_set(b"c", b"cf:m", 7)
    eq(t.counter_get(b"c", b"cf:m"), 7, "set")
    # Issue 29, item 7: increments within a few ms run ahead of the clock
    # (each one ms past the version it read, as HBase stamps them); a set
    # right after lands at or above them, so it reads back (HBase 2.6.4's
    # gateway: 7 on 20 of 20 tries; ours was 40 on 20 of 20).
    for i in range(20):
        row = b"fast%d" % i
        t.counter_inc(row, b"cf:n")
        t.counter_inc(row, b"cf:n", value=41)
        t.counter_dec(row, b"cf:n", value=2)
        eq(t.counter_get(row, b"cf:n"), 40, "fast increments")
        t.counter_set(row, b"cf:n", 7)
        eq(t.counter_get(row, b"cf:n"), 7, "a set right after increments")
        eq(t.counter_inc(row, b"cf:n"), 8, "an increment after the set")
    eq(t.row(b"c")[b"cf:n"], struct.pack(">q", 40), "stored as an 8-byte big-endian long")


def check_regions_and_compaction(conn):
    t = fresh_table(conn, "admin", {"cf": dict()})
    for i in range(50):
        t.put(b"k%02d" % i, {b"cf:v": b"v"})
    regions = t.regions()
    assert len(regions) >= 1 and regions[0]["start_key"] == b"", regions
    conn.compact_table("admin")
    conn.compact_table("admin", major=True)
    eq(len(list(t.scan())), 50, "rows survive compaction")


CHECKS = [check_tables, check_put_get_versions, check_scans, check_batches_and_deletes, check_counters,
          check_regions_and_compaction]


def suite():
    prefix = f"{TRANSPORT}_{PROTOCOL}"
    conn = connect(prefix)
    passed = failed = 0
    for check in CHECKS:
        try:
            check(conn)
            passed += 1
            print(f"ok   {prefix} {check.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {prefix} {check.__name__}")
            traceback.print_exc(file=sys.stdout)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def write(n, table):
    conn = connect()
    if table.encode() not in conn.tables():
        conn.create_table(table, {"cf": dict()})
    t = conn.table(table)
    # Half one row per call (mutateRow), half in batches (mutateRows, one
    # WAL sync per batch): both must survive a kill once acknowledged.
    for i in range(n // 2):
        t.put(b"r%06d" % i, {b"cf:v": b"value-%d" % i})
    with t.batch(batch_size=50) as b:
        for i in range(n // 2, n):
            b.put(b"r%06d" % i, {b"cf:v": b"value-%d" % i})
    print(f"wrote {n}")


def verify(n, table):
    t = connect().table(table)
    got = {k: d for k, d in t.scan()}
    missing = [i for i in range(n) if got.get(b"r%06d" % i, {}).get(b"cf:v") != b"value-%d" % i]
    if missing:
        print(f"missing {len(missing)} rows, first {missing[:5]}")
        sys.exit(1)
    print(f"verified {n}")


if __name__ == "__main__":
    if MODE == "suite":
        suite()
    elif MODE == "write":
        write(int(sys.argv[6]), sys.argv[7])
    elif MODE == "verify":
        verify(int(sys.argv[6]), sys.argv[7])
    else:
        sys.exit(f"unknown mode {MODE}")
