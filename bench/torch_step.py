#!/usr/bin/env python3
"""The PyTorch reference of `vulpes bench step`: the same learner step, timed the same way.

One learner step of the default agent (SPEC section 4: F = 32 features, window K = 8,
H = 256, Mamba2 with N = 16 and heads of 64, C51 with 51 atoms over branches 3+4+3+3,
IQN with 64 cosines, 64 online and 64 target taus) at batch B = 8192: online forward at
s_t with the IQN head, online forward at s_{t+n} (double-DQN choice), target forward at
s_{t+n} with the IQN head, the C51 cross-entropy and the quantile Huber loss weighted by
importance weights, backward, global grad-norm clip, AdamW, Polyak. The network and the
losses are tools/golden.py's (the script the learner's golden files come from), so the
work is the same function the C learner is tested against, run here in float32 on CUDA.

Modes, each validated (finite loss) then timed as `--iters` steps between two CUDA events
after a warm-up, median of 5 repetitions:
  eager        plain PyTorch, TF32 matmuls, fused AdamW
  graph        the eager step captured in one CUDA graph (capturable AdamW)
  compile      torch.compile of forwards and losses (default mode) inside
               one captured CUDA graph of the whole step
  compile-bf16 the same under bf16 autocast
`--encoder mamba2|tlob|none` picks the market encoder (model.encoder; tlob with the C defaults
of 2 blocks, 4 temporal heads, 1 feature head, MLP x4: docs/model.md, "TLOB encoder").
`--vulpes FILE` reads `vulpes bench step --json FILE` (plain, or with `--ablate
model.encoder=E`: the line whose "variant" names the encoder) and prints vulpes's step time over
each mode's: the ratio the docs quote (docs/perf.md). Prints a table and JSON lines.
`--smoke` runs one eager step at B = 4 on the CPU, without timing, and prints its loss.

Usage: python3 bench/torch_step.py [--encoder mamba2] [--batch 8192] [--iters 10]
                                   [--modes eager,graph,...] [--json out.jsonl] [--vulpes step.jsonl]
       python3 bench/torch_step.py --smoke [--encoder tlob]
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import golden  # noqa: E402  (the reference network and losses)
from torch_timing import time_launches  # noqa: E402  (bench/, this script's folder)

MODEL = dict(n_features=32, n_portfolio=8, window=8, hidden=256, encoder=0, mamba_state=16,
             mamba_head_dim=64, mamba_conv=4, head_hidden=128, n_atoms=51, v_min=-10.0, v_max=10.0,
             branch_sizes=[3, 4, 3, 3], iqn_cos=64, ln_eps=1e-5, rms_eps=1e-5)
# model.encoder's values (vp_model_encoder) and the TLOB fields' C defaults (vp_model_cfg_default)
ENCODERS = ("mamba2", "tlob", "none")
TLOB = dict(tlob_blocks=2, tlob_heads=4, tlob_feature_heads=1, tlob_mlp=4)
LEARN = dict(n_taus=64, n_target_taus=64, kappa=1.0, lr=1e-4, beta1=0.9, beta2=0.999, eps=1.5e-4,
             weight_decay=0.0, clip_norm=10.0, polyak_tau=0.005, gamma=0.99, n_step=3)
FEATURE_ROWS = 4096


def model_config(encoder):
    """The default model with market encoder `encoder` ("mamba2", "tlob" or "none")."""
    c = dict(MODEL, encoder=ENCODERS.index(encoder))
    if encoder == "tlob":
        c.update(TLOB)
    return c


def tlob_flops(c, B):
    """FLOPs of the TLOB blocks' forward, as vp_model_tlob_flops (src/model/model_tlob.c) counts
    them: per block and side over n rows (tokens) of width W in sequences of L, the q, k, v and
    output projections and the MLP's two layers (2 n (4 W^2 + 2 TM W^2)), q k^T and p v (4 n L W)."""
    if c["encoder"] != 1:
        return 0.0
    K, H, TM = c["window"], c["hidden"], c["tlob_mlp"]

    def side(n, L, W):
        return 2.0 * n * (4.0 * W * W + 2.0 * TM * W * W) + 4.0 * n * L * W
    return c["tlob_blocks"] * (side(B * K, K, H) + side(B * H, H, K))


