"""report.html's tear-sheet figures against empyrical, scipy and numpy on the same returns.

A short CPU training run is backtested over all its bars (about a year of hourly EUR/USD, so
there are months and years to aggregate); the page's figures are read from the data-v
attributes of its cells (full precision) and compared with the reference libraries applied
to the per-bar returns of the backtest's equity.csv (strategy and buy & hold):

- monthly and yearly returns: empyrical.aggregate_returns;
- rolling Sharpe and volatility (last, lowest, highest): empyrical.roll_sharpe_ratio and
  roll_annual_volatility over the page's window;
- skewness and excess kurtosis: scipy.stats (bias=True); VaR and CVaR at 95 %: empyrical;
  alpha and beta: empyrical.alpha_beta; information ratio: empyrical.excess_sharpe x
  sqrt(periods per year); correlation and tracking error: numpy;
- the worst drawdown: empyrical.max_drawdown, and the five worst as pyfolio lists them
  (underwater spans from a high to the first close back at it);
- the return histogram: numpy.histogram with 40 bins.

Needs: numpy, pandas, scipy and empyrical (empyrical-reloaded), and the vulpes command
(VULPES_BIN, else build/vulpes or build-cpu/vulpes under the repository root).
"""

import html.parser
import json
import math

import numpy as np
import pytest
from vulpes_cli import run_vulpes

pd = pytest.importorskip("pandas")
stats = pytest.importorskip("scipy.stats")
empyrical = pytest.importorskip("empyrical")

RTOL, ATOL = 1e-9, 1e-12


class Page(html.parser.HTMLParser):
    """The machine-readable figures of report.html."""

    def __init__(self):
        super().__init__()
        self.months = {}        # (year, month) -> return
        self.years = {}         # year -> [strategy, buy & hold, difference]
        self.keyed = {}         # data-key of a row -> [data-v of its cells]
        self.drawdowns = []     # [peak, trough, recovery, depth]
        self.hist = []          # bin counts
        self.hist_range = None  # (lo, hi)
        self.window = None      # rolling window, bars
        self._row = None        # the open row's list of data-v values

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self._row = []
            if "data-year" in a:
                self.years[int(a["data-year"])] = self._row
            elif "data-key" in a:
                self.keyed[a["data-key"]] = self._row
            elif "data-peak" in a:
                self.drawdowns.append([int(a["data-peak"]), int(a["data-trough"]), int(a["data-recovery"]), self._row])
        elif tag == "td" and "data-v" in a:
            v = float(a["data-v"]) if a["data-v"] else math.nan
            if "data-month" in a:
                y, m = a["data-month"].split("-")
                self.months[(int(y), int(m))] = v
            elif self._row is not None:
                self._row.append(v)
        elif tag == "rect" and "data-count" in a:
            self.hist.append(int(a["data-count"]))
        elif tag == "svg" and "data-lo" in a:
            self.hist_range = (float(a["data-lo"]), float(a["data-hi"]))
        elif tag == "p" and "data-window" in a:
            self.window = int(a["data-window"])

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None


@pytest.fixture(scope="module")
def backtest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tear")
    run = tmp / "run"
    run_vulpes("train", "examples/eurusd.yaml", "train.iterations=6", "train.eval_every=3", "--backend", "cpu",
               "--out", str(run))
    bt = tmp / "bt"
    run_vulpes("backtest", "--checkpoint", str(run / "best.safetensors"), "--span", "all", "--backend", "cpu",
               "--out", str(bt))
    page = Page()
    page.feed((bt / "report.html").read_text())
    eq = pd.read_csv(bt / "equity.csv")
    times = pd.to_datetime(eq["bar_open_time"], utc=True).dt.tz_localize(None)
    strat = pd.Series(eq["equity"].to_numpy(), index=times).pct_change().iloc[1:]
    bench = pd.Series(eq["buy_hold_equity"].to_numpy(), index=times).pct_change().iloc[1:]
    summary = json.loads((bt / "summary.json").read_text())
    ppy = summary["annualisation"]["periods_per_year"]
    return page, strat, bench, ppy, eq["equity"].to_numpy()


def close(got, want, what):
    assert got == pytest.approx(want, rel=RTOL, abs=ATOL, nan_ok=True), f"{what}: page {got!r}, reference {want!r}"


