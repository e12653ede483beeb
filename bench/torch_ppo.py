#!/usr/bin/env python3
"""The PyTorch reference of `vulpes bench ppo`'s update: the same PPO minibatch updates, timed the same way.

The actor-critic of docs/ppo.md: the market encoder and portfolio projection of the Python
package's forward (python/src/vulpes/network.py, the function tools/golden_ppo.py checks the C
update against) and its PPO heads (a policy MLP to 13 per-branch logits, a value MLP), with the
shapes of the vulpes run (read from `vulpes bench ppo --json` lines, or the default model). A
rollout of n_envs x T rows (decision bars, portfolios, actions, log-probabilities, values,
advantages, returns) lies on the device; one pass is what an epoch of vulpes does: a fresh
permutation of the rows (argsort of uniforms on the device; vulpes: a Feistel network), then per
minibatch of M = n_envs x T / minibatches rows the gather, the advantages normalised, the forward,
the clipped surrogate, the value loss, the entropy bonus, backward, clip_grad_norm_ and AdamW
(CleanRL's ppo.py update). One pass runs min(minibatches, --max-updates) updates; the per-update
time is what compares with vulpes (its learning phase over epochs x minibatches updates), so the
65536-env rollout needs no minute-long launches.

Modes, each validated (finite loss) then timed as `--iters` passes between two CUDA events after
a warm-up, median of 5 (bench/torch_timing.py):
  eager    plain PyTorch, TF32 matmuls, fused AdamW
  graph    the eager pass captured in one CUDA graph (capturable AdamW)
  compile  torch.compile (default mode) of the forward and the loss, inside the graph
With --device cpu (a smoke check) eager only, timed on the host clock. `--vulpes FILE` reads
`vulpes bench ppo --json FILE` and prints PyTorch ms per update over vulpes's for each (n_envs,
minibatch). Prints a table and JSON lines.

Usage: python3 bench/torch_ppo.py [--vulpes ppo.jsonl] [--json out.jsonl] [--modes eager,graph,compile]
                                  [--envs 4096,65536 --steps 128 --epochs 4 --minibatches 4,64]
                                  [--device cpu --hidden 16 ...]
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
from vulpes.network import forward, ppo_heads  # noqa: E402  (the network)
from torch_timing import read_vulpes, time_launches  # noqa: E402  (bench/, this script's folder)

# The default model (SPEC section 4), as bench/torch_step.py; the vulpes JSON overrides the shapes.
MODEL = dict(n_features=32, n_portfolio=8, window=8, hidden=256, encoder=0, mamba_state=16,
             mamba_head_dim=64, mamba_conv=4, head_hidden=128, n_atoms=51, v_min=-10.0, v_max=10.0,
             branch_sizes=[3, 4, 3, 3], iqn_cos=64, ln_eps=1e-5, rms_eps=1e-5)
# ppo.* and learn.* defaults (include/vulpes/config.h)
PPO = dict(clip=0.2, ent_coef=0.01, vf_coef=0.5, lr=3e-4, beta1=0.9, beta2=0.999, eps=1.5e-4, weight_decay=0.0,
           clip_norm=10.0)
SPAN = 140000  # feature rows the decision bars index (the bench market's training span)
SHAPE_KEYS = ("n_features", "n_portfolio", "window", "hidden", "encoder", "mamba_state", "mamba_head_dim",
              "mamba_conv", "head_hidden")


def row_flops(c):
    """GEMM FLOPs of one row's forward and backward, counted as bench/bench_ppo_floor.c counts them."""
    if c["encoder"] == 1:
        raise SystemExit("torch_ppo.py: the FLOP count covers the Mamba2 mixer and no encoder, not TLOB")
    mb = c["encoder"] == 0  # vp_model_encoder: 0 mamba2, 2 none
    F, P, H, K = c["n_features"], c["n_portfolio"], c["hidden"], c["window"] if mb else 1
    HH, A = c["head_hidden"], sum(c["branch_sizes"])
    first, rest = 2.0 * K * H * F, 2.0 * K * H * H
    if mb:
        N, NH = c["mamba_state"], H // c["mamba_head_dim"]
        rest += 2.0 * K * (H + 2 * N + NH) * H + 2 * 2.0 * H * H
    heads = 2.0 * (H * P + HH * H + A * HH + HH * H + HH)
    return 2 * first + 3 * rest + 3 * heads - 2.0 * H * P


