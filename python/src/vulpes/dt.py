"""A Decision Transformer checkpoint (train.algo dt, docs/dt.md) in PyTorch (VulpesDTNet, what
vulpes.load returns for it) and the C forward it is checked against (CDTModel): both open the
checkpoint through the library, so they read the same configuration and parameters."""
import ctypes
import math

import numpy as np
import torch
import torch.nn.functional as Fn

from . import _lib
from ._cnet import CNet
from .network import forward as _forward

__all__ = ["CDTModel", "VulpesDTNet", "checkpoint_algo"]

_INT_KEYS = ("n_features", "n_portfolio", "window", "hidden", "encoder", "mamba_state", "mamba_head_dim",
             "mamba_conv", "tlob_blocks", "tlob_heads", "tlob_feature_heads", "tlob_mlp", "head_hidden", "n_atoms",
             "n_branches", "iqn_cos", "n_heads", "vsn", "vsn_hidden", "spectral_norm", "kan", "kan_grid", "kan_order", "q_denoise", "cross_branch", "adaptive_atoms", "ppo", "iql",
             "context", "embed", "heads", "layers", "timesteps")
_FLOAT_KEYS = ("v_min", "v_max", "ln_eps", "rms_eps", "kan_range", "stoch_depth", "risk_budget", "target_return")


def checkpoint_algo(path):
    """The vulpes.algo metadata of a safetensors checkpoint ("dqn" when it has none), read from its
    header; None when the file cannot be read as one (the library's open then says why)."""
    import json
    import struct

    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            if n > 100_000_000:
                return None
            head = json.loads(f.read(n))
        algo = head.get("__metadata__", {}).get("vulpes.algo", "dqn")
        return algo if isinstance(algo, str) else None
    except (OSError, ValueError, struct.error, AttributeError):
        return None


def _p(a, t=ctypes.c_float):
    return a.ctypes.data_as(ctypes.POINTER(t))


class CDTModel(CNet):
    """A dt checkpoint's network in the C library (vp_api_dt_*, CPU, FP32): its configuration, its
    parameters by name, and the C forward. Close it (or use it as a context manager)."""

    _API = "vp_api_dt"
    _INT_KEYS = _INT_KEYS
    _FLOAT_KEYS = _FLOAT_KEYS

    def forward(self, window, portfolio, actions, rtg, ts, valid):
        """The C forward of B sequences of K = context steps: window [B, K, W, F], portfolio
        [B, K, P], actions [B, K, 4] (int), rtg [B, K], ts [B, K] (int), valid [B, K] (1 or 0) into
        logits [B, 3K, A] (the state token of step j at row 3j + 1)."""
        c = self.config
        K = c["context"]
        w = np.ascontiguousarray(window, dtype=np.float32)
        B = w.shape[0]
        if w.shape[1:] != (K, c["window"], c["n_features"]):
            raise ValueError(f"window must be [B, {K}, {c['window']}, {c['n_features']}]; got {w.shape}")
        p = np.ascontiguousarray(portfolio, dtype=np.float32)
        a = np.ascontiguousarray(actions, dtype=np.int32)
        r = np.ascontiguousarray(rtg, dtype=np.float32)
        t = np.ascontiguousarray(ts, dtype=np.int32)
        v = np.ascontiguousarray(valid, dtype=np.float32)
        if p.shape != (B, K, c["n_portfolio"]) or a.shape != (B, K, 4) or r.shape != (B, K) or t.shape != (B, K) \
                or v.shape != (B, K):
            raise ValueError("portfolio [B, K, P], actions [B, K, 4], rtg, ts and valid [B, K] expected")
        out = np.empty((B, 3 * K, c["n_heads"]), np.float32)
        _lib.check(_lib.lib().vp_api_dt_forward(self._h, _p(w), _p(p), _p(a, ctypes.c_int32), _p(r),
                                                _p(t, ctypes.c_int32), _p(v), B, _p(out)))
        return out


