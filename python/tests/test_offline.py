"""An offline dataset written by `vulpes record` opens unchanged in Python's safetensors package.

A short ma_cross recording of the shipped EUR/USD bars is made with the vulpes command; the
file is read with safetensors.numpy.load_file (every tensor's dtype and shape from the
metadata's step, env and portfolio counts) and safe_open (the vulpes.offline.* and
vulpes.data.* metadata), and its rows are checked against what the format says: bars inside
the span and one bar on within an episode, actions inside their branches, done 0 or 1, logp
0 for the deterministic rule.

Needs: the safetensors and numpy packages, and the vulpes command (VULPES_BIN, else
build/vulpes or build-cpu/vulpes under the repository root).
"""

import numpy as np
import pytest
from vulpes_cli import run_vulpes

safetensors_numpy = pytest.importorskip("safetensors.numpy")
safetensors = pytest.importorskip("safetensors")

STEPS, ENVS, P = 64, 3, 8
META = ["vulpes.offline.format", "vulpes.offline.steps", "vulpes.offline.envs", "vulpes.offline.portfolio",
        "vulpes.offline.span_begin", "vulpes.offline.span_end", "vulpes.offline.seed", "vulpes.offline.behaviour",
        "vulpes.data.kind", "vulpes.data.source", "vulpes.data.bars", "vulpes.data.interval_s",
        "vulpes.data.train_median_close", "vulpes.data.close_min", "vulpes.data.close_max", "vulpes.data.bytes",
        "vulpes.data.xxh64"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("offline") / "ma.safetensors"
    run_vulpes("record", "examples/eurusd.yaml", "--policy", "ma_cross:fast=5,slow=20", "--steps", str(STEPS),
               "--envs", str(ENVS), "--seed", "9", "--backend", "cpu", "--out", str(path))
    return str(path)


def test_metadata(dataset):
    with safetensors.safe_open(dataset, "np") as f:
        meta = f.metadata()
        keys = sorted(f.keys())
    assert sorted(META) == sorted(meta), f"metadata keys: {sorted(meta)}"
    assert keys == ["action", "bar", "done", "logp", "portfolio", "reward"]
    assert meta["vulpes.offline.format"] == "1"
    assert int(meta["vulpes.offline.steps"]) == STEPS and int(meta["vulpes.offline.envs"]) == ENVS
    assert int(meta["vulpes.offline.portfolio"]) == P and meta["vulpes.offline.seed"] == "9"
    assert meta["vulpes.offline.behaviour"] == "ma_cross:fast=5,slow=20,size=3"
    assert meta["vulpes.data.kind"] == "file" and meta["vulpes.data.source"].endswith("eurusd_1h_2017.csv")
    assert meta["vulpes.data.bars"] == "6225" and meta["vulpes.data.bytes"] == "416442"
    assert meta["vulpes.data.xxh64"] == "xxh64:e7051806f53882ed"


def test_tensors(dataset):
    t = safetensors_numpy.load_file(dataset)
    shapes = {"bar": ((STEPS + 1, ENVS), np.int32), "portfolio": ((STEPS + 1, ENVS, P), np.float32),
              "action": ((STEPS, ENVS, 4), np.int32), "reward": ((STEPS, ENVS), np.float32),
              "done": ((STEPS, ENVS), np.float32), "logp": ((STEPS, ENVS), np.float32)}
    for name, (shape, dtype) in shapes.items():
        assert t[name].shape == shape and t[name].dtype == dtype, f"{name}: {t[name].shape} {t[name].dtype}"
    with safetensors.safe_open(dataset, "np") as f:
        meta = f.metadata()
    begin, end = int(meta["vulpes.offline.span_begin"]), int(meta["vulpes.offline.span_end"])
    bar, action, done = t["bar"], t["action"], t["done"]
    assert ((bar >= begin) & (bar < end)).all()
    # one bar on after a step that did not end its episode
    going = done == 0
    assert (bar[1:][going] == bar[:-1][going] + 1).all()
    assert set(np.unique(done)) <= {0.0, 1.0}
    # ma_cross: a direction, size 3, no take-profit or stop-loss, logp 0
    assert ((action[..., 0] >= 0) & (action[..., 0] <= 2)).all()
    assert (action[..., 1] == 3).all() and (action[..., 2:] == 0).all()
    assert (t["logp"] == 0).all()
    assert np.isfinite(t["reward"]).all() and np.isfinite(t["portfolio"]).all()
