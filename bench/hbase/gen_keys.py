#!/usr/bin/env python3
"""Writes a keys file and a split-keys file for bench/hbase/run.sh.

Both files are sequences of records [u32 big-endian length][key bytes].
Keys follow YCSB: key = "user" + fnv64(item). The item of each operation is
  zipfian:  item = fnv64(rank) % keyspace, rank from YCSB's zipfian (theta 0.99)
            (YCSB's scrambled zipfian, as crates/bench/src/keys.rs)
  uniform:  item uniform in [0, keyspace)
  sequential: item = i % keyspace
Split keys divide the sorted keys of items 0..min(keyspace, 2M) evenly into
`regions` regions, as crates/bench/src/presets.rs does.
"""
import argparse
import random
import struct

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 1099511628211
M64 = (1 << 64) - 1


def fnv64(val):
    h = FNV_OFFSET
    for _ in range(8):
        h ^= val & 0xFF
        val >>= 8
        h = (h * FNV_PRIME) & M64
    if h >= 1 << 63:  # Java's Math.abs of the signed long (as Rust's wrapping_abs)
        h = ((1 << 64) - h) & M64
    return h


def key(item):
    return b"user" + str(fnv64(item)).encode()


class Zipfian:
    def __init__(self, items, theta=0.99):
        self.items = items
        zeta2 = 1.0 + 1.0 / 2 ** theta
        zetan = 0.0
        for i in range(1, items + 1):
            zetan += 1.0 / i ** theta
        self.zetan = zetan
        self.alpha = 1.0 / (1.0 - theta)
        self.eta = (1.0 - (2.0 / items) ** (1.0 - theta)) / (1.0 - zeta2 / zetan)
        self.half_pow_theta = 0.5 ** theta

    def next_rank(self, rng):
        u = rng.random()
        uz = u * self.zetan
        if uz < 1.0:
            return 0
        if uz < 1.0 + self.half_pow_theta:
            return 1
        r = int(self.items * (self.eta * u - self.eta + 1.0) ** self.alpha)
        return min(r, self.items - 1)


def write_records(path, keys):
    with open(path, "wb") as f:
        for k in keys:
            f.write(struct.pack(">I", len(k)))
            f.write(k)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, required=True)
    ap.add_argument("--keyspace", type=int, default=1_000_000)
    ap.add_argument("--regions", type=int, default=1)
    ap.add_argument("--dist", choices=["zipfian", "uniform", "sequential"], default="zipfian")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--keys", required=True, help="output keys file")
    ap.add_argument("--splits", required=True, help="output split-keys file")
    a = ap.parse_args()

    rng = random.Random(a.seed)
    if a.dist == "zipfian":
        z = Zipfian(a.keyspace)
        items = (fnv64(z.next_rank(rng)) % a.keyspace for _ in range(a.ops))
    elif a.dist == "uniform":
        items = (rng.randrange(a.keyspace) for _ in range(a.ops))
    else:
        items = (i % a.keyspace for i in range(a.ops))
    write_records(a.keys, (key(i) for i in items))

    n = min(a.keyspace, 2_000_000)
    allk = sorted(key(i) for i in range(n))
    write_records(a.splits, [allk[i * len(allk) // a.regions] for i in range(1, a.regions)])


if __name__ == "__main__":
    main()
