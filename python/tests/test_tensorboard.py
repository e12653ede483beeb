"""TensorBoard reads every run folder's event file and finds the numbers of metrics.jsonl.

A short CPU training run is made with the vulpes command, then TensorBoard's own
EventAccumulator loads the folder: each metrics line is one Event whose step is the line's
iteration, holding every other number of the line under the tag EVENT/KEY, as a float32
(TensorBoard's simple_value); nulls (NaN) and strings have no scalar. A resumed run's event
file again mirrors its (trimmed, then appended) metrics.jsonl; a walk-forward's mirrors its
fold lines (at the fold's number) and each fold's training run mirrors its own.

Needs: the tensorboard and numpy packages, and the vulpes command (VULPES_BIN, else
build/vulpes or build-cpu/vulpes under the repository root).
"""

import json
import pathlib

import numpy as np
import pytest
from vulpes_cli import run_vulpes

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")



def expected_scalars(metrics_path):
    """{tag: {step: float32 value}} from metrics.jsonl, as the event file must hold them."""
    want = {}
    lines = pathlib.Path(metrics_path).read_text().splitlines()
    for index, text in enumerate(lines):
        line = json.loads(text)
        step_key = "iteration" if "iteration" in line else "fold" if "fold" in line else None
        step = int(line[step_key]) if step_key else index
        for key, value in line.items():
            if key in ("event", step_key) or isinstance(value, (str, bool)) or value is None:
                continue
            tag = f"{line['event']}/{key}"
            # one event kind may log a key twice at one step (a resumed run's "run" line)
            want.setdefault(tag, {}).setdefault(step, []).append(np.float32(value))
    return want


def read_scalars(run_dir):
    """{tag: {step: [values]}} as TensorBoard loads the folder."""
    acc = event_accumulator.EventAccumulator(str(run_dir), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got = {}
    for tag in acc.Tags()["scalars"]:
        for ev in acc.Scalars(tag):
            got.setdefault(tag, {}).setdefault(ev.step, []).append(np.float32(ev.value))
    return got


def check_mirror(run_dir):
    want = expected_scalars(run_dir / "metrics.jsonl")
    got = read_scalars(run_dir)
    assert sorted(got) == sorted(want), f"tags differ: only in events {sorted(set(got) - set(want))}, " \
                                        f"only in metrics.jsonl {sorted(set(want) - set(got))}"
    for tag, steps in want.items():
        assert got[tag] == steps, f"{tag}: TensorBoard has {got[tag]}, metrics.jsonl {steps}"
    return want


def test_training_run_events(tmp_path):
    run_dir = tmp_path / "run"
    run_vulpes("train", "examples/eurusd.yaml", "train.iterations=6", "train.eval_every=3", "train.log_every=2",
               "--backend", "cpu", "--out", str(run_dir))
    events = sorted(p.name for p in run_dir.iterdir() if "tfevents" in p.name)
    assert events == ["events.out.tfevents.metrics"], f"event files {events}"
    want = check_mirror(run_dir)
    # the learning curves are there, at the iterations they were logged
    for tag in ("train/loss", "train/grad_norm", "train/q_mean", "train/epsilon", "eval/val_sharpe",
                "timing/env_steps_per_s"):
        assert tag in want, f"metrics.jsonl has no {tag}"
    assert sorted(want["eval/val_sharpe"]) == [3, 6]
    assert sorted(want["train/loss"]) == [2, 4, 6]


def test_resumed_run_events(tmp_path):
    run_dir = tmp_path / "run"
    run_vulpes("train", "examples/eurusd.yaml", "train.iterations=4", "train.eval_every=2", "train.log_every=2",
               "--backend", "cpu", "--out", str(run_dir))
    run_vulpes("train", "--resume", str(run_dir), "train.iterations=8", "--backend", "cpu")
    want = check_mirror(run_dir)
    assert sorted(want["train/loss"]) == [2, 4, 6, 8]


def test_walkforward_events(tmp_path):
    wf_dir = tmp_path / "wf"
    run_vulpes("walkforward", "examples/walkforward_eurusd.yaml", "train.iterations=5", "train.eval_every=5",
               "walkforward.max_folds=2", "--backend", "cpu", "--out", str(wf_dir))
    # the walk-forward's own lines: one per fold, at the fold's number
    want = check_mirror(wf_dir)
    assert sorted(want["fold/test_sharpe"]) == [1, 2]
    # each fold's training run has its own mirrored event file
    folds = sorted(p for p in (wf_dir / "folds").iterdir() if p.is_dir())
    assert len(folds) == 2
    for fold in folds:
        assert "eval/val_sharpe" in check_mirror(fold)
