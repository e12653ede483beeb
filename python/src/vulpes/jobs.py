"""Training runs and backtests through the C library's jobs (vp_api_train, vp_api_backtest), and
their run folders read back as pandas DataFrames."""
import ctypes
import json
import os

import pandas as pd

from . import _lib
from .env import _override_list

__all__ = ["RunResult", "train", "backtest", "read_run"]

_PERF_KEYS = ("strategy", "buy_and_hold", "flat")


class RunResult:
    """A run folder's results: `run_dir`; `summary` (summary.json as a dict); `trades` (trades.csv)
    and `equity` (equity.csv) as DataFrames; `metrics`, a DataFrame with one row per curve
    (strategy, buy_and_hold, flat) and one column per figure of summary.json (sharpe_ratio,
    total_return_frac, ...); `log`, metrics.jsonl as a DataFrame (one row per event); and
    `checkpoint`, the run's best.safetensors when it has one."""

    def __init__(self, run_dir):
        self.run_dir = str(run_dir)
        with open(os.path.join(self.run_dir, "summary.json")) as f:
            self.summary = json.load(f)
        # a training run's summary holds its test span's backtest under "test"
        bt = self.summary.get("test", self.summary)
        self.trades = pd.read_csv(os.path.join(self.run_dir, "trades.csv"))
        self.equity = pd.read_csv(os.path.join(self.run_dir, "equity.csv"))
        rows = {k: {m: v for m, v in bt[k].items() if not isinstance(v, (dict, list))} for k in _PERF_KEYS if k in bt}
        self.metrics = pd.DataFrame.from_dict(rows, orient="index")
        log = os.path.join(self.run_dir, "metrics.jsonl")
        with open(log) as f:
            self.log = pd.DataFrame([json.loads(line) for line in f if line.strip()])
        ck = os.path.join(self.run_dir, "best.safetensors")
        self.checkpoint = ck if os.path.exists(ck) else None

    def __repr__(self):
        return f"RunResult({self.run_dir!r}: {len(self.trades)} trades, {len(self.equity)} bars)"


def read_run(run_dir):
    """The results of a finished run or backtest folder."""
    return RunResult(run_dir)


def _flatten(overrides):
    """{"train": {"iterations": 3}, "env__n_envs": 8, "learn.lr": 1e-4} -> ["train.iterations=3", ...]."""
    flat = {}
    for k, v in overrides.items():
        k = k.replace("__", ".")
        if isinstance(v, dict):
            for k2, v2 in v.items():
                flat[f"{k}.{k2}"] = v2
        else:
            flat[k] = v
    return _override_list(flat)


def train(config=None, *, out=None, backend=None, force=False, progress=True, **overrides):
    """Trains as `vulpes train CONFIG key=value ...` does and returns the run's RunResult (the test
    span's exact backtest in trades, equity and metrics; best.safetensors in checkpoint).

    config: a YAML file, or None for the defaults. overrides: config keys as keyword arguments,
    a section's keys as a dict (train={"iterations": 3}) or the key with "__" for "."
    (train__iterations=3). out: the run folder (None: run.out, else runs/...); force: reuse a
    non-empty folder; backend: "cpu", "cuda", "auto" (None: run.backend); progress: the progress
    line on stderr. A failure raises VulpesError with the library's message."""
    arr, n = _lib.strings(_flatten(overrides))
    buf = ctypes.create_string_buffer(4096)
    _lib.check(_lib.lib().vp_api_train(_lib.opt(config), arr, n, _lib.opt(backend), _lib.opt(out), int(force),
                                       int(progress), buf, len(buf)))
    return RunResult(buf.value.decode())


def backtest(checkpoint, data=None, *, span=None, start=None, end=None, segments=1, out=None, backend="auto",
             force=False, **overrides):
    """Backtests a checkpoint as `vulpes backtest` does and returns the folder's RunResult.

    data: a CSV file or synth: market (None: the bars it trained on); span: train, val, test or all
    (None: test, or all with start / end); start, end: ISO dates or bar indices; segments: 1 for the
    exact backtest; overrides: instrument.* keys, data.price_side and metrics.risk_free_rate for this
    backtest (instrument={"commission": 7} or instrument__commission=7)."""
    arr, n = _lib.strings(_flatten(overrides))
    buf = ctypes.create_string_buffer(4096)
    _lib.check(_lib.lib().vp_api_backtest(_lib.opt(checkpoint), _lib.opt(data), _lib.opt(span),
                                          _lib.opt(None if start is None else str(start)),
                                          _lib.opt(None if end is None else str(end)), int(segments), arr, n,
                                          _lib.opt(backend), _lib.opt(out), int(force), buf, len(buf)))
    return RunResult(buf.value.decode())
