/* vulpes: performance metrics of a return series, trade statistics, baselines and the
 * annualisation factor (SPEC section 7). Definitions and conventions: docs/metrics.md.
 *
 * - Return metrics follow empyrical exactly: per-bar simple returns in, NaN returns skipped
 *   the way empyrical skips them (0 in compounding, left out of means and deviations, still
 *   counted in the length that sets the number of years). Sharpe, Sortino, downside risk and
 *   the statistics of the Sharpe are of excess returns r - rf / ppy per bar (rf the yearly
 *   risk-free rate, simple, not compounded: empyrical's risk_free / required_return); the
 *   rate is stated beside them in every output.
 * - Values are doubles. A ratio whose denominator is 0 is +inf or -inf when its numerator
 *   is not 0 (a constant positive return series has an infinite Sharpe) and NaN, meaning
 *   "undefined", when both are 0 or the inputs are too few. JSON writes +inf as the string
 *   "inf", -inf as "-inf" and NaN as null; text and HTML write "inf", "-inf" and "-".
 * - The annualisation factor is measured from the bar times (bars per calendar year over
 *   the span) or given, and every output states it.
 *
 * These functions allocate nothing except vp_annual_measure (one sorted copy of the
 * spacings), vp_tear_compute (one sorted copy of the valid returns) and vp_metrics_to_json
 * (the cJSON tree it returns). */
#ifndef VULPES_METRICS_H
#define VULPES_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cJSON's node type (the JSON writers below build or fill one). */
struct cJSON;

/* ---- annualisation ------------------------------------------------------------------------ */

/* Where a periods-per-year factor came from. */
typedef enum vp_annual_method {
    VP_ANNUAL_MEASURED = 0, /* bars per calendar year over the span of the bar times */
    VP_ANNUAL_GIVEN,        /* set by the caller (a config value) */
    VP_ANNUAL_METHOD_COUNT
} vp_annual_method;

/* The factor that annualises per-bar figures, and how it was found. */
typedef struct vp_annual {
    double periods_per_year;  /* bars per year (> 0) */
    vp_annual_method method;  /* measured or given */
    int64_t n_bars;           /* bars measured (0 when given) */
    double span_days;         /* last - first time + median spacing, days (0 when given) */
    double median_interval_s; /* median spacing of consecutive bar times, seconds (0 when given) */
    double risk_free_rate;    /* yearly rate subtracted in Sharpe and Sortino (metrics.risk_free_rate; 0 unless set) */
} vp_annual;

/* Measures the factor from bar times: periods_per_year = n x 365.25 days / (t[n-1] - t[0] +
 * median spacing). Needs n >= 2 strictly increasing times. Measure it over the whole data
 * file, not a short test span: weekends and holidays must be in the span to be counted. */
vp_status vp_annual_measure(const int64_t* times_ms /* [n] Unix ms */, int64_t n, vp_annual* out);

/* A given factor (> 0, finite), e.g. 252 for daily equities. */
vp_status vp_annual_given(double periods_per_year, vp_annual* out);

/* One line saying the factor, its source and the risk-free rate ("6280.89 periods/year
 * (measured: ...); risk-free rate 0 % a year") into buf[n]. */
const char* vp_annual_describe(const vp_annual* a, char* buf, size_t n);

/* The yearly risk-free rate as text ("risk-free rate 2 % a year") into buf[n]. */
const char* vp_risk_free_describe(double risk_free_rate, char* buf, size_t n);

/* ---- return metrics ----------------------------------------------------------------------- */

/* How much of a return series the metrics could use. */
typedef enum vp_perf_status {
    VP_PERF_OK = 0,   /* at least two valid returns: every metric is computed */
    VP_PERF_SHORT,    /* one valid return: volatility, Sharpe and Sortino are NaN */
    VP_PERF_ALL_NAN,  /* returns given, none valid: every metric is NaN */
    VP_PERF_EMPTY,    /* no returns: every metric is NaN */
    VP_PERF_STATUS_COUNT
} vp_perf_status;

