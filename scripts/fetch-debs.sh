#!/usr/bin/env bash
# Downloads the .deb files that scripts/gpu.sh unpacks on a GPU machine without a
# package registry (libyaml, cJSON, OpenBLAS and zstd headers) into .deps/debs.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
apt-get download libyaml-0-2 libyaml-dev libcjson1 libcjson-dev libopenblas0-pthread \
  libopenblas-pthread-dev libopenblas-dev libopenblas0 libgfortran5 libzstd-dev libzstd1
