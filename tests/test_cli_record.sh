#!/usr/bin/env bash
# vulpes record from the command line: a ma_cross dataset of examples/eurusd.yaml written and
# described (rows, episodes, mean reward, behaviour, data, span), the same seed writing the
# same bytes; an existing --out refused (unchanged) and replaced with --force; a bad --policy
# name, a missing behaviour and a bad --epsilon refused writing nothing; a short training run's
# checkpoint recorded with epsilon (the config and data from the checkpoint); the dataset
# accepted against its own data and refused against other bars (tests/offline_check.c).
#   usage: tests/test_cli_record.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
check="$build/offline_check"

# a dataset and what it says of it
out=$("$v" record examples/eurusd.yaml --policy ma_cross:fast=5,slow=20,size=1 --steps 300 --envs 4 --seed 5 \
  --backend cpu --out "$tmp/a.safetensors" 2> "$tmp/err") || fail "vulpes record exited $?: $(cat "$tmp/err")"
grep -qF "behaviour: ma_cross:fast=5,slow=20,size=1 (seed 5)" <<< "$out" || fail "behaviour line: $out"
grep -qE "^data: $src/examples/data/eurusd_1h_2017.csv \(416442 bytes, xxh64:e7051806f53882ed\), 6225 bars 1 hour apart$" \
  <<< "$out" || fail "data line: $out"
grep -qE "^span: train, bars \[[0-9]+, [0-9]+\)$" <<< "$out" || fail "span line: $out"
grep -qE "^recorded 1200 rows \(300 steps x 4 envs\) on cpu.*: 0 episodes ended, mean reward -?[0-9.e-]+$" \
  <<< "$out" || fail "rows line: $out"
grep -qF "the dataset records its data (vulpes.data.*)" <<< "$out" || fail "record line: $out"
grep -qF "wrote $tmp/a.safetensors" <<< "$out" || fail "wrote line: $out"

# the same seed: the same bytes (written with --force over a copy)
"$v" record examples/eurusd.yaml --policy ma_cross:fast=5,slow=20,size=1 --steps 300 --envs 4 --seed 5 \
  --backend cpu --out "$tmp/b.safetensors" > /dev/null 2>&1 || fail "the second recording failed"
cmp -s "$tmp/a.safetensors" "$tmp/b.safetensors" || fail "the same seed wrote different bytes"

# an existing --out: refused, the file unchanged; --force replaces it
echo keep > "$tmp/keep"
rc=0
msg=$("$v" record examples/eurusd.yaml --policy random --steps 5 --envs 2 --backend cpu --out "$tmp/keep" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF -- "--out $tmp/keep exists: give --force to replace it" <<< "$msg" ||
  fail "an existing --out (exit $rc): $msg"
[ "$(cat "$tmp/keep")" = keep ] || fail "the refused command changed --out"
"$v" record examples/eurusd.yaml --policy random --steps 5 --envs 2 --backend cpu --out "$tmp/keep" --force \
  > /dev/null 2>&1 || fail "--force did not replace --out"
! cmp -s "$tmp/keep" <(echo keep) || fail "--force left --out as it was"

# refusals that write nothing
for args in "--policy randm" "--policy ma_cross:fast=5" "--policy random --epsilon 1.5" "" \
            "--policy random --checkpoint x.safetensors"; do
  rc=0
  # shellcheck disable=SC2086
  msg=$("$v" record examples/eurusd.yaml $args --backend cpu --out "$tmp/none.safetensors" 2>&1) || rc=$?
  [ "$rc" != 0 ] || fail "vulpes record $args exited 0"
  [ ! -e "$tmp/none.safetensors" ] || fail "vulpes record $args wrote a file"
  case "$args" in
    "--policy randm") grep -qF "behaviour 'randm': unknown name 'randm'" <<< "$msg" || fail "bad name: $msg" ;;
    "--policy ma_cross:fast=5") grep -qF "ma_cross needs fast=N and slow=M" <<< "$msg" || fail "ma_cross: $msg" ;;
    *epsilon*) grep -qF -- "--epsilon takes a probability in 0..1, got '1.5'" <<< "$msg" || fail "epsilon: $msg" ;;
    *) grep -qF "give --out FILE and one of --checkpoint CK and --policy NAME" <<< "$msg" || fail "$args: $msg" ;;
  esac
done

# epsilon in the spec: the dataset's behaviour says it
out=$("$v" record examples/eurusd.yaml --policy ma_cross:fast=2,slow=4,epsilon=0.5 --steps 3 --envs 2 --backend cpu \
  --out "$tmp/eps.safetensors" 2>&1) || fail "epsilon in the spec: $out"
grep -qF "behaviour: ma_cross:fast=2,slow=4,size=3,epsilon=0.5 (seed 1)" <<< "$out" || fail "epsilon in the spec: $out"

# a checkpoint's greedy policy with epsilon: its config and data, matched against its record
"$v" train examples/eurusd.yaml train.iterations=2 train.eval_every=2 learn.batch=16 replay.warmup=64 \
  model.mamba_head_dim=8 model.head_hidden=16 model.iqn_taus=4 model.iqn_target_taus=4 env.n_envs=4 \
  --backend cpu --out "$tmp/run" > "$tmp/train.log" 2>&1 || fail "training failed: $(cat "$tmp/train.log")"
out=$("$v" record --checkpoint "$tmp/run/last.safetensors" --epsilon 0.2 --steps 20 --envs 3 --span val \
  --backend cpu --out "$tmp/ck.safetensors" 2> "$tmp/err") || fail "record --checkpoint exited $?: $(cat "$tmp/err")"
grep -qF "behaviour: checkpoint:$tmp/run/last.safetensors,epsilon=0.2 (seed 1)" <<< "$out" || fail "ck: $out"
grep -qF "(the checkpoint's training data, unchanged)" <<< "$out" || fail "ck data line: $out"
grep -qE "^span: val, bars " <<< "$out" || fail "ck span: $out"
rc=0
msg=$("$v" record examples/eurusd.yaml --checkpoint "$tmp/run/last.safetensors" --backend cpu \
  --out "$tmp/none.safetensors" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "with --checkpoint the config comes from the checkpoint" <<< "$msg" || fail "CONFIG: $msg"

# the datasets against data: their own bars pass, other bars are refused naming both
"$check" "$tmp/a.safetensors" examples/eurusd.yaml > "$tmp/ok" 2>&1 || fail "own data refused: $(cat "$tmp/ok")"
grep -qF "dataset matches: " "$tmp/ok" || fail "own data: $(cat "$tmp/ok")"
"$check" "$tmp/ck.safetensors" examples/eurusd.yaml > /dev/null 2>&1 || fail "the checkpoint's dataset refused"
rc=0
msg=$("$check" "$tmp/a.safetensors" examples/eurusd.yaml data.path=synth:trend:bars=6225 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -qF "dataset $tmp/a.safetensors: recorded on $src/examples/data/eurusd_1h_2017.csv (416442 bytes, xxh64:e7051806f53882ed) (6225 bars), not on these bars, synth:trend:bars=6225 (6225 bars)" <<< "$msg" ||
  fail "other data (exit $rc): $msg"
echo "cli record: datasets written, described, reproduced, refused and checked against their data"
