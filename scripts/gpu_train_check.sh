#!/usr/bin/env bash
# End-to-end jobs on a GPU machine (called by scripts/gpu.sh after the build):
# trains the default model on the shipped EUR/USD data twice with the same seed and checks
# that metrics.jsonl agrees line for line (timing lines aside), backtests the best
# checkpoint on the test span, runs a short walk-forward, and the quickstart's job.
# Run folders (checkpoints hold the replay ring: large) stay in WORK_DIR; the small files
# worth keeping are copied to KEEP_DIR.
#   usage: scripts/gpu_train_check.sh BUILD_DIR WORK_DIR KEEP_DIR [ITERATIONS]
set -euo pipefail
build=$1 work=$2 keep=$3 iters=${4:-2000}
mkdir -p "$work"
v=$build/vulpes
for r in a b; do
  "$v" train examples/eurusd_gpu.yaml train.iterations="$iters" --out "$work/train_$r" --force
done
bash scripts/same_metrics.sh "$work/train_a" "$work/train_b" "determinism"
cat "$work/train_a/summary.json"; echo
"$v" backtest --checkpoint "$work/train_a/best.safetensors" --data examples/data/eurusd_1h_2017.csv \
  --from 2017-10-19 --out "$work/backtest" --force
ls "$work/backtest"
"$v" walkforward examples/walkforward_eurusd.yaml run.backend=cuda train.iterations=300 \
  --out "$work/walkforward" --force
time "$v" train examples/eurusd.yaml --out "$work/quickstart" --force
for d in train_a backtest walkforward quickstart; do
  for f in summary.json report.html; do
    [ -f "$work/$d/$f" ] && cp "$work/$d/$f" "$keep/${d}_$f"
  done
done
