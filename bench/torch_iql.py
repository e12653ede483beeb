#!/usr/bin/env python3
"""The PyTorch reference of `vulpes bench iql`: the same IQL update, timed the same way.

The network of docs/iql.md: the market encoder and portfolio projection of the Python package's
forward (python/src/vulpes/network.py, the function tools/golden_iql.py checks the C update
against) and its IQL heads (twin Q MLPs, a value MLP, a policy MLP; vulpes.network.iql_mlp) with a
target copy of the Q MLPs, with the shapes of the vulpes run (read from `vulpes bench iql --json`
lines, or the default model). A dataset of T x E rows (decision bars, portfolios, actions,
rewards, done flags; s' the same env's next row) lies on the device; one update draws B rows
(torch.randint on the device; vulpes: Philox), encodes s (with gradient) and s' (without),
computes the expectile value loss, the twin Q loss toward r + gamma (1 - done) V(s') and the
advantage-weighted policy loss, backward, clip_grad_norm_, AdamW, then the Polyak step of the
target (torch._foreach_lerp_).

Modes, each validated (finite loss) then timed as `--iters` updates between two CUDA events after
a warm-up, median of 5 (bench/torch_timing.py):
  eager    plain PyTorch, TF32 matmuls, fused AdamW
  graph    the eager update captured in one CUDA graph (capturable AdamW)
  compile  torch.compile (default mode) of the forward and the losses, inside the graph
With --device cpu (a smoke check) eager only, timed on the host clock. `--vulpes FILE` reads
`vulpes bench iql --json FILE` and prints PyTorch ms per update over vulpes's for each batch.
Prints a table and JSON lines.

Usage: python3 bench/torch_iql.py [--vulpes iql.jsonl] [--json out.jsonl] [--modes eager,graph,compile]
                                  [--batch 8192] [--device cpu --hidden 16 ...]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "src"))
import golden  # noqa: E402  (the encoder's parameter table and draws)
from vulpes.network import forward, iql_mlp  # noqa: E402  (the network)
from torch_timing import read_vulpes, time_launches  # noqa: E402  (bench/, this script's folder)

# The default model (SPEC section 4), as bench/torch_ppo.py; the vulpes JSON overrides the shapes.
MODEL = dict(n_features=32, n_portfolio=8, window=8, hidden=256, encoder=0, mamba_state=16,
             mamba_head_dim=64, mamba_conv=4, head_hidden=128, n_atoms=51, v_min=-10.0, v_max=10.0,
             branch_sizes=[3, 4, 3, 3], iqn_cos=64, ln_eps=1e-5, rms_eps=1e-5)
# iql.* and learn.* defaults (include/vulpes/config.h)
IQL = dict(expectile=0.7, beta=3.0, adv_clip=100.0, tau_polyak=0.005, gamma=0.99, lr=1e-4, beta1=0.9, beta2=0.999,
           eps=1.5e-4, weight_decay=0.0, clip_norm=10.0)
SPAN = 14000   # feature rows the decision bars index (the bench market's training span)
T_STEPS, ENVS = 256, 64  # the bench dataset's steps and envs
SHAPE_KEYS = ("n_features", "n_portfolio", "window", "hidden", "encoder", "mamba_state", "mamba_head_dim",
              "mamba_conv", "head_hidden")
MLPS = ("q1", "q2", "v", "pi")


def row_flops(c):
    """GEMM FLOPs of one row's update, counted as bench/bench_iql.c counts them."""
    if c["encoder"] == 1:
        raise SystemExit("torch_iql.py: the FLOP count covers the Mamba2 mixer and no encoder, not TLOB")
    mb = c["encoder"] == 0  # vp_model_encoder: 0 mamba2, 2 none
    F, P, H, K = c["n_features"], c["n_portfolio"], c["hidden"], c["window"] if mb else 1
    HH, A = c["head_hidden"], sum(c["branch_sizes"])
    first, rest = 2.0 * K * H * F, 2.0 * K * H * H
    if mb:
        N, NH = c["mamba_state"], H // c["mamba_head_dim"]
        rest += 2.0 * K * (H + 2 * N + NH) * H + 2 * 2.0 * H * H
    enc_fwd, enc_fb = first + rest, 2 * first + 3 * rest
    proj, mlp_a, mlp_1 = 2.0 * H * P, 2.0 * (HH * H + A * HH), 2.0 * (HH * H + HH)
    heads_fwd = proj + 3 * mlp_a + mlp_1
    return enc_fb + 3 * heads_fwd - 2 * proj + 2 * mlp_a + enc_fwd + proj + mlp_1


def joint(q, act, sizes):
    """The joint Q [B] of per-head values q [B, A]: the mean over the branches of the taken choices'."""
    s, off = 0.0, 0
    for k, sz in enumerate(sizes):
        s = s + q[:, off:off + sz].gather(1, act[:, k:k + 1])[:, 0]
        off += sz
    return s / len(sizes)


