"""vulpes.load: the PyTorch module computes the C forward's Q values, C51 log-probabilities and
IQN quantiles within 1e-5 on the CPU, for the default network, without the Mamba2 mixer, with the
TLOB encoder (model.encoder = tlob) in its place, and
with every module (adaptive atoms included); the C model reports the network's configuration."""
import numpy as np
import pytest
import torch

import vulpes

TOL = 1e-5


def inputs(cfg, batch, n_taus, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((batch, cfg["window"], cfg["n_features"])).astype(np.float32)
    w = np.clip(w * 1.5, -5, 5).astype(np.float32)  # z-scores as the features are, clipped at 5
    p = rng.uniform(-1, 1, (batch, cfg["n_portfolio"])).astype(np.float32)
    t = rng.uniform(0.01, 0.99, (batch, n_taus)).astype(np.float32)
    return w, p, t


def test_config_of_the_networks(runs):
    with vulpes.CModel(runs["default"].checkpoint) as m:
        c = m.config
        # SPEC section 4 defaults: every model.* key of tiny_run.yaml is at its default
        assert (c["n_features"], c["n_portfolio"], c["window"], c["hidden"]) == (32, 8, 8, 256)
        assert (c["encoder"], c["mamba_state"], c["mamba_head_dim"], c["mamba_conv"]) == (0, 16, 64, 4)
        assert (c["head_hidden"], c["n_atoms"], c["iqn_cos"], c["n_heads"]) == (128, 51, 64, 13)
        assert c["branch_sizes"] == [3, 4, 3, 3]
        assert (c["v_min"], c["v_max"]) == (-10.0, 10.0)
        assert "mamba.in_proj.w" in m.param_names()
        assert m.param("trunk.w1").shape == (256, 32)
    with vulpes.CModel(runs["no_mamba"].checkpoint) as m:
        assert m.config["encoder"] == 2
        assert not any(n.startswith("mamba.") for n in m.param_names())
    with vulpes.CModel(runs["tlob"].checkpoint) as m:
        c = m.config
        assert (c["encoder"], c["tlob_blocks"], c["tlob_heads"], c["tlob_feature_heads"], c["tlob_mlp"]) == (1, 2, 4, 1, 4)
        assert m.param("tlob.pos").shape == (8, 256) and m.param("tlob.t.qkv.w").shape == (2 * 3 * 256, 256)
        assert m.param("tlob.f.fc2.w").shape == (2 * 8, 4 * 8)
        assert not any(n.startswith("mamba.") for n in m.param_names())


@pytest.mark.parametrize("batch,n_taus,seed", [(1, 1, 0), (7, 5, 1), (64, 16, 2)])
def test_load_matches_the_c_forward(checkpoint, batch, n_taus, seed):
    net = vulpes.load(checkpoint)
    assert isinstance(net, torch.nn.Module)
    with vulpes.CModel(checkpoint) as m:
        w, p, t = inputs(m.config, batch, n_taus, seed)
        c = m.forward(w, p, t)
        c_no_iqn = m.forward(w, p)
    with torch.no_grad():
        q, lp, qu = net(torch.from_numpy(w), torch.from_numpy(p), torch.from_numpy(t))
        q2, lp2, qu2 = net(torch.from_numpy(w), torch.from_numpy(p))
    A = 13
    assert q.shape == (batch, A) and lp.shape == (batch, A, 51) and qu.shape == (batch, n_taus, A)
    assert np.abs(q.numpy() - c["q"]).max() <= TOL
    assert np.abs(lp.numpy() - c["log_probs"]).max() <= TOL
    assert np.abs(qu.numpy() - c["quantiles"]).max() <= TOL
    # without taus: no IQN head, the same C51 outputs
    assert qu2 is None and "quantiles" not in c_no_iqn
    assert np.abs(q2.numpy() - c_no_iqn["q"]).max() <= TOL
    np.testing.assert_array_equal(c_no_iqn["q"], c["q"])
    # the outputs are not trivially equal: distinct samples give distinct Q rows
    if batch > 1:
        assert np.abs(c["q"][0] - c["q"][1]).max() > 1e-4


def test_q_is_the_expectation_of_the_distribution(runs):
    """Q per head is sum_z z p(z) over the C51 support [-10, 10] in 51 atoms."""
    with vulpes.CModel(runs["default"].checkpoint) as m:
        w, p, _ = inputs(m.config, 3, 1, 5)
        c = m.forward(w, p)
    support = np.linspace(-10.0, 10.0, 51)
    probs = np.exp(c["log_probs"].astype(np.float64))
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose((probs * support).sum(-1), c["q"], atol=1e-5)


def test_module_parameters_are_the_checkpoints(runs):
    ck = runs["no_mamba"].checkpoint
    net = vulpes.load(ck)
    with vulpes.CModel(ck) as m:
        names = m.param_names()
        params = net.param_dict()
        assert list(params) == names
        for n in names:
            np.testing.assert_array_equal(params[n].detach().numpy(), m.param(n))


def test_head_modules(runs):
    """The head modules' network: stochastic depth is the identity at inference, the Q-denoise
    refinement, trained off its zero start, moves Q away from the C51 expectation, the
    cross-branch messages have one [HH, HH] block per ordered branch pair, and the risk-budget
    head's size scale lies in (0, 1); the module matches the C forward, scale included, within
    1e-5."""
    ck = runs["head_modules"].checkpoint
    net = vulpes.load(ck)
    with vulpes.CModel(ck) as m:
        assert m.config["q_denoise"] == 1 and abs(m.config["stoch_depth"] - 0.2) < 1e-7
        assert [n for n in m.param_names() if n.startswith("qdenoise.")] == [
            "qdenoise.w1", "qdenoise.b1", "qdenoise.w2", "qdenoise.b2"]
        assert m.param("qdenoise.w1").shape == (26, 13) and m.param("qdenoise.w2").shape == (13, 26)
        assert m.config["cross_branch"] == 1 and m.param("xbranch.msg.w").shape == (16 * 128, 128)
        assert m.param("xbranch.embed.w").shape == (4 * 128, 128)
        # the risk-budget head: the scale of each sample's size
        assert m.config["risk_budget"] == 0.5 and m.param("risk.w").shape == (1, 256)
        assert np.abs(m.param("qdenoise.w2")).max() > 0
        w, p, t = inputs(m.config, 9, 4, 7)
        c = m.forward(w, p, t)
    with torch.no_grad():
        q, lp, _ = net(torch.from_numpy(w), torch.from_numpy(p), torch.from_numpy(t))
    assert np.abs(q.numpy() - c["q"]).max() <= TOL
    with torch.no_grad():
        s = net.size_scale(torch.from_numpy(w), torch.from_numpy(p))
    assert s.shape == (9,) and np.abs(s.numpy() - c["size_scale"]).max() <= TOL
    assert 0 < c["size_scale"].min() and c["size_scale"].max() < 1
    support = np.linspace(-10.0, 10.0, 51)
    q_c51 = (np.exp(lp.numpy().astype(np.float64)) * support).sum(-1)
    assert np.abs(q_c51 - c["q"]).max() > 1e-6


def test_learn_modules(runs):
    """Adaptive atoms (docs/modules.md): the checkpoint's spacing logits c51.atoms [4, 50] trained off
    zero, Q per head is the expectation on its branch's learned support (v_min + span cumsum(softmax)),
    not on the uniform one, and the module matches the C forward within 1e-5 (PopArt changes no
    output a checkpoint holds: it scales the IQN layer inside training only)."""
    ck = runs["learn_modules"].checkpoint
    net = vulpes.load(ck)
    with vulpes.CModel(ck) as m:
        assert m.config["adaptive_atoms"] == 1
        s = m.param("c51.atoms").astype(np.float64)
        assert s.shape == (4, 50) and np.abs(s).max() > 0
        w, p, t = inputs(m.config, 5, 3, 9)
        c = m.forward(w, p, t)
    with torch.no_grad():
        q, _, _ = net(torch.from_numpy(w), torch.from_numpy(p), torch.from_numpy(t))
    assert np.abs(q.numpy() - c["q"]).max() <= TOL
    pi = np.exp(s - s.max(-1, keepdims=True))
    pi /= pi.sum(-1, keepdims=True)
    z = np.concatenate([np.zeros((4, 1)), np.cumsum(pi, -1)[:, :-1], np.ones((4, 1))], -1) * 20.0 - 10.0
    heads = np.repeat(np.arange(4), [3, 4, 3, 3])
    probs = np.exp(c["log_probs"].astype(np.float64))
    np.testing.assert_allclose((probs * z[heads]).sum(-1), c["q"], atol=1e-5)
    assert np.abs((probs * np.linspace(-10.0, 10.0, 51)).sum(-1) - c["q"]).max() > 1e-6
