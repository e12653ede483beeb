#!/usr/bin/env bash
# Collection of S = 64 steps an iteration on a GPU machine (called by scripts/gpu.sh after the
# build): the default model's EUR/USD job with train.collect_steps=64 twice with the same seed
# (metrics.jsonl identical line for line, timing lines aside), then the synthetic trend market
# with an edge (examples/synth_trend.yaml) with S = 1 and S = 64 on three seeds each, each best
# checkpoint backtested on its test span: S = 64 must still learn the edge (a test-span Sharpe
# after costs above 0 in every seed; the table prints both S beside buy-and-hold). The S = 64
# runs see the same data with the same replay ratio as the S = 1 ones (docs/train.md, "Choosing
# S"): 1/64 of the iterations, 64 x the learner steps an iteration, validation every 4
# iterations; kept at the example's 2000 iterations and 2 steps, S = 64 would learn from 64 x
# the transitions at 1/64 of the replay ratio, another experiment.
#   usage: scripts/gpu_collect_check.sh BUILD_DIR WORK_DIR KEEP_DIR [ITERATIONS]
set -euo pipefail
build=$1 work=$2 keep=$3 iters=${4:-300}
mkdir -p "$work" "$keep"
v=$build/vulpes
for r in a b; do
  "$v" train examples/eurusd_gpu.yaml train.collect_steps=64 train.iterations="$iters" run.backend=cuda \
    --out "$work/s64_$r" --force
done
bash scripts/same_metrics.sh "$work/s64_a" "$work/s64_b" "determinism at S = 64"
cp "$work/s64_a/summary.json" "$keep/eurusd_gpu_s64_summary.json"
for s in 1 64; do
  for seed in 1 2 3; do
    d=$work/trend_s${s}_seed$seed
    same=()
    [ "$s" = 64 ] && same=(train.iterations=32 train.train_steps=125 train.eval_every=4 train.checkpoint_every=16
      train.log_every=4)
    "$v" train examples/synth_trend.yaml train.collect_steps=$s "${same[@]}" run.seed=$seed run.backend=cuda \
      --out "$d" --force \
      > "$d.log" 2>&1 || { cat "$d.log"; exit 1; }
    "$v" backtest --checkpoint "$d/best.safetensors" --backend cuda --out "$d/bt" --force > "$d/bt.log" 2>&1 ||
      { cat "$d/bt.log"; exit 1; }
    cp "$d/bt/summary.json" "$keep/trend_s${s}_seed${seed}_backtest.json"
  done
done
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
bad = 0
print("synthetic trend market, test span after costs (3 seeds each)")
print("S   seed  strategy Sharpe  buy-and-hold Sharpe")
for s in (1, 64):
    for seed in (1, 2, 3):
        j = json.load(open(f"{work}/trend_s{s}_seed{seed}/bt/summary.json"))
        st, bh = j["strategy"].get("sharpe_ratio"), j.get("buy_and_hold", {}).get("sharpe_ratio")
        print(f"{s:<3d} {seed:<5d} {st!s:>15} {bh!s:>20}")
        if s == 64 and not (isinstance(st, (int, float)) and st > 0):
            bad += 1
if bad:
    print(f"S = 64 did not learn the edge in {bad} of 3 seeds"); sys.exit(1)
print("S = 64 learns the edge in every seed")
PY