class Learn:
    """Parameters, the target, AdamW, a dataset and one update on the device."""

    def __init__(self, case, mode, dev):
        c = self.c = dict(MODEL, **{k: case[k] for k in SHAPE_KEYS})
        torch.manual_seed(1)
        rng = __import__("numpy").random.default_rng(1)
        p = {k: v for k, v in golden.draw_params(rng, c).items() if not k.startswith(("c51.", "iqn."))}
        H, HH, A = c["hidden"], c["head_hidden"], sum(c["branch_sizes"])
        for m in MLPS:
            out = 1 if m == "v" else A
            for name, shape, fan in [(f"iql.{m}.l1.w", (HH, H), H), (f"iql.{m}.l1.b", (HH,), H),
                                     (f"iql.{m}.l2.w", (out, HH), HH), (f"iql.{m}.l2.b", (out,), HH)]:
                p[name] = torch.as_tensor(rng.uniform(-1.0, 1.0, size=shape) / math.sqrt(fan))
        self.params = {k: v.float().to(dev).requires_grad_(True) for k, v in p.items()}
        self.names = list(self.params)
        self.qnames = [k for k in self.names if k.startswith("iql.q")]
        self.target = {"target." + k: self.params[k].detach().clone() for k in self.qnames}
        self.B, n = case["batch"], T_STEPS * ENVS
        P, nb = c["n_portfolio"], len(c["branch_sizes"])
        self.feats = torch.randn(SPAN, c["n_features"], device=dev)
        self.ds = dict(bar=torch.randint(c["window"], SPAN - 1, (n + ENVS,), device=dev, dtype=torch.int32),
                       port=torch.rand(n + ENVS, P, device=dev) * 2 - 1,
                       act=torch.stack([torch.randint(0, s, (n,), device=dev) for s in c["branch_sizes"]], 1),
                       reward=0.01 * torch.randn(n, device=dev), done=(torch.rand(n, device=dev) < 0.01).float())
        self.ds["bar"][ENVS:] = self.ds["bar"][:n] + 1  # s' one bar on, as an env's next row
        assert self.ds["act"].shape[1] == nb
        self.n, self.dev = n, dev
        cuda = dev == "cuda"
        self.opt = torch.optim.AdamW([self.params[k] for k in self.names], lr=IQL["lr"],
                                     betas=(IQL["beta1"], IQL["beta2"]), eps=IQL["eps"],
                                     weight_decay=IQL["weight_decay"], fused=cuda,
                                     capturable=cuda and mode != "eager")
        self.loss_fn = torch.compile(self._loss, dynamic=False) if mode == "compile" else self._loss
        self.loss = torch.zeros((), device=dev)

    def _loss(self, params, target, feats, bar, port, act, reward, done, bar1, port1):
        c, L, sizes = self.c, IQL, self.c["branch_sizes"]
        ex, ex1 = {"h_only": True}, {"h_only": True}
        forward(params, c, feats, bar, port, None, None, ex)
        h = ex["h"]
        q1, q2 = iql_mlp(params, h, "q1"), iql_mlp(params, h, "q2")
        v = iql_mlp(params, h, "v")[:, 0]
        logits = iql_mlp(params, h, "pi")
        with torch.no_grad():
            hd = h.detach()
            qt = torch.minimum(joint(iql_mlp(target, hd, "q1", prefix="target."), act, sizes),
                               joint(iql_mlp(target, hd, "q2", prefix="target."), act, sizes))
            forward(params, c, feats, bar1, port1, None, None, ex1)
            y = reward + L["gamma"] * (1.0 - done) * iql_mlp(params, ex1["h"], "v")[:, 0]
            w = torch.clamp(torch.exp(L["beta"] * (qt - v.detach())), max=L["adv_clip"])
        u = qt - v
        l_v = (torch.where(u < 0, 1.0 - L["expectile"], L["expectile"]) * u * u).mean()
        l_q = ((joint(q1, act, sizes) - y) ** 2 + (joint(q2, act, sizes) - y) ** 2).mean()
        lp, off = 0.0, 0
        for k, sz in enumerate(sizes):
            lp = lp + torch.log_softmax(logits[:, off:off + sz], -1).gather(1, act[:, k:k + 1])[:, 0]
            off += sz
        return l_v + l_q - (w * lp).mean()

    def update(self):
        d = self.ds
        r = torch.randint(0, self.n, (self.B,), device=self.dev)
        loss = self.loss_fn(self.params, self.target, self.feats, d["bar"][r], d["port"][r], d["act"][r],
                            d["reward"][r], d["done"][r], d["bar"][r + ENVS], d["port"][r + ENVS])
        loss.backward()
        plist = [self.params[k] for k in self.names]
        torch.nn.utils.clip_grad_norm_(plist, IQL["clip_norm"], foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        with torch.no_grad():
            torch._foreach_lerp_([self.target["target." + k] for k in self.qnames],
                                 [self.params[k] for k in self.qnames], IQL["tau_polyak"])
        self.loss.copy_(loss.detach())


def time_host(fn, iters):
    """ms per call of fn on the host clock: a warm-up call, then the median of 5 launches of iters calls."""
    fn()
    per = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        per.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(per)


def time_mode(case, mode, dev, iters, make=None):
    """(ms per update, peak GiB, note) of the update of make(case, mode, dev) (Learn by default)."""
    s = (make or Learn)(case, mode, dev)
    graph, note = None, ""
    if dev == "cuda":
        # warm-up (compilation, autotuning, allocator) on a side stream, as graph capture wants
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                s.update()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
    else:
        s.update()
    if not math.isfinite(float(s.loss)):
        raise RuntimeError(f"{mode}: loss {float(s.loss)} is not finite")
    if dev == "cuda":
        ms, note, graph = time_launches(s.update, iters, mode == "eager")
    else:
        ms = time_host(s.update, iters)
    if not math.isfinite(float(s.loss)):
        raise RuntimeError(f"{mode}: loss {float(s.loss)} is not finite after timing")
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else None
    del s, graph
    if dev == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return ms, peak, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vulpes", default=None, help="vulpes bench iql --json output: its cases and times")
    ap.add_argument("--json", default=None, help="append JSON lines here")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--modes", default=None, help="default eager,graph,compile on CUDA, eager on the CPU")
    ap.add_argument("--iters", type=int, default=10, help="updates per timed launch")
    ap.add_argument("--batch", type=int, default=8192, help="without --vulpes: B")
    for k in SHAPE_KEYS:
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=None, help=f"without --vulpes: {k}")
    a = ap.parse_args()
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_iql.py: no CUDA device (--device cpu runs the smoke check)")
    torch.set_default_dtype(torch.float32)  # golden sets float64 on import
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if a.vulpes:
        cases = [dict(r, vulpes_ms=r["ms_per_update"]) for r in read_vulpes(a.vulpes, "iql", "update")]
        if not cases:
            sys.exit(f"torch_iql.py: {a.vulpes} has no \"bench\":\"iql\" update line")
    else:
        shapes = {k: getattr(a, k) if getattr(a, k) is not None else MODEL[k] for k in SHAPE_KEYS}
        cases = [dict(shapes, batch=a.batch, vulpes_ms=None)]
    modes = (a.modes or ("eager,graph,compile" if dev == "cuda" else "eager")).split(",")
    name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    js = open(a.json, "a") if a.json else None
    print(f"PyTorch {torch.__version__} on {name}: IQL updates (both encodings, every head, the three losses, "
          f"backward, clip, AdamW, Polyak)")
    print(f"{'mode':<8} {'B':>6} {'H':>4} {'ms/update':>10} {'rows/s':>11} {'TFLOP/s':>8} {'peak GiB':>8} "
          f"{'torch/vulpes':>12}  note")
    for case in cases:
        c = dict(MODEL, **{k: case[k] for k in SHAPE_KEYS})
        flops = row_flops(c)
        for mode in modes:
            try:
                ms, peak, note = time_mode(case, mode, dev, a.iters)
            except Exception as e:  # noqa: BLE001  (one mode failing must not hide the others)
                print(f"{mode:<8} {case['batch']:>6} {c['hidden']:>4}  failed: {type(e).__name__}: {e}")
                continue
            rows = case["batch"] / (ms * 1e-3)
            v = case["vulpes_ms"]
            ratio = ms / v if v else None
            print(f"{mode:<8} {case['batch']:>6} {c['hidden']:>4} {ms:>10.3f} {rows:>11.4g} "
                  f"{flops * rows * 1e-12:>8.2f} {(f'{peak:.2f}' if peak is not None else '-'):>8} "
                  f"{(f'{ratio:.2f}' if ratio else '-'):>12}  {note}")
            rec = dict(bench="torch_iql", mode=mode, device=name, batch=case["batch"], hidden=c["hidden"],
                       ms_per_update=ms, rows_per_s=rows, flop_per_row=flops, tflops=flops * rows * 1e-12,
                       peak_gib=peak, vulpes_ms_per_update=v, torch_over_vulpes=ratio, note=note,
                       torch=torch.__version__)
            if js:
                js.write(json.dumps(rec) + "\n")
                js.flush()
    if js:
        js.close()
    if any(c["vulpes_ms"] for c in cases):
        print("torch/vulpes = PyTorch ms per update / vulpes ms per update (`vulpes bench iql`): above 1, vulpes "
              "is faster")


if __name__ == "__main__":
    main()
