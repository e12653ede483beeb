#!/usr/bin/env bash
# The TLOB encoder from the command line, on the CPU at tiny sizes: vulpes train with
# model.encoder=tlob writes a run whose config and checkpoint carry the encoder, vulpes backtest
# runs that checkpoint and vulpes act decides from it (the one-bar forward over the window);
# PPO trains on the same encoder;
# vulpes ablate takes model.encoder=tlob and model.encoder=none as switches; a config written
# with the replaced model.use_mamba still trains, read as model.encoder with a deprecation
# warning; a bad encoder value is refused naming the key and its values.
#   usage: tests/test_cli_tlob.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# shellcheck source=tests/cli_util.sh
. "${BASH_SOURCE[0]%/*}/cli_util.sh" "$@"
tiny="train.iterations=4 train.eval_every=2 train.checkpoint_every=2 train.log_every=2 learn.batch=16
      replay.warmup=64 model.hidden=16 model.mamba_head_dim=8 model.head_hidden=16 model.iqn_taus=4
      model.iqn_target_taus=4 env.n_envs=4"

# training with the TLOB encoder: the run folder, its config, the checkpoint's tlob.* tensors
# shellcheck disable=SC2086
"$v" train examples/eurusd.yaml model.encoder=tlob model.tlob_heads=2 $tiny --backend cpu --out "$tmp/run" \
  > "$tmp/out" 2> "$tmp/err" || fail "vulpes train exited $?: $(cat "$tmp/err")"
ck="$tmp/run/best.safetensors"
[ -f "$ck" ] || fail "no best.safetensors in the run folder: $(ls "$tmp/run")"
grep -qE '^  encoder: tlob$' "$tmp/run/config.yaml" || fail "the run's config has no 'encoder: tlob'"
grep -qE '^  tlob_heads: 2$' "$tmp/run/config.yaml" || fail "the run's config has no 'tlob_heads: 2'"
grep -qa 'tlob.t.qkv.w' "$ck" || fail "the checkpoint holds no tlob.t.qkv.w"
! grep -qa 'mamba.in_proj.w' "$ck" || fail "the checkpoint of a TLOB network holds Mamba2 tensors"

# the backtest of its checkpoint, and a live decision from it
"$v" backtest --checkpoint "$ck" --backend cpu --out "$tmp/bt" > "$tmp/bt_out" 2> "$tmp/bt_err" ||
  fail "vulpes backtest exited $?: $(cat "$tmp/bt_err")"
grep -q "Sharpe" "$tmp/bt_out" || fail "the backtest printed no Sharpe: $(cat "$tmp/bt_out")"
[ -f "$tmp/bt/trades.csv" ] || fail "the backtest wrote no trades.csv: $(ls "$tmp/bt")"
act=$("$v" act --checkpoint "$ck" --backend cpu 2> "$tmp/act_err") || fail "vulpes act exited $?: $(cat "$tmp/act_err")"
grep -qE '"direction":[[:space:]]*"(short|flat|long)"' <<< "$act" || fail "vulpes act gave no direction: $act"

# PPO's actor-critic on the same encoder: trains and keeps the tlob.* tensors in its checkpoint
# shellcheck disable=SC2086
"$v" train examples/eurusd.yaml train.algo=ppo ppo.rollout_steps=16 model.encoder=tlob model.tlob_heads=2 $tiny \
  --backend cpu --out "$tmp/ppo" > /dev/null 2> "$tmp/ppo_err" || fail "PPO with TLOB exited $?: $(cat "$tmp/ppo_err")"
grep -qa 'tlob.f.fc1.w' "$tmp/ppo/best.safetensors" || fail "the PPO checkpoint holds no tlob.f.fc1.w"

# an ablation of the encoder: both values are switches of the default (mamba2) base
# shellcheck disable=SC2086
out=$("$v" ablate examples/eurusd.yaml --switch model.encoder=tlob,model.encoder=none --seeds 1 $tiny \
  model.tlob_heads=2 --backend cpu --out "$tmp/ab" 2> "$tmp/ab_err") || fail "vulpes ablate exited $?: $(cat "$tmp/ab_err")"
grep -qE '^model\.encoder=tlob +1 ' <<< "$out" || fail "no tlob variant line: $out"
grep -qE '^model\.encoder=none +1 ' <<< "$out" || fail "no none variant line: $out"
[ -f "$tmp/ab/runs/model.encoder=tlob/seed_1/best.safetensors" ] || fail "the tlob variant's run is incomplete"

# a config with the replaced key: read as model.encoder, with a deprecation warning
sed 's/^  encoder: mamba2$/  use_mamba: false/' examples/eurusd.yaml > "$tmp/old.yaml"
grep -q '^  use_mamba: false$' "$tmp/old.yaml" || fail "examples/eurusd.yaml has no 'encoder: mamba2' line to replace"
sed -i "s#path: data/#path: $src/examples/data/#" "$tmp/old.yaml"
# shellcheck disable=SC2086
"$v" train "$tmp/old.yaml" $tiny train.iterations=2 --backend cpu --out "$tmp/old" > /dev/null 2> "$tmp/old_err" ||
  fail "training from a config with model.use_mamba exited $?: $(cat "$tmp/old_err")"
grep -q "model.use_mamba is deprecated; read as model.encoder = none" "$tmp/old_err" ||
  fail "no deprecation warning: $(cat "$tmp/old_err")"
grep -qE '^  encoder: none$' "$tmp/old/config.yaml" || fail "the old config's run has no 'encoder: none'"

# a value the key does not take
rc=0; msg=$("$v" train examples/eurusd.yaml model.encoder=transformer --backend cpu --out "$tmp/bad" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "a bad encoder exited $rc: $msg"
grep -q "model.encoder" <<< "$msg" && grep -q "mamba2, tlob, none" <<< "$msg" || fail "the refusal: $msg"
echo "ok"
