#!/usr/bin/env bash
# Python's safetensors package loads a vulpes training checkpoint unchanged: every tensor
# with its dtype and shape, and the resolved config in __metadata__.
#   usage: tests/test_checkpoint_python.sh BUILD_DIR SOURCE_DIR
# Needs no network: it runs the python that scripts/setup.sh --python provided (VULPES_PYVENV,
# default SOURCE_DIR/.pyvenv, else the system python3) and exits 77, which ctest reports
# as a skip, when none of them has safetensors and numpy.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
python=""
for p in "${VULPES_PYVENV:-$src/.pyvenv}/bin/python" python3; do
  if "$p" -c "import safetensors, numpy" 2>/dev/null; then python=$p; break; fi
done
if [ -z "$python" ]; then
  echo "SKIP: no python with safetensors and numpy (scripts/setup.sh --python installs them)"
  exit 77
fi
out=$build/checkpoint_python
cd "$src"  # config paths are relative to the working directory
if ! "$build/vulpes" train examples/eurusd.yaml train.iterations=3 train.eval_every=3 \
  --out "$out" --force > "$build/checkpoint_python.log" 2>&1; then
  cat "$build/checkpoint_python.log"; exit 1
fi
"$python" - "$out/last.safetensors" "$out/best.safetensors" <<'PY'
import sys
from safetensors import safe_open
from safetensors.numpy import load_file

for path in sys.argv[1:]:
    tensors = load_file(path)
    with safe_open(path, "np") as f:
        meta = f.metadata()
    # the network by name, with the shapes of examples/eurusd.yaml (hidden 64, 32 features)
    assert tensors["trunk.w1"].shape == (64, 32) and str(tensors["trunk.w1"].dtype) == "float32", tensors["trunk.w1"].shape
    assert tensors["trunk.ln1.g"].shape == (64,), tensors["trunk.ln1.g"].shape
    names = set(tensors)
    if path.endswith("last.safetensors"):
        # the full training state: target network, AdamW moments, counters, env and replay
        for need in ("target.trunk.w1", "adam.m.trunk.w1", "adam.v.trunk.w1", "adam.step", "replay.state"):
            assert need in names, need
    assert all(v.size > 0 for v in tensors.values())
    # the resolved config and the counters in __metadata__
    assert "model:" in meta["config"] and "hidden: 64" in meta["config"], meta["config"][:200]
    print(f"{path}: {len(tensors)} tensors, {len(meta)} metadata keys: python safetensors loads it")
PY
