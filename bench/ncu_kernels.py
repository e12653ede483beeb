#!/usr/bin/env python3
"""Per-kernel GPU times of one learner step, from Nsight Compute's CSV.

usage: ncu_kernels.py NCU.csv [--from N] [--to N]
The CSV comes from `ncu --csv --metrics gpu__time_duration.sum ...` (scripts/gpu.sh
step-profile). Prints every kernel in launch order over launches [from, to), then the times
summed per kernel name, largest first."""
import csv
import sys
from collections import OrderedDict


def main():
    path = sys.argv[1]
    start = int(sys.argv[sys.argv.index("--from") + 1]) if "--from" in sys.argv else 0
    rows = []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines first
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        us = float(r["Metric Value"].replace(",", ""))
        us *= {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[r["Metric Unit"]]
        rows.append((int(r["ID"]), r["Kernel Name"][:90], r["Grid Size"], r["Block Size"], us))
    end = int(sys.argv[sys.argv.index("--to") + 1]) if "--to" in sys.argv else 1 << 62
    rows = [r for r in rows if start <= r[0] < end]
    total = sum(r[4] for r in rows)
    print(f"{len(rows)} kernels, {total / 1e3:.3f} ms in all")
    for i, name, grid, block, us in rows:
        print(f"{i:5d} {us:9.1f} us  {grid:>16s} {block:>12s}  {name}")
    by = OrderedDict()
    for _, name, _, _, us in rows:
        n, t = by.get(name, (0, 0.0))
        by[name] = (n + 1, t + us)
    print("\nby kernel name:")
    for name, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{t / 1e3:8.3f} ms {100 * t / total:5.1f} %  x{n:<4d} {name}")


if __name__ == "__main__":
    main()