/* empyrical's metrics of one per-bar return series (fractions: 0.1 is 10 %). */
typedef struct vp_perf {
    vp_perf_status status;     /* see vp_perf_status */
    int64_t n_returns;         /* returns given, NaN included */
    int64_t n_valid;           /* returns that are not NaN */
    double periods_per_year;   /* the annualisation factor used */
    double total_return;       /* prod(1 + r) - 1 */
    double annual_return;      /* (1 + total)^(ppy / n_returns) - 1 (CAGR) */
    double annual_volatility;  /* std(r, ddof 1) x sqrt(ppy) */
    double sharpe;             /* mean(x) / std(x, ddof 1) x sqrt(ppy), x = r - risk_free_rate / ppy (excess returns) */
    double sortino;            /* mean(x) x ppy / downside_risk */
    double downside_risk;      /* sqrt(mean(min(x, 0)^2)) x sqrt(ppy): below the risk-free rate */
    double max_drawdown;       /* min over t of equity / running peak - 1 (<= 0), from 1 before r[0] */
    double calmar;             /* annual_return / |max_drawdown| */
    double skewness;           /* m3 / m2^1.5 of the valid returns, central moments over n_valid (NaN: < 2 or constant);
                                  the same for excess returns */
    double kurtosis;           /* m4 / m2^2, not excess (3 for a normal law; NaN as skewness) */
    double sharpe_se;          /* standard error of sharpe (Mertens 2002), annualised like it */
    double psr_vs_zero;        /* probabilistic Sharpe ratio against SR* = 0 (Bailey, Lopez de Prado 2012): the
                                  probability that the true excess Sharpe is above 0 */
    double years;              /* n_returns / ppy: the years the annual figures are drawn from */
    int extrapolated;          /* 1: years < 1, the annual figures extrapolate a shorter span */
    double risk_free_rate;     /* yearly risk-free rate the ratios are in excess of (0: plain returns) */
} vp_perf;

/* Computes the metrics of returns[n] (NaN allowed, +-inf refused) annualised by ppy (> 0), with
 * Sharpe, Sortino, downside risk, the Sharpe's standard error and PSR of the excess returns
 * returns[t] - risk_free_rate / ppy (risk_free_rate yearly, finite; 0 gives the plain figures
 * bit for bit). Total and annual return, volatility, drawdown and Calmar do not depend on it. */
vp_status vp_perf_compute_rf(const double* returns /* [n] */, int64_t n, double periods_per_year,
                             double risk_free_rate, vp_perf* out);

/* vp_perf_compute_rf with the factor and the risk-free rate of `a`. */
vp_status vp_perf_compute_annual(const double* returns /* [n] */, int64_t n, const vp_annual* a, vp_perf* out);

/* vp_perf_compute_rf with a risk-free rate of 0. */
vp_status vp_perf_compute(const double* returns /* [n] */, int64_t n, double periods_per_year, vp_perf* out);

/* ---- statistical weight of a Sharpe ratio (docs/metrics.md, "Statistical weight") ---------- */

/* Standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2; NaN for NaN. */
double vp_norm_cdf(double x);

/* Standard normal quantile Phi^-1(p) to double precision (Acklam's start, one Halley step on
 * erfc); -inf at 0, +inf at 1, NaN outside [0, 1]. */
double vp_norm_quantile(double p);

/* Variance of a per-period Sharpe estimate over n returns with skewness g3 and (non-excess)
 * kurtosis g4 (Mertens 2002): (1 - g3 SR + (g4 - 1) / 4 SR^2) / (n - 1); NaN when undefined. */
double vp_sharpe_variance(double sr, double skew, double kurt, int64_t n);

/* Probabilistic Sharpe ratio Phi((SR - SR*) sqrt(n - 1) / sqrt(1 - g3 SR + (g4 - 1) / 4 SR^2)),
 * SR and SR* per period (not annualised); NaN when undefined. */
double vp_psr(double sr, double sr_star, double skew, double kurt, int64_t n);

/* PSR of series p against the Sharpe of series bench over the same bars (p's moments and
 * count; both Sharpes de-annualised by p's factor); NaN when either is undefined. */
double vp_perf_psr_vs(const vp_perf* p, const vp_perf* bench);

