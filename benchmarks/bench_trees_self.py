"""Time OptimalTreeRegressor on the OSRT paper's binarized datasets (no peers here).

For every CSV in ``shared/data/osrt/binarized/`` (last column = target, the others 0/1):
fit at ``regularization=0.01, depth_budget=5``, squared loss, ``min_samples_leaf=1`` and
print rows, binary features, equivalence classes, seconds of the first fit (with JAX
compilation for ``--backend jax``) and the best of ``--repeat`` fits, objective, lower
bound, leaves and whether the optimum is certified, and the seconds of the ``osrt`` package
recorded in ``shared/data/osrt/anchors/osrt_0.2.2_binarized_anchors.csv`` for the same
setting (``minimum_captured_points`` 1, all bounds on; ``-``: no such run, ``t/o``: osrt
timed out).

Usage::

    python benchmarks/bench_trees_self.py [--lam 0.01] [--depth 5] [--loss squared_error]
                                          [--time-limit 120] [--repeat 1]
                                          [--backend auto|numpy|jax] [dataset.csv ...]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from jaxsr.datasets import shared_data_dir
from jaxsr.trees import OptimalTreeRegressor


def _anchor_seconds(folder):
    path = folder.parent / "anchors" / "osrt_0.2.2_binarized_anchors.csv"
    if not path.exists():
        return {}
    a = pd.read_csv(path)
    a = a[(a.minimum_captured_points == 1) & a.k_cluster & a.look_ahead]
    return {
        (r.dataset, r.metric, float(r["lambda"]), int(r.depth_budget)): (
            "t/o" if r.timed_out else f"{r.solver_seconds:.3f}"
        )
        for _, r in a.iterrows()
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("datasets", nargs="*")
    p.add_argument("--lam", type=float, default=0.01)
    p.add_argument("--depth", type=int, default=5, help="depth budget; 0 = no limit")
    p.add_argument("--loss", default="squared_error")
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--repeat", type=int, default=1, help="fits per dataset (best time)")
    p.add_argument("--backend", default="auto", choices=("auto", "numpy", "jax"))
    a = p.parse_args(argv)
    folder = shared_data_dir() / "osrt" / "binarized"
    names = a.datasets or sorted(f.name for f in folder.glob("*.csv"))
    anchors = _anchor_seconds(folder)
    metric = "L1" if a.loss == "absolute_error" else "L2"
    print(f"lambda={a.lam} depth_budget={a.depth or None} loss={a.loss} backend={a.backend}")
    print(
        f"{'dataset':<50} {'rows':>5} {'feat':>4} {'classes':>7} {'first_s':>8} {'best_s':>7} "
        f"{'objective':>10} {'lower_bd':>10} {'leaves':>6} optimal  osrt_s"
    )
    for name in names:
        d = pd.read_csv(folder / name)
        X, y = d.iloc[:, :-1].to_numpy(), d.iloc[:, -1].to_numpy(float)
        times = []
        for _ in range(a.repeat):
            m = OptimalTreeRegressor(
                regularization=a.lam,
                depth_budget=a.depth or None,
                loss=a.loss,
                time_limit=a.time_limit,
                backend=a.backend,
            )
            t0 = time.perf_counter()
            m.fit(X, y)
            times.append(time.perf_counter() - t0)
        first, best = times[0], min(times)
        classes = np.unique(X, axis=0).shape[0]
        osrt_s = anchors.get((name, metric, float(a.lam), int(a.depth)), "-")
        print(
            f"{name:<50} {X.shape[0]:>5} {X.shape[1]:>4} {classes:>7} {first:>8.3f} "
            f"{best:>7.3f} {m.objective_:>10.6f} {m.lower_bound_:>10.6f} {m.n_leaves_:>6} "
            f"{str(m.optimal_):<7} {osrt_s:>7}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