def test_monthly_and_yearly_returns(backtest):
    page, strat, bench, _, _ = backtest
    monthly = empyrical.aggregate_returns(strat, "monthly")
    assert len(monthly) >= 10 and sorted(page.months) == sorted(monthly.index), \
        f"months {sorted(page.months)} vs {list(monthly.index)}"
    for key, want in monthly.items():
        close(page.months[key], want, f"month {key}")
    yearly = empyrical.aggregate_returns(strat, "yearly")
    yearly_bh = empyrical.aggregate_returns(bench, "yearly")
    assert sorted(page.years) == sorted(yearly.index)
    for year, want in yearly.items():
        close(page.years[year][0], want, f"year {year}")
        close(page.years[year][1], yearly_bh[year], f"buy & hold year {year}")


def test_rolling_sharpe_and_volatility(backtest):
    page, strat, _, ppy, _ = backtest
    w = page.window
    assert w == round(ppy / 2) or w == max(2, len(strat) // 4), f"window {w}"
    sharpe = np.asarray(empyrical.roll_sharpe_ratio(strat.to_numpy(), w, annualization=ppy), dtype=float)
    vol = np.asarray(empyrical.roll_annual_volatility(strat.to_numpy(), w, annualization=ppy), dtype=float)
    assert len(sharpe) == len(strat) - w + 1
    sharpe[~np.isfinite(sharpe)] = np.nan
    for key, ref in (("rolling_sharpe_ratio", sharpe), ("rolling_volatility_annual_frac", vol)):
        last, lo, hi = page.keyed[key]
        close(last, ref[-1], f"{key} last")
        close(lo, np.nanmin(ref), f"{key} lowest")
        close(hi, np.nanmax(ref), f"{key} highest")


def test_statistics_against_buy_and_hold(backtest):
    page, strat, bench, ppy, _ = backtest
    r, b = strat.to_numpy(), bench.to_numpy()
    got = {k: v[0] for k, v in page.keyed.items() if len(v) == 1}
    alpha, beta = empyrical.alpha_beta(r, b, risk_free=0.0, annualization=ppy)
    active = r - b
    want = {
        "skewness_ratio": stats.skew(r, bias=True),
        "excess_kurtosis_ratio": stats.kurtosis(r, bias=True),
        "var_95_frac": empyrical.value_at_risk(r, 0.05),
        "cvar_95_frac": empyrical.conditional_value_at_risk(r, 0.05),
        "alpha_annual_frac": alpha,
        "beta_ratio": beta,
        "correlation_ratio": np.corrcoef(r, b)[0, 1],
        "tracking_error_annual_frac": np.std(active, ddof=1) * math.sqrt(ppy),
        "information_ratio": empyrical.excess_sharpe(r, b) * math.sqrt(ppy),
    }
    for key, value in want.items():
        # the moments and the CAPM figures go through sums in another order: a few ulps apart
        assert got[key] == pytest.approx(value, rel=1e-7, abs=1e-12), f"{key}: page {got[key]!r}, reference {value!r}"


def reference_drawdowns(equity, k):
    """pyfolio's top drawdowns of the curve: underwater spans, deepest first."""
    out, peak, cur = [], 0, None
    for i in range(1, len(equity)):
        if equity[i] >= equity[peak]:
            if cur:
                cur[2] = i
                out.append(cur)
                cur = None
            peak = i
            continue
        depth = equity[i] / equity[peak] - 1.0
        if cur is None:
            cur = [peak, i, -1, depth]
        elif depth < cur[3]:
            cur[1], cur[3] = i, depth
    if cur:
        out.append(cur)
    return sorted(out, key=lambda d: d[3])[:k]


def test_worst_drawdowns(backtest):
    page, strat, _, _, equity = backtest
    assert page.drawdowns, "the page lists no drawdown"
    worst = page.drawdowns[0][3][0]
    close(worst, empyrical.max_drawdown(strat.to_numpy()), "worst drawdown")
    ref = reference_drawdowns(equity, 5)
    assert len(page.drawdowns) == len(ref)
    for (peak, trough, rec, cells), (rp, rt, rr, rd) in zip(page.drawdowns, ref):
        assert (peak, trough, rec) == (rp, rt, rr), f"drawdown at {peak}: {(peak, trough, rec)} vs {(rp, rt, rr)}"
        close(cells[0], rd, f"depth of the drawdown from {peak}")


def test_return_histogram(backtest):
    page, strat, _, _, _ = backtest
    counts, edges = np.histogram(strat.to_numpy(), bins=40)
    assert page.hist == counts.tolist(), f"histogram {page.hist} vs numpy {counts.tolist()}"
    assert page.hist_range == (edges[0], edges[-1])
