"""A checkpoint's network in PyTorch (vulpes.load) and the C forward it is checked against
(CModel): both open the checkpoint through the library, so they read the same configuration and
parameters."""
import numpy as np
import torch

from . import _lib
from ._cnet import CNet
from .network import forward as _forward
from .network import iql_heads as _iql_heads
from .network import ppo_heads as _ppo_heads

__all__ = ["CModel", "VulpesNet", "VulpesPPONet", "VulpesIQLNet", "load"]

# vp_model_cfg fields vulpes.network.forward reads (besides branch_sizes).
_INT_KEYS = ("n_features", "n_portfolio", "window", "hidden", "encoder", "mamba_state", "mamba_head_dim",
             "mamba_conv", "tlob_blocks", "tlob_heads", "tlob_feature_heads", "tlob_mlp",
             "head_hidden", "n_atoms", "n_branches", "iqn_cos", "n_heads",
             "vsn", "vsn_hidden", "spectral_norm", "kan", "kan_grid", "kan_order", "q_denoise", "cross_branch",
             "adaptive_atoms", "ppo", "iql")
_FLOAT_KEYS = ("v_min", "v_max", "ln_eps", "rms_eps", "kan_range", "stoch_depth", "risk_budget")


def _f32p(a):
    return a.ctypes.data_as(_lib.c_float_p) if a is not None else None


class CModel(CNet):
    """A checkpoint's network in the C library (vp_api_model_*, CPU, FP32): its configuration, its
    parameters by name, and the C forward. Close it (or use it as a context manager)."""

    _API = "vp_api_model"
    _INT_KEYS = _INT_KEYS
    _FLOAT_KEYS = _FLOAT_KEYS

    def forward(self, window, portfolio, taus=None):
        """The C forward of window [B, K, F], portfolio [B, P] and taus [B, N] (or None): a dict
        of numpy arrays q [B, A], log_probs [B, A, Z], with taus quantiles [B, N, A], and with the
        risk-budget head size_scale [B]; for a PPO actor-critic (config ppo 1, no taus) logits
        [B, A] and value [B], for an IQL network (config iql 1, no taus) its policy head's logits
        [B, A] and its value V(s) [B]."""
        c = self.config
        w = np.ascontiguousarray(window, dtype=np.float32)
        p = np.ascontiguousarray(portfolio, dtype=np.float32)
        B = w.shape[0]
        if w.shape[1:] != (c["window"], c["n_features"]) or p.shape != (B, c["n_portfolio"]):
            raise ValueError(f"window must be [B, {c['window']}, {c['n_features']}] and portfolio "
                             f"[B, {c['n_portfolio']}]; got {w.shape} and {p.shape}")
        if c["ppo"] or c["iql"]:
            if taus is not None:
                raise ValueError(f"a {'PPO' if c['ppo'] else 'IQL'} network has no IQN head: give no taus")
            logits = np.empty((B, c["n_heads"]), np.float32)
            value = np.empty(B, np.float32)
            L = _lib.lib()
            _lib.check(L.vp_api_model_forward(self._h, _f32p(w), _f32p(p), None, B, 0, _f32p(logits), None, None))
            _lib.check(L.vp_api_model_values(self._h, _f32p(value), B))
            return {"logits": logits, "value": value}
        t = None if taus is None else np.ascontiguousarray(taus, dtype=np.float32)
        N = 0 if t is None else t.shape[1]
        A, Z = c["n_heads"], c["n_atoms"]
        q = np.empty((B, A), np.float32)
        lp = np.empty((B, A, Z), np.float32)
        qu = np.empty((B, N, A), np.float32) if N else None
        _lib.check(_lib.lib().vp_api_model_forward(self._h, _f32p(w), _f32p(p), _f32p(t), B, N, _f32p(q), _f32p(lp),
                                                   _f32p(qu)))
        out = {"q": q, "log_probs": lp}
        if N:
            out["quantiles"] = qu
        if c["risk_budget"] > 0:
            s = np.empty(B, np.float32)
            _lib.check(_lib.lib().vp_api_model_size_scale(self._h, _f32p(s), B))
            out["size_scale"] = s
        return out


