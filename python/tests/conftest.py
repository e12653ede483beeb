"""Fixtures of the Python tests: the library (VULPES_LIBRARY, else the installed package's), and
checkpoints of short training runs of the default network and of every module combination the
model has (vulpes/model.h: the Mamba2 mixer, the TLOB encoder or none), trained once per session through
vulpes.train."""
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TINY = os.path.join(HERE, "data", "tiny_run.yaml")

# every module combination of the network: name -> overrides of tiny_run.yaml
# the input modules (docs/modules.md): selection gate with the spectral norm of both trunk layers;
# the KAN first layer with the gate and trunk.w2's spectral norm. The head modules' run is longer,
# so the learner moves the refinement off its identity start; so is the learner modules' run
# (adaptive atoms and PopArt), so the spacing logits move off the uniform support.
MODELS = {"default": {}, "no_mamba": {"model.encoder": "none"}, "tlob": {"model.encoder": "tlob"},
          "vsn_sn": {"model.vsn": True, "model.spectral_norm": True},
          "kan": {"model.kan": True, "model.vsn": True, "model.spectral_norm": True},
          "head_modules": {"model.stoch_depth": 0.2, "model.q_denoise": True, "model.cross_branch": True,
                           "model.risk_budget": 0.5,
                           "train.iterations": 12,
                           "replay.warmup": 64, "train.eval_every": 12, "train.checkpoint_every": 12},
          "learn_modules": {"learn.adaptive_atoms": True, "learn.popart": True, "train.iterations": 12,
                            "replay.warmup": 64, "train.eval_every": 12, "train.checkpoint_every": 12}}


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def tiny_config():
    return TINY


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """name -> RunResult of a 2-iteration training run for each entry of MODELS."""
    import vulpes

    out = {}
    for name, over in MODELS.items():
        d = tmp_path_factory.mktemp(f"run_{name}")
        out[name] = vulpes.train(TINY, out=str(d / "run"), progress=False, **over)
    return out


@pytest.fixture(scope="session", params=sorted(MODELS))
def checkpoint(request, runs):
    """best.safetensors of each network of MODELS."""
    return runs[request.param].checkpoint
