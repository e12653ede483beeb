#!/usr/bin/env bash
# Data-parallel training on the CPU under Open MPI's mpirun: the MPI collectives and the ranks'
# equal parameters (build/test_dist_mpi under 2 and 3 ranks); `mpirun -np 2 vulpes train` twice
# writes the same metrics.jsonl and checkpoints (timing events aside); rank 0 alone writes (rank
# 1 runs in a folder of its own, which stays empty); the checkpoint of 2 ranks resumes on 1 and
# that of 1 on 2 (2 -> 1 twice: the same continuation); a stop sent to one rank stops both after
# the same iteration; a rank that fails ends the other; the refusals (a
# batch or env count 2 ranks do not divide, another algorithm, curiosity) leave no folder.
# Without mpirun the test is skipped (exit 77), except under CI=true, where that is a failure.
#   usage: tests/test_cli_dist_mpi.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
if ! command -v mpirun > /dev/null 2>&1; then
  [ "${CI:-}" != "true" ] || fail "mpirun is not installed (scripts/setup.sh installs openmpi-bin)"
  echo "cli_dist_mpi: skipped: mpirun is not installed (scripts/setup.sh installs openmpi-bin)"
  exit 77
fi
unset VULPES_RANK VULPES_WORLD_SIZE VULPES_LOCAL_RANK VULPES_LOCAL_SIZE VULPES_RENDEZVOUS
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# a sanitizer build (make test-sanitize): the processes under mpirun leave leak detection off, as
# Open MPI keeps allocations of MPI_Init in plugins it unloads at exit (unnamed on the leak's
# stack, so no suppression matches them); the other checks stay on, and the single-process
# tests check the same code for leaks
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi() { mpirun --allow-run-as-root --oversubscribe "$@"; }
cfg="$src/examples/eurusd.yaml"
tiny="train.iterations=4 train.eval_every=2 train.checkpoint_every=2 train.log_every=2 learn.batch=16
      replay.warmup=64 model.hidden=16 model.mamba_head_dim=8 model.head_hidden=16 model.iqn_taus=4
      model.iqn_target_taus=4 env.n_envs=4 run.backend=cpu"

# the collectives and the loop's equal ranks, in process
for n in 2 3; do
  mpi -np "$n" "$build/test_dist_mpi" > "$tmp/unit.out" 2>&1 || fail "test_dist_mpi on $n ranks: $(cat "$tmp/unit.out")"
  [ "$(grep -c ' 0 failed' "$tmp/unit.out")" = "$n" ] || fail "test_dist_mpi on $n ranks: $(cat "$tmp/unit.out")"
done

# train2 DIR ARGS...: 2 ranks, rank 0 in $tmp/r0 writing DIR (relative to it), rank 1 in $tmp/r1
train2() {
  local dir=$1; shift
  mkdir -p "$tmp/r0" "$tmp/r1"
  # shellcheck disable=SC2086
  mpi -np 1 --wdir "$tmp/r0" "$v" train "$@" : -np 1 --wdir "$tmp/r1" "$v" train "$@" \
    > "$tmp/out" 2> "$tmp/err" || { echo "exit $?"; return 1; }
  [ -z "$(ls -A "$tmp/r1")" ] || fail "rank 1 wrote into its folder: $(ls -A "$tmp/r1")"
}
strip() { grep -v '"event":"timing"' "$1"; }

# determinism for a fixed rank count: the same folder name twice
# shellcheck disable=SC2086
train2 run "$cfg" $tiny --out run || fail "2 ranks: $(cat "$tmp/err")"
grep -q "rank 0 of 2 (mpi)" "$tmp/err" || fail "rank 0 did not say the ranks: $(cat "$tmp/err")"
mv "$tmp/r0/run" "$tmp/first"
# shellcheck disable=SC2086
train2 run "$cfg" $tiny --out run || fail "2 ranks again: $(cat "$tmp/err")"
[ "$(strip "$tmp/first/metrics.jsonl")" = "$(strip "$tmp/r0/run/metrics.jsonl")" ] ||
  fail "two runs of 2 ranks wrote different metrics.jsonl: $(diff <(strip "$tmp/first/metrics.jsonl") <(strip "$tmp/r0/run/metrics.jsonl") | head -5)"
for f in best.safetensors last.safetensors; do
  cmp -s "$tmp/first/$f" "$tmp/r0/run/$f" || fail "two runs of 2 ranks wrote different $f"
done
[ "$(strip "$tmp/first/metrics.jsonl" | grep -c '"event":"train"')" = 2 ] || fail "2 ranks: not 2 train events"
[ -f "$tmp/first/summary.json" ] && [ -f "$tmp/first/report.html" ] || fail "2 ranks: no summary.json or report.html"
grep -q '"vulpes.ranks":"2"' "$tmp/first/last.safetensors" || fail "the checkpoint of 2 ranks does not say vulpes.ranks 2"
grep -q '"n_envs":4' "$tmp/first/metrics.jsonl" || fail "the run event does not give the run's 4 envs"
# one process of the same config: another run (each rank samples its own shard), the same counters
# shellcheck disable=SC2086
(cd "$tmp" && "$v" train "$cfg" $tiny --out single > /dev/null 2> "$tmp/err1") || fail "one rank: $(cat "$tmp/err1")"
[ "$(strip "$tmp/first/metrics.jsonl")" != "$(strip "$tmp/single/metrics.jsonl")" ] || fail "2 ranks ran as 1"
env_steps() { grep '"event":"train"' "$1" | sed 's/.*"env_steps":\([0-9]*\).*/\1/' | tr '\n' ' '; }
[ "$(env_steps "$tmp/first/metrics.jsonl")" = "$(env_steps "$tmp/single/metrics.jsonl")" ] ||
  fail "env steps of 2 ranks $(env_steps "$tmp/first/metrics.jsonl") differ from one's $(env_steps "$tmp/single/metrics.jsonl")"

