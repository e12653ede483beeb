#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages vulpes builds against, when they are missing.
# Safe to run again: it installs nothing that is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config python3 python3-venv libopenblas-dev libyaml-dev libcjson-dev libzstd-dev chromium)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "vulpes setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