class Learn:
    """Parameters, AdamW, a rollout and one pass of minibatch updates on the device."""

    def __init__(self, case, mode, dev):
        c = self.c = dict(MODEL, **{k: case[k] for k in SHAPE_KEYS})
        torch.manual_seed(1)
        rng = __import__("numpy").random.default_rng(1)
        p = {k: v for k, v in golden.draw_params(rng, c).items() if not k.startswith(("c51.", "iqn."))}
        H, HH, A = c["hidden"], c["head_hidden"], sum(c["branch_sizes"])
        for name, shape, fan, scale in [("ppo.pi1.w", (HH, H), H, 1.0), ("ppo.pi1.b", (HH,), H, 1.0),
                                        ("ppo.pi2.w", (A, HH), HH, 0.01), ("ppo.pi2.b", (A,), HH, 0.01),
                                        ("ppo.v1.w", (HH, H), H, 1.0), ("ppo.v1.b", (HH,), H, 1.0),
                                        ("ppo.v2.w", (1, HH), HH, 1.0), ("ppo.v2.b", (1,), HH, 1.0)]:
            p[name] = torch.as_tensor(scale * rng.uniform(-1.0, 1.0, size=shape) / math.sqrt(fan))
        self.params = {k: v.float().to(dev).requires_grad_(True) for k, v in p.items()}
        self.names = list(self.params)
        E, T = case["n_envs"], case["rollout_steps"]
        self.N, self.M = E * T, case["minibatch"]
        self.U = min(case["minibatches"], case["max_updates"])
        N, P, nb = self.N, c["n_portfolio"], len(c["branch_sizes"])
        self.feats = torch.randn(SPAN, c["n_features"], device=dev)
        uniform = -sum(math.log(s) for s in c["branch_sizes"])  # near the initial policy's log-probability
        self.ro = dict(bar=torch.randint(c["window"], SPAN, (N,), device=dev),
                       port=torch.rand(N, P, device=dev) * 2 - 1,
                       act=torch.stack([torch.randint(0, s, (N,), device=dev) for s in c["branch_sizes"]], 1),
                       logp=uniform + 0.01 * torch.randn(N, device=dev), value=0.1 * torch.randn(N, device=dev),
                       adv=torch.randn(N, device=dev), ret=torch.randn(N, device=dev))
        assert self.ro["act"].shape[1] == nb
        self.dev = dev
        cuda = dev == "cuda"
        self.opt = torch.optim.AdamW([self.params[k] for k in self.names], lr=PPO["lr"],
                                     betas=(PPO["beta1"], PPO["beta2"]), eps=PPO["eps"],
                                     weight_decay=PPO["weight_decay"], fused=cuda,
                                     capturable=cuda and mode != "eager")
        self.loss_fn = torch.compile(self._loss, dynamic=False) if mode == "compile" else self._loss
        self.loss = torch.zeros((), device=dev)

    def _loss(self, params, feats, bar, port, act, old_logp, adv, ret):
        c, L = self.c, PPO
        ex = {"h_only": True}
        forward(params, c, feats, bar, port, None, None, ex)
        logits, value = ppo_heads(params, ex["h"])
        lp, ent, off = 0.0, 0.0, 0
        for k, sz in enumerate(c["branch_sizes"]):
            ls = torch.log_softmax(logits[:, off:off + sz], -1)
            lp = lp + ls.gather(1, act[:, k:k + 1])[:, 0]
            ent = ent - (ls.exp() * ls).sum(-1)
            off += sz
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = (lp - old_logp).exp()
        pg = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1 - L["clip"], 1 + L["clip"])).mean()
        v_loss = 0.5 * ((value - ret) ** 2).mean()
        return pg - L["ent_coef"] * ent.mean() + L["vf_coef"] * v_loss

    def update(self, idx):
        r = self.ro
        loss = self.loss_fn(self.params, self.feats, r["bar"][idx], r["port"][idx], r["act"][idx], r["logp"][idx],
                            r["adv"][idx], r["ret"][idx])
        loss.backward()
        plist = [self.params[k] for k in self.names]
        torch.nn.utils.clip_grad_norm_(plist, PPO["clip_norm"], foreach=True)
        self.opt.step()
        self.opt.zero_grad(set_to_none=False)
        self.loss.copy_(loss.detach())

    def one_pass(self):
        """A fresh permutation and U minibatch updates over it."""
        perm = torch.argsort(torch.rand(self.N, device=self.dev))
        for k in range(self.U):
            self.update(perm[k * self.M:(k + 1) * self.M])


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


