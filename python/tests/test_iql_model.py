"""vulpes.load on an IQL checkpoint: a VulpesIQLNet whose policy logits and values V(s) equal the C
forward's (vp_api_model_forward, vp_api_model_values) within 1e-5 on the CPU, whose parameters are
the checkpoint's tensors (the encoder's rows IQL uses and the iql.* heads, no DQN head), whose Q
heads (vulpes.network.iql_mlp) give per-head values, and whose greedy choice is each branch's argmax
of the C logits. The checkpoint is a short IQL run over a dataset that vulpes record wrote."""
import numpy as np
import pytest
import torch

import vulpes
from vulpes.network import iql_mlp
from vulpes_cli import run_vulpes

TOL = 1e-5


@pytest.fixture(scope="module")
def iql_checkpoint(tmp_path_factory, tiny_config):
    d = tmp_path_factory.mktemp("run_iql")
    ds = d / "ds.safetensors"
    run_vulpes("record", tiny_config, "--policy", "ma_cross:fast=5,slow=20", "--epsilon", "0.3", "--steps", "100",
               "--envs", "4", "--backend", "cpu", "--out", str(ds))
    over = {"train.algo": "iql", "iql.dataset": str(ds), "iql.batch": 32, "train.train_steps": 4}
    return vulpes.train(tiny_config, out=str(d / "run"), progress=False, **over).checkpoint


def test_iql_config_and_parameters(iql_checkpoint):
    net = vulpes.load(iql_checkpoint)
    assert isinstance(net, vulpes.VulpesIQLNet)
    with vulpes.CModel(iql_checkpoint) as m:
        assert m.config["iql"] == 1 and m.config["ppo"] == 0 and m.config["n_heads"] == 13
        names = m.param_names()
        for n in ("iql.q1.l2.w", "iql.q2.l1.b", "iql.v.l2.b", "iql.pi.l2.w", "mamba.in_proj.w"):
            assert n in names
        assert not any(n.startswith("c51.") or n.startswith("iqn.") or n.startswith("target.") for n in names)
        assert m.param("iql.pi.l2.w").shape == (13, m.config["head_hidden"])
        assert m.param("iql.v.l2.w").shape == (1, m.config["head_hidden"])
        params = net.param_dict()
        assert list(params) == names
        for n in names:
            np.testing.assert_array_equal(params[n].detach().numpy(), m.param(n))


@pytest.mark.parametrize("batch,seed", [(1, 0), (7, 1), (64, 2)])
def test_iql_load_matches_the_c_forward(iql_checkpoint, batch, seed):
    net = vulpes.load(iql_checkpoint)
    with vulpes.CModel(iql_checkpoint) as m:
        c = m.config
        rng = np.random.default_rng(seed)
        w = np.clip(rng.standard_normal((batch, c["window"], c["n_features"])) * 1.5, -5, 5).astype(np.float32)
        p = rng.uniform(-1, 1, (batch, c["n_portfolio"])).astype(np.float32)
        out = m.forward(w, p)
        with pytest.raises(ValueError):
            m.forward(w, p, np.full((batch, 2), 0.5, np.float32))
    with torch.no_grad():
        logits, value = net(torch.from_numpy(w), torch.from_numpy(p))
        greedy = net.greedy(torch.from_numpy(w), torch.from_numpy(p)).numpy()
    assert logits.shape == (batch, 13) and value.shape == (batch,)
    assert np.abs(logits.numpy() - out["logits"]).max() <= TOL
    assert np.abs(value.numpy() - out["value"]).max() <= TOL
    off = 0
    for k, sz in enumerate([3, 4, 3, 3]):
        np.testing.assert_array_equal(greedy[:, k], out["logits"][:, off:off + sz].argmax(1))
        off += sz
    if batch > 1:
        assert np.abs(out["logits"][0] - out["logits"][1]).max() > 1e-5


def test_iql_q_heads(iql_checkpoint):
    net = vulpes.load(iql_checkpoint)
    B, c = 5, net.config
    rng = np.random.default_rng(4)
    w = torch.from_numpy(rng.standard_normal((B, c["window"], c["n_features"])).astype(np.float32))
    p = torch.from_numpy(rng.uniform(-1, 1, (B, c["n_portfolio"])).astype(np.float32))
    extras = {"h_only": True}
    bar = torch.arange(B) * c["window"] + (c["window"] - 1)
    with torch.no_grad():
        vulpes.network.forward(net.param_dict(), c, w.reshape(B * c["window"], -1), bar, p, None, extras=extras)
        q1, q2 = iql_mlp(net.param_dict(), extras["h"], "q1"), iql_mlp(net.param_dict(), extras["h"], "q2")
    assert q1.shape == (B, 13) and q2.shape == (B, 13) and torch.isfinite(q1).all() and torch.isfinite(q2).all()
    assert (q1 - q2).abs().max() > 0  # twin heads, initialised apart
