#!/usr/bin/env bash
# Builds vulpes with CUDA on a GPU machine, runs the CPU tests, the GPU test programs
# and the benchmarks; writes logs.tar.gz, summary.txt and bench.jsonl under $OUT (or ./gpu-out).
# Dependencies missing there (libyaml, cJSON, OpenBLAS headers) come as .deb files in
# .deps/debs (scripts/fetch-debs.sh) and are unpacked into .deps/root.
#   usage: scripts/gpu.sh [all|test|bench|bench-WHAT|torch-step|torch-collect|torch-ppo|search-bench|PROGRAM...]   (default: all)
#   a PROGRAM step with arguments is one quoted word: scripts/gpu.sh "build-gpu/test_learner_golden FILE --backend cuda"
#   torch-step: vulpes bench step, then its PyTorch reference (bench/torch_step.py) and the ratio
#   torch-step-tlob: the same with model.encoder = tlob (vulpes bench step --ablate model.encoder=tlob,
#                    then bench/torch_step.py --encoder tlob) and the ratio
#   torch-collect: vulpes bench train, then the PyTorch reference of its collection
#                  (bench/torch_collect.py, S = 64 at 4096, 65536 and 262144 envs) and the ratio
#   torch-ppo: vulpes bench ppo, then the PyTorch reference of its minibatch updates
#              (bench/torch_ppo.py, the same shapes, n_envs, T, epochs and minibatches) and the ratio
#   torch-iql: vulpes bench iql, then the PyTorch reference of its update (bench/torch_iql.py, the
#              same shapes and B = 8192) and the ratio
#   torch-dt: vulpes bench dt, then the PyTorch reference of its update (bench/torch_dt.py, the
#             same shapes and B = 8192) and the ratio
#   torch-attn: vulpes bench attn, then the PyTorch reference of its shapes
#               (bench/torch_attn.py, scaled_dot_product_attention in FP32) and the ratios
#   step-sweep: vulpes bench step at B = 1024 .. 65536
#   python-cuda: the Python VectorEnv on CUDA (its test and env steps/s), wheels from .deps/wheels
#   modules-step: vulpes bench step with each network module on (--ablate)
#   modules: every module on (train, GPU and CPU backtests) and the module ablations (scripts/gpu_modules_check.sh)
#   step-profile: the GPU time of every kernel of one learner step (Nsight Compute)
#   collect-check: train.collect_steps=64 twice (identical metrics.jsonl) and the trend market at S = 1 and 64
#   collect-profile: the GPU time of every kernel of a 65536-env collection's first iterations (Nsight Compute)
#   dist: the one-rank data-parallel GPU test and vulpes bench step --gpus 1 2 4 8 (up to the GPUs there)
#   search-bench: a 16-trial vulpes search with --parallel 16 and with --parallel 1, trials/s of
#                 both (scripts/gpu_search_bench.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
if [ $# -gt 0 ]; then steps=("$@"); else steps=(all); fi
root=$PWD/.deps/root
if [ -d .deps/debs ]; then
  mkdir -p "$root"
  for f in .deps/debs/*.deb; do dpkg -x "$f" "$root"; done
  # dpkg -x runs no alternatives: expose OpenBLAS's cblas.h and libopenblas.so directly.
  inc=$root/usr/include/x86_64-linux-gnu; lib=$root/usr/lib/x86_64-linux-gnu
  [ -e "$inc/cblas.h" ] || ln -sf "$inc/openblas-pthread/cblas.h" "$inc/cblas.h"
  for h in "$inc"/openblas-pthread/*.h; do [ -e "$inc/$(basename "$h")" ] || ln -sf "$h" "$inc/"; done
  [ -e "$lib/libopenblas.so" ] || ln -sf "$lib/openblas-pthread/libopenblas.so.0" "$lib/libopenblas.so"
  [ -e "$lib/libopenblas.so.0" ] || ln -sf "$lib/openblas-pthread/libopenblas.so.0" "$lib/libopenblas.so.0"
  export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$LOGS/gpu.txt"
rc=0
run() {
  local name=${1//[\/ ]/_}; shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  local r=${PIPESTATUS[0]}
  echo "== $name exit $r"
  printf '%-28s exit %s\n' "$name" "$r" >> "$LOGS/summary.txt"
  [ "$r" -eq 0 ] || rc=1
}
run build cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DVP_DEPS_DIR="$root" -DCMAKE_CUDA_ARCHITECTURES=90 -DVP_WERROR=ON
run make cmake --build build-gpu -j "$(nproc)"
for s in "${steps[@]}"; do
  case $s in
    all|test)
      run ctest ctest --test-dir build-gpu --output-on-failure -j 8
      for t in build-gpu/test_gpu_*; do [ -x "$t" ] && run "$(basename "$t")" "$t"; done
      run golden_cuda_tf32 build-gpu/test_learner_golden tests/data/golden_small.safetensors --backend cuda
      run golden_cuda_tf32_nomamba build-gpu/test_learner_golden tests/data/golden_small_nomamba.safetensors --backend cuda
      run golden_cuda_fp32 build-gpu/test_learner_golden tests/data/golden_small.safetensors --backend cuda --fp32
      run train_jobs bash scripts/gpu_train_check.sh build-gpu /tmp/vp-jobs "$LOGS"
      run wf_parallel bash scripts/gpu_wf_parallel.sh build-gpu /tmp/vp-wf ;;&
    all|bench)
      for w in gemm env step train backtest; do
        run "bench_$w" build-gpu/vulpes bench "$w" --backend cuda --json "$OUT/bench.jsonl"
      done ;;
    torch-step)
      run bench_step build-gpu/vulpes bench step --backend cuda --json "$OUT/step.jsonl"
      run torch_step timeout 240 python3 bench/torch_step.py --vulpes "$OUT/step.jsonl" --json "$OUT/torch_step.jsonl" ;;
    torch-step-tlob)
      run bench_step_tlob build-gpu/vulpes bench step --backend cuda --ablate model.encoder=tlob --json "$OUT/step_tlob.jsonl"
      run torch_step_tlob timeout 480 python3 bench/torch_step.py --encoder tlob --vulpes "$OUT/step_tlob.jsonl" \
        --json "$OUT/torch_step_tlob.jsonl" ;;
    python-cuda)
      # the Python VectorEnv on CUDA: wheels carried in .deps/wheels (the GPU machine has no
      # registry; PyTorch and numpy are its own), the CUDA env test and the throughput bench
      # (installed beside the python that holds PyTorch: a venv made from it would see the
      # base interpreter's packages, not that environment's)
      run py_deps bash -c 'python3 -m pip install -q --no-index --no-deps --target /tmp/vp-pylib $(ls .deps/wheels/*.whl | grep -v numpy)'
      export PYTHONPATH=/tmp/vp-pylib:$PWD/python/src VULPES_LIBRARY=$PWD/build-gpu/libvulpes.so
      run py_cuda_test python3 -m pytest -q -rs -p no:cacheprovider python/tests/test_env.py -k cuda
      for n in 4096 65536; do
        run "py_vector_env_$n" python3 examples/python/bench_vector_env.py --device cuda --num-envs "$n" --steps 500
      done ;;
    torch-collect)
      run bench_train build-gpu/vulpes bench train --backend cuda --json "$OUT/train.jsonl"
      run torch_collect timeout 480 python3 bench/torch_collect.py --vulpes "$OUT/train.jsonl" \
        --json "$OUT/torch_collect.jsonl" ;;
    torch-ppo)
      run bench_ppo build-gpu/vulpes bench ppo --backend cuda --json "$OUT/ppo.jsonl"
      run torch_ppo timeout 480 python3 bench/torch_ppo.py --vulpes "$OUT/ppo.jsonl" --json "$OUT/torch_ppo.jsonl" ;;
    torch-iql)
      run bench_iql build-gpu/vulpes bench iql --backend cuda --json "$OUT/iql.jsonl"
      run torch_iql timeout 480 python3 bench/torch_iql.py --vulpes "$OUT/iql.jsonl" --json "$OUT/torch_iql.jsonl" ;;
    torch-dt)
      run bench_dt build-gpu/vulpes bench dt --backend cuda --json "$OUT/dt.jsonl"
      run torch_dt timeout 480 python3 bench/torch_dt.py --vulpes "$OUT/dt.jsonl" --json "$OUT/torch_dt.jsonl" ;;
    torch-attn)
      run bench_attn build-gpu/vulpes bench attn --backend cuda --json "$OUT/attn.jsonl"
      run torch_attn timeout 480 python3 bench/torch_attn.py --vulpes "$OUT/attn.jsonl" --json "$OUT/torch_attn.jsonl" ;;
    step-profile)
      # every kernel of the first (eager, validation) step, timed alone by Nsight Compute
      run ncu_step ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
        --launch-count "${VP_NCU_LAUNCHES:-600}" --log-file "$OUT/ncu_step.csv" build-gpu/vulpes bench step --backend cuda --iters 1
      run ncu_summary python3 bench/ncu_kernels.py "$OUT/ncu_step.csv" ;;
    collect-check)
      # S = 64: determinism of the EUR/USD job, the trend market learnt at S = 1 and 64 (3 seeds)
      run collect_check bash scripts/gpu_collect_check.sh build-gpu /tmp/vp-collect "$OUT/collect" ;;
    collect-profile)
      # every kernel of a 65536-env, S = 8 collection's set-up and first iterations, timed alone by
      # Nsight Compute (the head steps are the kernels between a collect_gather and the env step)
      run ncu_collect ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
        --launch-count "${VP_NCU_LAUNCHES:-3000}" --log-file "$OUT/ncu_collect.csv" build-gpu/vulpes bench train \
        --backend cuda --envs 65536 --steps 8 --iters 1
      run ncu_collect_summary python3 bench/ncu_kernels.py "$OUT/ncu_collect.csv" ;;
    modules-step)
      # the learner step with each network module on, beside the default (docs/perf.md)
      run bench_step_modules build-gpu/vulpes bench step --backend cuda --json "$OUT/step_modules.jsonl" \
        --ablate model.vsn,model.spectral_norm,model.kan,model.stoch_depth=0.1,model.q_denoise,model.cross_branch,model.risk_budget=0.5 ;;
    modules)
      # every module on: train, backtest on the GPU and the CPU; the ablations of docs/modules.md
      run modules_check bash scripts/gpu_modules_check.sh build-gpu /tmp/vp-mods "$OUT/modules" ;;
    step-sweep)
      for B in 1024 4096 8192 16384 32768 65536; do
        run "bench_step_$B" build-gpu/vulpes bench step --backend cuda --batch "$B" --json "$OUT/step_sweep.jsonl"
      done ;;
    search-bench)
      run search_bench bash scripts/gpu_search_bench.sh build-gpu /tmp/vp-search "$OUT" ;;
    dist)
      # one rank of a data-parallel run: its GPU test, then bench step --gpus on every GPU count the
      # machine has (docs/distributed.md, "What a multi-GPU machine would run")
      run test_gpu_dist build-gpu/test_gpu_dist
      n_gpu=$(nvidia-smi -L | wc -l)
      for n in 1 2 4 8; do
        [ "$n" -le "$n_gpu" ] && run "bench_step_gpus_$n" build-gpu/vulpes bench step --backend cuda --gpus "$n" \
          --json "$OUT/dist.jsonl"
      done
      run dist_scaling python3 tools/dist_scaling.py "$OUT/dist.jsonl" ;;
    test|bench) ;;
    bench-*) run "$s" build-gpu/vulpes bench "${s#bench-}" --backend cuda --json "$OUT/bench.jsonl" ;;
    *) run "$s" $s ;;
  esac
done
tar czf "$OUT/logs.tar.gz" -C "$LOGS" .
cp "$LOGS/summary.txt" "$OUT/summary.txt"
echo "== summary (logs in logs.tar.gz)"; cat "$LOGS/summary.txt"; echo "rc=$rc"
exit $rc
