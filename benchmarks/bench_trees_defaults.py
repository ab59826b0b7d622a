"""The panel that chooses ``OptimalTreeRegressor``'s defaults: binarizers, depth budgets and
lambdas on the 8 raw OSRT datasets, against CV-tuned CART, same-size greedy CART and
pystreed.

Data: the 8 raw OSRT datasets of ``shared/data/osrt/raw`` read as ``jaxsr tree`` reads them
(:data:`REAL_DATASETS`; text columns kept: jaxsr's binarizer and the CART baselines one-hot
encode them), random 75/25 splits (``jaxsr.cli._split(n, 0.25, seed)``). Splits
:data:`TUNING_SPLITS` are the **tuning part** (the sweep runs there only and the defaults
are chosen there); splits :data:`HELD_OUT_SPLITS` are the **held-out part**, not looked at
while tuning.

Phases (``--phase``):

* ``sweep`` (tuning splits only): every jaxsr configuration of :func:`sweep_configs`
  (binarizer x depth budget x lambda; each fit on the binarized training rows with
  ``time_limit`` ``--time-limit``), and per fit a greedy CART of the same size on the raw
  features (``DecisionTreeRegressor(max_leaf_nodes=leaves, max_depth=depth_budget - 1)``).
* ``panel`` (all splits): jaxsr with the defaults of the jaxsr imported now
  (``OptimalTreeRegressor()``), the paper's setting (``OptimalTreeRegressor.paper()``), the
  previous defaults, ``OptimalTreeRegressorCV()``; CART tuned by 5-fold CV
  (``GridSearchCV`` over ``max_depth`` x ``ccp_alpha``, :data:`CART_GRID`); the same-size
  greedy CART of each jaxsr row; pystreed 1.4 (``cost-complex-regression``, ``max_depth =
  depth_budget - 1``, ``cost_complexity = lambda``) on the defaults' binary features.

Measured: test R^2, leaves, CPU seconds of the fit (``time.process_time``; binarization
included in the panel), certified (``optimal_``). The table gives, per tool, the mean and
the median of the dataset medians of test R^2 (over the splits) and the median leaves, for
each part. Records: ``benchmarks/results/trees_defaults.jsonl`` (one line per fit, appended;
a rerun skips what is there); table: ``benchmarks/results/trees_defaults.txt``.

Usage (from the repository root; pin one core on a shared machine)::

    taskset -c 1 .venv/bin/python benchmarks/bench_trees_defaults.py --phase sweep
    taskset -c 1 .venv/bin/python benchmarks/bench_trees_defaults.py --phase panel
    .venv/bin/python benchmarks/bench_trees_defaults.py --summary-only
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RECORDS = HERE / "results" / "trees_defaults.jsonl"
TABLE = HERE / "results" / "trees_defaults.txt"

sys.path.insert(0, str(HERE))
# the real panel of the symbolic benchmark: ``(file under osrt/raw, jaxsr.cli._read_csv
# options, target column, columns to drop)``
from bench_sr_defaults import REAL_DATASETS  # noqa: E402 - the benchmarks folder is not a package

TUNING_SPLITS = (0, 1)
HELD_OUT_SPLITS = (2, 3, 4)
TEST_FRACTION = 0.25

#: the binarizers of the sweep: name -> Binarizer parameters
BINARIZERS = {
    "q4": {"strategy": "quantile", "n_thresholds": 4},
    "q8": {"strategy": "quantile", "n_thresholds": 8},
    "q16": {"strategy": "quantile", "n_thresholds": 16},
    "u4": {"strategy": "uniform", "n_thresholds": 4},  # the paper's binarization
    "gbdt": {"strategy": "gbdt"},  # 40 boosted stumps (McTavish et al. 2022)
    "gbdt-d2": {"strategy": "gbdt", "gbdt_params": {"max_depth": 2}},  # 40 depth-2 trees
}
DEPTHS = (4, 5, 6)
LAMBDAS = (0.0025, 0.005, 0.01, 0.02)
#: CART tuned by 5-fold CV: max_depth x ccp_alpha (ccp_alpha in units of Var(y_train))
CART_GRID = {"max_depth": (3, 4, 6, 8, None), "ccp_alpha_over_var": (0.0, 1e-4, 1e-3, 1e-2)}
PREVIOUS_DEFAULTS = {"regularization": 0.01, "depth_budget": 5, "binarizer": "q4"}


# ------------------------------------------------------------------------------ data
_CACHE: dict[str, tuple] = {}


def table(name: str):
    """``(X DataFrame, y array)`` of one raw OSRT dataset, text columns kept."""
    if name not in _CACHE:
        from jaxsr.cli import _features_and_target, _read_csv
        from jaxsr.datasets import shared_data_dir

        rel, options, target, drop = REAL_DATASETS[name]
        path = shared_data_dir() / "osrt" / "raw" / rel
        df = _read_csv(str(path), **options)
        X, y = _features_and_target(df, str(path), target, drop)
        _CACHE[name] = (X.reset_index(drop=True), y.to_numpy(np.float64))
    return _CACHE[name]


def split(name: str, seed: int):
    from jaxsr.cli import _split

    X, y = table(name)
    tr, te = _split(len(y), TEST_FRACTION, seed)
    return X.iloc[tr].reset_index(drop=True), y[tr], X.iloc[te].reset_index(drop=True), y[te]


def one_hot(Xtr, Xte):
    """Raw features for scikit-learn: numeric columns as they are, text columns one-hot
    (categories of the training rows; unseen ones all 0)."""
    from pandas.api.types import is_numeric_dtype
    from sklearn.preprocessing import OneHotEncoder

    text = [c for c in Xtr.columns if not is_numeric_dtype(Xtr[c].dtype)]
    num = [c for c in Xtr.columns if c not in text]
    a, b = Xtr[num].to_numpy(np.float64), Xte[num].to_numpy(np.float64)
    if text:
        enc = OneHotEncoder(handle_unknown="ignore", sparse_output=False)
        a = np.hstack([a, enc.fit_transform(Xtr[text].astype(str))])
        b = np.hstack([b, enc.transform(Xte[text].astype(str))])
    return a, b


def r2(y, p) -> float:
    y, p = np.asarray(y, np.float64), np.asarray(p, np.float64)
    return float(1.0 - np.mean((y - p) ** 2) / np.var(y))


def part(seed: int) -> str:
    return "tuning" if seed in TUNING_SPLITS else "held-out"


# ------------------------------------------------------------------------------ tools
def binarizer(name: str):
    from jaxsr.trees import Binarizer

    return Binarizer(**BINARIZERS[name])


def same_size_cart(Araw, ytr, Atest, yte, leaves, depth_budget) -> dict:
    """Greedy CART of the same size on the raw features (best-first, scikit-learn)."""
    from sklearn.tree import DecisionTreeRegressor

    if leaves < 2:
        return {"r2": r2(yte, np.full(len(yte), ytr.mean())), "leaves": 1}
    m = DecisionTreeRegressor(
        max_leaf_nodes=int(leaves),
        random_state=0,
        max_depth=None if depth_budget is None else depth_budget - 1,
    )
    m.fit(Araw, ytr)
    return {"r2": r2(yte, m.predict(Atest)), "leaves": int(m.get_n_leaves())}


def cart_cv(Araw, ytr, Atest, yte) -> dict:
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.tree import DecisionTreeRegressor

    var = float(np.var(ytr))
    grid = {
        "max_depth": list(CART_GRID["max_depth"]),
        "ccp_alpha": [a * var for a in CART_GRID["ccp_alpha_over_var"]],
    }
    c0 = time.process_time()
    gs = GridSearchCV(
        DecisionTreeRegressor(random_state=0),
        grid,
        cv=KFold(5, shuffle=True, random_state=0),
        n_jobs=1,
    )
    gs.fit(Araw, ytr)
    cpu = time.process_time() - c0
    m = gs.best_estimator_
    return {
        "r2": r2(yte, m.predict(Atest)),
        "leaves": int(m.get_n_leaves()),
        "cpu": cpu,
        "params": {k: (None if v is None else float(v)) for k, v in gs.best_params_.items()},
    }


def jaxsr_fit(est, Xtr, ytr, Xte, yte) -> dict:
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    cpu = time.process_time() - c0
    out = {
        "r2": r2(yte, est.predict(Xte)),
        "leaves": int(est.n_leaves_),
        "depth": int(est.depth_),
        "cpu": cpu,
        "optimal": bool(getattr(est, "optimal_", True)),
    }
    for a in ("regularization_", "depth_budget_"):
        if hasattr(est, a):
            out[a.rstrip("_")] = None if getattr(est, a) is None else float(getattr(est, a))
    return out


def pystreed_fit(Xb, ytr, Xbt, yte, lam, depth_budget, time_limit) -> dict:
    from pystreed import STreeDRegressor

    m = STreeDRegressor(
        optimization_task="cost-complex-regression",
        max_depth=depth_budget - 1,
        cost_complexity=lam,
        time_limit=time_limit,
    )
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(Xb.astype(np.intc), ytr)
    cpu = time.process_time() - c0
    return {
        "r2": r2(yte, m.predict(Xbt.astype(np.intc))),
        "leaves": int(m.get_n_leaves()),
        "cpu": cpu,
        "optimal": bool(m.fit_result.is_optimal()),
    }


# ------------------------------------------------------------------------------ records
def git_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "jaxsr"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001
        return "unknown"


def load_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Writer:
    def __init__(self, path: Path):
        self.path = path
        self.done = {r["key"] for r in load_records(path)}
        self.commit = git_commit()
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, rec: dict):
        rec = {
            **rec,
            "commit": self.commit,
            "when": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        with self.path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        self.done.add(rec["key"])


# ------------------------------------------------------------------------------ phases
def sweep_configs():
    for b in BINARIZERS:
        for d in DEPTHS:
            for lam in LAMBDAS:
                yield f"{b}-d{d}-l{lam:g}", b, d, lam


def run_sweep(datasets, time_limit, write: Writer):
    from jaxsr.trees import OptimalTreeRegressor

    for name in datasets:
        for seed in TUNING_SPLITS:
            Xtr, ytr, Xte, yte = split(name, seed)
            Araw, Atest = one_hot(Xtr, Xte)
            for bname in BINARIZERS:
                b = binarizer(bname)
                c0 = time.process_time()
                Xb = b.fit_transform(Xtr, ytr)
                bcpu = time.process_time() - c0
                Xbt = b.transform(Xte)
                for cfg, bn, d, lam in sweep_configs():
                    if bn != bname:
                        continue
                    key = f"sweep|{name}|{seed}|{cfg}"
                    if key in write.done:
                        continue
                    est = OptimalTreeRegressor(
                        regularization=lam,
                        depth_budget=d,
                        binarizer=None,
                        progress=False,
                        time_limit=time_limit,
                    )
                    res = jaxsr_fit(est, Xb, ytr, Xbt, yte)
                    res["cpu"] += bcpu
                    same = same_size_cart(Araw, ytr, Atest, yte, res["leaves"], d)
                    write(
                        {
                            "key": key,
                            "phase": "sweep",
                            "dataset": name,
                            "split": seed,
                            "part": part(seed),
                            "tool": "jaxsr",
                            "config": cfg,
                            "binarizer": bname,
                            "depth_budget": d,
                            "regularization": lam,
                            "n_binary": int(Xb.shape[1]),
                            **res,
                            "cart_same_size_r2": same["r2"],
                        }
                    )
                    print(
                        f"{key}: r2 {res['r2']:.3f} leaves {res['leaves']} cpu {res['cpu']:.2f}",
                        flush=True,
                    )


def panel_tools(time_limit):
    """``name -> (factory, is_jaxsr)`` of the panel's jaxsr rows."""
    from jaxsr.trees import Binarizer, OptimalTreeRegressor

    def prev():
        return OptimalTreeRegressor(
            regularization=PREVIOUS_DEFAULTS["regularization"],
            depth_budget=PREVIOUS_DEFAULTS["depth_budget"],
            binarizer=Binarizer(**BINARIZERS["q4"]),
            progress=False,
            time_limit=time_limit,
        )

    tools = {
        "jaxsr-default": lambda: OptimalTreeRegressor(progress=False, time_limit=time_limit),
        "jaxsr-previous": prev,
    }
    if hasattr(OptimalTreeRegressor, "paper"):
        tools["jaxsr-paper"] = lambda: OptimalTreeRegressor.paper().set_params(
            progress=False, time_limit=time_limit
        )
    try:
        from jaxsr.trees import OptimalTreeRegressorCV

        tools["jaxsr-cv"] = lambda: OptimalTreeRegressorCV(progress=False, time_limit=time_limit)
    except ImportError:
        pass
    return tools


