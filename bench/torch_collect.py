#!/usr/bin/env python3
"""The PyTorch reference of `vulpes bench train`'s collection: the same work per env step.

The default agent (as bench/torch_step.py: tools/golden.py's network, float32 with TF32
matmuls on CUDA), E envs and S steps per collection, on a synthetic GBM market of the
bench's size (200 000 bars, a training span of the first 70 %):
  encode once  every decision bar of the span [begin, end - 2] through the network's market
               part (golden.forward split at the encoding), in chunks of 32768 bars;
  S steps      each env's encoding row gathered at its bar, the portfolio projection and the
               C51 heads, Q, epsilon-greedy per branch, the env step and the transition
               written into a ring of 4 E slots.
The env step follows docs/env.md on float64 state (market order at the next open with half
the spread, slippage and commission against the trader; stop-loss then take-profit against
the next bar's range, a gap filling at the open; mark to the close; reward with the
drawdown penalty; episode end at the window's end or at ruin, restart at a random start).
Left out, where vulpes does more: the leverage cut, financing, the average entry of an
added position, the fill record, the n-step returns the vulpes ring builds, and Philox
streams (torch's generator instead); the bars are float64 arrays, not vulpes's 64-byte
records. So the reference is, if anything, a little less work per step than vulpes's.

Modes, each validated (finite rewards, every decision bar inside the span) then timed as
`--iters` collections between two CUDA events after a warm-up, median of 5:
  eager    plain PyTorch
  graph    the whole collection (encoding and the S steps) captured in one CUDA graph
  compile  torch.compile (default mode) of the encoder and of one step, inside the graph
`--vulpes FILE` reads `vulpes bench train --json FILE` and prints, for each (n_envs, S),
vulpes's env steps/s over each mode's. Prints a table and JSON lines.

Usage: python3 bench/torch_collect.py [--envs 4096,65536,262144] [--steps 64] [--iters 3]
                                      [--modes eager,graph,compile] [--json out.jsonl]
                                      [--vulpes train.jsonl]
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as Fn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import golden  # noqa: E402  (the reference network)
from torch_timing import time_launches  # noqa: E402  (bench/, this script's folder)

MODEL = dict(n_features=32, n_portfolio=8, window=8, hidden=256, encoder=0, mamba_state=16,
             mamba_head_dim=64, mamba_conv=4, head_hidden=128, n_atoms=51, v_min=-10.0, v_max=10.0,
             branch_sizes=[3, 4, 3, 3], iqn_cos=64, ln_eps=1e-5, rms_eps=1e-5)
BARS = 200000           # the bench's market
TRAIN = 0.7             # split.train
BEGIN = 256             # first decision bar (feature history before it)
EPISODE = 1024          # env.episode_bars of the bench
CHUNK = 32768           # bars per encode call (VP_COLLECT_CHUNK)
EPS = 0.05              # exploration rate
# instrument and env (vulpes defaults in spirit: price near 100, tick 0.01)
TICK, MULT, COMM, SLIP_TICKS, SPREAD_TICKS, MAXPOS, EQUITY = 0.01, 10.0, 0.5, 1.0, 1.0, 4, 100000.0
RUIN, SCALE, DD_PEN = 0.5, 100.0, 0.0


def encode(p, c, feats, bar):
    """The encoding e [n, H] of decision bars bar [n]: golden.forward up to the heads."""
    n, K, H = bar.shape[0], c["window"], c["hidden"]
    N, hd, CW = c["mamba_state"], c["mamba_head_dim"], c["mamba_conv"]
    NH = H // hd
    idx = (bar[:, None] - K + 1 + torch.arange(K, device=bar.device)[None, :]).clamp(min=0)
    x0 = feats[idx]
    h1 = torch.relu(Fn.layer_norm(x0 @ p["trunk.w1"].T + p["trunk.b1"], (H,), p["trunk.ln1.g"], p["trunk.ln1.b"],
                                  c["ln_eps"]))
    h2 = torch.relu(Fn.layer_norm(h1 @ p["trunk.w2"].T + p["trunk.b2"], (H,), p["trunk.ln2.g"], p["trunk.ln2.b"],
                                  c["ln_eps"]))
    proj = h2 @ p["mamba.in_proj.w"].T
    z = proj[:, K - 1, :H]
    xbc = proj[:, :, H:2 * H + 2 * N]
    dt_raw = proj[:, :, 2 * H + 2 * N:]
    xpad = Fn.pad(xbc.transpose(1, 2), (CW - 1, 0))
    conv = Fn.conv1d(xpad, p["mamba.conv.w"].unsqueeze(1), p["mamba.conv.b"], groups=H + 2 * N)
    act = Fn.silu(conv.transpose(1, 2))
    x = act[:, :, :H].reshape(n, K, NH, hd)
    Bm = act[:, :, H:H + N]
    Cm = act[:, K - 1, H + N:]
    dt = Fn.softplus(dt_raw + p["mamba.dt_bias"])
    A = -torch.exp(p["mamba.A_log"])
    s = torch.zeros(n, NH, hd, N, device=bar.device, dtype=h2.dtype)
    for t in range(K):
        decay = torch.exp(dt[:, t] * A)[:, :, None, None]
        s = decay * s + (dt[:, t, :, None] * x[:, t])[..., None] * Bm[:, t, None, None, :]
    y = (s * Cm[:, None, None, :]).sum(-1) + p["mamba.D"][None, :, None] * x[:, K - 1]
    g = y.reshape(n, H) * Fn.silu(z)
    yn = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + c["rms_eps"]) * p["mamba.norm.g"]
    return h2[:, K - 1] + yn @ p["mamba.out_proj.w"].T


def heads_q(p, c, e, port):
    """Q [n, A] from encodings e and portfolios port: golden.forward from the projection on."""
    n, Z = e.shape[0], c["n_atoms"]
    h = e + port @ p["port.w"].T + p["port.b"]
    v = torch.relu(h @ p["c51.v1.w"].T + p["c51.v1.b"]) @ p["c51.v2.w"].T + p["c51.v2.b"]
    adv = (torch.relu(h @ p["c51.a1.w"].T + p["c51.a1.b"]) @ p["c51.a2.w"].T + p["c51.a2.b"]).reshape(n, -1, Z)
    logits, off = [], 0
    for sz in c["branch_sizes"]:
        ab = adv[:, off:off + sz]
        logits.append(v[:, None, :] + ab - ab.mean(1, keepdim=True))
        off += sz
    prob = torch.softmax(torch.cat(logits, 1), -1)
    support = torch.linspace(c["v_min"], c["v_max"], Z, device=e.device, dtype=e.dtype)
    return (prob * support).sum(-1)


class Collection:
    """Market, parameters, E envs, the ring and one collection of S steps on CUDA."""

    def __init__(self, E, S, mode):
        c, dev = MODEL, "cuda"
        torch.manual_seed(1)
        rng = __import__("numpy").random.default_rng(1)
        self.p = {k: v.float().to(dev) for k, v in golden.draw_params(rng, c).items()}
        self.E, self.S = E, S
        self.feats = torch.randn(BARS, c["n_features"], device=dev)
        r = torch.randn(BARS, 4, dtype=torch.float64, device=dev) * 1e-3
        close = 100.0 * torch.exp(torch.cumsum(r[:, 0], 0))
        opn = torch.cat([close[:1], close[:-1]]) * torch.exp(r[:, 1] * 0.1)
        self.open = (opn / TICK).round() * TICK
        self.close = (close / TICK).round() * TICK
        self.high = torch.maximum(self.open, self.close) + (r[:, 2].abs() * 100.0 / TICK).round() * TICK
        self.low = torch.minimum(self.open, self.close) - (r[:, 3].abs() * 100.0 / TICK).round() * TICK
        self.atr = (self.high - self.low).clone()
        self.end = int(BARS * TRAIN)
        self.span = torch.arange(BEGIN, self.end - 1, device=dev)            # decision bars [begin, end - 2]
        self.n_starts = self.end - BEGIN - EPISODE
        self.sizes = torch.tensor(c["branch_sizes"], device=dev)
        self.offs = [sum(c["branch_sizes"][:i]) for i in range(len(c["branch_sizes"]))]
        self.table = torch.empty(self.span.shape[0], c["hidden"], device=dev)
        z64 = lambda: torch.zeros(E, dtype=torch.float64, device=dev)  # noqa: E731
        self.t = BEGIN + torch.randint(0, self.n_starts, (E,), device=dev)
        self.we = self.t + EPISODE
        self.pos, self.held = torch.zeros(E, device=dev), torch.zeros(E, device=dev)
        self.cash, self.eq, self.peak = z64() + EQUITY, z64() + EQUITY, z64() + EQUITY
        self.entry, self.tp, self.sl = z64(), z64(), z64()
        self.last = torch.zeros(E, device=dev)
        self.port = torch.zeros(E, c["n_portfolio"], device=dev)
        C = 4 * E
        self.ring = dict(bar=torch.zeros(C, dtype=torch.int64, device=dev), port=torch.zeros(C, 8, device=dev),
                         act=torch.zeros(C, 4, dtype=torch.int64, device=dev), rew=torch.zeros(C, device=dev),
                         done=torch.zeros(C, device=dev), nbar=torch.zeros(C, dtype=torch.int64, device=dev),
                         nport=torch.zeros(C, 8, device=dev))
        self.head = torch.zeros((), dtype=torch.int64, device=dev)
        self.slots = torch.arange(E, device=dev)
        self.reward_sum = torch.zeros((), dtype=torch.float64, device=dev)
        self.bad_bars = torch.zeros((), dtype=torch.int64, device=dev)
        self.enc_fn, self.step_fn = encode, self._step
        if mode == "compile":
            self.enc_fn = torch.compile(encode, dynamic=False)
            self.step_fn = torch.compile(self._step, dynamic=False)

    def _portfolio(self):
        atr = self.atr[self.t].clamp(min=1e-12)
        c = self.close[self.t]
        d = torch.sign(self.pos)
        upnl = torch.where(self.pos != 0, ((c - self.entry) / atr * d).clamp(-10, 10), 0.0)
        dtp = torch.where(self.tp > 0, ((self.tp - c) / atr * d).clamp(-10, 10), 0.0)
        dsl = torch.where(self.sl > 0, ((c - self.sl) / atr * d).clamp(-10, 10), 0.0)
        left = ((self.we - self.t).double() / EPISODE).clamp(max=1.0)
        return torch.stack([(self.pos / MAXPOS).double(), upnl, (self.held.double() / EPISODE).clamp(max=1.0),
                            (self.peak - self.eq) / self.peak, dtp, dsl, left, self.last.double()], 1).float()

    def _step(self):
        """One env step of every env from the encoding table: heads, act, env, ring."""
        c, E = MODEL, self.E
        e = self.table[self.t - BEGIN]
        q = heads_q(self.p, c, e, self.port)
        acts = []
        for br, sz in enumerate(c["branch_sizes"]):
            greedy = q[:, self.offs[br]:self.offs[br] + sz].argmax(1)
            rand = torch.randint(0, sz, (E,), device=q.device)
            acts.append(torch.where(torch.rand(E, device=q.device) < EPS, rand, greedy))
        a = torch.stack(acts, 1)
        obs_bar, obs_port = self.t.clone(), self.port.clone()
        # decode: the last step of a window targets flat
        d = (a[:, 0] - 1).float()
        last_step = self.t + 1 >= self.we
        target = torch.where(last_step | (d == 0), 0.0, d * torch.clamp(((a[:, 1] + 1) * MAXPOS) // 4, min=1).float())
        nb = self.t + 1
        o, hi, lo, cl = self.open[nb], self.high[nb], self.low[nb], self.close[nb]
        cost = SLIP_TICKS * TICK + 0.5 * SPREAD_TICKS * TICK
        delta = (target - self.pos).double()
        px = o + torch.sign(delta) * cost
        cash = self.cash - delta * px * MULT - delta.abs() * COMM
        new = (target != 0) & ((self.pos == 0) | (torch.sign(target) != torch.sign(self.pos)))
        side = torch.sign(target).double()
        atr_t = self.atr[self.t]
        entry = torch.where(new, px, torch.where(target == 0, 0.0, self.entry))
        tp = torch.where(new, torch.where(a[:, 2] > 0, px + side * a[:, 2].double() * atr_t, 0.0),
                         torch.where(target == 0, 0.0, self.tp))
        sl = torch.where(new, torch.where(a[:, 3] > 0, px - side * a[:, 3].double() * atr_t, 0.0),
                         torch.where(target == 0, 0.0, self.sl))
        pos = target.double()
        # resting orders against bar t+1's range: the stop first, a gap fills at the open
        long_, short_ = pos > 0, pos < 0
        stop = (sl > 0) & ((long_ & (lo <= sl)) | (short_ & (hi >= sl)))
        take = ~stop & (tp > 0) & ((long_ & (hi >= tp)) | (short_ & (lo <= tp)))
        lvl = torch.where(stop, torch.where(long_, torch.minimum(o, sl), torch.maximum(o, sl)),
                          torch.where(long_, torch.maximum(o, tp), torch.minimum(o, tp)))
        xpx = lvl - torch.sign(pos) * SLIP_TICKS * TICK
        hit = stop | take
        cash = torch.where(hit, cash + pos * xpx * MULT - pos.abs() * COMM, cash)
        pos = torch.where(hit, 0.0, pos)
        entry, tp, sl = (torch.where(hit | (pos == 0), 0.0, x) for x in (entry, tp, sl))
        held = torch.where(pos != 0, torch.where(new, 0.0, self.held) + 1, 0.0)
        eq = cash + pos * (cl - torch.sign(pos) * 0.5 * SPREAD_TICKS * TICK) * MULT
        peak = torch.maximum(self.peak, eq)
        rew = (eq - self.eq) / EQUITY * SCALE - DD_PEN * (peak - eq) / peak
        ended = last_step | (eq < RUIN * EQUITY)
        # restart a finished episode at a random start; the state is updated in place, so a
        # captured graph carries it from one replay to the next
        start = BEGIN + torch.randint(0, self.n_starts, (E,), device=q.device)
        new_state = [(self.t, torch.where(ended, start, nb)), (self.we, torch.where(ended, start + EPISODE, self.we)),
                     (self.pos, torch.where(ended, 0.0, pos)), (self.held, torch.where(ended, 0.0, held)),
                     (self.cash, torch.where(ended, EQUITY, cash)), (self.eq, torch.where(ended, EQUITY, eq)),
                     (self.peak, torch.where(ended, EQUITY, peak)), (self.entry, torch.where(ended, 0.0, entry)),
                     (self.tp, torch.where(ended, 0.0, tp)), (self.sl, torch.where(ended, 0.0, sl)),
                     (self.last, torch.where(ended, 0.0, 0.25 * d * (a[:, 1] + 1).float()))]
        for dst, val in new_state:
            dst.copy_(val)
        self.port.copy_(self._portfolio())
        # the transition into the ring
        slot = (self.head + self.slots) % self.ring["bar"].shape[0]
        r = self.ring
        r["bar"][slot], r["port"][slot], r["act"][slot] = obs_bar, obs_port, a
        r["rew"][slot], r["done"][slot] = rew.float(), ended.float()
        r["nbar"][slot], r["nport"][slot] = self.t, self.port
        self.head.copy_((self.head + E) % r["bar"].shape[0])
        self.reward_sum += rew.sum()
        self.bad_bars += ((self.t < BEGIN) | (self.t > self.end - 2)).sum()

    def collect(self):
        """One collection: the span encoded in chunks, then S steps."""
        with torch.no_grad():
            for off in range(0, self.span.shape[0], CHUNK):
                self.table[off:off + CHUNK] = self.enc_fn(self.p, MODEL, self.feats, self.span[off:off + CHUNK])
            for _ in range(self.S):
                self.step_fn()


def time_mode(mode, E, S, iters):
    col = Collection(E, S, mode)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            col.collect()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    ms, note, graph = time_launches(col.collect, iters, mode == "eager")
    if not math.isfinite(float(col.reward_sum)) or int(col.bad_bars) != 0:
        raise RuntimeError(f"{mode}: reward sum {float(col.reward_sum)}, {int(col.bad_bars)} bars outside the span")
    del col, graph
    torch.cuda.empty_cache()
    return ms, note


def read_vulpes(path):
    """(n_envs, S) -> env steps/s of vulpes bench train's collection lines."""
    out = {}
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("bench") == "train" and r.get("what") == "collect" and r.get("backend") == "cuda":
                out[(r["n_envs"], r["collect_steps"])] = r["env_steps_per_s"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", default="4096,65536,262144")
    ap.add_argument("--steps", default="64")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--modes", default="eager,graph,compile")
    ap.add_argument("--json", default=None, help="append JSON lines here")
    ap.add_argument("--vulpes", default=None, help="vulpes bench train --json output to compare with")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_collect.py: no CUDA device")
    torch.set_default_dtype(torch.float32)  # golden sets float64 on import
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    vul = read_vulpes(a.vulpes) if a.vulpes else {}
    js = open(a.json, "a") if a.json else sys.stdout
    print(f"torch collection on {torch.cuda.get_device_name()}: {BARS} bars, span [{BEGIN}, {int(BARS * TRAIN)})")
    print(f"{'mode':<9} {'n_envs':>8} {'S':>4} {'env steps/s':>14} {'ms':>10} {'vulpes/torch':>13}  note")
    for E in [int(x) for x in a.envs.split(",")]:
        for S in [int(x) for x in a.steps.split(",")]:
            for mode in a.modes.split(","):
                try:
                    ms, note = time_mode(mode, E, S, a.iters)
                except Exception as e:  # noqa: BLE001  (one mode failing must not hide the others)
                    print(f"{mode:<9} {E:>8} {S:>4} {'-':>14} {'-':>10} {'-':>13}  failed: {type(e).__name__}: {e}")
                    continue
                rate = E * S / (ms * 1e-3)
                v = vul.get((E, S))
                ratio = f"{v / rate:.2f}" if v else "-"
                print(f"{mode:<9} {E:>8} {S:>4} {rate:>14.4g} {ms:>10.3f} {ratio:>13}  {note}")
                js.write(json.dumps(dict(bench="torch_collect", mode=mode, n_envs=E, collect_steps=S,
                                         env_steps_per_s=rate, ms_per_collect=ms,
                                         vulpes_env_steps_per_s=v, vulpes_over_torch=(v / rate if v else None),
                                         note=note)) + "\n")
                js.flush()
    if js is not sys.stdout:
        js.close()


if __name__ == "__main__":
    main()
