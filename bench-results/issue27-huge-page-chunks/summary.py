#!/usr/bin/env python3
"""Per binary: every round's write-phase updates/s and server CPU µs per update, their medians, and the
ratios huge / handlers (the base); peak RSS per round."""
import glob, json, statistics
res = {}
for f in sorted(glob.glob("*-*.json")):
    b = f.split("-")[0]
    run = json.load(open(f))["runs"][0]
    p = [p for p in run["phases"] if p["workload"] == "write"][0]
    ops = p["result"]["ops"]["UPDATE"]["operations"]
    res.setdefault(b, []).append((p["result"]["throughput_ops_per_sec"], p["server_cpu_seconds"] / ops * 1e6,
                                  run["server_peak_rss_bytes"] >> 20, f))
for b, rows in res.items():
    for r in rows:
        print(f"{r[3]}: {r[0]:.0f} updates/s, server {r[1]:.2f} µs/update, peak RSS {r[2]} MiB")
med = {b: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)) for b, rows in res.items()}
for b, (t, c) in med.items():
    print(f"{b}: {len(res[b])} rounds, median {t:.0f} updates/s, {c:.2f} µs/update")
if "huge" in med and "handlers" in med:
    print(f"huge / handlers: {med['huge'][0] / med['handlers'][0]:.3f}x updates/s, "
          f"{med['huge'][1] / med['handlers'][1]:.3f}x server CPU per update")