class VulpesNet(torch.nn.Module):
    """The agent network as a torch.nn.Module (vulpes.network.forward): forward(window [B, K, F],
    portfolio [B, P], taus [B, N] or None) returns (q [B, A], log_probs [B, A, Z], quantiles
    [B, N, A] or None), A the action heads in the env's layout (direction 3, size 4, take-profit
    3, stop-loss 3). Parameters are named as in the checkpoint with "." written "__"."""

    def __init__(self, config, params):
        super().__init__()
        self.config = dict(config)
        self._names = list(params)
        for name, value in params.items():
            t = torch.as_tensor(np.asarray(value, dtype=np.float32))
            self.register_parameter(name.replace(".", "__"), torch.nn.Parameter(t.clone()))

    def param_dict(self):
        """The parameters keyed by their checkpoint names."""
        return {n: getattr(self, n.replace(".", "__")) for n in self._names}

    def forward(self, window, portfolio, taus=None):
        B, K, F = window.shape
        feats = window.reshape(B * K, F)
        bar = torch.arange(B, device=window.device) * K + (K - 1)
        log_probs, q, quantiles = _forward(self.param_dict(), self.config, feats, bar, portfolio, taus)
        return q, log_probs, quantiles

    def size_scale(self, window, portfolio):
        """The risk-budget head's scale of each sample's size [B] (docs/modules.md); the network
        must have the head (config risk_budget > 0)."""
        if not self.config.get("risk_budget"):
            raise ValueError("the network has no risk-budget head (model.risk_budget is 0)")
        B, K, F = window.shape
        extras = {}
        bar = torch.arange(B, device=window.device) * K + (K - 1)
        _forward(self.param_dict(), self.config, window.reshape(B * K, F), bar, portfolio, None, extras=extras)
        return extras["size_scale"]


class VulpesPPONet(VulpesNet):
    _heads = staticmethod(_ppo_heads)

    """A PPO checkpoint's actor-critic (include/vulpes/ppo.h) as a torch.nn.Module: forward(window
    [B, K, F], portfolio [B, P]) returns (logits [B, A], value [B]), one categorical per action
    branch of the env's layout (direction 3, size 4, take-profit 3, stop-loss 3); greedy(window,
    portfolio) the argmax of each branch [B, 4], the choice a backtest makes."""

    def forward(self, window, portfolio, taus=None):
        if taus is not None:
            raise ValueError("a PPO network has no IQN head: give no taus")
        B, K, F = window.shape
        bar = torch.arange(B, device=window.device) * K + (K - 1)
        extras = {"h_only": True}
        p = self.param_dict()
        _forward(p, self.config, window.reshape(B * K, F), bar, portfolio, None, extras=extras)
        return self._heads(p, extras["h"])

    def greedy(self, window, portfolio):
        logits, _ = self.forward(window, portfolio)
        out, off = [], 0
        for sz in self.config["branch_sizes"]:
            out.append(logits[:, off:off + sz].argmax(1))
            off += sz
        return torch.stack(out, 1)


class VulpesIQLNet(VulpesPPONet):
    """An IQL checkpoint's network (include/vulpes/iql.h) as a torch.nn.Module: forward(window
    [B, K, F], portfolio [B, P]) returns (logits [B, A], value [B]): the policy head's per-branch
    logits and V(s); greedy(window, portfolio) the argmax of each branch [B, 4], the choice a
    backtest makes. Its Q heads are parameters too (iql.q1.*, iql.q2.*): vulpes.network.iql_mlp
    computes them."""
    _heads = staticmethod(_iql_heads)


def load(checkpoint):
    """The network of a vulpes checkpoint (best.safetensors or last.safetensors) as a VulpesNet on the
    CPU, in float32 and eval mode; it computes the C forward's Q values, C51 log-probabilities and
    IQN quantiles. A PPO checkpoint gives a VulpesPPONet (policy logits and values), an IQL one a
    VulpesIQLNet (its policy head's logits and V(s)), a Decision Transformer's a VulpesDTNet
    (vulpes.dt)."""
    from . import dt

    if dt.checkpoint_algo(checkpoint) == "dt":
        with dt.CDTModel(checkpoint) as m:
            net = dt.VulpesDTNet(m.config, m.params())
        net.checkpoint = str(checkpoint)
        return net.eval()
    with CModel(checkpoint) as m:
        cls = VulpesPPONet if m.config["ppo"] else VulpesIQLNet if m.config["iql"] else VulpesNet
        net = cls(m.config, m.params())
    net.checkpoint = str(checkpoint)
    return net.eval()