def one_se(cv, Xtr, ytr, Xte, yte, cv_cpu, Araw, Atest) -> dict:
    """``selection="1se"`` on a fitted ``OptimalTreeRegressorCV``'s folds: the row of
    ``cv_results_`` it picks, refitted on all rows (CPU: the folds' share + the refit)."""
    from sklearn.base import clone

    one = clone(cv).set_params(selection="1se")
    i = one._select(cv.cv_results_, cv.n_splits_)
    lam = float(cv.cv_results_["regularization"][i])
    d = int(cv.cv_results_["depth_budget"][i])
    est = cv._estimator(regularization=lam, depth_budget=d)
    res = jaxsr_fit(est, Xtr, ytr, Xte, yte)
    res["cpu"] += cv_cpu  # the folds (and the "min" refit, an over-count) + this refit
    res["regularization"], res["depth_budget"] = lam, d
    same = same_size_cart(Araw, ytr, Atest, yte, res["leaves"], d)
    return {**res, "cart_same_size_r2": same["r2"]}


def run_panel(datasets, time_limit, write: Writer, tools_wanted=None, splits=None):
    tools = panel_tools(time_limit)
    if tools_wanted:
        tools = {k: v for k, v in tools.items() if k in tools_wanted}
    for name in datasets:
        for seed in splits or (*TUNING_SPLITS, *HELD_OUT_SPLITS):
            Xtr, ytr, Xte, yte = split(name, seed)
            Araw, Atest = one_hot(Xtr, Xte)
            base = {"phase": "panel", "dataset": name, "split": seed, "part": part(seed)}
            key = f"panel|{name}|{seed}|cart-cv"
            if key not in write.done and (not tools_wanted or "cart-cv" in tools_wanted):
                res = cart_cv(Araw, ytr, Atest, yte)
                write({"key": key, **base, "tool": "cart-cv", **res})
                print(f"{key}: r2 {res['r2']:.3f} leaves {res['leaves']}", flush=True)
            for tname, make in tools.items():
                key = f"panel|{name}|{seed}|{tname}"
                if key in write.done:
                    continue
                est = make()
                res = jaxsr_fit(est, Xtr, ytr, Xte, yte)
                fitted = getattr(est, "best_estimator_", est)
                d = getattr(est, "depth_budget_", None) or fitted.depth_budget
                same = same_size_cart(Araw, ytr, Atest, yte, res["leaves"], d)
                rec = {
                    "key": key,
                    **base,
                    "tool": tname,
                    **res,
                    "params": {
                        k: (v if isinstance(v, int | float | str | None) else repr(v))
                        for k, v in fitted.get_params(deep=False).items()
                    },
                    "cart_same_size_r2": same["r2"],
                }
                write(rec)
                print(
                    f"{key}: r2 {res['r2']:.3f} leaves {res['leaves']} cpu {res['cpu']:.2f}",
                    flush=True,
                )
                if tname == "jaxsr-cv":
                    # the one-standard-error choice from the same folds' paths, refitted
                    skey = f"panel|{name}|{seed}|jaxsr-cv-1se"
                    if skey not in write.done:
                        write(
                            {
                                "key": skey,
                                **base,
                                "tool": "jaxsr-cv-1se",
                                **one_se(est, Xtr, ytr, Xte, yte, res["cpu"], Araw, Atest),
                            }
                        )
                if tname == "jaxsr-default":
                    skey = f"panel|{name}|{seed}|pystreed"
                    if skey in write.done:
                        continue
                    b = fitted.binarizer_
                    Xb = np.asarray(b.transform(Xtr)) if b is not None else Xtr.to_numpy()
                    Xbt = np.asarray(b.transform(Xte)) if b is not None else Xte.to_numpy()
                    res = pystreed_fit(
                        Xb, ytr, Xbt, yte, fitted.regularization, fitted.depth_budget, time_limit
                    )
                    write({"key": skey, **base, "tool": "pystreed", **res})
                    print(f"{skey}: r2 {res['r2']:.3f} leaves {res['leaves']}", flush=True)


