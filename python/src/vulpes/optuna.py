"""Optuna over vulpes training runs: `objective(config, space)` is a callable for
`optuna.Study.optimize` that trains one run per trial, as `vulpes search` trains its trials, with
the trial's values of a search space in the form `vulpes search` reads (docs/search.md). One study
can run in many processes and on many machines through Optuna's RDB storage (PostgreSQL, MySQL):
each process calls `study.optimize(objective(...))` against the same study."""
import ctypes
import json
import math
import os

from . import _lib
from .jobs import _flatten, train

__all__ = ["Space", "objective"]

# vp_search_dist of include/vulpes/search.h
_DISTS = ("uniform", "log_uniform", "int", "choice")


class Param:
    """One key of a space: `key` ("learn.lr"), `dist` ("uniform", "log_uniform", "int" or
    "choice"), `lo` and `hi` (the bounds; None for a choice), `choices` (the values as the space
    writes them; None but for a choice)."""

    def __init__(self, key, dist, lo, hi, choices):
        self.key, self.dist, self.lo, self.hi, self.choices = key, dist, lo, hi, choices

    def __repr__(self):
        law = self.choices if self.dist == "choice" else [self.lo, self.hi]
        return f"Param({self.key}: {{{self.dist}: {law}}})"


def _space_text(space):
    """A space given as a dict ({"learn.lr": {"log_uniform": [1e-4, 3e-3]}}) as YAML text."""
    lines = []
    for key, law in space.items():
        if not isinstance(law, dict) or len(law) != 1:
            raise _lib.VulpesError("VP_ERR_INVALID_ARG", f"search space: {key} takes one law, "
                                   "{uniform | log_uniform | int | choice: [...]}, got " + repr(law))
        (dist, values), = law.items()
        if not isinstance(values, (list, tuple)):
            raise _lib.VulpesError("VP_ERR_INVALID_ARG", f"search space: {key}: {dist} takes a list, got {values!r}")
        lines.append(f"{key}: {{{dist}: [{', '.join(json.dumps(v) for v in values)}]}}")
    return "\n".join(lines) + "\n"


