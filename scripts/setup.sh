#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages vulpes builds against, when they are missing. With
# --python (`make test`): also the Python packages of python/requirements.txt (torch, onnx,
# onnxruntime, pandas, gymnasium, pytest, tensorboard, empyrical, safetensors, numpy, optuna,
# psycopg2) and the PostgreSQL server for the Python tests, a few GB that building and training do
# not need. With --fuzz (`make fuzz`):
# clang and its libFuzzer runtime (libclang-rt-N-dev on Debian 12 and later). Safe to run
# again: it installs nothing that is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fuzz=0 python=0
[ "${1:-}" = "--fuzz" ] && fuzz=1
[ "${1:-}" = "--python" ] && python=1

# Installs the Debian packages given that are missing.
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "vulpes setup: installing ${missing[*]}"
  local SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# ---- Debian packages -----------------------------------------------------------------
pkgs=(build-essential cmake pkg-config python3 python3-venv python3-numpy libopenblas-dev libyaml-dev libcjson-dev
      libzstd-dev chromium)
# safetensors has a Debian package only in newer releases
if apt-cache show python3-safetensors >/dev/null 2>&1; then pkgs+=(python3-safetensors); fi
# Open MPI: data-parallel runs under mpirun, and their CPU tests (tests/test_cli_dist_mpi.sh)
pkgs+=(libopenmpi-dev openmpi-bin)
install_missing "${pkgs[@]}"

# ---- clang and libFuzzer for `make fuzz` -------------------------------------------------
# Debian's clang (clang-14 on Debian 12) only recommends the runtime libraries; libFuzzer's
# archive is in libclang-rt-N-dev (N: clang's major version), or in older releases in
# libclang-common-N-dev, which clang already pulls in.
if [ "$fuzz" = 1 ]; then
  install_missing clang
  major=$(clang -dumpversion | cut -d. -f1)
  if [ ! -f "$(clang --print-runtime-dir)/libclang_rt.fuzzer-x86_64.a" ]; then
    install_missing "libclang-rt-$major-dev"
  fi
  if [ ! -f "$(clang --print-runtime-dir)/libclang_rt.fuzzer-x86_64.a" ]; then
    echo "vulpes setup: clang $major has no libFuzzer runtime ($(clang --print-runtime-dir)); install libclang-rt-$major-dev" >&2
    exit 1
  fi
  exit 0
fi
[ "$python" = 1 ] || exit 0

# ---- PostgreSQL for the Optuna test (python/tests/test_optuna.py starts a server of its own) ----
# The server's binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/N/bin, else the
# Debian package; no server is started here.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  install_missing postgresql
fi

# ---- Python for the Python package's tests and the checkpoint_python test ---------------
# The system python3 when it has every module python/requirements.txt names, else a virtual
# environment (VULPES_PYVENV, default .pyvenv) that sees the system's packages and gets the rest
# from PyPI (torch's Linux wheel with NVIDIA's runtime packages: a few GB, a CPU torch on a
# machine without a GPU). The tests never install anything: without these modules the Python
# test fails under CI (CI=true) and is skipped elsewhere.
venv=${VULPES_PYVENV:-$root/.pyvenv}
pymods="import safetensors, numpy, pandas, torch, gymnasium, onnx, onnxruntime, onnxscript, pytest, tensorboard, empyrical, optuna, psycopg2"
has_modules() { "$1" -c "$pymods" >/dev/null 2>&1; }
if ! has_modules python3 && ! has_modules "$venv/bin/python"; then
  echo "vulpes setup: installing the Python packages of python/requirements.txt into $venv"
  if ! { { [ -x "$venv/bin/python" ] || python3 -m venv --system-site-packages "$venv"; } &&
         "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/python/requirements.txt" &&
         "$venv/bin/python" -c "import torch; torch.zeros(1)"; }; then
    echo "vulpes setup: could not install the Python packages; the Python tests will fail under CI and be skipped elsewhere" >&2
  fi
fi
