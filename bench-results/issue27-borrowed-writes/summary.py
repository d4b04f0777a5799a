#!/usr/bin/env python3
"""Medians of run.sh's rounds: throughput and server/client CPU per operation for the load and the
write phase, base against new (from each run's JSON)."""
import glob, json, statistics
rows = {}
for f in sorted(glob.glob("*-r*.json")):
    side = f.split("-")[0]
    for phase in json.load(open(f))["runs"][0]["phases"]:
        ops = sum(o["operations"] for o in phase["result"]["ops"].values())
        rows.setdefault((phase["workload"], side), []).append((
            phase["result"]["throughput_ops_per_sec"],
            phase["server_cpu_seconds"] / ops * 1e6,
            phase["client_cpu_seconds"] / ops * 1e6,
            f,
        ))
for w in ("load", "write"):
    med = {}
    for side in ("base", "new"):
        runs = rows.get((w, side), [])
        print(f"{w} {side}: " + ", ".join(f"{o:.0f} ops/s (server {s:.2f} µs, client {c:.2f} µs) [{f}]" for o, s, c, f in runs))
        med[side] = tuple(statistics.median(r[k] for r in runs) for k in range(3))
    b, n = med["base"], med["new"]
    print(f"{w} medians of {len(rows[(w, 'new')])}: ops/s {b[0]:.0f} -> {n[0]:.0f} ({n[0] / b[0]:.3f}x); "
          f"server µs/op {b[1]:.2f} -> {n[1]:.2f} ({n[1] / b[1]:.3f}x); client µs/op {b[2]:.2f} -> {n[2]:.2f}")
    print()
