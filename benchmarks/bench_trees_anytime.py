"""Optimal trees under a time limit (anytime): objective, gap and wall time against greedy CART.

For each case (data, binarization, lambda, depth budget, loss) and each time limit (0.05,
0.2, 1, 5 s by default), one fresh process fits ``OptimalTreeRegressor(time_limit=...)``
(the first fit of a process: imports done, nothing compiled or loaded, as a user's first
call) and records:

* ``wall``: seconds around ``fit`` (binarization included: ``time_limit`` counts it), its
  ratio to the limit, and ``fit_seconds_``;
* ``objective``, ``lower_bound``, ``gap``, leaves, depth, status;
* ``greedy``: the objective of greedy CART on the same binary features grown to the depth
  budget (split of least children's loss while the loss decreases) and pruned at lambda
  (cost-complexity), computed here by a plain numpy oracle on the samples, independent of
  the search; ``objective <= greedy`` is the anytime promise;
* ``optimum``: the proven optimum where a run without a limit certified one (``--optimum
  SECONDS``: its time budget; cases it does not certify say ``None``).

Usage (from the repository root; one core, as the results were measured)::

    taskset -c 0 .venv/bin/python benchmarks/bench_trees_anytime.py
    taskset -c 0 .venv/bin/python benchmarks/bench_trees_anytime.py --cases diabetes-mid \\
        --limits 0.05,0.2 --backends numpy

Writes ``benchmarks/results/trees_anytime.{json,txt}`` (``--out``).
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
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# name: (data, binarizer kwargs or None (already 0/1), lambda, depth budget, loss)
CASES = {
    "diabetes-mid": ("diabetes", {"strategy": "midpoints"}, 0.001, None, "squared_error"),
    "diabetes-q16": ("diabetes", {"n_thresholds": 16}, 0.001, None, "squared_error"),
    "diabetes-q16-l1": ("diabetes", {"n_thresholds": 16}, 0.001, None, "absolute_error"),
    "example": ("example", None, 0.001, None, "squared_error"),
    "enb-heat": ("osrt:enb-heat", None, 0.001, None, "squared_error"),
    "garments": (
        "osrt:garments_worker_productivity_binary_threshold_4",
        None,
        0.001,
        None,
        "squared_error",
    ),
    "seoul-bike": ("osrt:seoul-bike", None, 0.001, 7, "squared_error"),
    "yacht-d7": ("osrt:yacht", None, 0.001, 7, "squared_error"),
}
DEFAULT_CASES = list(CASES)
DEFAULT_LIMITS = (0.05, 0.2, 1.0, 5.0)


def load(data):
    """``(X, y)``: raw features (DataFrame or array) and float64 targets."""
    if data == "diabetes":
        sys.path.insert(0, str(REPO))
        from jaxsr.datasets import load_diabetes

        X, y = load_diabetes()
        return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if data == "example":  # examples/optimal_tree_certificate.py's data
        rng = np.random.default_rng(0)
        X = rng.integers(0, 2, size=(400, 8)).astype(np.float64)
        y = np.where(
            X[:, 0] == 1, np.where(X[:, 3] == 1, 10.0, 6.0), np.where(X[:, 5] == 1, 2.0, 0.0)
        )
        return X, y + rng.normal(0.0, 1.0, 400)
    if data.startswith("osrt:"):
        sys.path.insert(0, str(HERE))
        from bench_trees_peers import dataset_paths, load_binarized

        X, y, _ = load_binarized(dataset_paths()[data[5:]])
        return X.astype(np.float64), y
    raise ValueError(data)


# ------------------------------------------------------------------ greedy CART oracle
def _leaf_loss(y, w, absolute):
    if y.size == 0:
        return 0.0
    if not absolute:
        W = w.sum()
        mu = np.dot(w, y) / W if W > 0 else y.mean()
        return float(np.dot(w, (y - mu) ** 2))
    o = np.argsort(y, kind="stable")
    cw = np.cumsum(w[o])
    med = y[o][int(np.argmax(cw >= 0.5 * cw[-1]))]
    return float(np.dot(w, np.abs(y - med)))


def greedy_cart_objective(X, y, w, lam, depth, min_samples_leaf=1, absolute=False):
    """Objective ``loss / (one-leaf loss) + lam * leaves`` of greedy CART pruned at lam.

    Plain numpy on the samples: each node takes the feature of least summed children's
    loss (near-ties, 1e-12 of the node's loss, to the lowest index; both children with at
    least ``min_samples_leaf`` samples) while that loss is below the node's; grown to
    ``depth`` levels (root = 1; None: no limit); then the cost-complexity pruning at
    ``lam`` (bottom up: a split is kept when its subtrees cost less than a leaf)."""
    X = np.asarray(X, dtype=bool)
    norm = _leaf_loss(y, w, absolute)
    norm = norm if norm > 0 else 1.0
    dmax = 1 << 30 if depth is None else int(depth)

    def solve(idx, lev):
        leaf = _leaf_loss(y[idx], w[idx], absolute) / norm + lam
        if lev <= 1:
            return leaf
        node = _leaf_loss(y[idx], w[idx], absolute)
        c = np.full(X.shape[1], np.inf)
        for j in range(X.shape[1]):
            t = X[idx, j]
            if t.sum() < min_samples_leaf or (~t).sum() < min_samples_leaf:
                continue
            c[j] = _leaf_loss(y[idx[t]], w[idx[t]], absolute) + _leaf_loss(
                y[idx[~t]], w[idx[~t]], absolute
            )
        if not np.isfinite(c.min()):
            return leaf
        # the least children's loss; near-ties (1e-12 of the node's loss) to the lowest
        bj = int(np.flatnonzero(c <= c.min() + 1e-12 * node)[0])
        best = c[bj] / norm + lam
        if not best < leaf * (1 - 1e-12):
            return leaf
        t = X[idx, bj]
        sub = solve(idx[t], lev - 1) + solve(idx[~t], lev - 1)
        return min(leaf, sub)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    return float(solve(np.arange(y.size), dmax))


# ------------------------------------------------------------------ one run (worker)
def one_run(case, limit, backend):
    import warnings

    data, bkw, lam, depth, loss = CASES[case]
    X, y = load(data)
    sys.path.insert(0, str(REPO))
    from jaxsr.trees import Binarizer, OptimalTreeRegressor

    m = OptimalTreeRegressor(
        regularization=lam,
        depth_budget=depth,
        loss=loss,
        time_limit=limit,
        backend=backend,
        binarizer=None if bkw is None else Binarizer(**bkw),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        c0 = time.process_time()
        m.fit(X, y)
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
    return {
        "case": case,
        "limit": limit,
        "backend": backend,
        "wall": wall,
        "cpu": cpu,
        "fit_seconds": m.fit_seconds_,
        "objective": m.objective_,
        "lower_bound": m.lower_bound_,
        "gap": m.gap_,
        "leaves": int(m.n_leaves_),
        "depth": int(m.depth_),
        "status": m.status_,
        "binary_features": len(m.binary_feature_names_),
    }


def case_reference(case, optimum_seconds):
    """The greedy oracle's objective and, when a run certifies it, the optimum."""
    import warnings

    data, bkw, lam, depth, loss = CASES[case]
    X, y = load(data)
    sys.path.insert(0, str(REPO))
    from jaxsr.trees import Binarizer, OptimalTreeRegressor

    Xb = X if bkw is None else Binarizer(**bkw).fit_transform(X)
    Xb = np.asarray(Xb) > 0.5
    out = {
        "case": case,
        "lambda": lam,
        "depth_budget": depth,
        "loss": loss,
        "binarizer": bkw,
        "n": int(y.size),
        "binary_features": int(Xb.shape[1]),
    }
    t0 = time.perf_counter()
    out["greedy"] = greedy_cart_objective(
        Xb, y, np.ones(y.size), lam, depth, absolute=loss == "absolute_error"
    )
    out["greedy_oracle_seconds"] = time.perf_counter() - t0
    out["optimum"] = None
    if optimum_seconds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = OptimalTreeRegressor(
                regularization=lam, depth_budget=depth, loss=loss, time_limit=optimum_seconds
            ).fit(Xb, y)
        out["optimum_run"] = {
            "seconds": m.fit_seconds_,
            "objective": m.objective_,
            "lower_bound": m.lower_bound_,
            "status": m.status_,
        }
        if m.optimal_:
            out["optimum"] = m.objective_
    return out


