#!/usr/bin/env python3
"""Embedded YCSB B, ours only: base (acc-s50) against the long-column build (acc-s50), six alternating rounds."""
import statistics
for b in ("acc-s50", "acc-fwd"):
    ops, cpu = [], []
    for r in range(1, 13):
        for line in open(f"{b}-r{r}.txt"):
            f = line.split()
            if len(f) > 16 and f[0] == "accordion" and f[2] == "ycsb-b":
                ops.append(int(f[4])); cpu.append(float(f[16]))
    print(f"{b}: ops/s {ops} median {statistics.median(ops):.0f}; CPU µs/op {cpu} median {statistics.median(cpu):.2f}")
