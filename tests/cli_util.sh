# What the CLI tests share; sourced, after `set -euo pipefail`, with the test's arguments
# BUILD_DIR SOURCE_DIR: sets build and src (absolute), enters src, sets v (the vulpes binary)
# and tmp (a new folder, removed at exit), and defines fail MSG (prints "FAIL: MSG", exits 1).
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
cd "$src"
v="$build/vulpes"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
