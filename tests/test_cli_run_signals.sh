#!/usr/bin/env bash
# `vulpes train` under signals and a second command: while a run goes, a resume of its folder
# and a forced run into it are refused (the folder is locked, the message names the pid) and
# change nothing; SIGTERM checkpoints and stops like Ctrl-C (exit 143, a line saying how to
# resume, last.safetensors, summary.json with finished false) and --resume finishes the run.
#   usage: tests/test_cli_run_signals.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
work=$build/cli_run_signals
rm -rf "$work"
mkdir -p "$work"
cd "$src"
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }

# a small run on a synthetic market, long enough to be stopped: no periodic checkpoint, so
# last.safetensors can only come from the stop
cat > "$work/run.yaml" <<'EOF'
data:
  path: "synth:trend:bars=1500,seed=3"
split: {train: 0.6, val: 0.2, test: 0.2}
features: {window: 32}
instrument: {tick_size: 0.01, multiplier: 10, commission: 0.1, slippage_ticks: 1, max_position: 3,
             initial_equity: 10000}
env: {n_envs: 7, episode_bars: 61}
model: {window: 4, hidden: 16, mamba_state: 4, mamba_head_dim: 8, mamba_conv: 2, head_hidden: 16,
        n_atoms: 11, iqn_taus: 4, iqn_target_taus: 5, iqn_cos: 8}
learn: {batch: 33, lr: 0.001}
replay: {capacity: 3001, warmup: 200, beta_steps: 100}
collect: {epsilon_steps: 50}
train: {iterations: 100000000, collect_steps: 2, train_steps: 1, eval_every: 0, checkpoint_every: 0,
        log_every: 1}
run: {seed: 7, backend: cpu}
EOF
dir=$work/run
"$build/vulpes" train "$work/run.yaml" --out "$dir" > "$work/train.log" 2>&1 &
pid=$!
# wait for the first iterations
for _ in $(seq 1 300); do
  if [ -f "$dir/metrics.jsonl" ] && [ "$(grep -c '"event":"train"' "$dir/metrics.jsonl")" -ge 3 ]; then break; fi
  kill -0 "$pid" 2> /dev/null || fail "the run ended before it was stopped"
  sleep 0.1
done
[ -f "$dir/.lock" ] || fail "no $dir/.lock while the run goes"

# a second command on the folder is refused while the run holds it
cp "$dir/config.yaml" "$work/config.before"
rc=0; "$build/vulpes" train --resume "$dir" > "$work/resume_busy.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a resume of a folder in use exited $rc"
grep -q "run folder $dir is in use by another vulpes process (pid $pid)" "$work/resume_busy.log" ||
  fail "the refused resume does not name the folder and pid"
rc=0; "$build/vulpes" train "$work/run.yaml" --out "$dir" --force > "$work/force_busy.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "is in use by another vulpes process (pid $pid)" "$work/force_busy.log" ||
  fail "a forced run into a folder in use was not refused (exit $rc)"
cmp -s "$dir/config.yaml" "$work/config.before" || fail "a refused command changed config.yaml"
[ ! -e "$dir/replaced-1" ] || fail "a refused --force moved the run's files"

# SIGTERM: checkpoint, summary, a clear line, exit 143
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "SIGTERM: exit $rc, expected 143"
grep -q "stopped by SIGTERM at iteration" "$work/train.log" || fail "no line saying SIGTERM stopped the run"
grep -q "continue with: vulpes train .* --resume $dir" "$work/train.log" || fail "no line saying how to resume"
[ -f "$dir/last.safetensors" ] || fail "SIGTERM left no last.safetensors"
grep -q '"reason":"interrupt"' "$dir/metrics.jsonl" || fail "no interrupt checkpoint event"
grep -q '"finished":[[:space:]]*false' "$dir/summary.json" || fail "summary.json does not say the run is unfinished"
[ ! -e "$dir/.lock" ] || fail "the stopped run left its lock file"

# --resume continues to a finish a few iterations on
it=$(grep '"reason":"interrupt"' "$dir/metrics.jsonl" | grep -o '"iteration":[0-9]*' | cut -d: -f2)
[ -n "$it" ] || fail "no interrupt checkpoint iteration in metrics.jsonl"
"$build/vulpes" train --resume "$dir" train.iterations=$((it + 3)) > "$work/resume.log" 2>&1 ||
  fail "the resume after SIGTERM failed"
grep -q '"finished":[[:space:]]*true' "$dir/summary.json" || fail "the resumed run did not finish"
grep -q '"resumed":1' "$dir/metrics.jsonl" || fail "no resumed run event"
echo "ok: SIGTERM at iteration $it, resumed to $((it + 3))"
