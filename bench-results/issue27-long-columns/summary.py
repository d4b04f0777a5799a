#!/usr/bin/env python3
"""Medians of run.sh's rounds: ops/s and server CPU per operation for A and C, base against new."""
import glob, re, statistics
rows = {}
for f in sorted(glob.glob("*-r*.txt")):
    side = f.split("-")[0]
    for line in open(f):
        m = re.match(r"accordion\s+(a|c)\s+(\d+) ops/s.*server (\d+) client (\d+)", line)
        if m:
            rows.setdefault((m.group(1), side), []).append((int(m.group(2)), int(m.group(3)), int(m.group(4)), f))
for w in ("a", "c"):
    med = {}
    for side in ("base", "new"):
        runs = rows.get((w, side), [])
        print(f"{w} {side}: " + ", ".join(f"{o} ops/s (server {s} µs, client {c} µs) [{f}]" for o, s, c, f in runs))
        med[side] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    print(f"{w} medians: ops/s {med['base'][0]:.0f} -> {med['new'][0]:.0f} ({med['new'][0] / med['base'][0]:.2f}x); "
          f"server µs/op {med['base'][1]:.1f} -> {med['new'][1]:.1f} ({med['new'][1] / med['base'][1]:.2f}x)")
