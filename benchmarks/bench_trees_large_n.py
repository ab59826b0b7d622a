"""Optimal trees at large N: jaxsr against pystreed, time and peak memory.

Two families of generated data (``numpy`` only, the same arrays in both tools' processes):

* ``household``: like the OSRT paper's scaling figure (household power consumption, about
  2 million rows, 7 numeric measurements): 7 correlated features (two latent factors),
  each cut into 5 levels, so a few thousand distinct rows whatever N; binarized as
  ``x >= level`` (4 thresholds per feature, 28 binary features); a target made of a few
  interactions plus noise;
* ``distinct``: ``--distinct-features`` (default 18) random binary features, so almost
  every row is distinct at N = 1e4 .. 1e6; the target depends on a few of them plus noise.

* ``friedman``: continuous features with the estimator's defaults
  (``OptimalTreeRegressor()``: the boosted-stump binarizer, its lambda and depth budget):
  scikit-learn's ``make_friedman1`` (``--friedman-features``, default 10, of which 5 carry
  the signal, noise 1), N = ``--friedman-n`` (default 1e5). Besides the fit, the set-up before
  the first search step is measured piece by piece in CPU seconds (the binarizer, the
  equivalence classes, the greedy incumbent, the root's bounds: the engine's ``init``), and
  the seconds after which the progress bar holds a lower bound. pystreed then fits the same
  binary features (those of the defaults' binarizer, handed over in a temporary file) with
  the same lambda and depth (``max_depth = depth_budget - 1``) and time limit.

* ``additive``: 10 standard normal features, y a sum of sines of each plus an
  interaction and noise, ``--additive-n`` (default 1e6) rows, binarized with 4 quantile
  thresholds a feature (95% of the rows distinct), lambda 0.01, depth budget 5: a case
  where the defaults' binarizer is not used and the classes are many. Measured and compared
  with pystreed as ``friedman``.

Every run is its own subprocess (so its peak resident memory, ``ru_maxrss``, is its own):
jaxsr's ``OptimalTreeRegressor(binarizer=None)`` in this python, pystreed's
``STreeDRegressor(optimization_task="cost-complex-regression", max_depth=D-1)`` in the peers'
python (``--peers-python``, default ``/tmp/benchvenv/bin/python``). Each tool's objective is
recomputed here the same way from its predictions (``SSE/SST + lambda * leaves``, see
``bench_trees_peers.py``); seconds are wall-clock around ``fit`` (jaxsr: a cold fit, then a
warm one on the same data in the same process) and CPU seconds of the whole process.

    PYTHONPATH=$PWD taskset -c 1 .venv/bin/python benchmarks/bench_trees_large_n.py \
        --out benchmarks/results/trees_large_n.txt

CPU seconds (``time.process_time``) are reported next to wall-clock ones: on a shared,
loaded machine the wall clock measures the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_PEERS_PYTHON = os.environ.get("JAXSR_PEERS_PYTHON", "/tmp/benchvenv/bin/python")


# ------------------------------------------------------------------------------ data
def household(n: int, seed: int = 0):
    """``(X, y)``: X ``(n, 28)`` uint8 thresholds of 7 five-level features; y float64."""
    rng = np.random.default_rng(seed)
    # correlated measurements (as the household power data: two latent factors drive all
    # seven), each cut into 5 levels: a few thousand distinct rows, not 5**7
    latent = rng.normal(size=(n, 2))
    mix = np.array([[1.0, 0.9, 0.7, 0.2, -0.3, 0.5, 0.8], [0.1, 0.4, -0.6, 1.0, 0.9, -0.5, 0.3]])
    z = latent @ mix + 0.25 * rng.normal(size=(n, 7))
    levels = np.digitize(z, [-1.0, -0.35, 0.35, 1.0])
    X = (levels[:, :, None] >= np.arange(1, 5)[None, None, :]).reshape(n, 28).astype(np.uint8)
    lv = levels.astype(np.float64)
    y = (
        2.0 * lv[:, 0]
        + 1.5 * (lv[:, 1] >= 3) * lv[:, 2]
        - 0.8 * lv[:, 3] * (lv[:, 4] < 2)
        + 0.5 * lv[:, 5]
        + rng.normal(0.0, 1.0, n)
    )
    return X, y


def distinct(n: int, features: int, seed: int = 0):
    """``(X, y)``: X ``(n, features)`` random 0/1 uint8 (almost all rows distinct)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, features)).astype(np.uint8)
    f = X.astype(np.float64)
    y = (
        3.0 * f[:, 0]
        + 2.0 * f[:, 1] * f[:, 2]
        - 1.5 * f[:, 3] * (1 - f[:, 4])
        + rng.normal(0.0, 0.5, n)
    )
    return X, y


