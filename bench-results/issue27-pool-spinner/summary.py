#!/usr/bin/env python3
"""Medians of run.sh's rounds per side: ops/s and server CPU per operation for load, A, C and write,
and each side's ratio to base."""
import glob, re, statistics
rows = {}
for f in sorted(glob.glob("*-r*.txt")):
    side = f.split("-")[0]
    for line in open(f):
        m = re.match(r"accordion\s+(load|a|c|write)\s+(\d+) ops/s.*server (\d+) client (\d+)", line)
        if m:
            rows.setdefault((m.group(1), side), []).append((int(m.group(2)), int(m.group(3)), int(m.group(4)), f))
for w in ("load", "a", "c", "write"):
    med = {}
    for side in ("base", "borrow", "spin"):
        runs = rows.get((w, side), [])
        if not runs:
            continue
        print(f"{w} {side}: " + ", ".join(f"{o} ops/s (server {s} µs, client {c} µs) [{f}]" for o, s, c, f in runs))
        med[side] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    for side in ("borrow", "spin"):
        if side in med and "base" in med:
            b, n = med["base"], med[side]
            print(f"{w} {side} / base medians: ops/s {b[0]:.0f} -> {n[0]:.0f} ({n[0] / b[0]:.2f}x); "
                  f"server µs/op {b[1]:.1f} -> {n[1]:.1f} ({n[1] / b[1]:.2f}x)")
    print()
