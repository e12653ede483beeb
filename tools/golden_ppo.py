#!/usr/bin/env python3
"""Golden data for PPO: one minibatch update of the vulpes actor-critic, in PyTorch.

The network is the DQN network's market encoder and portfolio projection (the Python
package's forward, python/src/vulpes/network.py, which hands out h, the heads' input) and the
PPO heads of include/vulpes/ppo.h: a policy MLP h -> relu(HH) -> A per-head logits (one
categorical per branch of 3, 4, 3, 3 choices, the joint log-probability the sum) and a value
MLP h -> relu(HH) -> 1. One update as CleanRL's ppo.py makes it: the minibatch advantages
normalised, the clipped surrogate, the clipped value loss (here with its own range vf_clip),
the entropy bonus, backward, clip_grad_norm_, AdamW. Computed in float64 from float32-rounded
inputs; the draw is redone until every ReLU input, every ratio and every value move is clear of
its kink, so float32 and float64 take the same branches. tests/test_ppo_golden.c compares the
C update with the file: the loss and its terms, the logits and values, every gradient, the
parameters after the step.

Usage: python3 tools/golden_ppo.py --out tests/data/golden_ppo.safetensors
       python3 tools/golden_ppo.py --no-mamba --out tests/data/golden_ppo_nomamba.safetensors
Needs torch, numpy and safetensors.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))
from vulpes.network import forward  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden import draw_params, f32  # noqa: E402

torch.set_default_dtype(torch.float64)

MODEL = dict(n_features=6, n_portfolio=8, window=4, hidden=16, encoder=0, mamba_state=4, mamba_head_dim=8,
             mamba_conv=4, head_hidden=12, n_atoms=11, v_min=-10.0, v_max=10.0, branch_sizes=[3, 4, 3, 3],
             iqn_cos=8, ln_eps=1e-5, rms_eps=1e-5)
PPO = dict(minibatch=8, clip=0.2, vf_clip=0.2, ent_coef=0.01, vf_coef=0.5, lr=1e-3, beta1=0.9, beta2=0.999,
           eps=1e-5, weight_decay=0.01, clip_norm=0.0)
T_ROWS = 40   # feature rows
MARGIN = 1e-3  # smallest distance of a ReLU input, a ratio or a value move from its kink


def head_table(c):
    """(name, shape, fan_in, scale) of the PPO heads, in the order of VP_PPO_HEADS."""
    H, HH, A = c["hidden"], c["head_hidden"], sum(c["branch_sizes"])
    return [("ppo.pi1.w", (HH, H), H, 1.0), ("ppo.pi1.b", (HH,), H, 1.0), ("ppo.pi2.w", (A, HH), HH, 1.0),
            ("ppo.pi2.b", (A,), HH, 1.0), ("ppo.v1.w", (HH, H), H, 1.0), ("ppo.v1.b", (HH,), H, 1.0),
            ("ppo.v2.w", (1, HH), HH, 1.0), ("ppo.v2.b", (1,), HH, 1.0)]


def heads(p, h, relu_in):
    """Policy logits [B, A] and values [B] from h."""
    a = h @ p["ppo.pi1.w"].T + p["ppo.pi1.b"]
    b = h @ p["ppo.v1.w"].T + p["ppo.v1.b"]
    relu_in.append(min(a.detach().abs().min().item(), b.detach().abs().min().item()))
    logits = torch.relu(a) @ p["ppo.pi2.w"].T + p["ppo.pi2.b"]
    value = (torch.relu(b) @ p["ppo.v2.w"].T + p["ppo.v2.b"])[:, 0]
    return logits, value


def logp_entropy(logits, actions, sizes):
    """Joint log-probability [B] of actions [B, nb] and joint entropy [B]."""
    lp, ent, off = 0.0, 0.0, 0
    for k, sz in enumerate(sizes):
        ls = torch.log_softmax(logits[:, off:off + sz], -1)
        lp = lp + ls.gather(1, actions[:, k:k + 1])[:, 0]
        ent = ent - (ls.exp() * ls).sum(-1)
        off += sz
    return lp, ent


def update(params, feats, bt):
    """One update; returns everything the file records and the smallest kink distance."""
    c, L = MODEL, PPO
    p = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    relu_in, ex = [], {}
    forward(p, c, feats, bt["bar_idx"], bt["portfolio"], None, relu_in, ex)
    logits, value = heads(p, ex["h"], relu_in)
    newlp, ent = logp_entropy(logits, bt["actions"], c["branch_sizes"])
    logratio = newlp - bt["old_logp"]
    ratio = logratio.exp()
    adv = bt["adv"]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1 - L["clip"], 1 + L["clip"])
    pg = torch.max(pg1, pg2).mean()
    vu = (value - bt["ret"]) ** 2
    vc = bt["old_value"] + torch.clamp(value - bt["old_value"], -L["vf_clip"], L["vf_clip"])
    v_loss = 0.5 * torch.max(vu, (vc - bt["ret"]) ** 2).mean()
    ent_mean = ent.mean()
    loss = pg - L["ent_coef"] * ent_mean + L["vf_coef"] * v_loss
    loss.backward()
    names = [k for k in p if not (k.startswith("c51.") or k.startswith("iqn."))]  # the DQN heads: unused
    grads = {k: p[k].grad.detach().clone() for k in names}
    gnorm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    clip = float(np.float32(0.5 * gnorm))
    pre = torch.nn.utils.clip_grad_norm_([p[k] for k in names], clip)
    opt = torch.optim.AdamW([p[k] for k in names], lr=L["lr"], betas=(L["beta1"], L["beta2"]), eps=L["eps"],
                            weight_decay=L["weight_decay"])
    opt.step()
    r = ratio.detach()
    # where the value move is clipped the two squared errors differ (inside they tie, the same in float32)
    moved = (value.detach() - bt["old_value"]).abs() > L["vf_clip"]
    gap = (vu.detach() - (vc.detach() - bt["ret"]) ** 2).abs()
    vgap = gap[moved].min().item() if bool(moved.any()) else float("inf")
    kink = min(min(relu_in), (r - (1 - L["clip"])).abs().min().item(), (r - (1 + L["clip"])).abs().min().item(),
               ((value.detach() - bt["old_value"]).abs() - L["vf_clip"]).abs().min().item(),
               vgap)
    with torch.no_grad():
        kl = ((ratio - 1) - logratio).mean().item()
    return dict(logits=logits.detach(), value=value.detach(), loss=loss.item(), pg=pg.item(), v=v_loss.item(),
                ent=ent_mean.item(), kl=kl, grads=grads, gnorm=float(pre), clip=clip,
                after={k: p[k].detach().clone() for k in names}, kink=kink, newlp=newlp.detach())


def draw_case(seed):
    """Parameters, features and one minibatch for one seed, as float32-exact float64."""
    rng = np.random.default_rng(seed)
    c, M = MODEL, PPO["minibatch"]
    params = draw_params(rng, c)
    for name, shape, fan, scale in head_table(c):
        params[name] = f32(scale * rng.uniform(-1.0, 1.0, size=shape) / math.sqrt(fan))
    feats = f32(rng.standard_normal((T_ROWS, c["n_features"])))
    bar = np.concatenate([[0, 2], rng.integers(c["window"], T_ROWS, size=M - 2)]).astype(np.int64)
    bt = dict(bar_idx=torch.as_tensor(bar), portfolio=f32(rng.uniform(-1, 1, (M, c["n_portfolio"]))),
              actions=torch.as_tensor(np.stack([rng.integers(0, s, size=M) for s in c["branch_sizes"]], 1)),
              adv=f32(rng.standard_normal(M)), ret=f32(rng.standard_normal(M)))
    # the collection's log-probabilities and values: the current ones moved so that some ratios
    # and value moves are clipped and some are not
    with torch.no_grad():
        ex = {}
        forward(params, c, feats, bt["bar_idx"], bt["portfolio"], None, None, ex)
        logits, value = heads(params, ex["h"], [])
        lp, _ = logp_entropy(logits, bt["actions"], c["branch_sizes"])
    bt["old_logp"] = f32((lp - torch.as_tensor(rng.uniform(-0.5, 0.5, M))).numpy())
    bt["old_value"] = f32((value - torch.as_tensor(rng.uniform(-0.5, 0.5, M))).numpy())
    return params, feats, bt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output .safetensors file")
    ap.add_argument("--seed", type=int, default=3, help="first seed tried")
    ap.add_argument("--no-mamba", action="store_true", help="the plain last-bar trunk (encoder none)")
    args = ap.parse_args()
    if args.no_mamba:
        MODEL["encoder"] = 2
    for seed in range(args.seed, args.seed + 500):
        params, feats, bt = draw_case(seed)
        r = update(params, feats, bt)
        if r["kink"] > MARGIN:
            break
    else:
        raise SystemExit("golden_ppo.py: no seed kept every kink clear")
    PPO["clip_norm"] = r["clip"]

    def t32(x):
        return x.detach().to(torch.float32).contiguous()

    out = {"features": t32(feats), "bar_idx": bt["bar_idx"].to(torch.int32), "actions": bt["actions"].to(torch.int32)}
    for k in ("portfolio", "old_logp", "old_value", "adv", "ret"):
        out[k] = t32(bt[k])
    for k in params:
        if k.startswith("c51.") or k.startswith("iqn."):
            continue  # the DQN heads: not part of the actor-critic
        out["param." + k] = t32(params[k])
        out["grad." + k] = t32(r["grads"][k])
        out["param_after." + k] = t32(r["after"][k])
    out.update({"out.logits": t32(r["logits"]), "out.value": t32(r["value"]), "out.new_logp": t32(r["newlp"])})
    for k in ("loss", "pg", "v", "ent", "kl", "gnorm"):
        out["out." + k] = torch.tensor([r[k]], dtype=torch.float32)
    config = dict(MODEL, **PPO, feature_rows=T_ROWS, seed=seed)
    meta = {"config": json.dumps(config), "generator": "tools/golden_ppo.py", "torch": torch.__version__}
    save_file(out, args.out, metadata=meta)
    print(f"golden_ppo.py: seed {seed}, loss {r['loss']:.6f} (pg {r['pg']:.6f}, v {r['v']:.6f}, entropy "
          f"{r['ent']:.6f}), approx_kl {r['kl']:.6f}, grad norm {r['gnorm']:.6f}, clip {r['clip']:.6f}, kink margin "
          f"{r['kink']:.2e}, {len(out)} tensors -> {args.out}")


if __name__ == "__main__":
    main()
