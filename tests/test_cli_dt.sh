#!/usr/bin/env bash
# The Decision Transformer end to end from the command line: vulpes record writes a moving-average
# crossover's dataset (epsilon 0.2) on the training span of examples/eurusd.yaml; vulpes train with
# train.algo=dt and dt.dataset=it trains offline (the offline note with the target return, no
# warm-up, the DT statistics in metrics.jsonl, best.safetensors of vulpes.algo dt); vulpes backtest
# of best.safetensors writes its files; vulpes act on it prints one decision. A dataset of the
# validation span, and a run without dt.dataset, are refused naming why, with no checkpoint left.
#   usage: tests/test_cli_dt.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
tiny="train.iterations=20 train.eval_every=10 train.log_every=5 train.checkpoint_every=0 dt.batch=8 dt.context=4
      dt.embed=16 dt.layers=1 model.hidden=16 model.mamba_head_dim=8 model.head_hidden=16 env.n_envs=4"

# the dataset: 200 steps of 8 envs on the training span
out=$("$v" record examples/eurusd.yaml --policy ma_cross:fast=5,slow=20 --epsilon 0.2 --steps 200 --envs 8 \
  --backend cpu --out "$tmp/ds.safetensors" 2>&1) || fail "vulpes record exited $?: $out"
[ -f "$tmp/ds.safetensors" ] || fail "vulpes record wrote no dataset: $out"

# the Decision Transformer on it, offline
# shellcheck disable=SC2086
"$v" train examples/eurusd.yaml train.algo=dt dt.dataset="$tmp/ds.safetensors" $tiny --backend cpu \
  --out "$tmp/run" > "$tmp/train.out" 2> "$tmp/train.err" || fail "vulpes train exited $?: $(cat "$tmp/train.err")"
grep -qE "no warm-up: offline training on $tmp/ds.safetensors \(1600 steps, [0-9]+ episodes, best episode return -?[0-9.]+\); the policy conditioned on target return -?[0-9.]+ \(the dataset's best\)" \
  "$tmp/train.out" "$tmp/train.err" || fail "no offline note: $(cat "$tmp/train.out" "$tmp/train.err")"
m="$tmp/run/metrics.jsonl"
[ "$(grep -c '"event":"train"' "$m")" = 4 ] || fail "not 4 train events in metrics.jsonl"
grep '"event":"train"' "$m" | tail -n 1 | grep -qE '"loss":[0-9.e+-]+,"steps":[0-9]+,"grad_norm":[0-9.e+-]+' \
  || fail "the train events lack the DT's statistics: $(grep '"event":"train"' "$m" | tail -n 1)"
grep -q '"event":"run".*"target_return":-\?[0-9.e+-]*,"dataset_steps":1600,' "$m" ||
  fail "the run event lacks the target return and the dataset: $(grep '"event":"run"' "$m")"
[ "$(grep -c '"event":"eval"' "$m")" = 2 ] || fail "not 2 eval events"
for f in best.safetensors last.safetensors summary.json report.html; do
  [ -f "$tmp/run/$f" ] || fail "$f is missing from the run folder"
done
grep -qa '"vulpes.algo":"dt"' "$tmp/run/best.safetensors" || fail "best.safetensors is not a DT checkpoint"
grep -qa '"vulpes.dt.target_return":' "$tmp/run/best.safetensors" || fail "best.safetensors holds no target return"

# the backtest of its best checkpoint, and a live decision
"$v" backtest --checkpoint "$tmp/run/best.safetensors" --backend cpu --out "$tmp/bt" > "$tmp/bt.out" 2>&1 ||
  fail "vulpes backtest exited $?: $(cat "$tmp/bt.out")"
for f in trades.csv equity.csv summary.json; do [ -f "$tmp/bt/$f" ] || fail "the backtest wrote no $f"; done
grep -qi "sharpe" "$tmp/bt.out" || fail "the backtest printed no Sharpe: $(cat "$tmp/bt.out")"
act=$("$v" act --checkpoint "$tmp/run/best.safetensors" --backend cpu 2>&1) || fail "vulpes act exited $?: $act"
grep -qE '\{"checkpoint":"[^"]*best.safetensors",.*"direction":"(short|flat|long)",.*"q":\{"direction":\[' \
  <<< "$(tr -d ' \t\n' <<< "$act")" ||
  fail "vulpes act printed no decision: $act"

# refused: a dataset of the validation span; no dataset at all
"$v" record examples/eurusd.yaml --policy random --steps 20 --envs 2 --span val --backend cpu \
  --out "$tmp/val.safetensors" > /dev/null 2>&1 || fail "vulpes record --span val failed"
# shellcheck disable=SC2086
rc=0; msg=$("$v" train examples/eurusd.yaml train.algo=dt dt.dataset="$tmp/val.safetensors" $tiny --backend cpu \
  --out "$tmp/leak" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "not inside the run's training span" <<< "$msg" || fail "a validation-span dataset (exit $rc): $msg"
[ ! -e "$tmp/leak/best.safetensors" ] || fail "a refused run left a checkpoint"
# shellcheck disable=SC2086
rc=0; msg=$("$v" train examples/eurusd.yaml train.algo=dt $tiny --backend cpu --out "$tmp/none" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "train.algo = dt needs dt.dataset" <<< "$msg" || fail "no dt.dataset (exit $rc): $msg"
[ ! -e "$tmp/none/best.safetensors" ] || fail "a refused run left a checkpoint"
echo "cli dt: record, train, backtest, act; refusals: 2 passed, 0 failed"