def friedman(n: int, features: int, seed: int = 0):
    """``(X, y)``: scikit-learn's Friedman #1, X ``(n, features)`` uniform on [0, 1]."""
    from sklearn.datasets import make_friedman1

    return make_friedman1(n_samples=n, n_features=features, noise=1.0, random_state=seed)


def additive(n: int, features: int, seed: int = 0):
    """``(X, y)``: X ``(n, features)`` standard normal, y a sum of sines of every feature
    plus one interaction and noise (every feature carries signal: with 4 quantile
    thresholds a feature, 95% of 1e6 rows are distinct)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, features))
    y = np.sin(X).sum(axis=1) + 0.3 * X[:, 0] * X[:, 1] + rng.normal(0.0, 0.5, n)
    return X, y


def make(case: dict):
    if case["data"] == "additive":
        return additive(case["n"], case["features"])
    if case["data"] == "friedman":
        return friedman(case["n"], case["features"])
    if case["data"] == "household":
        return household(case["n"])
    return distinct(case["n"], case["features"])


def objective(y, pred, leaves, lam):
    y = np.asarray(y, dtype=np.float64)
    sst = float(np.sum((y - y.mean()) ** 2))
    sse = float(np.sum((y - np.asarray(pred, dtype=np.float64).reshape(-1)) ** 2))
    return sse / sst + lam * leaves


# ------------------------------------------------------------------------------ one run
def setup_seconds(X, y, time_limit: float, case: dict) -> dict:
    """CPU seconds of each piece of a fit's set-up before the first search step (the
    defaults, or the case's binarizer, lambda and depth budget), and of that fit as a
    whole (warm: a small fit ran first in this process), with the wall-clock seconds after
    which the progress bar held the root's lower bound."""
    sys.path.insert(0, str(REPO))
    from jaxsr import _progress
    from jaxsr.trees import OptimalTreeRegressor
    from jaxsr.trees import engine as cs
    from jaxsr.trees.extraction import memo_key
    from jaxsr.trees.incumbent import greedy_tree
    from jaxsr.trees.problem import leaf_cost, levels
    from jaxsr.trees.regressor import default_binarizer
    from jaxsr.trees.search import OptimalTreeSearch

    OptimalTreeRegressor(progress=False).fit(X[:2000], y[:2000])  # warm: imports, engine
    settings = {"regularization": case["regularization"], "depth_budget": case["depth_budget"]}
    if case.get("quantiles"):  # the binarizer of the case: quantile thresholds
        from jaxsr.trees import Binarizer

        settings["binarizer"] = Binarizer(n_thresholds=case["quantiles"])
    est = OptimalTreeRegressor(**settings)
    out = {}
    t = time.process_time()
    b = (default_binarizer(X) if "binarizer" not in settings else settings["binarizer"]).fit(X, y)
    Xb = b.transform(X) > 0.5
    out["cpu_binarize"] = time.process_time() - t
    t = time.process_time()
    search = OptimalTreeSearch(
        Xb, y, np.ones(len(y)), regularization=est.regularization, depth_budget=est.depth_budget
    )
    P = search.problem
    out["cpu_classes"] = time.process_time() - t
    t = time.process_time()
    mask = np.ones(P.U, dtype=bool)
    d = levels(P, P.depth, P.stats.sum(0), leaf_cost(P, mask))
    inc = greedy_tree(P, mask, d)
    out["cpu_greedy"] = time.process_time() - t
    t = time.process_time()
    state = cs.init(P, (memo_key(mask, d), mask, d), inc.objective)
    out["cpu_root_bounds"] = time.process_time() - t
    if "binary_path" in case:  # pystreed's input: the same binary features
        np.savez(case["binary_path"], X=Xb.astype(np.uint8), y=y)
    out.update(
        binary_features=int(P.M),
        classes=int(P.U),
        exact_levels=int(P.kl),
        root_lower_bound=float(state.root_lb),
        greedy_objective=float(inc.objective),
    )

    # the whole fit, with the wall-clock second at which the bar first held a bound
    first = []
    real = _progress.FitProgress.update

    def update(self, n=1, **postfix):
        if "bound" in postfix and not first:
            first.append(time.perf_counter())
        return real(self, n, **postfix)

    _progress.FitProgress.update = update
    try:
        t, c = time.perf_counter(), time.process_time()
        model = OptimalTreeRegressor(time_limit=time_limit, **settings).fit(X, y)
        out.update(seconds=time.perf_counter() - t, cpu_fit=time.process_time() - c)
    finally:
        _progress.FitProgress.update = real
    out["bound_on_bar_s"] = first[0] - t if first else float("nan")
    out.update(
        objective=float(model.objective_),
        lower_bound=float(model.lower_bound_),
        optimal=bool(model.optimal_),
        leaves=int(model.n_leaves_),
        steps=int(model.n_subproblems_),
    )
    return out


