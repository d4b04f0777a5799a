#!/usr/bin/env python3
"""Per phase: each binary's ops/s, server and client CPU µs/op per round (from NAME-R.json in the current
directory), and the new/old ratio of their medians. Usage: summary.py OLD NEW"""
import glob, json, statistics, sys
old, new = sys.argv[1], sys.argv[2]
def load(name):
    out = {}
    for f in sorted(glob.glob(f"{name}-*.json")):
        for run in json.load(open(f))["runs"]:
            for p in run["phases"]:
                ops = sum(o["operations"] for o in p["result"]["ops"].values() if o is not None)
                out.setdefault(p["workload"], []).append((p["result"]["throughput_ops_per_sec"],
                    p["server_cpu_seconds"] / ops * 1e6, p["client_cpu_seconds"] / ops * 1e6))
    return out
a, b = load(old), load(new)
for w in a:
    for i, what in ((0, "ops/s"), (1, "server CPU µs/op"), (2, "client CPU µs/op")):
        xa, xb = [r[i] for r in a[w]], [r[i] for r in b[w]]
        ma, mb = statistics.median(xa), statistics.median(xb)
        print(f"{w:5} {what:17} {old}: {' '.join(f'{x:.0f}' for x in xa):28} {new}: {' '.join(f'{x:.0f}' for x in xb):28} "
              f"medians {ma:.0f} -> {mb:.0f} ({mb / ma:.3f}x)")
