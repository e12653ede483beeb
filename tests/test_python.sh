#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest) against this build's shared library.
#   usage: tests/test_python.sh BUILD_DIR SOURCE_DIR
# Runs the python that scripts/setup.sh --python provided (VULPES_PYVENV, default SOURCE_DIR/.pyvenv, else
# the system python3) with the package's sources on PYTHONPATH and VULPES_LIBRARY set to
# BUILD_DIR/libvulpes.so. Without a python that has the packages the tests need it fails under
# CI (CI=true), and elsewhere exits 77, which ctest reports as a skip.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
need="import numpy, pandas, torch, gymnasium, onnx, onnxruntime, pytest, tensorboard, empyrical"
python=""
for p in "${VULPES_PYVENV:-$src/.pyvenv}/bin/python" python3; do
  if "$p" -c "$need" 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  msg="no python with numpy, pandas, torch, gymnasium, onnx, onnxruntime, pytest, tensorboard and empyrical (scripts/setup.sh --python installs them into ${VULPES_PYVENV:-$src/.pyvenv})"
  if [ "${CI:-}" = "true" ]; then echo "FAIL: $msg"; exit 1; fi
  echo "SKIP: $msg"
  exit 77
fi
if [ ! -f "$build/libvulpes.so" ]; then echo "FAIL: $build/libvulpes.so is missing (build the vulpes_shared target)"; exit 1; fi
cd "$src"
export PYTHONPATH="$src/python/src${PYTHONPATH:+:$PYTHONPATH}" VULPES_LIBRARY="$build/libvulpes.so" VULPES_BIN="$build/vulpes"
# Under CI a skipped test is a failure, except the CUDA ones on a machine without a GPU.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
"$python" -m pytest -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$log" || rc=$?
if [ "$rc" -eq 0 ] && [ "${CI:-}" = "true" ] && grep '^SKIPPED' "$log" | grep -v 'no CUDA device' | grep -q .; then
  echo "FAIL: tests were skipped under CI (above)"
  exit 1
fi
exit "$rc"