def run_one(tool: str, case: dict, time_limit: float) -> dict:
    if case["data"] in ("friedman", "additive") and tool == "pystreed":
        from pystreed import STreeDRegressor

        with np.load(case["binary_path"]) as f:
            Xi, y = f["X"].astype(np.intc), f["y"]
        lam = case["regularization"]
        model = STreeDRegressor(
            optimization_task="cost-complex-regression",
            max_depth=case["depth_budget"] - 1,
            cost_complexity=lam,
            time_limit=time_limit,
        )
        t, c = time.perf_counter(), time.process_time()
        model.fit(Xi, y)
        out = {"tool": tool, "seconds": time.perf_counter() - t, "cpu_fit": time.process_time() - c}
        leaves = int(model.get_n_leaves())
        out.update(
            objective=objective(y, model.predict(Xi), leaves, lam),
            leaves=leaves,
            optimal=bool(model.fit_result.is_optimal()),
        )
        ru = resource.getrusage(resource.RUSAGE_SELF)
        out["peak_rss_mib"] = ru.ru_maxrss / 1024.0
        return out
    if case["data"] in ("friedman", "additive"):
        X, y = make(case)
        out = {"tool": tool, "distinct_rows": int(np.unique(X, axis=0).shape[0])}
        out.update(setup_seconds(X, y, time_limit, case))
        ru = resource.getrusage(resource.RUSAGE_SELF)
        out["cpu_seconds"] = ru.ru_utime + ru.ru_stime
        out["peak_rss_mib"] = ru.ru_maxrss / 1024.0
        return out
    X, y = make(case)
    lam, budget = case["regularization"], case["depth_budget"]
    out = {"tool": tool, "distinct_rows": int(np.unique(X, axis=0).shape[0])}
    if tool == "jaxsr":
        sys.path.insert(0, str(REPO))
        from jaxsr.trees import OptimalTreeRegressor

        Xf = X.astype(np.float64)
        for run in ("cold", "warm"):
            model = OptimalTreeRegressor(
                regularization=lam, depth_budget=budget, time_limit=time_limit, binarizer=None
            )
            t0 = time.perf_counter()
            model.fit(Xf, y)
            out[f"seconds_{run}"] = time.perf_counter() - t0
        pred, leaves = model.predict(Xf), int(model.n_leaves_)
        out.update(
            optimal=bool(model.optimal_),
            lower_bound=float(model.lower_bound_),
            seconds=out["seconds_warm"],
        )
    else:
        from pystreed import STreeDRegressor

        Xi = X.astype(np.intc)
        model = STreeDRegressor(
            optimization_task="cost-complex-regression",
            max_depth=budget - 1,
            cost_complexity=lam,
            time_limit=time_limit,
        )
        t0 = time.perf_counter()
        model.fit(Xi, y)
        out["seconds"] = time.perf_counter() - t0
        pred, leaves = model.predict(Xi), int(model.get_n_leaves())
        out["optimal"] = bool(model.fit_result.is_optimal())
    out.update(objective=objective(y, pred, leaves, lam), leaves=leaves)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_seconds"] = ru.ru_utime + ru.ru_stime
    out["peak_rss_mib"] = ru.ru_maxrss / 1024.0  # Linux: KiB
    return out