/* Expected maximum Sharpe of n_trials unskilled trials whose Sharpes have variance var_sr
 * (Bailey, Lopez de Prado 2014): sqrt(var) ((1 - g) Phi^-1(1 - 1/N) + g Phi^-1(1 - 1/(N e))),
 * g the Euler-Mascheroni constant; same units as sqrt(var_sr); NaN for N < 2 or var < 0. */
double vp_expected_max_sharpe(double var_sr, int64_t n_trials);

/* The Sharpes of the trials a selection compared (e.g. the validations of one training run). */
typedef struct vp_selection {
    int64_t n_trials; /* trials with a finite Sharpe */
    double mean;      /* their mean Sharpe, annualised */
    double m2;        /* sum of squared deviations from the mean (Welford) */
} vp_selection;

/* Adds one trial's annualised Sharpe (a NaN or infinite one is not counted). */
void vp_selection_add(vp_selection* s, double sharpe);

/* Sample variance (ddof 1) of the trials' annualised Sharpes; NaN with fewer than 2. */
double vp_selection_variance(const vp_selection* s);

/* Deflated Sharpe ratio of `best` (the selected trial's series) among the trials of s:
 * PSR(SR0) with SR0 = vp_expected_max_sharpe of the trials' variance, all in per-period
 * units (annual / sqrt(ppy) of best). *sr0_annual (may be NULL) receives SR0 annualised.
 * NaN when fewer than 2 trials or best is undefined. */
double vp_deflated_sharpe(const vp_selection* s, const vp_perf* best, double* sr0_annual);

/* Deflated Sharpe ratio of series p among n_trials trials whose annualised Sharpes have sample
 * variance var_annual: PSR(SR0), SR0 = vp_expected_max_sharpe(var_annual / ppy, n_trials), with
 * p's per-period Sharpe, moments and count. *sr0_annual (may be NULL) receives SR0 annualised.
 * NaN when n_trials < 2, the variance is undefined or p is. */
double vp_deflated_sharpe_trials(const vp_perf* p, int64_t n_trials, double var_annual, double* sr0_annual);

/* What a PSR against 0 says, at 95 %: "a gain distinguishable from noise at 95 %" (>= 0.95),
 * "a loss distinguishable ..." (<= 0.05), "not distinguishable from noise at 95 %", or
 * "undefined ..." for NaN; static text. */
const char* vp_psr_verdict(double psr);

/* Short name of a series status ("ok", "short", "all_nan", "empty"); never NULL. */
const char* vp_perf_status_name(vp_perf_status s);

/* ---- tear-sheet statistics against a benchmark (docs/metrics.md, "Tear-sheet statistics") --- */

/* The shape, tail and benchmark-relative statistics of a strategy's per-bar returns, with the
 * definitions of scipy.stats (skew, kurtosis with bias = True) and empyrical (value_at_risk,
 * conditional_value_at_risk, beta, alpha, excess_sharpe). Fractions per bar unless annualised;
 * NaN where undefined (fewer than 2 valid values, or a zero spread where one divides). */
typedef struct vp_tear {
    int64_t n_returns;        /* bars given, NaN included */
    int64_t n_valid;          /* strategy returns that are not NaN: skewness, kurtosis, VaR, CVaR */
    int64_t n_pairs;          /* bars where neither series is NaN: beta, alpha, correlation, TE, IR */
    double periods_per_year;  /* the annualisation factor used */
    double risk_free_rate;    /* yearly risk-free rate in alpha, rf / ppy per bar (simple) */
    double skewness;          /* m3 / m2^1.5, population central moments of the valid returns (NaN: constant) */
    double excess_kurtosis;   /* m4 / m2^2 - 3, population moments (0 for a normal law; NaN: constant) */
    double var_95;            /* 5th percentile of the valid returns, linear interpolation (numpy's), per bar */
    double cvar_95;           /* mean of the k + 1 lowest valid returns, k = floor((n_valid - 1) x 0.05), per bar */
    double beta;              /* cov(r, b) / var(b), population, over the pairs (NaN: var(b) < 1e-30) */
    double alpha;             /* (1 + mean(r - rf - beta (b - rf)))^ppy - 1 over the pairs, rf per bar: annual */
    double correlation;       /* Pearson correlation of r and b over the pairs (NaN: either constant) */
    double tracking_error;    /* std(r - b, ddof 1) x sqrt(ppy) over the pairs: annual (0: constant) */
    double information_ratio; /* mean(r - b) / std(r - b, ddof 1) x sqrt(ppy) (+-inf or NaN for a 0 std) */
} vp_tear;