# resume across rank counts: 2 -> 1 (twice: the same continuation) and 1 -> 2
cp -r "$tmp/first" "$tmp/again"
"$v" train --resume "$tmp/first" train.iterations=6 --backend cpu > /dev/null 2> "$tmp/err" ||
  fail "2 -> 1 resume: $(cat "$tmp/err")"
"$v" train --resume "$tmp/again" train.iterations=6 --backend cpu > /dev/null 2> "$tmp/err" ||
  fail "2 -> 1 resume again: $(cat "$tmp/err")"
[ "$(strip "$tmp/first/metrics.jsonl")" = "$(strip "$tmp/again/metrics.jsonl")" ] ||
  fail "two 2 -> 1 resumes of one checkpoint differ: $(diff <(strip "$tmp/first/metrics.jsonl") <(strip "$tmp/again/metrics.jsonl") | head -5)"
grep -q '"iteration":6' "$tmp/first/metrics.jsonl" || fail "2 -> 1 resume did not reach iteration 6"
grep -q '"resumed":1' "$tmp/first/metrics.jsonl" || fail "2 -> 1 resume wrote no resumed run event"
! grep -q '"vulpes.ranks"' "$tmp/first/last.safetensors" || fail "the checkpoint of 1 rank says vulpes.ranks"
train2 "$tmp/single" --resume "$tmp/single" train.iterations=6 --backend cpu || fail "1 -> 2 resume: $(cat "$tmp/err")"
grep -q '"iteration":6' "$tmp/single/metrics.jsonl" || fail "1 -> 2 resume did not reach iteration 6"
grep -q '"vulpes.ranks":"2"' "$tmp/single/last.safetensors" || fail "the 1 -> 2 resume's checkpoint is not of 2 ranks"
[ -f "$tmp/single/summary.json" ] || fail "1 -> 2 resume wrote no summary.json"

# a stop sent to rank 1 alone: both ranks stop after the same iteration, rank 0 keeps the run
# shellcheck disable=SC2086
mpirun --allow-run-as-root --oversubscribe -np 2 --wdir "$tmp" "$v" train "$cfg" $tiny train.iterations=100000 \
  train.eval_every=0 train.checkpoint_every=0 train.log_every=1000 --out "$tmp/stopped" > "$tmp/out" 2> "$tmp/err" &
mpid=$!
rank1=""
for _ in $(seq 1 300); do
  for p in $(pgrep -f -- "--out $tmp/stopped" || true); do
    [ "$p" != "$mpid" ] || continue
    tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
  done
  [ -n "$rank1" ] && grep -q "iter" "$tmp/err" 2> /dev/null && break
  sleep 0.1
done
[ -n "$rank1" ] || { kill "$mpid" 2> /dev/null || true; fail "rank 1 of the stopped run not found"; }
sleep 1
kill -TERM "$rank1"
rc=0
wait "$mpid" || rc=$?
[ "$rc" != 0 ] || fail "the stopped run exited 0"
grep -q "stopped by" "$tmp/err" || fail "rank 0 did not stop: $(tail -3 "$tmp/err")"
grep -q '"reason":"interrupt"' "$tmp/stopped/metrics.jsonl" || fail "no interrupt checkpoint: $(tail -2 "$tmp/stopped/metrics.jsonl")"
[ -f "$tmp/stopped/last.safetensors" ] || fail "the stopped run kept no last.safetensors"

# a rank that fails (rank 1 cannot read its data) ends the other, which waits for it, at once
rc=0
# shellcheck disable=SC2086
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 1 --wdir "$tmp" "$v" train "$cfg" $tiny --out failed : \
  -np 1 --wdir "$tmp/r1" "$v" train "$cfg" $tiny --out failed data.path=/nonexistent/bars.csv \
  > "$tmp/out" 2> "$tmp/err" || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "a run with a failing rank exited $rc (124: it hung)"
grep -q "/nonexistent/bars.csv" "$tmp/err" || fail "the failing rank's message is missing: $(cat "$tmp/err")"
[ ! -e "$tmp/failed" ] || fail "rank 0 of a run whose rank 1 failed made its folder"
[ -z "$(ls -A "$tmp/r1")" ] || fail "the failing rank wrote into its folder"

# refusals: every rank refuses before any folder is made
refuse() {
  local needle=$1; shift
  local rc=0
  # shellcheck disable=SC2086
  mpi -np 2 --wdir "$tmp" "$v" train "$cfg" $tiny --out none "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" != 0 ] || fail "mpirun -np 2 vulpes train $* exited 0"
  grep -qF -- "$needle" "$tmp/err" || fail "mpirun -np 2 vulpes train $* did not say '$needle': $(cat "$tmp/err")"
  [ ! -e "$tmp/none" ] || fail "mpirun -np 2 vulpes train $* left $tmp/none behind"
}
refuse "2 ranks: learn.batch = 15 is not divisible by 2" learn.batch=15
refuse "2 ranks: env.n_envs = 3 is not divisible by 2" env.n_envs=3
refuse "2 ranks: train.algo ppo runs on one rank" train.algo=ppo
refuse "curiosity.enabled: the forward model learns each rank's own batch" curiosity.enabled=true
refuse "PopArt (model.popart)" learn.popart=true
echo "cli_dist_mpi: ok"