def _subprocess(args):
    cmd = [sys.executable, str(Path(__file__).resolve())] + args
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(refs, runs) -> str:
    lines = []
    ref = {r["case"]: r for r in refs}
    hdr = (
        f"{'case':16s} {'backend':7s} {'limit':>6s} {'wall':>7s} {'wall/lim':>8s} "
        f"{'objective':>10s} {'greedy':>10s} {'obj-greedy':>11s} {'optimum':>10s} "
        f"{'lower bd':>10s} {'gap':>9s} {'leaves':>6s} {'status':>10s}"
    )
    lines.append(hdr)
    for r in runs:
        g = ref[r["case"]]
        opt = g.get("optimum")
        lines.append(
            f"{r['case']:16s} {r['backend']:7s} {r['limit']:6.2f} {r['wall']:7.3f} "
            f"{r['wall'] / r['limit']:8.3f} {r['objective']:10.6f} {g['greedy']:10.6f} "
            f"{r['objective'] - g['greedy']:11.2e} "
            f"{'-' if opt is None else f'{opt:.6f}':>10s} {r['lower_bound']:10.6f} "
            f"{r['gap']:9.2e} {r['leaves']:6d} {r['status']:>10s}"
        )
    worst = max(runs, key=lambda r: r["wall"] / r["limit"])
    over = max(runs, key=lambda r: r["wall"] - r["limit"])
    lines.append(
        f"worst wall/limit {worst['wall'] / worst['limit']:.3f} ({worst['case']}, "
        f"{worst['backend']}, limit {worst['limit']}); largest overrun "
        f"{over['wall'] - over['limit']:+.3f} s ({over['case']}, {over['backend']}, "
        f"limit {over['limit']})"
    )
    bad = [r for r in runs if r["objective"] > ref[r["case"]]["greedy"] * (1 + 1e-9)]
    lines.append(
        f"runs worse than greedy CART: {len(bad)} of {len(runs)}"
        + "".join(
            f"\n  {r['case']} {r['backend']} {r['limit']}: "
            f"{r['objective']:.6f} > {ref[r['case']]['greedy']:.6f}"
            for r in bad
        )
    )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES))
    ap.add_argument("--limits", default=",".join(str(x) for x in DEFAULT_LIMITS))
    ap.add_argument("--backends", default="numpy")
    ap.add_argument(
        "--optimum",
        type=float,
        default=60.0,
        help="seconds for the run that certifies the optimum (0: none)",
    )
    ap.add_argument("--out", default=str(HERE / "results" / "trees_anytime"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        kind, payload = args.worker.split(":", 1)
        spec = json.loads(payload)
        if kind == "run":
            print(json.dumps(one_run(spec["case"], spec["limit"], spec["backend"])))
        else:
            print(json.dumps(case_reference(spec["case"], spec["optimum"])))
        return
    cases = [c for c in args.cases.split(",") if c]
    limits = [float(x) for x in args.limits.split(",") if x]
    backends = [b for b in args.backends.split(",") if b]
    refs, runs = [], []
    for c in cases:
        refs.append(
            _subprocess(["--worker", "ref:" + json.dumps({"case": c, "optimum": args.optimum})])
        )
        print(json.dumps(refs[-1]), file=sys.stderr, flush=True)
        for b in backends:
            for lim in limits:
                runs.append(
                    _subprocess(
                        ["--worker", "run:" + json.dumps({"case": c, "limit": lim, "backend": b})]
                    )
                )
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    text = table(refs, runs)
    print(text)
    now = _dt.datetime.now(_dt.UTC)
    head = (
        f"# bench_trees_anytime, {now:%Y-%m-%d %H:%M} UTC, "
        f"{platform.machine()}, python {platform.python_version()}, "
        f"affinity {sorted(os.sched_getaffinity(0))}\n"
        "# wall = seconds around fit (binarization included), first fit of a fresh "
        "process; greedy = numpy greedy CART oracle pruned at lambda\n"
    )
    Path(args.out + ".txt").write_text(head + text + "\n")
    Path(args.out + ".json").write_text(json.dumps({"refs": refs, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
