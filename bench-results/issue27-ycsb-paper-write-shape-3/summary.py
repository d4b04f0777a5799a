#!/usr/bin/env python3
"""Per invocation (runs-N.json): ours and HBase's throughput and ratio for the load and the write phase,
each side's server and client CPU per operation, bytes the server wrote to disk per operation, p99, and
each server's peak RSS."""
import glob, json
for f in sorted(glob.glob("runs-*.json")):
    doc = json.load(open(f))
    out, rss = {}, {}
    for run in doc["runs"]:
        rss[run["engine"]] = (run["server_peak_rss_bytes"] or 0) >> 20
        for p in run["phases"]:
            ops = sum(o["operations"] for o in p["result"]["ops"].values() if o is not None)
            p99 = max((o.get("p99_us") or 0) for o in p["result"]["ops"].values())
            out[(run["engine"], p["workload"])] = (p["result"]["throughput_ops_per_sec"],
                                                   p["server_cpu_seconds"] / ops * 1e6,
                                                   p["client_cpu_seconds"] / ops * 1e6,
                                                   (p.get("server_disk_write_bytes") or 0) / ops, p99)
    for w in ("load", "write"):
        a, h = out[("accordion", w)], out[("hbase", w)]
        print(f"{f} {w}: ours {a[0]:.0f} ops/s, HBase {h[0]:.0f}, ours/HBase {a[0] / h[0]:.2f}; "
              f"server CPU µs/op {a[1]:.2f} / {h[1]:.2f}; client CPU µs/op {a[2]:.2f} / {h[2]:.2f}; "
              f"disk bytes/op {a[3]:.0f} / {h[3]:.0f}; p99 µs {a[4]} / {h[4]}")
    print(f"{f} peak RSS MiB: ours {rss['accordion']}, HBase {rss['hbase']}")
