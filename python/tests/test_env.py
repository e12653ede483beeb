"""The Gymnasium environments over the C envs: Gymnasium's env checker passes on the single env;
the VectorEnv's steps equal the C envs' driven through the flat API with the same actions; the
window observation is the feature matrix's rows t-K+1..t; flat actions earn exactly 0 and the
episode window's end truncates; CUDA envs (when there is a GPU) give the CPU's values."""
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import vulpes
from vulpes.env import CEnv

SHORT = {"env.episode_bars": 16}


def test_gymnasium_env_checker(tiny_config):
    env = vulpes.VulpesEnv(tiny_config, SHORT)
    assert env.action_space.nvec.tolist() == [3, 4, 3, 3]
    assert env.observation_space["window"].shape == (8, 32)
    assert env.observation_space["portfolio"].shape == (8,)
    check_env(env, skip_render_check=True)
    env.close()


def test_spaces_and_first_observation(tiny_config):
    v = vulpes.VectorEnv(tiny_config, SHORT, num_envs=5)
    assert v.num_envs == 5
    assert v.action_space.shape == (5, 4)
    obs, info = v.reset(seed=7)
    assert obs["window"].shape == (5, 8, 32) and obs["window"].dtype == np.float32
    # flat, no levels, full time left (docs/env.md's portfolio vector)
    np.testing.assert_array_equal(obs["portfolio"], np.tile([0, 0, 0, 0, 0, 0, 1, 0], (5, 1)).astype(np.float32))
    v.close()


def test_window_is_the_feature_rows(tiny_config):
    v = vulpes.VectorEnv(tiny_config, SHORT, num_envs=4)
    v.reset(seed=1)
    feats, K = v.buffers["features"], 8
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs, *_ = v.step(rng.integers(0, [3, 4, 3, 3], size=(4, 4)))
        for i, t in enumerate(v.buffers["bar"]):
            rows = np.maximum(np.arange(t - K + 1, t + 1), 0)
            np.testing.assert_array_equal(obs["window"][i], feats[rows])
    v.close()


def test_vector_env_steps_equal_the_c_envs(tiny_config):
    n, steps = 6, 40
    v = vulpes.VectorEnv(tiny_config, SHORT, num_envs=n, copy=True)
    c = CEnv(tiny_config, SHORT, n, "train", "cpu")
    obs, _ = v.reset(seed=5)
    c.reset(5)
    b = c.buffers
    np.testing.assert_array_equal(obs["window"], b["window"])
    rng = np.random.default_rng(3)
    ended = 0
    for _ in range(steps):
        a = rng.integers(0, [3, 4, 3, 3], size=(n, 4))
        obs, r, term, trunc, _ = v.step(a)
        b["actions"][:] = a
        c.step()
        np.testing.assert_array_equal(r, b["reward"])
        np.testing.assert_array_equal(term | trunc, b["done"] > 0)
        np.testing.assert_array_equal(obs["window"], b["window"])
        np.testing.assert_array_equal(obs["portfolio"], b["portfolio"])
        ended += int((term | trunc).sum())
    assert ended >= n * 2  # 40 steps of 16-bar episodes: every env ended at least twice
    v.close()
    c.close()


def test_flat_actions_earn_nothing_and_the_window_end_truncates(tiny_config):
    n = 3
    v = vulpes.VectorEnv(tiny_config, SHORT, num_envs=n)
    v.reset(seed=2)
    flat = np.tile([1, 0, 0, 0], (n, 1))
    for step in range(1, 33):
        obs, r, term, trunc, _ = v.step(flat)
        np.testing.assert_array_equal(r, np.zeros(n, np.float32))
        assert not term.any()
        assert trunc.all() == (step % 16 == 0) and trunc.any() == (step % 16 == 0)
        # time left counts down from 1 in steps of 1/16 and restarts at 1 after the window's end
        np.testing.assert_allclose(obs["portfolio"][:, 6], (16 - step % 16) / 16.0, rtol=0, atol=1e-7)
    v.close()


def test_more_envs_than_the_config_replay_holds(tiny_config):
    # envs alone keep no replay, so the replay's size rule does not refuse them
    v = vulpes.VectorEnv(tiny_config, {"replay.capacity": 256, **SHORT}, num_envs=1024, device="cpu")
    obs, _ = v.reset(seed=2)
    assert obs["window"].shape[0] == 1024
    v.close()


def test_cuda_envs_equal_the_cpu_envs(tiny_config):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    n = 8
    g = vulpes.VectorEnv(tiny_config, SHORT, num_envs=n, device="cuda")
    cpu = vulpes.VectorEnv(tiny_config, SHORT, num_envs=n, device="cpu")
    assert g.cuda and g.buffers["window"].is_cuda
    og, _ = g.reset(seed=4)
    oc, _ = cpu.reset(seed=4)
    np.testing.assert_array_equal(og["window"].cpu().numpy(), oc["window"])
    rng = np.random.default_rng(9)
    for _ in range(40):
        a = rng.integers(0, [3, 4, 3, 3], size=(n, 4))
        og, rg, tg, ug, _ = g.step(torch.as_tensor(a, device="cuda"))
        oc, rc, tc, uc, _ = cpu.step(a)
        np.testing.assert_array_equal(rg.cpu().numpy(), rc)
        np.testing.assert_array_equal(tg.cpu().numpy(), tc)
        np.testing.assert_array_equal(ug.cpu().numpy(), uc)
        np.testing.assert_array_equal(og["portfolio"].cpu().numpy(), oc["portfolio"])
        np.testing.assert_array_equal(og["window"].cpu().numpy(), oc["window"])
    g.close()
    cpu.close()
