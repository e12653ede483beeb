#!/usr/bin/env python3
"""Golden data for the Decision Transformer: one batch through the vulpes transformer, in PyTorch.

The network is include/vulpes/dt.h's from the state input on: h = e + W_p p + b_p (e an
encoding given as input, W_p and b_p the encoder's portfolio projection "port.w", "port.b"),
the state linear, the return linear, the summed per-branch action embeddings, the timestep
embedding (rows clamped to TM - 1), tokens interleaved (R, s, a) per step, the input LayerNorm,
pre-LayerNorm GPT blocks (causal multi-head attention with the qkv weight split in q, k, v row
blocks, the exact GELU MLP), the final LayerNorm and the head of per-branch logits; the loss is
the mean over the valid steps of the sum over the branches of the cross-entropy at the state
token. Computed in float64 from float32-rounded inputs. tests/test_dt_golden.c compares the C
forward, loss and backward with the file: the logits, the loss, every gradient and the
gradient of the encoding.

Usage: python3 tools/golden_dt.py --out tests/data/golden_dt.safetensors
Needs torch, numpy and safetensors.
"""
import argparse
import json
import math

import numpy as np
import torch
from safetensors.torch import save_file

torch.set_default_dtype(torch.float64)

CFG = dict(context=3, embed=8, heads=2, layers=2, hidden=6, n_portfolio=8, timesteps=5, batch=3, ln_eps=1e-5,
           branch_sizes=[3, 4, 3, 3])


def f32(x):
    """A float64 tensor holding float32-rounded values."""
    return torch.as_tensor(np.asarray(x, dtype=np.float32).astype(np.float64))


def tensor_table(c):
    """(name, shape) of the tensors after the encoder, in the order of include/vulpes/dt.h."""
    D, H, A, TM = c["embed"], c["hidden"], sum(c["branch_sizes"]), c["timesteps"]
    t = [("dt.ret.w", (D,)), ("dt.ret.b", (D,)), ("dt.state.w", (D, H)), ("dt.state.b", (D,)),
         ("dt.action.emb", (A, D)), ("dt.time.emb", (TM, D)), ("dt.ln_in.g", (D,)), ("dt.ln_in.b", (D,))]
    for l in range(c["layers"]):
        p = "dt.block%d." % l
        t += [(p + "ln1.g", (D,)), (p + "ln1.b", (D,)), (p + "attn.qkv.w", (3 * D, D)), (p + "attn.qkv.b", (3 * D,)),
              (p + "attn.proj.w", (D, D)), (p + "attn.proj.b", (D,)), (p + "ln2.g", (D,)), (p + "ln2.b", (D,)),
              (p + "mlp.fc.w", (4 * D, D)), (p + "mlp.fc.b", (4 * D,)), (p + "mlp.proj.w", (D, 4 * D)),
              (p + "mlp.proj.b", (D,))]
    t += [("dt.ln_f.g", (D,)), ("dt.ln_f.b", (D,)), ("dt.head.w", (A, D)), ("dt.head.b", (A,))]
    return t


