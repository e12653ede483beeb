"""The Optuna bridge (vulpes.optuna) against a PostgreSQL server this test starts itself: initdb
into a temporary folder, the server on a Unix socket there and a free port (as `nobody` when the
test runs as root: the server refuses root), one database, stopped and removed at the end even on
failure. One study in the server's RDB storage is optimised by two processes at once, each a few
trials of the tiny config; then every trial is checked against its run folder: its value is the
validation Sharpe of summary.json (and of the eval event at the best iteration in metrics.jsonl),
its values are the run's config.yaml's, its user attributes are the folder's, distinct trials have
distinct values; a bad space raises the library's error. Without the PostgreSQL binaries or the
optuna and psycopg2 modules the test is skipped, and fails under CI (CI=true)."""
import glob
import json
import math
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

import pytest

from vulpes import VulpesError

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "data", "tiny_run.yaml")
SPACE = {"learn.lr": {"log_uniform": [1.0e-4, 3.0e-3]}, "learn.gamma": {"uniform": [0.9, 0.99]},
         "learn.n_step": {"int": [1, 3]}}
WORKERS, TRIALS_EACH = 2, 2


def _unavailable(why):
    """Skips the test, or fails it under CI, saying why."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} (CI=true: the Optuna test must run; scripts/setup.sh --python installs it)")
    pytest.skip(why)


def _pg_bin():
    """The folder of the PostgreSQL server's binaries: on PATH, else the newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(found))
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]) if
                  d.split("/")[-2].isdigit() else -1)
    dirs = [d for d in dirs if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl"))]
    return dirs[-1] if dirs else None


def _traversable_by_all(path):
    """Whether every folder from / down to path lets other users through (o+x)."""
    path = os.path.realpath(path)
    while True:
        try:
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def _server_parent():
    """A folder the server's user can reach: the temporary folder, else /var/tmp or /dev/shm (a
    machine's /tmp may be closed to other users)."""
    for d in (tempfile.gettempdir(), "/var/tmp", "/dev/shm"):
        if os.path.isdir(d) and os.access(d, os.W_OK) and _traversable_by_all(d):
            return d
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres():
    """The RDB storage URL of a database on a PostgreSQL server of this test's own."""
    try:
        import optuna  # noqa: F401
        import psycopg2  # noqa: F401
    except ImportError as e:
        _unavailable(f"the Optuna test needs the optuna and psycopg2 modules: {e}")
    bindir = _pg_bin()
    if bindir is None:
        _unavailable("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin")
    # the server refuses to run as root: then it runs as nobody, in a folder nobody owns and can reach
    as_user, parent = [], None
    if os.geteuid() == 0:
        parent = _server_parent()
        if parent is None:
            _unavailable("no temporary folder the PostgreSQL server's user (nobody) can reach")
    root = tempfile.mkdtemp(prefix="vulpes-pg-", dir=parent)
    if os.geteuid() == 0:
        import pwd

        pw = pwd.getpwnam("nobody")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]
    data, log, port = os.path.join(root, "data"), os.path.join(root, "server.log"), _free_port()

    def pg(*args):
        r = subprocess.run(as_user + [os.path.join(bindir, args[0]), *args[1:]], capture_output=True, text=True,
                           timeout=120, cwd=root)
        assert r.returncode == 0, f"{' '.join(args)} failed ({r.returncode}): {r.stdout}\n{r.stderr}"

    started = False
    try:
        pg("initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "-N", "--no-instructions")
        pg("pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-o",
           f"-k {root} -p {port} -c listen_addresses='' -c fsync=off", "start")
        started = True
        pg("createdb", "-h", root, "-p", str(port), "-U", "postgres", "vulpes_optuna")
        yield f"postgresql+psycopg2://postgres@/vulpes_optuna?host={root}&port={port}"
    except AssertionError:
        if os.path.exists(log):
            with open(log) as f:
                sys.stderr.write(f.read())
        raise
    finally:
        if started:
            subprocess.run(as_user + [os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=120, cwd=root)
        shutil.rmtree(root, ignore_errors=True)


# one process of the study: its own sampler seed, TRIALS_EACH trials against the shared storage
WORKER = """
import sys, optuna
from vulpes.optuna import objective
url, name, out, seed, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name=name, storage=url, sampler=optuna.samplers.RandomSampler(seed=seed))
study.optimize(objective(sys.argv[6], {space!r}, out=out, backend="cpu"), n_trials=n)
"""


def _config_values(run_dir):
    """The searched keys' values in a run folder's config.yaml, {"learn.lr": 0.0003, ...}."""
    want = {k.split(".")[1]: k for k in SPACE}
    values, section = {}, None
    with open(os.path.join(run_dir, "config.yaml")) as f:
        for line in f:
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                section = line.strip()[:-1]
            elif section == "learn" and ":" in line:
                k, v = (s.strip() for s in line.split(":", 1))
                if k in want:
                    values[want[k]] = float(v)
    return values


def test_study_over_two_processes(postgres, tmp_path):
    import optuna

    name = "vulpes-two-processes"
    optuna.create_study(study_name=name, storage=postgres, direction="maximize")
    out = str(tmp_path / "trials")
    code = WORKER.format(space=SPACE)
    procs = [subprocess.Popen([sys.executable, "-c", code, postgres, name, out, str(11 + i), str(TRIALS_EACH), TINY],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(WORKERS)]
    logs = [p.communicate(timeout=600)[0] for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, f"a study process failed ({p.returncode}):\n{log}"

    study = optuna.load_study(study_name=name, storage=postgres)
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == WORKERS * TRIALS_EACH, [t.state for t in trials]
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials), [(t.number, t.state) for t in trials]
    assert sorted(t.number for t in trials) == list(range(WORKERS * TRIALS_EACH))
    seen = set()
    for t in trials:
        run_dir = t.user_attrs["run_dir"]
        assert run_dir == os.path.join(out, name, f"trial-{t.number:04d}")
        with open(os.path.join(run_dir, "summary.json")) as f:
            summary = json.load(f)
        best = summary["best_validation"]
        # the value is the validation span's best Sharpe, exactly as the folder has it; never the test span's
        assert summary["finished"] is True
        assert math.isfinite(t.value) and t.value == best["sharpe"], (t.number, t.value, best)
        assert t.value != summary["test"]["strategy"]["sharpe_ratio"]
        evals = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl")) if '"eval"' in line]
        at_best = [e for e in evals if e["event"] == "eval" and e["iteration"] == best["iteration"]]
        assert len(at_best) == 1 and at_best[0]["val_sharpe"] == t.value
        assert t.user_attrs["best_iteration"] == best["iteration"]
        assert t.user_attrs["metric"] == "sharpe" and t.user_attrs["validation"]["sharpe"] == t.value
        assert t.user_attrs["validation"]["total_return_frac"] == at_best[0]["val_total_return_frac"]
        assert t.user_attrs["backend"] == summary["backend"]
        # the trial's values are the run's config
        assert set(t.params) == set(SPACE)
        cfg = _config_values(run_dir)
        for k, v in t.params.items():
            assert cfg[k] == pytest.approx(v, rel=1e-12, abs=0), (t.number, k, cfg[k], v)
        lo, hi = SPACE["learn.lr"]["log_uniform"]
        assert lo <= t.params["learn.lr"] <= hi and isinstance(t.params["learn.n_step"], int)
        seen.add(tuple(sorted(t.params.items())))
    assert len(seen) == len(trials), "two trials got the same values"
    assert study.best_value == max(t.value for t in trials)


def test_bad_space_raises_the_library_error():
    from vulpes.optuna import Space, objective

    with pytest.raises(VulpesError, match=r"unknown key 'learn\.lrr'; did you mean 'learn\.lr'") as e:
        objective(TINY, {"learn.lrr": {"uniform": [0.1, 0.2]}})
    assert e.value.status == "VP_ERR_INVALID_ARG"
    with pytest.raises(VulpesError, match=r"run\.seed is not searchable"):
        objective(TINY, {"run.seed": {"int": [1, 4]}})
    with pytest.raises(VulpesError, match=r"uniform bounds must be ordered lo < hi, got \[0\.2, 0\.1\]"):
        objective(TINY, {"learn.gamma": {"uniform": [0.2, 0.1]}})
    with pytest.raises(VulpesError, match=r"cannot open search space /nonexistent/space\.yaml"):
        objective(TINY, "/nonexistent/space.yaml")
    # the space's keys as the library read them, and a value the config refuses, naming the trial
    sp = Space(TINY, os.path.join(HERE, "..", "..", "examples", "search_space.yaml"))
    assert [(p.key, p.dist) for p in sp.params] == [("learn.lr", "log_uniform"), ("learn.gamma", "uniform"),
                                                    ("learn.n_step", "int"), ("model.hidden", "choice")]
    assert sp.params[2].lo == 1 and sp.params[2].hi == 5 and sp.params[3].choices == ["32", "64"]
    good = {"learn.lr": "0.001", "learn.gamma": "0.97", "learn.n_step": "2", "model.hidden": "64"}
    sp.check(good, 3)
    with pytest.raises(VulpesError, match=r"trial 7: learn\.gamma: expected a number in \[0, 1\], got .1\.5."):
        sp.check(dict(good, **{"learn.gamma": "1.5"}), 7)
