"""The agent network of SPEC section 4 in PyTorch: trunk, market encoder (the Mamba2 mixer, the
TLOB dual-attention blocks or none), portfolio projection,
dueling branching C51 head and IQN head (and the head modules that act at inference: the
Q-denoise refinement and the cross-branch messages; stochastic depth is the identity there), as one function of a parameter dict keyed by vulpes's
parameter names (src/model/model_internal.h: "trunk.w1", ...) and a model configuration keyed
by vp_model_cfg's field names. vulpes.load wraps it in a torch.nn.Module; tools/golden.py
computes the learner's golden data with it."""
import math

import torch
import torch.nn.functional as Fn

__all__ = ["encoder_of", "forward"]

# vp_model_encoder (include/vulpes/model.h): the index of each encoder, as the C model reports it
ENCODERS = ("mamba2", "tlob", "none")


def encoder_of(c):
    """The market encoder of configuration c, "mamba2", "tlob" or "none": c["encoder"] as the C
    model's index (vp_model_encoder) or as its name."""
    e = c["encoder"]
    return e if isinstance(e, str) else ENCODERS[int(e)]


def _tlob_side(p, c, x, nm, blk, L, W, heads):
    """One TLOB sublayer (docs/model.md, "TLOB encoder") over x [B, L, W] with block blk of the
    tensors named nm: LN(a + fc2(gelu(fc1 a))), a = LN(x + attention(x) Wo^T + bo). L and W come
    from the configuration (plain ints, so an ONNX export keeps only the batch dynamic)."""
    M, D = c["tlob_mlp"] * W, W // heads
    qkv = x @ p[nm + ".qkv.w"][3 * W * blk:3 * W * (blk + 1)].T + p[nm + ".qkv.b"][3 * W * blk:3 * W * (blk + 1)]
    q, k, v = (t.reshape(-1, L, heads, D).transpose(1, 2) for t in qkv.split(W, -1))
    att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D), -1)
    o = (att @ v).transpose(1, 2).reshape(-1, L, W)
    rows = slice(W * blk, W * (blk + 1))
    a = x + o @ p[nm + ".o.w"][rows].T + p[nm + ".o.b"][rows]
    y = Fn.layer_norm(a, (W,), p[nm + ".ln1.g"][rows], p[nm + ".ln1.b"][rows], c["ln_eps"])
    u = Fn.gelu(y @ p[nm + ".fc1.w"][M * blk:M * (blk + 1)].T + p[nm + ".fc1.b"][M * blk:M * (blk + 1)])
    z = y + u @ p[nm + ".fc2.w"][rows].T + p[nm + ".fc2.b"][rows]
    return Fn.layer_norm(z, (W,), p[nm + ".ln2.g"][rows], p[nm + ".ln2.b"][rows], c["ln_eps"])


def tlob(p, c, h2):
    """The TLOB encoder over the trunk rows h2 [B, K, H]: the encoding [B, H], the last step's row
    of the last block (each block: the temporal sublayer, then the feature one on the transpose)."""
    K, H = c["window"], c["hidden"]
    x = h2 + p["tlob.pos"]
    for blk in range(c["tlob_blocks"]):
        x = _tlob_side(p, c, x, "tlob.t", blk, K, H, c["tlob_heads"])
        x = _tlob_side(p, c, x.transpose(1, 2), "tlob.f", blk, H, K, c["tlob_feature_heads"]).transpose(1, 2)
    return x[:, -1]


def _spectral(w, u0):
    """w / sigma after one power iteration from the kept u0 (torch.nn.utils.spectral_norm's
    training step, eps 1e-12): v = normalize(w^T u0), u = normalize(w v), sigma = u . w v."""
    v = Fn.normalize(w.T @ u0, dim=0, eps=1e-12)
    t = w @ v
    u = Fn.normalize(t, dim=0, eps=1e-12)
    return w / torch.dot(u, t)