def model_flops(c, B, n_taus, backward):
    """GEMM FLOPs of one network pass, counted as vp_model_flops (src/model/model_cfg.c)
    counts them: 2 m n k per product (the TLOB blocks' attention products included); the
    backward adds every product's weight gradient and the input gradient of all but those whose
    input needs none."""
    def mm(m, n, k):
        return 2.0 * m * n * k
    mb = c["encoder"] == 0  # vp_model_encoder: 0 mamba2, 1 tlob, 2 none
    F, H, K = c["n_features"], c["hidden"], 1 if c["encoder"] == 2 else c["window"]
    N, NH = c["mamba_state"], c["hidden"] // c["mamba_head_dim"] if mb else 0
    HH, Z, A, Q = c["head_hidden"], c["n_atoms"], sum(c["branch_sizes"]), B * n_taus
    R = B * K
    first, rest = mm(R, H, F), mm(R, H, H)
    if mb:
        rest += mm(R, H + 2 * N + NH, H) + mm(B, H, H) + mm(B, H, H)
    rest += tlob_flops(c, B)
    rest += mm(B, H, c["n_portfolio"]) + 2 * mm(B, HH, H) + mm(B, Z, HH) + mm(B, A * Z, HH)
    if n_taus > 0:
        first += mm(Q, H, c["iqn_cos"])
        rest += mm(Q, HH, H) + mm(Q, A, HH)
    fwd = first + rest
    return fwd + fwd + rest if backward else fwd


def step_flops(c, B, n_taus, target_taus):
    """GEMM FLOPs of a learner step, as `vulpes bench step` counts them."""
    return model_flops(c, B, n_taus, 1) + model_flops(c, B, 0, 0) + model_flops(c, B, target_taus, 0)


