#!/usr/bin/env python3
"""The PyTorch reference of `vulpes bench dt`: the same Decision Transformer update, timed the same way.

The network of docs/dt.md: the market encoder and portfolio projection of the Python package's
forward (python/src/vulpes/network.py) for each step's window, then the tokens and the transformer
of python/src/vulpes/dt.py (return, state and summed per-branch action embeddings, the timestep
embedding, the input LayerNorm, pre-LayerNorm GPT blocks, the final LayerNorm, the head at every
token), with F.scaled_dot_product_attention(is_causal=True) for the attention; the shapes of the
vulpes run (read from `vulpes bench dt --json` lines, or the defaults). A dataset of T x E random
rows (decision bars, portfolios, actions, returns-to-go, timesteps) lies on the device; one update
draws B K rows (torch.randint on the device; vulpes: Philox over sequences of episodes), runs the
encoder over the B K windows and the transformer over B sequences of 3K tokens, the cross-entropy
per branch at the state tokens (summed over the branches, the mean over the steps), backward,
clip_grad_norm_ and fused AdamW.

Modes, each validated (finite loss) then timed as `--iters` updates between two CUDA events after
a warm-up, median of 5 (bench/torch_timing.py):
  eager    plain PyTorch, TF32 matmuls, fused AdamW
  graph    the eager update captured in one CUDA graph (capturable AdamW)
  compile  torch.compile (default mode) of the forward and the loss, inside the graph
With --device cpu (a smoke check) eager only, timed on the host clock. `--vulpes FILE` reads
`vulpes bench dt --json FILE` and prints PyTorch ms per update over vulpes's for each batch.
Prints a table and JSON lines.

Usage: python3 bench/torch_dt.py [--vulpes dt.jsonl] [--json out.jsonl] [--modes eager,graph,compile]
                                 [--batch 8192] [--device cpu --batch 16 ...]
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as Fn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "src"))
import golden  # noqa: E402  (the encoder's parameter table and draws)
from vulpes.network import forward  # noqa: E402  (the encoder)
from torch_iql import IQL, MODEL, SPAN, T_STEPS, ENVS, SHAPE_KEYS, time_mode  # noqa: E402  (bench/)
from torch_timing import read_vulpes  # noqa: E402  (bench/, this script's folder)

# dt.* defaults (include/vulpes/config.h) and the bench's env.episode_bars (the timestep rows)
DT = dict(context=20, layers=3, heads=1, embed=128, timesteps=1024)
DT_KEYS = tuple(DT)
ENC_KEYS = tuple(k for k in SHAPE_KEYS if k != "head_hidden")  # the encoder's shape (no DQN heads here)


def update_flops(c, B):
    """GEMM FLOPs of one update, counted as bench/bench_dt_floor.c counts them."""
    if c["encoder"] == 1:
        raise SystemExit("torch_dt.py: the FLOP count covers the Mamba2 mixer and no encoder, not TLOB")
    mamba = c["encoder"] == 0
    F, P, H, KE = c["n_features"], c["n_portfolio"], c["hidden"], c["window"] if c["encoder"] != 2 else 1
    K, D, NL, A = c["context"], c["embed"], c["layers"], sum(c["branch_sizes"])
    BK, L = B * K, 3 * c["context"]
    first, rest = 2.0 * KE * H * F, 2.0 * KE * H * H
    if mamba:
        N, NH = c["mamba_state"], H // c["mamba_head_dim"]
        rest += 2.0 * KE * (H + 2 * N + NH) * H + 2 * 2.0 * H * H
    enc = BK * (2 * first + 3 * rest)
    port = 2.0 * BK * P * H
    lin = 2.0 * (BK * H * D + B * L * (NL * 12 * D * D + D * A)) + port
    attn = 2.0 * NL * B * L * (L + 1) * D
    return enc + 3 * lin - port + 3.5 * attn


def dt_params(rng, c):
    """The tensors after the encoder (include/vulpes/dt.h's order): linears uniform in
    +-1 / sqrt(fan_in), biases zero, embeddings of standard deviation 0.02, LayerNorms one and zero."""
    D, H, A, TM = c["embed"], c["hidden"], sum(c["branch_sizes"]), c["timesteps"]
    lin = lambda r, k: torch.as_tensor(rng.uniform(-1.0, 1.0, size=(r, k)) / math.sqrt(k))  # noqa: E731
    emb = lambda r: torch.as_tensor(rng.uniform(-1.0, 1.0, size=(r, D)) * 0.02 * math.sqrt(3.0))  # noqa: E731
    z, o = (lambda n: torch.zeros(n)), (lambda n: torch.ones(n))
    p = {"dt.ret.w": torch.as_tensor(rng.uniform(-1.0, 1.0, size=(D,))), "dt.ret.b": z(D),
         "dt.state.w": lin(D, H), "dt.state.b": z(D), "dt.action.emb": emb(A), "dt.time.emb": emb(TM),
         "dt.ln_in.g": o(D), "dt.ln_in.b": z(D)}
    for l in range(c["layers"]):
        q = "dt.block%d." % l
        p.update({q + "ln1.g": o(D), q + "ln1.b": z(D), q + "attn.qkv.w": lin(3 * D, D), q + "attn.qkv.b": z(3 * D),
                  q + "attn.proj.w": lin(D, D), q + "attn.proj.b": z(D), q + "ln2.g": o(D), q + "ln2.b": z(D),
                  q + "mlp.fc.w": lin(4 * D, D), q + "mlp.fc.b": z(4 * D), q + "mlp.proj.w": lin(D, 4 * D),
                  q + "mlp.proj.b": z(D)})
    p.update({"dt.ln_f.g": o(D), "dt.ln_f.b": z(D), "dt.head.w": lin(A, D), "dt.head.b": z(A)})
    return p


class Learn:
    """Parameters, AdamW, a dataset and one update on the device."""

    def __init__(self, case, mode, dev):
        c = self.c = dict(MODEL, **{k: case[k] for k in ENC_KEYS + DT_KEYS})
        torch.manual_seed(1)
        rng = __import__("numpy").random.default_rng(1)
        p = {k: v for k, v in golden.draw_params(rng, c).items() if not k.startswith(("c51.", "iqn."))}
        p.update(dt_params(rng, c))
        self.params = {k: v.float().to(dev).requires_grad_(True) for k, v in p.items()}
        self.plist = list(self.params.values())
        self.B, self.n, self.dev = case["batch"], T_STEPS * ENVS, dev
        n, P = self.n, c["n_portfolio"]
        self.feats = torch.randn(SPAN, c["n_features"], device=dev)
        self.ds = dict(bar=torch.randint(c["window"], SPAN, (n,), device=dev),
                       port=torch.rand(n, P, device=dev) * 2 - 1,
                       act=torch.stack([torch.randint(0, s, (n,), device=dev) for s in c["branch_sizes"]], 1),
                       rtg=torch.randn(n, device=dev), ts=torch.randint(0, c["timesteps"], (n,), device=dev),
                       valid=(torch.rand(n, device=dev) < 0.95).float())
        cuda = dev == "cuda"
        self.opt = torch.optim.AdamW(self.plist, lr=IQL["lr"], betas=(IQL["beta1"], IQL["beta2"]), eps=IQL["eps"],
                                     weight_decay=IQL["weight_decay"], fused=cuda,
                                     capturable=cuda and mode != "eager")
        self.loss_fn = torch.compile(self._loss, dynamic=False) if mode == "compile" else self._loss
        self.loss = torch.zeros((), device=dev)

    def _loss(self, p, feats, bar, port, act, rtg, ts, valid):
        c, B = self.c, self.B
        K, D, NH, eps = c["context"], c["embed"], c["heads"], c["ln_eps"]
        L, dh, sizes = 3 * K, D // NH, c["branch_sizes"]
        offs = [sum(sizes[:i]) for i in range(len(sizes))]
        ex = {"h_only": True}
        forward(p, c, feats, bar, port, None, None, ex)
        stok = ex["h"] @ p["dt.state.w"].T + p["dt.state.b"]
        rtok = rtg[:, None] * p["dt.ret.w"] + p["dt.ret.b"]
        atok = sum(p["dt.action.emb"][offs[br] + act[:, br]] for br in range(len(sizes)))
        te = p["dt.time.emb"][ts]
        x = torch.stack([rtok + te, stok + te, atok + te], 1).reshape(B, L, D)
        x = Fn.layer_norm(x, (D,), p["dt.ln_in.g"], p["dt.ln_in.b"], eps)
        for l in range(c["layers"]):
            q = "dt.block%d." % l
            y = Fn.layer_norm(x, (D,), p[q + "ln1.g"], p[q + "ln1.b"], eps)
            qkv = y @ p[q + "attn.qkv.w"].T + p[q + "attn.qkv.b"]
            qq, kk, vv = (t.reshape(B, L, NH, dh).transpose(1, 2) for t in qkv.split(D, -1))
            o = Fn.scaled_dot_product_attention(qq, kk, vv, is_causal=True).transpose(1, 2).reshape(B, L, D)
            x = x + o @ p[q + "attn.proj.w"].T + p[q + "attn.proj.b"]
            y = Fn.layer_norm(x, (D,), p[q + "ln2.g"], p[q + "ln2.b"], eps)
            x = x + Fn.gelu(y @ p[q + "mlp.fc.w"].T + p[q + "mlp.fc.b"]) @ p[q + "mlp.proj.w"].T + p[q + "mlp.proj.b"]
        x = Fn.layer_norm(x, (D,), p["dt.ln_f.g"], p["dt.ln_f.b"], eps)
        logits = (x @ p["dt.head.w"].T + p["dt.head.b"])[:, 1::3].reshape(B * K, -1)
        ce = sum(Fn.cross_entropy(logits[:, o:o + s], act[:, br], reduction="none")
                 for br, (o, s) in enumerate(zip(offs, sizes)))
        return (ce * valid).sum() / valid.sum().clamp(min=1.0)

    def update(self):
        d = self.ds
        r = torch.randint(0, self.n, (self.B * self.c["context"],), device=self.dev)
        loss = self.loss_fn(self.params, self.feats, d["bar"][r], d["port"][r], d["act"][r], d["rtg"][r],
                            d["ts"][r], d["valid"][r])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.plist, IQL["clip_norm"], foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        self.loss.copy_(loss.detach())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vulpes", default=None, help="vulpes bench dt --json output: its cases and times")
    ap.add_argument("--json", default=None, help="append JSON lines here")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--modes", default=None, help="default eager,graph,compile on CUDA, eager on the CPU")
    ap.add_argument("--iters", type=int, default=10, help="updates per timed launch")
    ap.add_argument("--batch", type=int, default=8192, help="without --vulpes: B sequences")
    for k in ENC_KEYS + DT_KEYS:
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=None, help=f"without --vulpes: {k}")
    a = ap.parse_args()
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_dt.py: no CUDA device (--device cpu runs the smoke check)")
    torch.set_default_dtype(torch.float32)  # golden sets float64 on import
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if a.vulpes:
        cases = [dict(r, vulpes_ms=r["ms_per_update"]) for r in read_vulpes(a.vulpes, "dt", "update")]
        if not cases:
            sys.exit(f"torch_dt.py: {a.vulpes} has no \"bench\":\"dt\" update line")
    else:
        shapes = {k: getattr(a, k) if getattr(a, k) is not None else dict(MODEL, **DT)[k] for k in ENC_KEYS + DT_KEYS}
        cases = [dict(shapes, batch=a.batch, vulpes_ms=None)]
    modes = (a.modes or ("eager,graph,compile" if dev == "cuda" else "eager")).split(",")
    name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    js = open(a.json, "a") if a.json else None
    print(f"PyTorch {torch.__version__} on {name}: Decision Transformer updates (the encoder over B K windows, "
          f"the transformer, the loss, backward, clip, AdamW)")
    print(f"{'mode':<8} {'B':>6} {'K':>3} {'D':>4} {'ms/update':>10} {'seqs/s':>10} {'tokens/s':>10} {'TFLOP/s':>8} "
          f"{'peak GiB':>8} {'torch/vulpes':>12}  note")
    for case in cases:
        c = dict(MODEL, **{k: case[k] for k in ENC_KEYS + DT_KEYS})
        B = case["batch"]
        flops = update_flops(c, B)
        for mode in modes:
            try:
                ms, peak, note = time_mode(case, mode, dev, a.iters, Learn)
            except Exception as e:  # noqa: BLE001  (one mode failing must not hide the others)
                print(f"{mode:<8} {B:>6} {c['context']:>3} {c['embed']:>4}  failed: {type(e).__name__}: {e}")
                continue
            seqs = B / (ms * 1e-3)
            toks = seqs * 3 * c["context"]
            v = case["vulpes_ms"]
            ratio = ms / v if v else None
            print(f"{mode:<8} {B:>6} {c['context']:>3} {c['embed']:>4} {ms:>10.3f} {seqs:>10.4g} {toks:>10.4g} "
                  f"{flops / (ms * 1e-3) * 1e-12:>8.3g} {(f'{peak:.2f}' if peak is not None else '-'):>8} "
                  f"{(f'{ratio:.2f}' if ratio else '-'):>12}  {note}")
            rec = dict(bench="torch_dt", mode=mode, device=name, batch=B, context=c["context"], embed=c["embed"],
                       layers=c["layers"], heads=c["heads"], ms_per_update=ms, seqs_per_s=seqs, tokens_per_s=toks,
                       flop_per_update=flops, tflops=flops / (ms * 1e-3) * 1e-12, peak_gib=peak,
                       vulpes_ms_per_update=v, torch_over_vulpes=ratio, note=note, torch=torch.__version__)
            if js:
                js.write(json.dumps(rec) + "\n")
                js.flush()
    if js:
        js.close()
    if any(c["vulpes_ms"] for c in cases):
        print("torch/vulpes = PyTorch ms per update / vulpes ms per update (`vulpes bench dt`): above 1, vulpes "
              "is faster")


if __name__ == "__main__":
    main()
