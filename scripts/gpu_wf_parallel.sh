#!/usr/bin/env bash
# On a GPU machine after scripts/gpu.sh's build: a short walk-forward with folds one at a
# time and two at once (two backends, two streams) must write identical fold files.
#   usage: scripts/gpu_wf_parallel.sh [BUILD_DIR] [WORK_DIR]
set -euo pipefail
build=${1:-build-gpu} work=${2:-/tmp/vp-wf}
v=$build/vulpes
args=(examples/walkforward_eurusd.yaml run.backend=cuda train.iterations=200 walkforward.max_folds=4)
"$v" walkforward "${args[@]}" --parallel 1 --out "$work/p1" --force
"$v" walkforward "${args[@]}" --parallel 2 --out "$work/p2" --force
for f in "$work"/p1/folds/*/trades.csv "$work"/p1/folds/*/equity.csv "$work"/p1/trades.csv "$work"/p1/equity.csv; do
  g=$work/p2/${f#"$work"/p1/}
  cmp "$f" "$g" || { echo "parallel folds differ: $f"; exit 1; }
done
echo "parallel walk-forward on the GPU: fold and stitched files identical to one fold at a time"
