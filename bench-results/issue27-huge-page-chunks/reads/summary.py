#!/usr/bin/env python3
"""Per binary and workload (a, c): every round's ops/s and server CPU µs/op, medians, ratio s52 / handlers."""
import glob, json, statistics
res = {}
for f in sorted(glob.glob("*-*.json")):
    b = f.split("-")[0]
    for p in json.load(open(f))["runs"][0]["phases"]:
        if p["workload"] in ("a", "c"):
            ops = sum(o["operations"] for o in p["result"]["ops"].values())
            res.setdefault((b, p["workload"]), []).append((p["result"]["throughput_ops_per_sec"], p["server_cpu_seconds"] / ops * 1e6))
for (b, w), rows in sorted(res.items()):
    print(f"{b} {w}: " + ", ".join(f"{t:.0f} ops/s {c:.1f} µs" for t, c in rows))
for w in ("a", "c"):
    if ("s52", w) in res and ("handlers", w) in res:
        m = lambda k, i: statistics.median(r[i] for r in res[(k, w)])
        print(f"{w}: huge / base {m('s52', 0) / m('handlers', 0):.3f}x ops/s, {m('s52', 1) / m('handlers', 1):.3f}x server CPU per op")