/* Computes the tear-sheet statistics of returns[n] against benchmark[n], the same bars (NaN
 * allowed, +-inf refused), with the factor and the yearly risk-free rate of `a`. A NaN return
 * is skipped: from the strategy's own statistics when the strategy's is NaN, from the
 * benchmark-relative ones when either is (pairwise, as empyrical skips them). */
vp_status vp_tear_compute(const double* returns /* [n] */, const double* benchmark /* [n] */, int64_t n,
                          const vp_annual* a, vp_tear* out);

/* Adds the tear-sheet statistics (counts, factor, rate and every value, units in the keys'
 * names: "var_95_frac", "beta_ratio") to obj. */
vp_status vp_tear_to_json(const vp_tear* t, struct cJSON* obj);

/* ---- trade statistics --------------------------------------------------------------------- */

/* One closed trade. */
typedef struct vp_trade {
    double pnl;        /* net profit of the round trip after its costs, currency */
    double costs;      /* commission, slippage, the spread's share and financing paid on it, currency (>= 0) */
    int64_t bars_held; /* bars the position was open (>= 0) */
} vp_trade;

/* Statistics of closed trades and of the per-bar position. */
typedef struct vp_trade_stats {
    int64_t n_trades;          /* closed trades */
    int64_t n_wins;            /* trades with pnl > 0 */
    int64_t n_losses;          /* trades with pnl < 0 (pnl == 0 is neither) */
    double hit_rate;           /* n_wins / n_trades (NaN without trades) */
    double profit_factor;      /* gross_profit / gross_loss (+inf with no loss, NaN when both 0) */
    double gross_profit;       /* sum of pnl > 0, currency */
    double gross_loss;         /* -(sum of pnl < 0), currency (>= 0) */
    double net_pnl;            /* sum of pnl, currency */
    double costs;              /* sum of costs, currency */
    double avg_trade_pnl;      /* net_pnl / n_trades, currency (NaN without trades) */
    double avg_holding_bars;   /* mean bars_held (NaN without trades) */
    int64_t n_bars;            /* bars of the position series */
    double exposure;           /* fraction of bars with position != 0 (NaN without bars) */
    double turnover;           /* sum |position[t] - position[t-1]| / max_position, position[-1] = 0 */
    double turnover_per_year;  /* turnover x ppy / n_bars (NaN without bars) */
} vp_trade_stats;

/* Computes trade statistics from trades[n_trades] (may be NULL when 0) and the position
 * held at each bar's close, positions[n_bars] (may be NULL when 0), in contracts;
 * max_position (> 0) is the contract count that turnover is measured in. */
vp_status vp_trade_stats_compute(const vp_trade* trades /* [n_trades] */, int64_t n_trades,
                                 const double* positions /* [n_bars] */, int64_t n_bars, double max_position,
                                 double periods_per_year, vp_trade_stats* out);

/* ---- equity series and baselines ------------------------------------------------------------
 * The buy-and-hold and flat baselines are stepped through the environment by the rollout
 * (vulpes/rollout.h), under the strategy's rules and costs; here only what reads a curve. */

/* Returns of a baseline's equity curve eq [n] into ret [n-1]: once its equity is not positive
 * the baseline holds nothing more (returns 0); the return into that point is kept. */
void vp_baseline_returns(const double* eq /* [n] */, int64_t n, double* ret /* [n-1] */);

/* The return from equity e0 to e1 under the rule below: e1 / e0 - 1 (a negative e0 too); from
 * 0, 0 to 0 is 0 and 0 to anything else NaN; NaN when it overflows. */
double vp_equity_step_return(double e0, double e1);

