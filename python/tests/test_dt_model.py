"""vulpes.load on a Decision Transformer checkpoint (train.algo dt, docs/dt.md): a VulpesDTNet
whose logits at every token equal the C forward's (vp_api_dt_forward) within 1e-5 on the CPU,
whose parameters are the checkpoint's tensors (the encoder's rows it uses and the dt.* tensors,
no DQN head), and whose target return is the checkpoint's. The checkpoint comes from a short run
on a dataset recorded with `vulpes record` (the crossover with epsilon 0.3) on the training span."""
import numpy as np
import pytest
import torch
from vulpes_cli import run_vulpes

import vulpes

TOL = 1e-5
DT = {"train.algo": "dt", "dt.context": 4, "dt.embed": 16, "dt.heads": 4, "dt.layers": 2, "dt.batch": 8,
      "train.iterations": 4, "train.eval_every": 4, "train.checkpoint_every": 4}


@pytest.fixture(scope="module")
def dt_checkpoint(tmp_path_factory, tiny_config):
    d = tmp_path_factory.mktemp("run_dt")
    data = d / "data.safetensors"
    run_vulpes("record", tiny_config, "--policy", "ma_cross:fast=3,slow=12", "--epsilon", "0.3", "--steps", "128",
               "--envs", "4", "--seed", "5", "--backend", "cpu", "--out", str(data))
    return vulpes.train(tiny_config, out=str(d / "run"), progress=False, dt__dataset=str(data), **DT).checkpoint


def test_dt_config_and_parameters(dt_checkpoint):
    net = vulpes.load(dt_checkpoint)
    assert isinstance(net, vulpes.VulpesDTNet)
    with vulpes.CDTModel(dt_checkpoint) as m:
        c = m.config
        assert c["context"] == 4 and c["embed"] == 16 and c["heads"] == 4 and c["layers"] == 2 and c["n_heads"] == 13
        assert np.isfinite(c["target_return"]) and net.target_return == c["target_return"]
        names = m.param_names()
        assert "dt.block1.attn.qkv.w" in names and "dt.head.b" in names and "mamba.in_proj.w" in names
        assert not any(n.startswith("c51.") or n.startswith("iqn.") for n in names)
        assert m.param("dt.block0.attn.qkv.w").shape == (48, 16)
        params = net.param_dict()
        assert list(params) == names
        for n in names:
            np.testing.assert_array_equal(params[n].detach().numpy(), m.param(n))


@pytest.mark.parametrize("batch,seed", [(1, 0), (5, 1)])
def test_dt_load_matches_the_c_forward(dt_checkpoint, batch, seed):
    net = vulpes.load(dt_checkpoint)
    with vulpes.CDTModel(dt_checkpoint) as m:
        c = m.config
        K, rng = c["context"], np.random.default_rng(seed)
        w = np.clip(rng.standard_normal((batch, K, c["window"], c["n_features"])) * 1.5, -5, 5).astype(np.float32)
        p = rng.uniform(-1, 1, (batch, K, c["n_portfolio"])).astype(np.float32)
        a = np.stack([rng.integers(0, s, (batch, K)) for s in c["branch_sizes"]], -1).astype(np.int32)
        r = rng.normal(0, 3, (batch, K)).astype(np.float32)
        t = rng.integers(0, 100, (batch, K)).astype(np.int32)
        out = m.forward(w, p, a, r, t, np.ones((batch, K), np.float32))
        with pytest.raises(vulpes.VulpesError):
            m.forward(w, p, a + 5, r, t, np.ones((batch, K), np.float32))
    with torch.no_grad():
        lg = net(torch.from_numpy(w), torch.from_numpy(p), torch.from_numpy(a), torch.from_numpy(r),
                 torch.from_numpy(t)).numpy()
    assert lg.shape == (batch, 3 * K, 13)
    assert np.abs(lg - out).max() <= TOL
    # a later step's input leaves the earlier tokens' logits alone (the causal mask)
    r2 = r.copy()
    r2[:, -1] += 10.0
    with torch.no_grad():
        lg2 = net(torch.from_numpy(w), torch.from_numpy(p), torch.from_numpy(a), torch.from_numpy(r2),
                  torch.from_numpy(t)).numpy()
    assert np.abs(lg2[:, : 3 * (K - 1)] - lg[:, : 3 * (K - 1)]).max() <= TOL
    assert np.abs(lg2[:, 3 * (K - 1):] - lg[:, 3 * (K - 1):]).max() > 1e-4
