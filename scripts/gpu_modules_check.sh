#!/usr/bin/env bash
# The network modules on a GPU machine (called by scripts/gpu.sh after the build): trains the
# small EUR/USD network with every module on, backtests its best checkpoint on the test span
# on the GPU and on the CPU and compares the two summaries, then runs the ablations of
# docs/modules.md on the synthetic trend market and on EUR/USD. Tables and summaries are
# copied to KEEP_DIR.
#   usage: scripts/gpu_modules_check.sh BUILD_DIR WORK_DIR KEEP_DIR [SEEDS] [PARALLEL]
set -euo pipefail
build=$1 work=$2 keep=$3 seeds=${4:-4} par=${5:-16}
mkdir -p "$work" "$keep"
v=$build/vulpes
all="model.vsn=true model.spectral_norm=true model.kan=true model.stoch_depth=0.1 model.q_denoise=true
     model.cross_branch=true model.risk_budget=0.5"
"$v" train examples/eurusd.yaml $all run.backend=cuda --out "$work/all" --force
for be in cuda cpu; do
  "$v" backtest --checkpoint "$work/all/best.safetensors" --backend "$be" --out "$work/bt_$be" --force
  cp "$work/bt_$be/summary.json" "$keep/all_modules_backtest_$be.json"
done
python3 - "$work/bt_cuda/summary.json" "$work/bt_cpu/summary.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("sharpe_ratio", "total_return", "max_drawdown"):
    print("all modules, test span %-13s cuda %s | cpu %s" % (k, a["strategy"].get(k), b["strategy"].get(k)))
PY
sw=model.vsn,model.spectral_norm,model.kan,model.stoch_depth=0.1,model.q_denoise,model.cross_branch,model.risk_budget=0.5
for m in synth_trend eurusd; do
  "$v" ablate "examples/$m.yaml" --switch "$sw" --seeds "$seeds" --parallel "$par" --backend cuda \
    --out "$work/ablate_$m" --force
  for f in ablate.csv ablate.json report.html; do cp "$work/ablate_$m/$f" "$keep/ablate_${m}_$f"; done
done