/* Simple returns of an equity curve: returns[t-1] = equity[t] / equity[t-1] - 1, t = 1..n-1,
 * the backtest's rule: from a negative equity too (a ruined account's close-out; the growth
 * factors still multiply to last / first, though -10 to -12 reads +20 %); from 0, 0 to 0 is 0
 * and 0 to anything else undefined (NaN), as is a return that overflows. All must be finite. */
vp_status vp_returns_from_equity(const double* equity /* [n] */, int64_t n, double* returns /* [n-1] */);

/* Drawdown of an equity curve: drawdown[t] = equity[t] / max(equity[0..t]) - 1 (<= 0);
 * equity must be finite and equity[0] positive. */
vp_status vp_drawdown_series(const double* equity /* [n] */, int64_t n, double* drawdown /* [n] */);

/* ---- the summary: strategy, baselines, trades ------------------------------------------------- */

/* Everything summary.json, the text table and report.html show about one run or span.
 * (vp_metrics_to_json and vp_metrics_print take this summary; the vp_metrics_log of run.h is
 * the unrelated metrics.jsonl writer.) */
typedef struct vp_metrics_summary {
    vp_annual annual;      /* the annualisation factor and its source */
    vp_perf strategy;      /* the agent's returns */
    vp_perf buy_hold;      /* buy-and-hold on the same span and costs */
    vp_perf flat;          /* flat on the same span */
    vp_trade_stats trades; /* the agent's trades and positions */
    vp_tear tear;          /* the agent's returns against buy-and-hold's (valid when has_tear) */
    int has_tear;          /* 1: tear is computed and summary.json writes it; 0: not computed */
} vp_metrics_summary;

/* Units a metric is shown in. */
typedef enum vp_metric_unit {
    VP_METRIC_UNIT_FRAC = 0, /* a fraction: JSON as is, people as a percentage */
    VP_METRIC_UNIT_RATIO,    /* a plain ratio (Sharpe) */
    VP_METRIC_UNIT_INT,      /* an integer count */
    VP_METRIC_UNIT_CCY,      /* account currency */
    VP_METRIC_UNIT_BARS,     /* bars */
    VP_METRIC_UNIT_TIMES,    /* multiples (turnover in max_position units) */
    VP_METRIC_UNIT_COUNT
} vp_metric_unit;

/* A value for people: "12.34 %", "1.724", "inf", "-inf", "-" (NaN, undefined), into buf[n]. */
const char* vp_metric_format(double v, vp_metric_unit unit, char* buf, size_t n);

/* A new JSON object for summary.json: {"annualisation", "strategy", "buy_and_hold", "flat",
 * "tear" (only when has_tear), "trades"}, units in every key's name ("sharpe_ratio",
 * "max_drawdown_frac", "net_pnl_ccy").
 * The caller owns *out (cJSON_Delete). */
vp_status vp_metrics_to_json(const vp_metrics_summary* s, struct cJSON** out);

/* Sets obj[series].status to "ruined" (a series object such as "strategy" that
 * vp_metrics_to_json wrote); nothing when obj has no such object. */
vp_status vp_metrics_json_mark_ruined(struct cJSON* obj, const char* series);

/* Adds one series' metrics (status, counts, periods_per_year and every value) to obj. */
vp_status vp_perf_to_json(const vp_perf* p, struct cJSON* obj);

/* Adds the trade statistics to obj. */
vp_status vp_trade_stats_to_json(const vp_trade_stats* t, struct cJSON* obj);

/* Adds a metric value to obj: a number, "inf", "-inf", or null for NaN. */
vp_status vp_metric_json_add(struct cJSON* obj, const char* key, double v);

/* Prints the annualisation line, the metrics table (strategy | buy & hold | flat) and the
 * trade statistics as plain text to out. */
vp_status vp_metrics_print(const vp_metrics_summary* s, FILE* out);

/* vp_metrics_print with the status row's text of each series (strategy, buy & hold, flat)
 * replaced by status[i] where that is not NULL (a backtest's "ruined"); status may be NULL. */
vp_status vp_metrics_print_status(const vp_metrics_summary* s, const char* const* status /* [3] */, FILE* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_METRICS_H */
