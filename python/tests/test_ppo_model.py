"""vulpes.load on a PPO checkpoint: a VulpesPPONet whose policy logits and values equal the C
forward's (vp_api_model_forward, vp_api_model_values) within 1e-5 on the CPU, whose parameters
are the checkpoint's tensors (the encoder's rows PPO uses and the ppo.* heads, no DQN head), and
whose greedy choice is each branch's argmax of the C logits."""
import numpy as np
import pytest
import torch

import vulpes

TOL = 1e-5
PPO = {"train.algo": "ppo", "ppo.rollout_steps": 16, "ppo.minibatches": 4, "ppo.epochs": 2}


@pytest.fixture(scope="module")
def ppo_checkpoint(tmp_path_factory, tiny_config):
    d = tmp_path_factory.mktemp("run_ppo")
    return vulpes.train(tiny_config, out=str(d / "run"), progress=False, **PPO).checkpoint


def test_ppo_config_and_parameters(ppo_checkpoint):
    net = vulpes.load(ppo_checkpoint)
    assert isinstance(net, vulpes.VulpesPPONet)
    with vulpes.CModel(ppo_checkpoint) as m:
        assert m.config["ppo"] == 1 and m.config["n_heads"] == 13
        names = m.param_names()
        assert "ppo.pi2.w" in names and "ppo.v2.b" in names and "mamba.in_proj.w" in names
        assert not any(n.startswith("c51.") or n.startswith("iqn.") for n in names)
        assert m.param("ppo.pi2.w").shape == (13, m.config["head_hidden"])
        params = net.param_dict()
        assert list(params) == names
        for n in names:
            np.testing.assert_array_equal(params[n].detach().numpy(), m.param(n))


@pytest.mark.parametrize("batch,seed", [(1, 0), (7, 1), (64, 2)])
def test_ppo_load_matches_the_c_forward(ppo_checkpoint, batch, seed):
    net = vulpes.load(ppo_checkpoint)
    with vulpes.CModel(ppo_checkpoint) as m:
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