def time_mode(case, mode, dev, iters):
    s = Learn(case, mode, dev)
    graph, note = None, ""
    if dev == "cuda":
        # warm-up (compilation, autotuning, allocator) on a side stream, as graph capture wants
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                s.one_pass()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
    else:
        s.one_pass()
    if not math.isfinite(float(s.loss)):
        raise RuntimeError(f"{mode}: loss {float(s.loss)} is not finite")
    if dev == "cuda":
        ms, note, graph = time_launches(s.one_pass, iters, mode == "eager")
    else:
        ms = time_host(s.one_pass, iters)
    if not math.isfinite(float(s.loss)):
        raise RuntimeError(f"{mode}: loss {float(s.loss)} is not finite after timing")
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else None
    U = s.U
    del s, graph
    if dev == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return ms / U, U, peak, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vulpes", default=None, help="vulpes bench ppo --json output: its cases and times")
    ap.add_argument("--json", default=None, help="append JSON lines here")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--modes", default=None, help="default eager,graph,compile on CUDA, eager on the CPU")
    ap.add_argument("--iters", type=int, default=1, help="passes per timed launch")
    ap.add_argument("--max-updates", type=int, default=16, help="minibatch updates per pass at most")
    ap.add_argument("--envs", default="4096,65536", help="without --vulpes: n_envs of each case")
    ap.add_argument("--minibatches", default="4,64", help="without --vulpes: minibatches of each case")
    ap.add_argument("--steps", type=int, default=128, help="without --vulpes: T")
    ap.add_argument("--epochs", type=int, default=4, help="without --vulpes: epochs")
    for k in SHAPE_KEYS:
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=None, help=f"without --vulpes: {k}")
    a = ap.parse_args()
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_ppo.py: no CUDA device (--device cpu runs the smoke check)")
    torch.set_default_dtype(torch.float32)  # golden sets float64 on import
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if a.vulpes:
        cases = [dict(r, vulpes_ms=r["ms_per_update"]) for r in read_vulpes(a.vulpes, "ppo", "update")]
        if not cases:
            sys.exit(f"torch_ppo.py: {a.vulpes} has no \"bench\":\"ppo\" update line")
    else:
        shapes = {k: getattr(a, k) if getattr(a, k) is not None else MODEL[k] for k in SHAPE_KEYS}
        envs, mbs = [int(x) for x in a.envs.split(",")], [int(x) for x in a.minibatches.split(",")]
        if len(mbs) == 1:
            mbs = mbs * len(envs)
        cases = [dict(shapes, n_envs=E, rollout_steps=a.steps, epochs=a.epochs, minibatches=mb,
                      minibatch=E * a.steps // mb, vulpes_ms=None) for E, mb in zip(envs, mbs)]
    modes = (a.modes or ("eager,graph,compile" if dev == "cuda" else "eager")).split(",")
    name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    js = open(a.json, "a") if a.json else None
    print(f"PyTorch {torch.__version__} on {name}: PPO minibatch updates (forward, clipped loss, backward, clip, AdamW)")
    print(f"{'mode':<8} {'n_envs':>7} {'T':>4} {'mb':>3} {'M':>7} {'ms/update':>10} {'rows/s':>11} {'TFLOP/s':>8} "
          f"{'learn ms':>10} {'peak GiB':>8} {'torch/vulpes':>12}  note")
    for case in cases:
        case["max_updates"] = a.max_updates
        c = dict(MODEL, **{k: case[k] for k in SHAPE_KEYS})
        flops = row_flops(c)
        updates = case["epochs"] * case["minibatches"]
        for mode in modes:
            try:
                ms, U, peak, note = time_mode(case, mode, dev, a.iters)
            except Exception as e:  # noqa: BLE001  (one mode failing must not hide the others)
                print(f"{mode:<8} {case['n_envs']:>7} {case['rollout_steps']:>4} {case['minibatches']:>3} "
                      f"{case['minibatch']:>7}  failed: {type(e).__name__}: {e}")
                continue
            rows = case["minibatch"] / (ms * 1e-3)
            v = case["vulpes_ms"]
            ratio = ms / v if v else None
            print(f"{mode:<8} {case['n_envs']:>7} {case['rollout_steps']:>4} {case['minibatches']:>3} "
                  f"{case['minibatch']:>7} {ms:>10.3f} {rows:>11.4g} {flops * rows * 1e-12:>8.2f} "
                  f"{ms * updates:>10.1f} {(f'{peak:.2f}' if peak is not None else '-'):>8} {(f'{ratio:.2f}' if ratio else '-'):>12}  "
                  f"{U} updates a pass{'; ' + note if note else ''}")
            rec = dict(bench="torch_ppo", mode=mode, device=name, n_envs=case["n_envs"],
                       rollout_steps=case["rollout_steps"], epochs=case["epochs"], minibatches=case["minibatches"],
                       minibatch=case["minibatch"], updates_per_pass=U, ms_per_update=ms, rows_per_s=rows,
                       flop_per_row=flops, tflops=flops * rows * 1e-12, learn_ms_est=ms * updates, peak_gib=peak,
                       vulpes_ms_per_update=v, torch_over_vulpes=ratio, note=note, torch=torch.__version__)
            if js:
                js.write(json.dumps(rec) + "\n")
                js.flush()
    if js:
        js.close()
    if any(c["vulpes_ms"] for c in cases):
        print("torch/vulpes = PyTorch ms per update / vulpes ms per update (`vulpes bench ppo`, its learning phase "
              "over epochs x minibatches updates): above 1, vulpes is faster")


if __name__ == "__main__":
    main()