def _select(p, c, x):
    """Variable selection: the features F w x of each row and the softmax weights w."""
    F = c["n_features"]
    eta = Fn.elu(x @ p["vsn.w1"].T + p["vsn.b1"])
    gs = eta @ p["vsn.w2"].T + p["vsn.b2"]
    pre = x + gs[..., :F] * torch.sigmoid(gs[..., F:])
    w = torch.softmax(Fn.layer_norm(pre, (F,), p["vsn.ln.g"], p["vsn.ln.b"], c["ln_eps"]), -1)
    return F * w * x, w


def _kan(p, c, x):
    """efficient-kan's KANLinear without bias: silu(x) base_w^T + B(x) (spline_w * scaler)^T, the
    order-k B-spline bases B on G intervals of [-range, range] extended by k on each side."""
    G, k, r = c["kan_grid"], c["kan_order"], c["kan_range"]
    H, F = c["hidden"], c["n_features"]
    h = torch.full((), 2.0 * r / G, dtype=x.dtype)
    grid = torch.arange(-k, G + k + 1, dtype=x.dtype) * h - torch.full((), r, dtype=x.dtype)
    xx = x.unsqueeze(-1)
    b = ((xx >= grid[:-1]) & (xx < grid[1:])).to(x.dtype)
    for q in range(1, k + 1):
        b = ((xx - grid[:-(q + 1)]) / (grid[q:-1] - grid[:-(q + 1)]) * b[..., :-1]
             + (grid[q + 1:] - xx) / (grid[q + 1:] - grid[1:-q]) * b[..., 1:])
    w = (p["kan.spline_w"].reshape(H, F, G + k) * p["kan.spline_scaler"].unsqueeze(-1)).reshape(H, -1)
    return Fn.silu(x) @ p["kan.base_w"].T + b.flatten(-2) @ w.T


def _support(p, c, logp):
    """The C51 atoms of every head, [A, Z]: uniform on [v_min, v_max], or with adaptive atoms
    (docs/modules.md) each branch's own, v_min + (v_max - v_min) cumsum(softmax(c51.atoms)) with
    the last atom v_max exactly."""
    Z, sizes = c["n_atoms"], c["branch_sizes"]
    if not c.get("adaptive_atoms"):
        return torch.linspace(c["v_min"], c["v_max"], Z, device=logp.device, dtype=logp.dtype)
    pi = torch.softmax(p["c51.atoms"], -1)
    cum = torch.cat([torch.zeros_like(pi[:, :1]), torch.cumsum(pi, -1)[:, :-1]], -1)
    z = c["v_min"] + (c["v_max"] - c["v_min"]) * cum
    z = torch.cat([z, torch.full_like(z[:, :1], c["v_max"])], -1)
    return torch.cat([z[k:k + 1].expand(n, Z) for k, n in enumerate(sizes)], 0)


def ppo_heads(p, h):
    """The PPO actor-critic's heads (include/vulpes/ppo.h) on h [B, H]: the policy logits [B, A]
    (one categorical per action branch) and the values [B]."""
    logits = torch.relu(h @ p["ppo.pi1.w"].T + p["ppo.pi1.b"]) @ p["ppo.pi2.w"].T + p["ppo.pi2.b"]
    value = (torch.relu(h @ p["ppo.v1.w"].T + p["ppo.v1.b"]) @ p["ppo.v2.w"].T + p["ppo.v2.b"])[:, 0]
    return logits, value


def iql_mlp(p, h, name, relu_inputs=None, prefix=""):
    """One MLP of the IQL network (include/vulpes/iql.h) on h [B, H]: PREFIX + "iql.NAME.l1"
    relu, then ".l2"; NAME q1, q2 (per-head Q [B, A]), v ([B, 1]) or pi (logits [B, A])."""
    k = prefix + "iql." + name
    a = h @ p[k + ".l1.w"].T + p[k + ".l1.b"]
    if relu_inputs is not None:
        relu_inputs.append(a.detach().abs().min().item())
    return torch.relu(a) @ p[k + ".l2.w"].T + p[k + ".l2.b"]