def _layernorm(x, g, b, eps):
    return Fn.layer_norm(x, (x.shape[-1],), g, b, eps)


class VulpesDTNet(torch.nn.Module):
    """A dt checkpoint's network (include/vulpes/dt.h) as a torch.nn.Module: forward(window
    [B, K, W, F], portfolio [B, K, P], actions [B, K, 4], rtg [B, K], ts [B, K]) returns the logits
    [B, 3K, A] of every token; state_logits(...) those of the state tokens [B, K, A], one
    categorical per action branch of the env's layout. `target_return` is the return the
    checkpoint's policy is conditioned on."""

    def __init__(self, config, params):
        super().__init__()
        self.config = dict(config)
        self.target_return = config["target_return"]
        self._names = list(params)
        for n, v in params.items():
            self.register_parameter(n.replace(".", "__"), torch.nn.Parameter(torch.from_numpy(v.copy())))

    def param_dict(self):
        return {n: getattr(self, n.replace(".", "__")) for n in self._names}

    def forward(self, window, portfolio, actions, rtg, ts):
        c, p = self.config, self.param_dict()
        B, K, W, F = window.shape
        D, NH, TM = c["embed"], c["heads"], c["timesteps"]
        L, dh = 3 * K, D // NH
        sizes = c["branch_sizes"]
        offs = [sum(sizes[:i]) for i in range(len(sizes))]
        # the state input h = e + W_p p + b_p of every step (the encoder's forward)
        extras = {"h_only": True}
        bar = torch.arange(B * K, device=window.device) * W + (W - 1)
        _forward(p, c, window.reshape(B * K * W, F), bar, portfolio.reshape(B * K, -1), None, extras=extras)
        h = extras["h"]
        stok = h @ p["dt.state.w"].T + p["dt.state.b"]
        rtok = rtg.reshape(B * K, 1) * p["dt.ret.w"] + p["dt.ret.b"]
        a = actions.reshape(B * K, 4).long()
        atok = sum(p["dt.action.emb"][offs[br] + a[:, br]] for br in range(len(sizes)))
        te = p["dt.time.emb"][ts.reshape(B * K).long().clamp(0, TM - 1)]
        x = torch.stack([rtok + te, stok + te, atok + te], 1).reshape(B, L, D)
        x = _layernorm(x, p["dt.ln_in.g"], p["dt.ln_in.b"], c["ln_eps"])
        mask = torch.tril(torch.ones(L, L, dtype=torch.bool, device=x.device))
        for l in range(c["layers"]):
            q = "dt.block%d." % l
            y = _layernorm(x, p[q + "ln1.g"], p[q + "ln1.b"], c["ln_eps"])
            qkv = y @ p[q + "attn.qkv.w"].T + p[q + "attn.qkv.b"]
            qq, kk, vv = (t.reshape(B, L, NH, dh).transpose(1, 2) for t in qkv.split(D, -1))
            s = (qq @ kk.transpose(-1, -2)) / math.sqrt(dh)
            o = (torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ vv).transpose(1, 2).reshape(B, L, D)
            x = x + o @ p[q + "attn.proj.w"].T + p[q + "attn.proj.b"]
            y = _layernorm(x, p[q + "ln2.g"], p[q + "ln2.b"], c["ln_eps"])
            f = Fn.gelu(y @ p[q + "mlp.fc.w"].T + p[q + "mlp.fc.b"])
            x = x + f @ p[q + "mlp.proj.w"].T + p[q + "mlp.proj.b"]
        x = _layernorm(x, p["dt.ln_f.g"], p["dt.ln_f.b"], c["ln_eps"])
        return x @ p["dt.head.w"].T + p["dt.head.b"]

    def state_logits(self, window, portfolio, actions, rtg, ts):
        return self.forward(window, portfolio, actions, rtg, ts)[:, 1::3, :]
