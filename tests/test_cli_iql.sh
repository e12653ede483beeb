#!/usr/bin/env bash
# IQL end to end from the command line: vulpes record writes a moving-average crossover's dataset
# (epsilon 0.2) on the training span of examples/eurusd.yaml; vulpes train with train.algo=iql and
# iql.dataset=it trains offline (the offline note, no warm-up, the IQL statistics in
# metrics.jsonl, best.safetensors of vulpes.algo iql); vulpes backtest of best.safetensors writes
# its files; vulpes act on it prints one decision. A dataset of the validation span, and a run
# without iql.dataset, are refused naming why, with no run folder left.
#   usage: tests/test_cli_iql.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
tiny="train.iterations=20 train.eval_every=10 train.log_every=5 train.checkpoint_every=0 train.train_steps=2
      iql.batch=32 model.hidden=16 model.mamba_head_dim=8 model.head_hidden=16 env.n_envs=4"

# the dataset: 200 steps of 8 envs on the training span
out=$("$v" record examples/eurusd.yaml --policy ma_cross:fast=5,slow=20 --epsilon 0.2 --steps 200 --envs 8 \
  --backend cpu --out "$tmp/ds.safetensors" 2>&1) || fail "vulpes record exited $?: $out"
[ -f "$tmp/ds.safetensors" ] || fail "vulpes record wrote no dataset: $out"

# IQL on it, offline
# shellcheck disable=SC2086
"$v" train examples/eurusd.yaml train.algo=iql iql.dataset="$tmp/ds.safetensors" $tiny --backend cpu \
  --out "$tmp/run" > "$tmp/train.out" 2> "$tmp/train.err" || fail "vulpes train exited $?: $(cat "$tmp/train.err")"
grep -qF "offline: nothing to collect, no warm-up; learning from $tmp/ds.safetensors (200 steps of 8 envs, behaviour ma_cross:fast=5,slow=20,size=3,epsilon=0.2)" \
  "$tmp/train.out" "$tmp/train.err" || fail "no offline note: $(cat "$tmp/train.out" "$tmp/train.err")"
m="$tmp/run/metrics.jsonl"
[ "$(grep -c '"event":"train"' "$m")" = 4 ] || fail "not 4 train events in metrics.jsonl"
grep '"event":"train"' "$m" | tail -n 1 | grep -qE '"value_loss":[0-9.e+-]+,"q_loss":[0-9.e+-]+,"policy_loss":[0-9.e+-]+' \
  || fail "the train events lack IQL's losses: $(grep '"event":"train"' "$m" | tail -n 1)"
grep -q '"event":"run".*"dataset_rows":1600' "$m" || fail "the run event lacks the dataset's rows: $(grep '"event":"run"' "$m")"
[ "$(grep -c '"event":"eval"' "$m")" = 2 ] || fail "not 2 eval events"
for f in best.safetensors last.safetensors summary.json report.html; do
  [ -f "$tmp/run/$f" ] || fail "$f is missing from the run folder"
done
grep -qa '"vulpes.algo":"iql"' "$tmp/run/best.safetensors" || fail "best.safetensors is not an IQL checkpoint"

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
rc=0; msg=$("$v" train examples/eurusd.yaml train.algo=iql iql.dataset="$tmp/val.safetensors" $tiny --backend cpu \
  --out "$tmp/leak" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "leave the run's training span" <<< "$msg" || fail "a validation-span dataset (exit $rc): $msg"
[ ! -e "$tmp/leak/best.safetensors" ] || fail "a refused run left a checkpoint"
rc=0; msg=$("$v" train examples/eurusd.yaml train.algo=iql $tiny --backend cpu --out "$tmp/none" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "set iql.dataset" <<< "$msg" || fail "no iql.dataset (exit $rc): $msg"
echo "cli iql: record, train, backtest, act; refusals: 2 passed, 0 failed"
