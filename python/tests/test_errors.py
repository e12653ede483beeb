"""Errors of the C library surface as vulpes.VulpesError carrying the library's message (what and
where, for a user: no source location) and its status name."""
import pytest

import vulpes


def test_unknown_config_key(tiny_config):
    with pytest.raises(vulpes.VulpesError) as e:
        vulpes.VectorEnv(tiny_config, {"env.n_envz": 4})
    msg = str(e.value)
    assert "unknown key 'env.n_envz'" in msg
    assert e.value.status == "VP_ERR_INVALID_ARG"
    assert ".c:" not in msg and "VP_ERR" not in msg


def test_missing_checkpoint(tmp_path):
    path = tmp_path / "none.safetensors"
    with pytest.raises(vulpes.VulpesError) as e:
        vulpes.load(path)
    assert str(e.value).startswith(f"opening checkpoint {path}: ")
    assert "cannot open" in str(e.value)
    assert e.value.status == "VP_ERR_IO"


def test_action_out_of_range(tiny_config):
    v = vulpes.VectorEnv(tiny_config, {"env.episode_bars": 16}, num_envs=2)
    v.reset(seed=0)
    with pytest.raises(vulpes.VulpesError) as e:
        v.step([[1, 0, 0, 0], [3, 0, 0, 0]])
    assert str(e.value) == "vp_env_step: env 1 direction choice 3 is not in 0..2"
    assert e.value.status == "VP_ERR_INVALID_ARG"
    v.close()


def test_backtest_refuses_a_training_key(runs):
    with pytest.raises(vulpes.VulpesError) as e:
        vulpes.backtest(runs["default"].checkpoint, backend="cpu", train__lr=3)
    assert "'train.lr=3': a backtest may change only instrument.* keys" in str(e.value)