def spawn(python: str, tool: str, case: dict, time_limit: float) -> dict:
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--mode",
        "one",
        "--tool",
        tool,
        "--case",
        json.dumps(case),
        "--time-limit",
        str(time_limit),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        p = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=4 * time_limit + 600
        )
    except subprocess.TimeoutExpired:
        return {"tool": tool, "error": "subprocess timeout"}
    if p.returncode != 0:
        return {"tool": tool, "error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ report
def _cell(r: dict) -> str:
    if "error" in r:
        return f"{'error':>9} {'':>10} {'':>7} {'':>4}"
    flag = " " if r.get("optimal") else "*"
    return (
        f"{r['seconds']:>9.2f} {r['objective']:>9.6f}{flag} {r['peak_rss_mib']:>7.0f} "
        f"{r['leaves']:>4}"
    )


def report_defaults(rows) -> str:
    """The table of the ``friedman`` cases (the defaults on continuous features)."""
    head = (
        f"{'case':<26} {'classes':>7} {'M':>3} | {'binarize':>8} {'classes':>7} "
        f"{'greedy':>6} {'root':>6} | {'fit CPU':>7} {'fit s':>6} {'bound@':>6} | "
        f"{'objective':>10} {'L':>3} {'MiB':>6} | {'streed s':>8} {'CPU':>6} "
        f"{'objective':>10} {'L':>3}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        j = r["jaxsr"]
        if "error" in j:
            lines.append(f"{r['label']:<26} error: {j['error']}")
            continue
        flag = " " if j["optimal"] else "*"
        s = r.get("pystreed", {"error": "not run"})
        peer = (
            f"{'error':>8}"
            if "error" in s
            else f"{s['seconds']:>8.2f} {s['cpu_fit']:>6.2f} {s['objective']:>9.6f}"
            f"{' ' if s['optimal'] else '*'} {s['leaves']:>3}"
        )
        lines.append(
            f"{r['label']:<26} {j['classes']:>7} {j['binary_features']:>3} | "
            f"{j['cpu_binarize']:>8.2f} {j['cpu_classes']:>7.2f} {j['cpu_greedy']:>6.2f} "
            f"{j['cpu_root_bounds']:>6.2f} | {j['cpu_fit']:>7.2f} {j['seconds']:>6.2f} "
            f"{j['bound_on_bar_s']:>6.2f} | {j['objective']:>9.6f}{flag} {j['leaves']:>3} "
            f"{j['peak_rss_mib']:>6.0f} | {peer}"
        )
    lines.append(
        "(friedman: OptimalTreeRegressor() defaults; additive: 4 quantile thresholds, "
        "lambda 0.01, depth budget 5; warm process; binarize .. root: CPU s of "
        "the set-up before the first search step; fit CPU: CPU s of the whole fit; "
        "bound@: wall s until the progress bar held a lower bound; streed: "
        "pystreed on the same binary features, lambda and depth, wall s and CPU s "
        "of its fit; * = not certified)"
    )
    return "\n".join(lines)


def report(rows) -> str:
    head = (
        f"{'case':<26} {'distinct':>8} | {'jaxsr s':>9} {'objective':>10} {'MiB':>7} "
        f"{'L':>4} | {'streed s':>9} {'objective':>10} {'MiB':>7} {'L':>4} | "
        f"{'str/jx':>6} {'jx cold':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        j, s = r["jaxsr"], r["pystreed"]
        ratio = (
            f"{s['seconds'] / j['seconds']:.2f}"
            if "seconds" in j and "seconds" in s and j["seconds"] > 0
            else "n/a"
        )
        lines.append(
            f"{r['label']:<26} {j.get('distinct_rows', s.get('distinct_rows', 0)):>8}"
            f" | {_cell(j)} | {_cell(s)} | {ratio:>6} "
            f"{j.get('seconds_cold', float('nan')):>8.2f}"
        )
    lines.append(
        "(* = not certified optimal; seconds: warm fit for jaxsr; MiB: peak RSS of the process)"
    )
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", default="all", choices=("all", "one"))
    p.add_argument("--tool", default="jaxsr")
    p.add_argument("--case", default="")
    p.add_argument("--time-limit", type=float, default=300.0)
    p.add_argument("--household-n", default="2000000")
    p.add_argument("--distinct-n", default="10000,100000,1000000")
    p.add_argument("--distinct-features", type=int, default=18)
    p.add_argument("--friedman-n", default="100000")
    p.add_argument("--friedman-features", type=int, default=10)
    p.add_argument("--additive-n", default="1000000")
    p.add_argument("--regularization", type=float, default=0.035)
    p.add_argument("--depth-budget", type=int, default=5)
    p.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    if a.mode == "one":
        print(json.dumps(run_one(a.tool, json.loads(a.case), a.time_limit)))
        return
    cases = [
        {"data": "household", "n": int(n), "features": 28} for n in a.household_n.split(",") if n
    ]
    cases += [
        {"data": "distinct", "n": int(n), "features": a.distinct_features}
        for n in a.distinct_n.split(",")
        if n
    ]
    defaults = []
    sys.path.insert(0, str(REPO))
    from jaxsr.trees.regressor import DEFAULT_DEPTH_BUDGET, DEFAULT_REGULARIZATION

    specs = [
        {
            "data": "friedman",
            "n": int(n),
            "features": a.friedman_features,
            "regularization": DEFAULT_REGULARIZATION,
            "depth_budget": DEFAULT_DEPTH_BUDGET,
        }
        for n in a.friedman_n.split(",")
        if n
    ]
    # the large-N case: 4 quantile thresholds a feature, lambda 0.01, depth budget 5
    specs += [
        {
            "data": "additive",
            "n": int(n),
            "features": 10,
            "quantiles": 4,
            "regularization": 0.01,
            "depth_budget": 5,
        }
        for n in a.additive_n.split(",")
        if n
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for c in specs:
            c["binary_path"] = str(Path(tmp) / f"{c['data']}_{c['n']}.npz")
            label = f"{c['data']} N={c['n']:.0e} F={c['features']}" + (
                f" q{c['quantiles']}" if c.get("quantiles") else ""
            )
            row = {
                "label": label,
                "case": c,
                "jaxsr": spawn(sys.executable, "jaxsr", c, a.time_limit),
            }
            row["pystreed"] = (
                spawn(a.peers_python, "pystreed", c, a.time_limit)
                if Path(c["binary_path"]).exists()
                else {"tool": "pystreed", "error": "no binary features"}
            )
            c.pop("binary_path")
            defaults.append(row)
            print(
                f"{label}: jaxsr {row['jaxsr']} | pystreed {row['pystreed']}",
                file=sys.stderr,
                flush=True,
            )
    rows = []
    for c in cases:
        c.update(regularization=a.regularization, depth_budget=a.depth_budget)
        label = f"{c['data']} N={c['n']:.0e} F={c['features']}"
        row = {
            "label": label,
            "case": c,
            "jaxsr": spawn(sys.executable, "jaxsr", c, a.time_limit),
            "pystreed": spawn(a.peers_python, "pystreed", c, a.time_limit),
        }
        rows.append(row)
        print(
            f"{label}: jaxsr {row['jaxsr']} | pystreed {row['pystreed']}",
            file=sys.stderr,
            flush=True,
        )
    parts = []
    if defaults:
        parts.append(report_defaults(defaults))
    if rows:
        parts.append(report(rows) + f"\nlambda {a.regularization}, depth budget {a.depth_budget}")
    text = "\n\n".join(parts) + f"\ntime limit {a.time_limit} s per fit"
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
        Path(a.out).with_suffix(".json").write_text(json.dumps(defaults + rows, indent=1))


if __name__ == "__main__":
    main()
