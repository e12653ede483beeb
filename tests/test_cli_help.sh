#!/usr/bin/env bash
# `vulpes --help` lists every command and subcommand, one line each, from the command table;
# `vulpes COMMAND [SUB] --help` works for each row (exit 0, its usage on stdout); every command
# that computes refuses a bad --backend with the same message, an unknown option names it,
# and a command without config overrides refuses key=value the same way.
#   usage: tests/test_cli_help.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
# (text is matched with here-strings, never `printf | grep -q`: grep -q may exit before the
# writer is done, and pipefail would report the writer's SIGPIPE as a failure)
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
cd "$src"
v="$build/vulpes"
fail() { echo "FAIL: $*"; exit 1; }

help=$("$v" --help) || fail "vulpes --help exited $?"
# every command and subcommand, each on a line of its own
rows="train|walkforward|ablate|search|backtest|act|record|compare|data inspect|data synth|config|bench gemm|bench env|bench step|bench backtest|bench train|bench ppo|bench iql|bench act|bench attn|bench dt"
IFS='|' read -r -a want <<< "$rows"
listed=$(printf '%s\n' "$help" | grep -cE '^  (train|walkforward|ablate|search|backtest|act|record|compare|data|config|bench) ')
[ "$listed" = "${#want[@]}" ] || fail "vulpes --help lists $listed command lines, expected ${#want[@]}:
$help"
for w in "${want[@]}"; do
  grep -qE "^  $w( |$)" <<< "$help" || fail "vulpes --help does not list '$w'"
  # shellcheck disable=SC2086
  out=$("$v" $w --help) || fail "vulpes $w --help exited $?"
  cmd=${w%% *}
  grep -q "^usage: vulpes $cmd" <<< "$out" || fail "vulpes $w --help shows no usage:
$out"
done
short=$("$v" -h) || fail "vulpes -h exited $?"
[ "$(head -1 <<< "$short")" = "$(head -1 <<< "$help")" ] || fail "-h differs from --help"

# the same messages from the shared parser in every command
for c in "train x.yaml" "walkforward x.yaml" "ablate x.yaml --switch model.encoder=none --seeds 1" "bench step"; do
  rc=0
  # shellcheck disable=SC2086
  msg=$("$v" $c --backend gpu 2>&1 > /dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "vulpes $c --backend gpu exited $rc"
  grep -qF "vulpes ${c%% *}: --backend takes cpu, cuda or auto, got 'gpu'" <<< "$msg" ||
    fail "vulpes $c --backend gpu: $msg"
  rc=0
  # shellcheck disable=SC2086
  msg=$("$v" $c --bogus 2>&1 > /dev/null) || rc=$?
  [ "$rc" = 2 ] && grep -qF "vulpes ${c%% *}: unknown option '--bogus'" <<< "$msg" ||
    fail "vulpes $c --bogus (exit $rc): $msg"
done
for c in "bench step" "data synth ou" "data inspect f.csv"; do
  rc=0
  # shellcheck disable=SC2086
  msg=$("$v" $c a.b=1 2>&1 > /dev/null) || rc=$?
  sub=${c#* }; name="${c%% *}"; [ "$name" = data ] && name="data ${sub%% *}"
  [ "$rc" = 2 ] && grep -qF "vulpes $name: 'a.b=1': $name takes no key=value config overrides" <<< "$msg" ||
    fail "vulpes $c a.b=1 (exit $rc): $msg"
done
echo "cli help: ${#want[@]} commands listed, each with --help; shared messages checked"
