#!/usr/bin/env python3
"""Per round: ours and HBase's throughput, ratio, and each side's server and client CPU per operation."""
import glob, json
for f in sorted(glob.glob("r*.json")):
    out = {}
    for run in json.load(open(f))["runs"]:
        for p in run["phases"]:
            ops = sum(o["operations"] for o in p["result"]["ops"].values())
            out[(run["engine"], p["workload"])] = (p["result"]["throughput_ops_per_sec"],
                                                   p["server_cpu_seconds"] / ops * 1e6, p["client_cpu_seconds"] / ops * 1e6)
    for w in ("load", "write"):
        a, h = out[("accordion", w)], out[("hbase", w)]
        print(f"{f} {w}: ours {a[0]:.0f} ops/s, HBase {h[0]:.0f}, ours/HBase {a[0] / h[0]:.2f}; "
              f"server CPU µs/op {a[1]:.2f} / {h[1]:.2f}; client CPU µs/op {a[2]:.2f} / {h[2]:.2f}")