# ------------------------------------------------------------------------------ table
def _summ(rows, parts):
    """mean R^2, median of dataset medians of R^2, median leaves, mean CPU, certified."""
    rows = [r for r in rows if r["part"] in parts]
    if not rows:
        return None
    by = {}
    for r in rows:
        by.setdefault(r["dataset"], []).append(r)
    med = [float(np.median([r["r2"] for r in v])) for v in by.values()]
    out = {
        "n": len(rows),
        "mean_r2": float(np.mean([r["r2"] for r in rows])),
        "med_r2": float(np.median(med)),
        "leaves": float(np.median([r["leaves"] for r in rows])),
        "cpu": float(np.mean([r.get("cpu", np.nan) for r in rows])),
        "certified": sum(bool(r.get("optimal", True)) for r in rows),
    }
    same = [r["cart_same_size_r2"] for r in rows if "cart_same_size_r2" in r]
    out["same_r2"] = float(np.mean(same)) if len(same) == len(rows) else None
    return out


def choose(records):
    """The defaults' rule, on the tuning part: the highest mean test R^2 among sweep
    configurations with median leaves <= 16 whose every fit was certified; of those within
    0.005 of it, the one with the fewest median leaves, then the least CPU."""
    grid = {c for c, _, _, _ in sweep_configs()}
    rows = [r for r in records if r["phase"] == "sweep" and r["config"] in grid]
    by = {}
    for r in rows:
        by.setdefault(r["config"], []).append(r)
    n_full = len(REAL_DATASETS) * len(TUNING_SPLITS)
    summ = {c: _summ(v, ("tuning",)) for c, v in by.items() if len(v) == n_full}
    ok = {c: s for c, s in summ.items() if s["leaves"] <= 16 and s["certified"] == s["n"]}
    if not ok:
        return None, summ
    best = max(s["mean_r2"] for s in ok.values())
    near = [c for c, s in ok.items() if s["mean_r2"] >= best - 0.005]
    pick = min(near, key=lambda c: (ok[c]["leaves"], ok[c]["cpu"]))
    return pick, summ


