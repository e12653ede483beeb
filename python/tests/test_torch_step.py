"""bench/torch_step.py, the PyTorch reference of `vulpes bench step`, for every market encoder: its
parameters are the C model's table (names, order, shapes), its FLOP count is vulpes's (every phase
of `vulpes bench step --ablate model.encoder=...`), and one eager step at B = 4 on the CPU gives a
finite loss and moves every parameter."""
import json
import math
import os
import sys

import pytest
import torch

import vulpes
from conftest import ROOT
from vulpes_cli import run_vulpes

sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
_dtype = torch.get_default_dtype()
import golden  # noqa: E402  (sets float64 as torch's default dtype: restored below)
import torch_step  # noqa: E402
torch.set_default_dtype(_dtype)

# the conftest run of each encoder
RUNS = {"mamba2": "default", "tlob": "tlob", "none": "no_mamba"}


@pytest.mark.parametrize("encoder", sorted(RUNS))
def test_parameters_are_the_c_table(runs, encoder):
    rows = golden.param_table(torch_step.model_config(encoder))
    with vulpes.CModel(runs[RUNS[encoder]].checkpoint) as m:
        assert m.config["encoder"] == torch_step.ENCODERS.index(encoder)
        assert [r[0] for r in rows] == m.param_names()
        for name, shape, _, _ in rows:
            assert m.param(name).shape == tuple(shape), name
    if encoder == "tlob":
        c = torch_step.model_config(encoder)
        assert {k: m.config[k] for k in torch_step.TLOB} == {k: c[k] for k in torch_step.TLOB}


def test_flops_are_vulpes_bench_steps(tmp_path):
    out = tmp_path / "step.jsonl"
    run_vulpes("bench", "step", "--backend", "cpu", "--batch", "4", "--ablate",
               "model.encoder=tlob,model.encoder=none", "--json", str(out))
    L, seen = torch_step.LEARN, set()
    for line in out.read_text().splitlines():
        r = json.loads(line)
        if r["phase"] not in ("forward", "backward", "step"):
            continue
        enc = r.get("variant", "model.encoder=mamba2").split("=")[1]
        c, B, n, nt = torch_step.model_config(enc), r["batch"], L["n_taus"], L["n_target_taus"]
        want = {"forward": torch_step.model_flops(c, B, n, 0) + torch_step.model_flops(c, B, 0, 0)
                + torch_step.model_flops(c, B, nt, 0),
                "backward": torch_step.model_flops(c, B, n, 1) - torch_step.model_flops(c, B, n, 0),
                "step": torch_step.step_flops(c, B, n, nt)}[r["phase"]]
        # the JSON line rounds to 1e-3 GFLOP
        assert abs(want * 1e-9 - r["gflop"]) <= 5.01e-4, (enc, r["phase"], want * 1e-9, r["gflop"])
        seen.add((enc, r["phase"]))
    assert len(seen) == 9
    assert torch_step.vulpes_step_ms(str(out), "tlob", 4) > 0


def test_smoke_step_tlob():
    loss, names = torch_step.smoke(torch_step.model_config("tlob"))
    assert math.isfinite(loss) and loss > 0
    assert sum(n.startswith("tlob.") for n in names) == 25