def layernorm(x, g, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def forward(c, P, inp):
    """Logits [B L, A] and the loss."""
    B, K, D, NH = c["batch"], c["context"], c["embed"], c["heads"]
    L, dh, TM = 3 * K, D // NH, c["timesteps"]
    sizes = c["branch_sizes"]
    offs = [sum(sizes[:i]) for i in range(len(sizes))]
    h = inp["enc"] + inp["port"] @ P["port.w"].T + P["port.b"]
    stok = h @ P["dt.state.w"].T + P["dt.state.b"]
    rtok = inp["rtg"][:, None] * P["dt.ret.w"] + P["dt.ret.b"]
    act = inp["act"].long()
    atok = sum(P["dt.action.emb"][offs[br] + act[:, br]] for br in range(4))
    te = P["dt.time.emb"][inp["ts"].long().clamp(0, TM - 1)]
    toks = torch.stack([rtok + te, stok + te, atok + te], dim=1).reshape(B, L, D)
    x = layernorm(toks, P["dt.ln_in.g"], P["dt.ln_in.b"], c["ln_eps"])
    mask = torch.tril(torch.ones(L, L, dtype=torch.bool))
    for l in range(c["layers"]):
        p = "dt.block%d." % l
        y = layernorm(x, P[p + "ln1.g"], P[p + "ln1.b"], c["ln_eps"])
        qkv = y @ P[p + "attn.qkv.w"].T + P[p + "attn.qkv.b"]
        q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
        q = q.reshape(B, L, NH, dh).transpose(1, 2)
        k = k.reshape(B, L, NH, dh).transpose(1, 2)
        v = v.reshape(B, L, NH, dh).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        s = s.masked_fill(~mask, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, L, D)
        x = x + o @ P[p + "attn.proj.w"].T + P[p + "attn.proj.b"]
        y = layernorm(x, P[p + "ln2.g"], P[p + "ln2.b"], c["ln_eps"])
        f = y @ P[p + "mlp.fc.w"].T + P[p + "mlp.fc.b"]
        f = 0.5 * f * (1.0 + torch.erf(f / math.sqrt(2.0)))
        x = x + f @ P[p + "mlp.proj.w"].T + P[p + "mlp.proj.b"]
    x = layernorm(x, P["dt.ln_f.g"], P["dt.ln_f.b"], c["ln_eps"])
    logits = x @ P["dt.head.w"].T + P["dt.head.b"]  # [B, L, A]
    st = logits[:, 1::3, :].reshape(B * K, -1)
    terms = torch.zeros(B * K)
    for br in range(4):
        z = st[:, offs[br]:offs[br] + sizes[br]]
        terms = terms - torch.log_softmax(z, dim=-1).gather(1, act[:, br:br + 1])[:, 0]
    terms = terms * inp["valid"]
    loss = terms.sum() / inp["valid"].sum()
    return logits.reshape(B * L, -1), terms, loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    c = CFG
    rng = np.random.default_rng(args.seed)
    B, K, H, Pw = c["batch"], c["context"], c["hidden"], c["n_portfolio"]
    P = {}
    P["port.w"] = f32(rng.uniform(-1, 1, (H, Pw)) / math.sqrt(Pw))
    P["port.b"] = f32(rng.uniform(-1, 1, (H,)) / math.sqrt(Pw))
    for name, shape in tensor_table(c):
        u = rng.uniform(-1.0, 1.0, size=shape)
        if name.endswith(".g"):
            v = 1.0 + 0.2 * u
        elif name.endswith(".b") and "ln" in name:
            v = 0.2 * u
        elif name.endswith(".emb"):
            v = 0.5 * u
        elif len(shape) == 2:
            v = u / math.sqrt(shape[1])
        else:
            v = 0.3 * u
        P[name] = f32(v)
    # the batch: sequence 0 full, 1 two steps, 2 one step (padding after); timesteps past TM - 1
    valid = np.array([1, 1, 1, 1, 1, 0, 1, 0, 0], dtype=np.float32)
    inp = {
        "enc": f32(rng.normal(size=(B * K, H))),
        "port": f32(rng.normal(size=(B * K, Pw)) * 0.5),
        "rtg": f32(rng.normal(size=(B * K,)) * 2.0),
        "ts": torch.as_tensor(np.array([0, 1, 2, 4, 5, 0, 9, 0, 0], dtype=np.int32)),
        "act": torch.as_tensor(np.stack([rng.integers(0, s, size=B * K) for s in c["branch_sizes"]], 1).astype(np.int32)),
        "valid": f32(valid),
    }
    for k in ("act",):
        inp[k] = inp[k] * torch.as_tensor(valid[:, None].astype(np.int32))
    params = {k: v.clone().requires_grad_(True) for k, v in P.items()}
    enc = inp["enc"].clone().requires_grad_(True)
    logits, terms, loss = forward(c, params, dict(inp, enc=enc))
    loss.backward()
    out = {}
    for k, v in P.items():
        out["param." + k] = v.float().contiguous()
        out["grad." + k] = params[k].grad.float().contiguous()
    out["in.enc"] = inp["enc"].float()
    out["in.port"] = inp["port"].float()
    out["in.rtg"] = inp["rtg"].float()
    out["in.ts"] = inp["ts"].int()
    out["in.act"] = inp["act"].int().contiguous()
    out["in.valid"] = inp["valid"].float()
    out["out.logits"] = logits.detach().float().contiguous()
    out["out.terms"] = terms.detach().float()
    out["out.loss"] = loss.detach().float().reshape(1)
    out["grad.enc"] = enc.grad.float().contiguous()
    save_file(out, args.out, metadata={"config": json.dumps(c)})
    print("wrote %s: loss %.6f" % (args.out, loss.item()))


if __name__ == "__main__":
    main()
