#!/usr/bin/env bash
# vulpes compare over two training runs and a backtest of one of them: one table line per
# folder with the figures of its summary.json, --csv and --json on stdout, --out writing the
# three files, and a folder that is not a run refused by name (exit 1, nothing printed).
#   usage: tests/test_cli_compare.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
cd "$src"
v="$build/vulpes"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# two short runs of different seeds, and a backtest of the first one's checkpoint
for s in 1 2; do
  "$v" train examples/eurusd.yaml train.iterations=3 train.eval_every=3 run.seed=$s --backend cpu \
    --out "$tmp/seed$s" > /dev/null 2>&1 || fail "training seed $s failed"
done
"$v" backtest --checkpoint "$tmp/seed1/best.safetensors" --backend cpu --out "$tmp/bt" > /dev/null 2>&1 ||
  fail "the backtest failed"

# the table: a heading and one line per folder, in the order given, kind and figures included
table=$("$v" compare "$tmp/seed1" "$tmp/seed2" "$tmp/bt") || fail "vulpes compare exited $?"
[ "$(wc -l <<< "$table")" = 4 ] || fail "the table has $(wc -l <<< "$table") lines, expected 4:
$table"
grep -qE '^run +kind +status +from +to +return .* Sharpe .* DSR$' <<< "$table" || fail "heading: $table"
grep -qE '^seed1 +train +ok +2017-11-09 +2017-12-29 ' <<< "$table" || fail "seed1 line: $table"
grep -qE '^seed2 +train +ok ' <<< "$table" || fail "seed2 line: $table"
grep -qE '^bt +backtest +ok +2017-11-09 +2017-12-29 ' <<< "$table" || fail "bt line: $table"
# the backtest of seed1's best checkpoint over the same test span has the run's figures
sh1=$(awk '$1 == "seed1" {print $13}' <<< "$table")
shb=$(awk '$1 == "bt" {print $13}' <<< "$table")
[ -n "$sh1" ] && [ "$sh1" = "$shb" ] || fail "seed1's Sharpe '$sh1' differs from its backtest's '$shb'"

# --csv: the Sharpe in full precision, as summary.json holds it
csv=$("$v" compare "$tmp/seed1" "$tmp/bt" --csv) || fail "--csv exited $?"
[ "$(wc -l <<< "$csv")" = 3 ] || fail "--csv has $(wc -l <<< "$csv") lines"
want=$(grep -m1 -A12 '"strategy"' "$tmp/bt/summary.json" | grep -m1 '"sharpe_ratio"' | sed 's/.*:[[:space:]]*//; s/,$//')
grep -qF ",$want," <<< "$(sed -n 3p <<< "$csv")" || fail "bt's Sharpe $want is not in its CSV row: $csv"
json=$("$v" compare "$tmp/seed1" --json) || fail "--json exited $?"
grep -qF '"kind":	"train"' <<< "$json" || fail "--json: $json"

# --out: the three files
"$v" compare "$tmp/seed1" "$tmp/seed2" --out "$tmp/cmp" > /dev/null 2>&1 || fail "--out exited $?"
for f in compare.csv compare.json compare.html; do [ -s "$tmp/cmp/$f" ] || fail "--out wrote no $f"; done
grep -q 'class="best"' "$tmp/cmp/compare.html" || fail "compare.html marks no best value"

# not a run: refused by name, nothing printed
mkdir "$tmp/empty"
rc=0
out=$("$v" compare "$tmp/seed1" "$tmp/empty" 2> "$tmp/err") || rc=$?
[ "$rc" = 1 ] && [ -z "$out" ] || fail "a folder that is not a run: exit $rc, printed '$out'"
grep -qF "vulpes: error in compare: '$tmp/empty' is not a run: it holds no summary.json" "$tmp/err" ||
  fail "message: $(cat "$tmp/err")"
if grep -qE 'VP_ERR_|\.c:[0-9]' "$tmp/err"; then fail "a source location in: $(cat "$tmp/err")"; fi
echo "cli compare: 1 passed, 0 failed"
