#!/usr/bin/env python3
"""Golden data for the TLOB encoder (docs/model.md, "TLOB encoder"), in PyTorch.

Draws the encoder's parameters (the tlob.* rows of vulpes's parameter table, the same names and
shapes, blocks stacked), the trunk rows h2 [B, K, H] it reads and the weights w [B, H] of a
linear loss sum(w * e), runs the encoder in float64 from float32-rounded inputs (the Python
package's forward, python/src/vulpes/network.py, the one vulpes.load runs), and writes the
inputs, the encoding e [B, H] and the gradients of the loss (every parameter and h2) to a
safetensors file that tests/test_model_tlob.c compares with the C encoder.

The configuration is small and odd where it can be: B 3, K 4, H 8, 2 blocks, 2 temporal heads of
4, 2 feature heads of 2, MLP x3. Norm weights and biases are drawn away from 1 and 0, so every
tensor matters to the loss.

Usage: python3 tools/golden_tlob.py --out tests/data/golden_tlob.safetensors
Needs torch, numpy and safetensors.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))
from vulpes.network import tlob  # noqa: E402
from golden import tlob_rows  # noqa: E402  (the tlob.* rows of the parameter table, tools/golden.py)

torch.set_default_dtype(torch.float64)

# vp_model_cfg field names; batch is the samples of the case
CONFIG = dict(window=4, hidden=8, encoder=1, tlob_blocks=2, tlob_heads=2, tlob_feature_heads=2, tlob_mlp=3,
              ln_eps=1e-5, batch=3)


def f32(x):
    """A float64 tensor holding float32-rounded values."""
    return torch.as_tensor(np.asarray(x, dtype=np.float32).astype(np.float64))


def draw(c, seed):
    """Parameters (weight matrices uniform over +-1/sqrt(fan_in), norm gains 1 +- 0.3, biases and
    norm shifts +-0.3), h2 and the loss weights, float32-rounded."""
    rng = np.random.default_rng(seed)
    p = {}
    for name, shape, init, fan in tlob_rows(c):
        if init == "uniform" and len(shape) == 2:
            v = rng.uniform(-1, 1, shape) / np.sqrt(fan)
        elif init == "ones":
            v = 1.0 + rng.uniform(-0.3, 0.3, shape)
        else:
            v = rng.uniform(-0.3, 0.3, shape)
        p[name] = f32(v)
    B, K, H = c["batch"], c["window"], c["hidden"]
    h2 = f32(np.abs(rng.standard_normal((B, K, H))))  # trunk rows are ReLU outputs
    w = f32(rng.uniform(-1, 1, (B, H)))
    return p, h2, w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output .safetensors file")
    ap.add_argument("--seed", type=int, default=11, help="seed of the draw")
    args = ap.parse_args()
    c = CONFIG
    p, h2, w = draw(c, args.seed)
    params = {k: v.clone().requires_grad_(True) for k, v in p.items()}
    x = h2.clone().requires_grad_(True)
    e = tlob(params, c, x)
    loss = (w * e).sum()
    loss.backward()

    def t32(t):
        return t.detach().to(torch.float32).contiguous()

    out = {"h2": t32(h2), "w": t32(w), "out.e": t32(e), "grad.h2": t32(x.grad)}
    for k in p:
        out["param." + k] = t32(p[k])
        out["grad." + k] = t32(params[k].grad)
    meta = {"config": json.dumps(c), "generator": "tools/golden_tlob.py", "torch": torch.__version__}
    save_file(out, args.out, metadata=meta)
    print(f"golden_tlob.py: seed {args.seed}, loss {loss.item():.6f}, {len(out)} tensors -> {args.out}")


if __name__ == "__main__":
    main()