class Step:
    """Parameters, target, moments, a fixed batch and one step function of model c on device dev."""

    def __init__(self, c, B, mode, dev="cuda"):
        torch.manual_seed(1)
        L = LEARN
        self.c, self.dev = c, dev
        rng = __import__("numpy").random.default_rng(1)
        self.params = {k: v.float().to(dev).requires_grad_(True) for k, v in golden.draw_params(rng, c).items()}
        self.target = {k: v.detach().clone() for k, v in self.params.items()}
        self.names = list(self.params)
        P, nb = c["n_portfolio"], len(c["branch_sizes"])
        self.feats = torch.randn(FEATURE_ROWS, c["n_features"], device=dev)
        bar = torch.randint(c["window"], FEATURE_ROWS - L["n_step"], (B,), device=dev)
        self.bt = dict(
            bar_idx=bar, next_bar_idx=bar + L["n_step"],
            portfolio=torch.rand(B, P, device=dev) * 2 - 1, next_portfolio=torch.rand(B, P, device=dev) * 2 - 1,
            actions=torch.stack([torch.randint(0, s, (B,), device=dev) for s in c["branch_sizes"]], 1),
            reward=torch.randn(B, device=dev) * 0.1,
            discount=torch.where(torch.arange(B, device=dev) % 16 == 0, 0.0, L["gamma"] ** L["n_step"]),
            is_weight=torch.rand(B, device=dev) * 0.7 + 0.3)
        self.B, self.nb = B, nb
        self.bf16 = mode == "compile-bf16"
        capturable = mode != "eager"
        self.opt = torch.optim.AdamW([self.params[k] for k in self.names], lr=L["lr"],
                                     betas=(L["beta1"], L["beta2"]), eps=L["eps"],
                                     weight_decay=L["weight_decay"], fused=dev == "cuda", capturable=capturable)
        self.loss_fn = self._loss
        if mode.startswith("compile"):
            self.loss_fn = torch.compile(self._loss, dynamic=False)
        self.loss = torch.zeros((), device=dev)

    def _loss(self, params, target, feats, bt, taus, ttaus):
        c, L = self.c, LEARN
        logp, q, zq = golden.forward(params, c, feats, bt["bar_idx"], bt["portfolio"], taus)
        with torch.no_grad():
            _, q_next, _ = golden.forward(params, c, feats, bt["next_bar_idx"], bt["next_portfolio"], None)
            tlogp, _, tzq = golden.forward(target, c, feats, bt["next_bar_idx"], bt["next_portfolio"], ttaus)
            a_star, off = [], 0
            for sz in c["branch_sizes"]:
                a_star.append(q_next[:, off:off + sz].argmax(1))
                off += sz
            a_star = torch.stack(a_star, 1)
        logp, zq, tlogp, tzq = logp.float(), zq.float(), tlogp.float(), tzq.float()
        c51, iqn = golden.losses(c, L, logp, zq, tlogp, tzq, bt["actions"], a_star, bt["reward"],
                                 bt["discount"], taus)
        return (bt["is_weight"] * (c51 + iqn)).mean()

    def step(self):
        L = LEARN
        taus = torch.rand(self.B, L["n_taus"], device=self.dev)
        ttaus = torch.rand(self.B, L["n_target_taus"], device=self.dev)
        with torch.autocast(self.dev, dtype=torch.bfloat16, enabled=self.bf16):
            loss = self.loss_fn(self.params, self.target, self.feats, self.bt, taus, ttaus)
        loss.backward()
        plist = [self.params[k] for k in self.names]
        torch.nn.utils.clip_grad_norm_(plist, L["clip_norm"], foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        with torch.no_grad():
            torch._foreach_lerp_([self.target[k] for k in self.names], [p.detach() for p in plist],
                                 L["polyak_tau"])
        self.loss.copy_(loss.detach())


def smoke(c, B=4):
    """One eager step of model c at batch B on the CPU, untimed, in float32 (torch's default dtype
    is restored after): its loss (finite, or an error) and the parameter names."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        s = Step(c, B, "eager", dev="cpu")
        before = {k: v.detach().clone() for k, v in s.params.items()}
        s.step()
    finally:
        torch.set_default_dtype(dtype)
    loss = float(s.loss)
    if not math.isfinite(loss):
        raise RuntimeError(f"smoke: loss {loss} is not finite")
    moved = sum(not torch.equal(before[k], s.params[k].detach()) for k in s.names)
    if moved != len(s.names):
        raise RuntimeError(f"smoke: {len(s.names) - moved} of {len(s.names)} parameters did not move")
    return loss, s.names


def vulpes_step_ms(path, encoder, batch):
    """vulpes's step time at `batch` from a `vulpes bench step --json` file: the line of the
    default config (no "variant") for mamba2, else the line of variant model.encoder=ENCODER
    (`--ablate model.encoder=ENCODER`); the last such line, None without one."""
    want = {f"model.encoder={encoder}"} | ({None} if encoder == "mamba2" else set())
    ms = None
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if (r.get("bench") == "step" and r.get("phase") == "step" and r.get("batch") == batch
                    and r.get("variant") in want):
                ms = r["ms"]
    return ms


def time_mode(c, mode, B, iters):
    s = Step(c, B, mode)
    graph = None
    # Warm-up (compilation, autotuning, allocator) on a side stream, as graph capture wants.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            s.step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    if not math.isfinite(float(s.loss)):
        raise RuntimeError(f"{mode}: loss {float(s.loss)} is not finite")
    ms, note, graph = time_launches(s.step, iters, mode == "eager")
    if not math.isfinite(float(s.loss)):
        raise RuntimeError(f"{mode}: loss {float(s.loss)} is not finite after timing")
    peak = torch.cuda.max_memory_allocated() / 2**30
    del s, graph
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return ms, peak, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--modes", default="eager,graph,compile,compile-bf16")
    ap.add_argument("--json", default=None, help="append JSON lines here")
    ap.add_argument("--vulpes", default=None, help="vulpes bench step --json output to compare with")
    ap.add_argument("--encoder", default="mamba2", choices=ENCODERS, help="model.encoder")
    ap.add_argument("--smoke", action="store_true", help="one eager step at B = 4 on the CPU, its loss")
    a = ap.parse_args()
    c = model_config(a.encoder)
    if a.smoke:
        loss, names = smoke(c)
        print(f"torch_step.py --smoke: encoder {a.encoder}, {len(names)} parameter tensors, "
              f"{sum(n.startswith('tlob.') for n in names)} tlob.*, loss {loss:.6f}")
        return
    if not torch.cuda.is_available():
        sys.exit("torch_step.py: no CUDA device")
    torch.set_default_dtype(torch.float32)
    torch.set_default_device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    vulpes_ms = vulpes_step_ms(a.vulpes, a.encoder, a.batch) if a.vulpes else None
    flops = step_flops(c, a.batch, LEARN["n_taus"], LEARN["n_target_taus"])
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: learner step ({a.encoder}), "
          f"B = {a.batch}, {flops * 1e-9:.0f} GFLOP of GEMMs")
    print(f"{'mode':<14}{'ms/step':>10}{'TFLOP/s':>10}{'peak GiB':>10}{'vulpes x':>10}")
    for mode in a.modes.split(","):
        ms, peak, note = time_mode(c, mode, a.batch, a.iters)
        ratio = ms / vulpes_ms if vulpes_ms else float("nan")
        print(f"{mode:<14}{ms:>10.3f}{flops / (ms * 1e-3) / 1e12:>10.1f}{peak:>10.2f}"
              f"{ratio:>10.2f}" + (f"  ({note})" if note else ""))
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(dict(bench="torch_step", encoder=a.encoder, mode=mode, batch=a.batch, ms=ms,
                                        tflops=flops / (ms * 1e-3) / 1e12, peak_gib=peak,
                                        vulpes_ms=vulpes_ms, speedup_of_vulpes=ratio, note=note,
                                        torch=torch.__version__)) + "\n")
    if vulpes_ms:
        print(f"vulpes x = PyTorch ms / vulpes ms ({vulpes_ms:.3f} ms, `vulpes bench step`): above 1, vulpes is faster")


if __name__ == "__main__":
    main()
