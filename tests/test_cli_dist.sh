#!/usr/bin/env bash
# `vulpes train --gpus N` on the CPU: each refusal of a request names its rule and leaves no run
# folder behind (N < 1 or not a number, a CPU backend, more GPUs than the machine shows, bad rank
# variables, a batch or env count the ranks do not divide, a rank count --gpus contradicts, more
# ranks than a build without NCCL runs); --gpus 1 runs in this process and writes the same run
# as no flag (metrics.jsonl timing events aside, the checkpoints bit for bit).
#   usage: tests/test_cli_dist.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
unset VULPES_RANK VULPES_WORLD_SIZE VULPES_LOCAL_RANK VULPES_LOCAL_SIZE VULPES_RENDEZVOUS \
  OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE
tiny="train.iterations=4 train.eval_every=2 train.checkpoint_every=2 train.log_every=2 learn.batch=16
      replay.warmup=64 model.hidden=16 model.mamba_head_dim=8 model.head_hidden=16 model.iqn_taus=4
      model.iqn_target_taus=4 env.n_envs=4"

# refuse CODE NEEDLE ARGS...: vulpes train exits CODE, says NEEDLE, and makes no run folder
refuse() {
  local code=$1 needle=$2; shift 2
  local rc=0
  # shellcheck disable=SC2086
  "$v" train examples/eurusd.yaml $tiny --out "$tmp/none" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" = "$code" ] || fail "vulpes train $* exited $rc, expected $code: $(cat "$tmp/err")"
  grep -qF -- "$needle" "$tmp/err" || fail "vulpes train $* did not say '$needle': $(cat "$tmp/err")"
  [ ! -e "$tmp/none" ] || fail "vulpes train $* left $tmp/none behind"
}

refuse 2 "--gpus" --gpus 0 --backend cpu
refuse 2 "--gpus" --gpus two --backend cpu
refuse 1 "--gpus 2 needs run.backend cuda (or --backend cuda)" --gpus 2 --backend cpu
refuse 1 "--gpus 2 needs run.backend cuda" --gpus 2
refuse 1 "--gpus 64: this machine shows" --gpus 64 --backend cuda
# a rank's variables: read and checked before anything else
VULPES_RANK=2 VULPES_WORLD_SIZE=2 refuse 1 "VULPES_RANK = 2 is not below VULPES_WORLD_SIZE = 2" --backend cpu
VULPES_RANK=x VULPES_WORLD_SIZE=2 refuse 1 "VULPES_RANK = 'x' is not a whole number" --backend cpu
OMPI_COMM_WORLD_RANK=0 refuse 1 "OMPI_COMM_WORLD_RANK = '0' is set but OMPI_COMM_WORLD_SIZE is not" --backend cpu
VULPES_RANK=0 VULPES_WORLD_SIZE=2 refuse 1 "needs run.backend cuda" --backend cpu
VULPES_RANK=0 VULPES_WORLD_SIZE=3 refuse 1 "learn.batch = 16 is not divisible by 3" --backend cuda
VULPES_RANK=0 VULPES_WORLD_SIZE=8 refuse 1 "env.n_envs = 4 is not divisible by 8" --backend cuda learn.batch=64
VULPES_RANK=1 VULPES_WORLD_SIZE=2 refuse 1 "--gpus 4, but this process is rank 1 of 2" --backend cuda --gpus 4
PMI_RANK=0 PMI_SIZE=2 refuse 1 "train.algo ppo runs on one GPU" --backend cuda train.algo=ppo

# --gpus 1: this process, the same run as without the flag (one folder, so the configs match)
# shellcheck disable=SC2086
"$v" train examples/eurusd.yaml $tiny --backend cpu --out "$tmp/run" > /dev/null 2> "$tmp/err1" ||
  fail "vulpes train exited $?: $(cat "$tmp/err1")"
mv "$tmp/run" "$tmp/plain"
# shellcheck disable=SC2086
"$v" train examples/eurusd.yaml $tiny --backend cpu --gpus 1 --out "$tmp/run" > /dev/null 2> "$tmp/err2" ||
  fail "vulpes train --gpus 1 exited $?: $(cat "$tmp/err2")"
mv "$tmp/run" "$tmp/one"
! grep -q "ranks on this machine" "$tmp/err2" || fail "--gpus 1 started ranks: $(cat "$tmp/err2")"
for f in best.safetensors last.safetensors; do
  cmp -s "$tmp/plain/$f" "$tmp/one/$f" || fail "--gpus 1 wrote another $f"
done
# metrics.jsonl without its timing events
strip() { grep -v '"event":"timing"' "$1"; }
[ "$(strip "$tmp/plain/metrics.jsonl")" = "$(strip "$tmp/one/metrics.jsonl")" ] ||
  fail "--gpus 1 wrote another metrics.jsonl: $(diff <(strip "$tmp/plain/metrics.jsonl") <(strip "$tmp/one/metrics.jsonl") | head -5)"
[ "$(strip "$tmp/one/metrics.jsonl" | grep -c '"event":"train"')" -ge 2 ] || fail "metrics.jsonl of --gpus 1 has no train events"
echo "cli_dist: ok"
