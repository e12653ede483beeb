"""The scaling table of `vulpes bench step --gpus N` from its JSON lines (docs/distributed.md).

usage: python3 tools/dist_scaling.py scale.jsonl

Strong scaling keeps the global batch (speed-up T1 / TN, ideal N); weak scaling keeps the batch
per GPU (efficiency T1 / TN, ideal 1). Each row also shows the all-reduce's share of the step.
"""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if '"step_scale"' in line]
    if not rows:
        sys.exit(f"{path}: no bench step --gpus lines")
    print(f"{'scaling':8} {'batch':>7} {'gpus':>4} {'step ms':>9} {'all-reduce':>10} {'vs 1 GPU':>9}")
    for mode, key in (("strong", "global_batch"), ("weak", "batch_per_gpu")):
        pts = [r for r in rows if r["scaling"] == mode]
        for b in sorted({r[key] for r in pts}):
            line = sorted((r for r in pts if r[key] == b), key=lambda r: r["gpus"])
            t1 = next((r["step_ms"] for r in line if r["gpus"] == 1), None)
            for r in line:
                rel = f"{t1 / r['step_ms']:.2f}" if t1 else "-"
                print(f"{mode:8} {b:7d} {r['gpus']:4d} {r['step_ms']:9.3f} {100 * r['allreduce_share']:9.1f}% {rel:>9}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