class Space:
    """A search space read by the library against a base config, as `vulpes search CONFIG
    SPACE.yaml` reads it: `params`, a list of Param in the space's order. space: a YAML file's path,
    or a dict of the same form. A refused space raises VulpesError with the library's message."""

    def __init__(self, config, space, **overrides):
        L = _lib.lib()
        arr, n = _lib.strings(_flatten(overrides))
        is_text = isinstance(space, dict)
        text = _space_text(space) if is_text else os.fspath(space)
        self._h = None
        handle = ctypes.c_void_p()
        _lib.check(L.vp_api_space_open(_lib.opt(config), arr, n, text.encode(), int(is_text), ctypes.byref(handle)))
        self._h = handle
        self._close = L.vp_api_space_close
        self.params = [self._param(i) for i in range(L.vp_api_space_n_params(handle))]

    def close(self):
        """Releases the library's copy of the space (a later check raises)."""
        if getattr(self, "_h", None):
            self._close(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def _param(self, i):
        L = _lib.lib()
        key = ctypes.create_string_buffer(256)
        dist, n = ctypes.c_int(), ctypes.c_int()
        lo, hi = ctypes.c_double(), ctypes.c_double()
        _lib.check(L.vp_api_space_param(self._h, i, key, len(key), ctypes.byref(dist), ctypes.byref(lo),
                                        ctypes.byref(hi), ctypes.byref(n)))
        name = _DISTS[dist.value]
        if name == "choice":
            return Param(key.value.decode(), name, None, None,
                         [L.vp_api_space_choice(self._h, i, j).decode() for j in range(n.value)])
        if name == "int":
            return Param(key.value.decode(), name, int(lo.value), int(hi.value), None)
        return Param(key.value.decode(), name, lo.value, hi.value, None)

    def check(self, values, trial=0):
        """Checks {key: text} (every key of the space) as trial `trial`'s values: each set into the
        base config, the whole config checked; a refusal raises VulpesError naming the values."""
        if not getattr(self, "_h", None):
            raise _lib.VulpesError("VP_ERR_STATE", "search space: checked after close()")
        arr, n = _lib.strings([values[p.key] for p in self.params])
        _lib.check(_lib.lib().vp_api_space_check(self._h, arr, n, int(trial)))

    def suggest(self, trial):
        """The values an Optuna trial suggests for every key, {key: text the key reads}: a uniform
        key through suggest_float, a log_uniform one through suggest_float(log=True), an int one
        through suggest_int (both ends included), a choice through suggest_categorical (its values
        as the space writes them)."""
        values = {}
        for p in self.params:
            if p.dist == "uniform":
                values[p.key] = repr(float(trial.suggest_float(p.key, p.lo, p.hi)))
            elif p.dist == "log_uniform":
                values[p.key] = repr(float(trial.suggest_float(p.key, p.lo, p.hi, log=True)))
            elif p.dist == "int":
                values[p.key] = str(int(trial.suggest_int(p.key, p.lo, p.hi)))
            else:
                values[p.key] = str(trial.suggest_categorical(p.key, p.choices))
        return values


def validation_metric(run_dir, metric="sharpe"):
    """The validation span's `metric` of a finished training run at its selected parameters (the
    best validation, the checkpoint best.safetensors holds), and every validation figure there as a
    dict: "sharpe" is summary.json's best_validation.sharpe, the score `vulpes search` ranks trials
    by; another name is that figure of the run's "eval" event at the best iteration in metrics.jsonl
    (val_total_return_frac for "total_return_frac", val_max_drawdown_frac, ...). NaN when the
    figure is undefined (no return varied)."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        best = json.load(f)["best_validation"]
    figures = {}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            ev = json.loads(line) if line.strip() else {}
            if ev.get("event") == "eval" and ev.get("iteration") == best["iteration"]:
                figures = {k[4:]: v for k, v in ev.items() if k.startswith("val_")}
    if metric == "sharpe":
        value = best["sharpe"]
    elif metric in figures:
        value = figures[metric]
    else:
        raise _lib.VulpesError("VP_ERR_INVALID_ARG", f"{run_dir}: no validation figure {metric!r}; the run's are "
                               + ", ".join(sorted(figures)))
    return (math.nan if value is None else float(value)), figures


def objective(config, space, metric="sharpe", *, out=None, backend=None, force=False, progress=False, **overrides):
    """A callable f(trial) for `optuna.Study.optimize`: trains one run per trial and returns its
    validation score.

    The trial's values come from `space` (a YAML file's path or a dict, the form `vulpes search`
    reads: {"learn.lr": {"log_uniform": [1e-4, 3e-3]}, "model.hidden": {"choice": [32, 64]}}), read
    here by the library against `config` and `overrides` (a refused space raises VulpesError now).
    Each trial's values are checked with the whole config, then the run trains as `vulpes train
    CONFIG key=value ...` does (vulpes.train) into OUT/STUDY/trial-NNNN (out: default "runs/optuna";
    STUDY the study's name).

    The value returned is the validation span's metric at the run's selected parameters
    (validation_metric: "sharpe", the best validation Sharpe `vulpes search` ranks by, or another
    validation figure), never the test span's: the test span stays unseen by the study; its figures
    are in the run folder. NaN (a failed trial to Optuna) when the figure is undefined. The trial's
    user attributes record "run_dir", "backend" (where it trained, "cuda:0 NVIDIA H200"),
    "best_iteration", "metric" and "validation" (every validation figure at the best iteration).

    backend: "cpu", "cuda", "auto" (None: run.backend); force: reuse a non-empty trial folder;
    progress: the training progress line on stderr. A failure of the library raises VulpesError
    with its message (Optuna then records the trial as failed)."""
    sp = Space(config, space, **overrides)
    root = os.fspath(out) if out is not None else os.path.join("runs", "optuna")

    def run_trial(trial):
        values = sp.suggest(trial)
        sp.check(values, trial.number)
        run_dir = os.path.join(root, trial.study.study_name, f"trial-{trial.number:04d}")
        over = dict(overrides)
        over.update(values)
        result = train(config, out=run_dir, backend=backend, force=force, progress=progress, **over)
        value, figures = validation_metric(result.run_dir, metric)
        trial.set_user_attr("run_dir", os.path.abspath(result.run_dir))
        trial.set_user_attr("backend", result.summary.get("backend"))
        trial.set_user_attr("best_iteration", result.summary["best_validation"]["iteration"])
        trial.set_user_attr("metric", metric)
        trial.set_user_attr("validation", {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                           for k, v in figures.items()})
        return value

    run_trial.space = sp
    return run_trial