def iql_heads(p, h):
    """The IQL network's policy logits [B, A] and values V(s) [B] on h [B, H]."""
    return iql_mlp(p, h, "pi"), iql_mlp(p, h, "v")[:, 0]


def forward(p, c, feats, bar, port, taus, relu_inputs=None, extras=None):
    """log_probs [B, A, Z], q [B, A], iqn [B, n, A] (None without taus); extras (a dict, when
    given) receives h [B, H], the heads' input, and with the risk-budget head size_scale [B];
    with extras["h_only"] set it returns (None, None, None) after h (a PPO network has no C51 head)."""
    B, K, H = bar.shape[0], c["window"], c["hidden"]
    Z, sizes = c["n_atoms"], c["branch_sizes"]
    enc = encoder_of(c)
    Kt = 1 if enc == "none" else K

    def relu(x):
        if relu_inputs is not None:
            relu_inputs.append(x.detach().abs().min().item())
        return torch.relu(x)

    # Trunk over the window rows t-Kt+1..t, clamped at row 0.
    idx = (bar[:, None] - Kt + 1 + torch.arange(Kt, device=bar.device)[None, :]).clamp(min=0)
    x0 = feats[idx]                                                     # [B, Kt, F]
    # Input modules (docs/modules.md): selection gate, spectral norms, KAN first layer.
    sn = c.get("spectral_norm", 0)
    xs = _select(p, c, x0)[0] if c.get("vsn", 0) else x0
    if c.get("kan", 0):
        a1 = _kan(p, c, xs)
    else:
        w1 = _spectral(p["trunk.w1"], p["trunk.w1.sn_u"]) if sn else p["trunk.w1"]
        a1 = xs @ w1.T + p["trunk.b1"]
    h1 = relu(Fn.layer_norm(a1, (H,), p["trunk.ln1.g"], p["trunk.ln1.b"], c["ln_eps"]))
    w2 = _spectral(p["trunk.w2"], p["trunk.w2.sn_u"]) if sn else p["trunk.w2"]
    a2 = h1 @ w2.T + p["trunk.b2"]
    h2 = relu(Fn.layer_norm(a2, (H,), p["trunk.ln2.g"], p["trunk.ln2.b"], c["ln_eps"]))
    if enc == "mamba2":
        N, hd, CW = c["mamba_state"], c["mamba_head_dim"], c["mamba_conv"]
        NH = H // hd
        # in_proj rows: z [0, H), x [H, 2H), B, C (N each), dt (NH).
        proj = h2 @ p["mamba.in_proj.w"].T                              # [B, K, 2H+2N+NH]
        z = proj[:, K - 1, :H]
        xbc = proj[:, :, H:2 * H + 2 * N]
        dt_raw = proj[:, :, 2 * H + 2 * N:]
        # Causal depthwise conv + SiLU over (x, B, C).
        xpad = Fn.pad(xbc.transpose(1, 2), (CW - 1, 0))
        conv = Fn.conv1d(xpad, p["mamba.conv.w"].unsqueeze(1), p["mamba.conv.b"], groups=H + 2 * N)
        act = Fn.silu(conv.transpose(1, 2))                             # [B, K, H+2N]
        x = act[:, :, :H].reshape(B, K, NH, hd)
        Bm = act[:, :, H:H + N]
        Cm = act[:, K - 1, H + N:]
        dt = Fn.softplus(dt_raw + p["mamba.dt_bias"])                   # [B, K, NH]
        A = -torch.exp(p["mamba.A_log"])
        # Scan: s_t = exp(dt_t A) s_{t-1} + dt_t x_t B_t^T; y = s_K C + D x_K.
        s = torch.zeros(B, NH, hd, N, device=bar.device, dtype=h2.dtype)
        for t in range(K):
            decay = torch.exp(dt[:, t] * A)[:, :, None, None]
            s = decay * s + (dt[:, t, :, None] * x[:, t])[..., None] * Bm[:, t, None, None, :]
        y = (s * Cm[:, None, None, :]).sum(-1) + p["mamba.D"][None, :, None] * x[:, K - 1]
        g = y.reshape(B, H) * Fn.silu(z)
        yn = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + c["rms_eps"]) * p["mamba.norm.g"]
        e = h2[:, K - 1] + yn @ p["mamba.out_proj.w"].T
    elif enc == "tlob":
        e = tlob(p, c, h2)
    else:
        e = h2[:, 0]
    # Portfolio projection and the dueling branching C51 head.
    h = e + port @ p["port.w"].T + p["port.b"]
    if extras is not None:
        extras["h"] = h  # the heads' input (PPO's actor-critic heads read it)
        if extras.get("h_only"):
            return None, None, None
    if extras is not None and c.get("risk_budget", 0) > 0:
        # Risk-budget head (docs/modules.md): the scale of the chosen size, sigmoid(w . h + b).
        extras["size_scale"] = torch.sigmoid(h.detach() @ p["risk.w"].T + p["risk.b"])[:, 0]
    v = relu(h @ p["c51.v1.w"].T + p["c51.v1.b"]) @ p["c51.v2.w"].T + p["c51.v2.b"]
    ah = relu(h @ p["c51.a1.w"].T + p["c51.a1.b"])
    if c.get("cross_branch"):
        # Cross-branch messages (docs/modules.md): S_k = relu(ah E_k^T), S'_k = S_k + sum_j S_j W_jk^T,
        # each branch's advantage rows from its S'_k.
        nb, HH = len(sizes), ah.shape[-1]
        E = p["xbranch.embed.w"].reshape(nb, HH, HH)
        W = p["xbranch.msg.w"].reshape(nb, nb, HH, HH)
        S = relu(torch.einsum("bi,koi->kbo", ah, E))
        S = S + torch.einsum("jbi,jkoi->kbo", S, W)
        rows, off = [], 0
        for k, sz in enumerate(sizes):
            a2 = p["c51.a2.w"][off * Z:(off + sz) * Z]
            rows.append(S[k] @ a2.T + p["c51.a2.b"][off * Z:(off + sz) * Z])
            off += sz
        adv = torch.cat(rows, -1).reshape(B, -1, Z)
    else:
        adv = (ah @ p["c51.a2.w"].T + p["c51.a2.b"]).reshape(B, -1, Z)
    logits, off = [], 0
    for sz in sizes:
        ab = adv[:, off:off + sz]
        logits.append(v[:, None, :] + ab - ab.mean(1, keepdim=True))
        off += sz
    logp = torch.log_softmax(torch.cat(logits, 1), -1)
    q = (logp.exp() * _support(p, c, logp)).sum(-1)
    if c.get("q_denoise"):
        # Q-denoise refinement (docs/modules.md): q + W2 relu(W1 q + b1) + b2 over the detached C51 Q.
        qc = q.detach()
        q = qc + relu(qc @ p["qdenoise.w1"].T + p["qdenoise.b1"]) @ p["qdenoise.w2"].T + p["qdenoise.b2"]
    if taus is None:
        return logp, q, None
    # IQN head: phi(tau) = relu(Linear(cos(pi i tau))), Z_tau = L2(relu(L1(h * phi))).
    cosf = torch.cos(taus[..., None] * (math.pi * torch.arange(c["iqn_cos"], device=taus.device)))
    phi = relu(cosf @ p["iqn.phi.w"].T + p["iqn.phi.b"])
    zq = relu((h[:, None, :] * phi) @ p["iqn.l1.w"].T + p["iqn.l1.b"]) @ p["iqn.l2.w"].T + p["iqn.l2.b"]
    return logp, q, zq
