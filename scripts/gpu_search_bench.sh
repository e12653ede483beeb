#!/usr/bin/env bash
# vulpes search throughput on one GPU: the same 16-trial search (examples/eurusd.yaml, its
# CPU-sized network, over examples/search_space.yaml, eta 3: rungs of 16, 6 and 2 trials)
# with --parallel 16 and with --parallel 1, each timed by the wall clock, and the trials/s and
# trial iterations/s of both and their ratio printed and appended to OUT/bench.jsonl. The two
# searches train the same trials to the same figures (the results do not depend on P), so the
# ratio is the gain of running the trials side by side.
#   usage: scripts/gpu_search_bench.sh BUILD_DIR WORK_DIR OUT_DIR
set -euo pipefail
build=$1 work=$2 out=$3
v="$build/vulpes"
rm -rf "$work"
mkdir -p "$work" "$out"
iters=${VP_SEARCH_BENCH_ITERS:-270}
over="train.iterations=$iters train.eval_every=30 train.log_every=30 train.checkpoint_every=0"
declare -A wall
for p in 16 1; do
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$v" search examples/eurusd.yaml examples/search_space.yaml --trials 16 --eta 3 --parallel "$p" $over \
    --backend cuda --out "$work/p$p" > "$work/p$p.txt" 2> "$work/p$p.err" || { cat "$work/p$p.err"; exit 1; }
  t1=$(date +%s.%N)
  wall[$p]=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  grep -F "trials at once" "$work/p$p.err" || true
done
# the work of the plan: each rung's trials x its iterations, from results.json
work_iters=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(sum(n*(b-(r['rung_iterations'][i-1] if i else 0)) for i,(n,b) in enumerate(zip(r['rung_trials'],r['rung_iterations']))))" \
  "$work/p16/results.json")
cmp -s <(cut -d, -f1-8 "$work/p16/results.csv") <(cut -d, -f1-8 "$work/p1/results.csv") ||
  echo "WARNING: the two searches' results differ (they should not)"
for p in 16 1; do
  awk -v p="$p" -v w="${wall[$p]}" -v n="$work_iters" \
    'BEGIN { printf "search --parallel %-2s  %8.1f s  %7.4f trials/s  %9.1f trial iterations/s\n", p, w, 16 / w, n / w }'
  printf '{"bench":"search","parallel":%s,"trials":16,"eta":3,"iterations":%s,"trial_iterations":%s,"wall_s":%s}\n' \
    "$p" "$iters" "$work_iters" "${wall[$p]}" >> "$out/bench.jsonl"
done
awk -v a="${wall[1]}" -v b="${wall[16]}" 'BEGIN { printf "parallel 16 vs 1: %.2fx the throughput\n", a / b }'
