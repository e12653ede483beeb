#!/usr/bin/env bash
# vulpes search from the command line: a tiny search of examples/eurusd.yaml over
# examples/search_space.yaml (4 trials, eta 2, 2 at once) prints its table and writes its
# files, best.yaml loads as a config; a resume of the finished search trains nothing again and
# prints the same table; refused spaces name the file, line and key, exit 1 and leave no
# folder; usage errors exit 2.
#   usage: tests/test_cli_search.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
tiny="train.iterations=4 train.eval_every=2 train.log_every=2 learn.batch=16 replay.warmup=64 model.mamba_head_dim=8
      model.head_hidden=16 model.iqn_taus=4 model.iqn_target_taus=4 env.n_envs=4"

# the search: a line per trial, the rungs, the winner and its deflation, the folder's files
# shellcheck disable=SC2086
out=$("$v" search examples/eurusd.yaml examples/search_space.yaml --trials 4 --eta 2 --parallel 2 $tiny \
  --backend cpu --out "$tmp/s" 2> "$tmp/err") || fail "vulpes search exited $?: $(cat "$tmp/err")"
grep -qE '^trial +rung +iterations +val Sharpe +test Sharpe +learn\.lr +learn\.gamma +learn\.n_step +model\.hidden$' \
  <<< "$out" || fail "heading: $out"
[ "$(grep -cE '^ +[0-3] +[0-2] +[124] ' <<< "$out")" = 4 ] || fail "not 4 trial lines: $out"
[ "$(grep -c '<- best$' <<< "$out")" = 1 ] || fail "not one winner: $out"
grep -qF "rungs: 4 trials x 1 iteration, 2 trials x 2 iterations, 1 trial x 4 iterations (eta 2; 3 of 3 done)" \
  <<< "$out" || fail "rungs line: $out"
grep -qF "deflated Sharpe of the best over 4 trials" <<< "$out" || fail "deflation line: $out"
grep -qF "its test Sharpe is out of sample this once" <<< "$out" || fail "selection note: $out"
grep -qF "search folder: $tmp/s (report.html, results.csv, results.json, best.yaml)" <<< "$out" || fail "folder: $out"
grep -qF "search: 2 trials at once" "$tmp/err" || fail "no line on the trials at once: $(cat "$tmp/err")"
for f in config.yaml space.yaml search.json rungs.json results.csv results.json best.yaml report.html; do
  [ -f "$tmp/s/$f" ] || fail "$f is missing"
done
for t in 000 001 002 003; do
  [ -f "$tmp/s/trial-$t/report.html" ] && [ -f "$tmp/s/trial-$t/last.safetensors" ] || fail "trial $t is incomplete"
done
[ "$(grep -c '"event":"search_rung"' "$tmp/s/metrics.jsonl")" = 3 ] || fail "metrics.jsonl: not 3 search_rung events"
"$v" config "$tmp/s/best.yaml" > "$tmp/best" 2>&1 || fail "best.yaml does not load: $(cat "$tmp/best")"

# a resume of the finished search trains nothing and prints the same table
before=$(cat "$tmp/s/trial-000/metrics.jsonl")
out2=$("$v" search --resume "$tmp/s" --backend cpu 2> "$tmp/err2") || fail "the resume exited $?: $(cat "$tmp/err2")"
[ "$before" = "$(cat "$tmp/s/trial-000/metrics.jsonl")" ] || fail "the resume trained a finished trial again"
! grep -q "training\|continuing" "$tmp/err2" || fail "the resume started a trial: $(cat "$tmp/err2")"
[ "$(grep -E '^ +[0-9]' <<< "$out")" = "$(grep -E '^ +[0-9]' <<< "$out2")" ] || fail "the resumed table differs: $out2"
rc=0; msg=$("$v" search --resume "$tmp/s" --trials 5 --backend cpu 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF -- "--trials 5 differs from its plan's 4" <<< "$msg" || fail "resume --trials 5 (exit $rc): $msg"

# refused spaces: exit 1, the file, line and key named, no source location, no folder
printf 'learn.lr: {log_uniform: [1e-4, 1e-2]}\nlearn.lrr: {uniform: [0.1, 0.2]}\n' > "$tmp/unknown.yaml"
printf 'run.seed: {int: [1, 5]}\n' > "$tmp/run.yaml"
printf 'learn.gamma: {uniform: [0.99, 0.9]}\n' > "$tmp/order.yaml"
printf 'learn.weight_decay: {log_uniform: [0, 0.01]}\n' > "$tmp/zero.yaml"
for c in "unknown|unknown.yaml:2: unknown key 'learn.lrr'; did you mean 'learn.lr'?" \
         "run|run.yaml:1: run.seed is not searchable" \
         "order|order.yaml:1: learn.gamma: uniform bounds must be ordered lo < hi, got [0.99, 0.9]" \
         "zero|zero.yaml:1: learn.weight_decay: log_uniform bounds must be > 0, got [0, 0.01]"; do
  f=${c%%|*} want=${c#*|} rc=0
  msg=$("$v" search examples/eurusd.yaml "$tmp/$f.yaml" --trials 2 --backend cpu --out "$tmp/refused" 2>&1) || rc=$?
  [ "$rc" = 1 ] && grep -qF "$want" <<< "$msg" || fail "space $f (exit $rc): $msg"
  ! grep -qE 'VP_ERR_|\.c:[0-9]' <<< "$msg" || fail "space $f: a source location in the message: $msg"
  [ ! -e "$tmp/refused" ] || fail "space $f left $tmp/refused behind"
done
# usage errors: exit 2
rc=0; msg=$("$v" search examples/eurusd.yaml examples/search_space.yaml 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF "vulpes search: --trials is required" <<< "$msg" || fail "no --trials (exit $rc): $msg"
rc=0; msg=$("$v" search examples/eurusd.yaml --trials 2 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF "vulpes search: SPACE.yaml is required" <<< "$msg" || fail "no space (exit $rc): $msg"
rc=0; msg=$("$v" search --resume "$tmp/s" --out "$tmp/x" 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF -- "--resume continues its folder" <<< "$msg" || fail "--resume --out (exit $rc): $msg"
rc=0; msg=$("$v" search examples/eurusd.yaml examples/search_space.yaml --trials 2 --eta 1 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF -- "--eta" <<< "$msg" || fail "--eta 1 (exit $rc): $msg"
echo "cli search: table, files, best.yaml, resume, refusals checked"
