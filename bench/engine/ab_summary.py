#!/usr/bin/env python3
"""Summarises ab_engine.sh output: per round, B / A decode tok/s at 1 and 16 streams and each
binary's 16 / 1 ratio; prints the per-round values and their medians, and each side's median tok/s.
"""
import collections
import statistics
import sys

runs = collections.defaultdict(dict)  # (round, level) -> side -> tok/s
for line in open(sys.argv[1]):
    r, side, level, tok_s = line.split()
    runs[(int(r), level)][side] = float(tok_s)
rounds = sorted({r for r, _ in runs})


def show(name, values):
    print(f"{name}: median {statistics.median(values):.3f}  per round "
          + " ".join(f"{v:.2f}" for v in values))


for level in ("c1", "c16"):
    both = [runs[(r, level)] for r in rounds if len(runs[(r, level)]) == 2]
    for side in ("A", "B"):
        show(f"{level} {side} tok/s", [b[side] for b in both])
    show(f"{level} B / A", [b["B"] / b["A"] for b in both])
for side in ("A", "B"):
    show(f"16 / 1 of {side}", [runs[(r, "c16")][side] / runs[(r, "c1")][side] for r in rounds
                               if side in runs[(r, "c16")] and side in runs[(r, "c1")]])
