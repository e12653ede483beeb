#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages vulpes builds against, when they are missing, and
# Python's safetensors and numpy for the checkpoint_python test.
# Safe to run again: it installs nothing that is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# ---- Debian packages -----------------------------------------------------------------
pkgs=(build-essential cmake pkg-config python3 python3-venv python3-numpy libopenblas-dev libyaml-dev libcjson-dev
      libzstd-dev chromium)
# safetensors has a Debian package only in newer releases
if apt-cache show python3-safetensors >/dev/null 2>&1; then pkgs+=(python3-safetensors); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "vulpes setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- Python for the checkpoint_python test ---------------------------------------------
# The system python3 when it has both modules, else a virtual environment (VULPES_PYVENV,
# default .pyvenv) that sees the system's packages and gets safetensors from PyPI. The
# test itself never installs anything: without either it reports a skip.
venv=${VULPES_PYVENV:-$root/.pyvenv}
has_modules() { "$1" -c "import safetensors, numpy" >/dev/null 2>&1; }
if ! has_modules python3 && ! has_modules "$venv/bin/python"; then
  echo "vulpes setup: installing Python safetensors and numpy into $venv"
  if ! { python3 -m venv --system-site-packages "$venv" &&
         "$venv/bin/python" -m pip install -q --disable-pip-version-check safetensors numpy; }; then
    echo "vulpes setup: could not install Python safetensors; the checkpoint_python test will be skipped" >&2
  fi
fi
