"""vulpes.train and vulpes.backtest: the run folder's results as DataFrames; the backtest of a
training run's checkpoint over its test span gives the run's own test-span figures."""
import numpy as np

import vulpes


def test_train_result(runs):
    r = runs["default"]
    assert r.summary["finished"] is True and r.summary["iterations"] == 2
    assert r.checkpoint.endswith("best.safetensors")
    assert list(r.trades.columns[:4]) == ["window", "side", "size", "entry_time"]
    assert set(r.trades["side"]) <= {"long", "short"}
    assert list(r.metrics.index) == ["strategy", "buy_and_hold", "flat"]
    t = r.summary["test"]
    assert r.metrics.loc["strategy", "sharpe_ratio"] == t["strategy"]["sharpe_ratio"]
    assert r.metrics.loc["flat", "total_return_frac"] == 0.0
    # one equity row per bar of the test span's exact backtest
    span = t["backtest"]["span"]
    assert r.equity["bar"].iloc[0] == span["first_bar"] and r.equity["bar"].iloc[-1] == span["last_bar"]
    assert len(r.equity) == span["n_bars"]
    assert np.all(np.diff(r.equity["bar"].to_numpy()) == 1)
    assert r.equity["equity"].iloc[0] == 100000
    events = set(r.log["event"])
    assert {"run", "train", "eval"} <= events


def test_backtest_of_the_checkpoint_is_the_runs_test_span(runs, tmp_path):
    run = runs["no_mamba"]
    b = vulpes.backtest(run.checkpoint, backend="cpu", out=str(tmp_path / "bt"))
    assert b.run_dir == str(tmp_path / "bt")
    for curve in ("strategy", "buy_and_hold"):
        for col in ("sharpe_ratio", "total_return_frac", "max_drawdown_frac"):
            assert b.metrics.loc[curve, col] == run.metrics.loc[curve, col]
    assert len(b.trades) == len(run.trades)
    np.testing.assert_array_equal(b.equity["equity"].to_numpy(), run.equity["equity"].to_numpy())


def test_backtest_cost_override(runs, tmp_path):
    """A round trip of one lot costs two fills of commission and slippage (5 ticks of 0.00001 x
    100000 = 5 USD) plus the spread on the sell (5 USD; the bars are ask prices): 22 USD at
    commission 3.5, 115 USD at 50."""
    run = runs["default"]
    base = vulpes.backtest(run.checkpoint, backend="cpu", out=str(tmp_path / "a"))
    dear = vulpes.backtest(run.checkpoint, backend="cpu", out=str(tmp_path / "b"), instrument={"commission": 50})
    assert len(base.trades) > 0 and len(dear.trades) > 0
    assert set(base.trades["size"]) == {1} and set(dear.trades["size"]) == {1}
    np.testing.assert_allclose(base.trades["costs"], 22.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(dear.trades["costs"], 115.0, rtol=0, atol=1e-9)


def test_ctrl_c_stops_training_with_a_checkpoint(tiny_config, tmp_path):
    """SIGINT during vulpes.train stops the run between iterations as `vulpes train` does: the call
    raises VulpesError naming the folder, last.safetensors holds the run, and Python's own Ctrl-C
    handling is back afterwards."""
    import os
    import subprocess
    import sys
    import time

    out = tmp_path / "stopped"
    code = f"""
import signal, sys, vulpes
try:
    vulpes.train({tiny_config!r}, out={str(out)!r}, progress=False, train={{"iterations": 10000000,
                 "eval_every": 10000000, "checkpoint_every": 10000000}})
except vulpes.VulpesError as e:
    print("ERROR", e.status, e)
print("HANDLER", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ))
    # the run is under way once its metrics.jsonl has the run event
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "metrics.jsonl").exists():
        time.sleep(0.1)
    time.sleep(1.0)
    p.send_signal(2)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 0, stderr
    assert "ERROR VP_ERR_STATE training stopped by Ctrl-C at iteration " in stdout, stdout
    assert f"{out}/last.safetensors holds the run; `vulpes train --resume {out}` continues it" in stdout
    assert "HANDLER True" in stdout
    assert (out / "last.safetensors").exists()