def summary(records) -> str:
    lines = [
        f"# {_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}; "
        f"{platform.platform()}, {os.cpu_count()} CPUs; load "
        f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}; git "
        f"{', '.join(sorted({r.get('commit', '?') for r in records}))}",
        f"# tuning part: splits {TUNING_SPLITS}; held-out part: splits {HELD_OUT_SPLITS} "
        f"(75/25, jaxsr.cli._split); 8 raw OSRT datasets, text columns one-hot",
        "# R2 = test R^2: mean over fits, and median of the dataset medians; leaves: "
        "median over fits; cpu: mean CPU s a fit; same-CART: mean test R^2 of greedy "
        "CART on the raw features with the row's leaves (max_depth = depth_budget - 1)",
        "",
    ]
    panel = [r for r in records if r["phase"] == "panel"]
    if panel:
        lines.append("## panel (one run)")
        hdr = (
            f"{'tool':16s} {'part':9s} {'fits':>4s} {'mean R2':>8s} {'med R2':>7s} "
            f"{'leaves':>6s} {'cpu s':>7s} {'cert':>5s} {'same-CART':>9s}"
        )
        lines.append(hdr)
        for tool in dict.fromkeys(r["tool"] for r in panel):
            rows = [r for r in panel if r["tool"] == tool]
            for label, parts in (
                ("tuning", ("tuning",)),
                ("held-out", ("held-out",)),
                ("all", ("tuning", "held-out")),
            ):
                s = _summ(rows, parts)
                if s is None:
                    continue
                same = "-" if s["same_r2"] is None else f"{s['same_r2']:.3f}"
                lines.append(
                    f"{tool:16s} {label:9s} {s['n']:4d} {s['mean_r2']:8.3f} "
                    f"{s['med_r2']:7.3f} {s['leaves']:6.1f} {s['cpu']:7.2f} "
                    f"{s['certified']:5d} {same:>9s}"
                )
        lines.append("")
        lines.append("per dataset, median test R^2 (median leaves) over all splits:")
        names = sorted({r["dataset"] for r in panel})
        lines.append(f"{'tool':16s} " + " ".join(f"{n[:11]:>13s}" for n in names))
        for tool in dict.fromkeys(r["tool"] for r in panel):
            cells = []
            for n in names:
                v = [r for r in panel if r["tool"] == tool and r["dataset"] == n]
                med_r2 = np.median([r["r2"] for r in v]) if v else np.nan
                med_leaves = np.median([r["leaves"] for r in v]) if v else np.nan
                cells.append(f"{med_r2:.3f} ({med_leaves:3.0f})" if v else "-")
            lines.append(f"{tool:16s} " + " ".join(f"{c:>13s}" for c in cells))
        lines.append("")
    sweep = [r for r in records if r["phase"] == "sweep"]
    if sweep:
        pick, summ = choose(records)
        lines.append(f"## sweep (tuning part only); chosen by the rule of choose(): {pick}")
        lines.append(
            f"{'config':18s} {'fits':>4s} {'mean R2':>8s} {'med R2':>7s} "
            f"{'leaves':>6s} {'cpu s':>7s} {'cert':>5s} {'same-CART':>9s}"
        )
        for c, s in sorted(summ.items(), key=lambda kv: -kv[1]["mean_r2"]):
            same = "-" if s["same_r2"] is None else f"{s['same_r2']:.3f}"
            lines.append(
                f"{c:18s} {s['n']:4d} {s['mean_r2']:8.3f} {s['med_r2']:7.3f} "
                f"{s['leaves']:6.1f} {s['cpu']:7.2f} {s['certified']:5d} {same:>9s}"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phase", choices=("sweep", "panel"), default="panel")
    ap.add_argument("--datasets", default=",".join(REAL_DATASETS))
    ap.add_argument("--tools", default="", help="panel rows to run (default all)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds a jaxsr fit")
    ap.add_argument("--splits", default="", help="panel splits to run (default: all)")
    ap.add_argument("--records", type=Path, default=RECORDS)
    ap.add_argument("--out", type=Path, default=TABLE)
    ap.add_argument("--summary-only", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    if not a.summary_only:
        write = Writer(a.records)
        names = [n for n in a.datasets.split(",") if n]
        if a.phase == "sweep":
            run_sweep(names, a.time_limit, write)
        else:
            run_panel(
                names,
                a.time_limit,
                write,
                [t for t in a.tools.split(",") if t] or None,
                [int(v) for v in a.splits.split(",") if v] or None,
            )
    text = summary(load_records(a.records))
    a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
