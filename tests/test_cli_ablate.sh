#!/usr/bin/env bash
# vulpes ablate from the command line: a tiny ablation of examples/eurusd.yaml (the base and
# model.encoder=none, 2 seeds, 2 at once) prints its table and writes its files; a resume
# of the finished ablation trains nothing again; refused switches name the switch, exit 1 and
# leave no folder; the learner modules' switches run; usage errors exit 2; bench step --ablate
# refuses a key that does not exist.
#   usage: tests/test_cli_ablate.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
tiny="train.iterations=4 train.eval_every=2 train.log_every=2 learn.batch=16 replay.warmup=64 model.hidden=16
      model.mamba_head_dim=8 model.head_hidden=16 model.iqn_taus=4 model.iqn_target_taus=4 env.n_envs=4"

# the ablation: a line per variant, the folder's files, each run's own folder
# shellcheck disable=SC2086
out=$("$v" ablate examples/eurusd.yaml --switch model.encoder=none --seeds 2 --parallel 2 $tiny --backend cpu \
  --out "$tmp/ab" 2> "$tmp/err") || fail "vulpes ablate exited $?: $(cat "$tmp/err")"
grep -qE '^variant +seeds +test Sharpe +\+- SE +deflated Sharpe +best seed +ms/learn step +parameters$' <<< "$out" ||
  fail "heading: $out"
grep -qE '^base +2 ' <<< "$out" || fail "base line: $out"
grep -qE '^model\.encoder=none +2 ' <<< "$out" || fail "variant line: $out"
grep -qF "deflated Sharpe over 4 runs" <<< "$out" || fail "deflation line: $out"
grep -qF "ablation folder: $tmp/ab (report.html)" <<< "$out" || fail "folder line: $out"
grep -qF "ablation: 2 runs at once" "$tmp/err" || fail "no line on the runs at once: $(cat "$tmp/err")"
for f in ablate.csv ablate.json report.html ablate_plan.json config.yaml; do
  [ -f "$tmp/ab/$f" ] || fail "$f is missing"
done
for d in base/seed_1 base/seed_2 model.encoder=none/seed_1 model.encoder=none/seed_2; do
  [ -f "$tmp/ab/runs/$d/report.html" ] && [ -f "$tmp/ab/runs/$d/best.safetensors" ] || fail "run $d is incomplete"
done
[ "$(grep -c '"event":"ablate_run"' "$tmp/ab/metrics.jsonl")" = 4 ] || fail "metrics.jsonl: not 4 ablate_run events"

# a resume of the finished ablation trains nothing and prints the same figures (the step times aside)
before=$(cat "$tmp/ab/runs/base/seed_1/metrics.jsonl")
out2=$("$v" ablate --resume "$tmp/ab" --backend cpu 2> "$tmp/err2") || fail "the resume exited $?: $(cat "$tmp/err2")"
[ "$before" = "$(cat "$tmp/ab/runs/base/seed_1/metrics.jsonl")" ] || fail "the resume trained a finished run again"
! grep -q "training" "$tmp/err2" || fail "the resume started a run: $(cat "$tmp/err2")"
cut -c1-60 <<< "$(grep -E '^(base|model)' <<< "$out")" > "$tmp/t1"
cut -c1-60 <<< "$(grep -E '^(base|model)' <<< "$out2")" > "$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" || fail "the resumed table differs: $out2"

# the learner modules' switches (docs/modules.md): a line each
# shellcheck disable=SC2086
out3=$("$v" ablate examples/eurusd.yaml --switch learn.adaptive_atoms,learn.popart --seeds 1 $tiny --backend cpu \
  --out "$tmp/ab3" 2> "$tmp/err3") || fail "vulpes ablate of the learner modules exited $?: $(cat "$tmp/err3")"
grep -qE '^learn\.adaptive_atoms +1 ' <<< "$out3" && grep -qE '^learn\.popart +1 ' <<< "$out3" ||
  fail "learner module lines: $out3"

# refused switches: exit 1, the switch named, no folder
for c in "model.no_such_module|switch 'model.no_such_module': unknown key 'model.no_such_module'" \
         "run.seed=2|switch 'run.seed=2': run.seed is not a switch" \
         "model.hidden|model.hidden is not a bool key, so the switch needs its value: model.hidden=VALUE"; do
  sw=${c%%|*} want=${c#*|} rc=0
  msg=$("$v" ablate examples/eurusd.yaml --switch "$sw" --seeds 2 --backend cpu --out "$tmp/refused" 2>&1) || rc=$?
  [ "$rc" = 1 ] && grep -qF "$want" <<< "$msg" || fail "--switch $sw (exit $rc): $msg"
  ! grep -qE 'VP_ERR_|\.c:[0-9]' <<< "$msg" || fail "--switch $sw: a source location in the message: $msg"
  [ ! -e "$tmp/refused" ] || fail "--switch $sw left $tmp/refused behind"
done
# usage errors: exit 2
rc=0; msg=$("$v" ablate examples/eurusd.yaml --seeds 2 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF "vulpes ablate: --switch is required" <<< "$msg" || fail "no --switch (exit $rc): $msg"
rc=0; msg=$("$v" ablate --resume "$tmp/ab" --seeds 3 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF -- "--resume continues its folder" <<< "$msg" || fail "--resume --seeds (exit $rc): $msg"

# bench step --ablate: a key that does not exist is refused by name before anything is timed
rc=0; msg=$("$v" bench step --backend cpu --quick --ablate model.encoder=none,model.no_such_module 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF "switch 'model.no_such_module': unknown key 'model.no_such_module'" <<< "$msg" || fail "bench --ablate (exit $rc): $msg"
! grep -q "^phase" <<< "$msg" || fail "bench --ablate timed before refusing: $msg"
echo "cli ablate: table, files, resume, refusals checked"
