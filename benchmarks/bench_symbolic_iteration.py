"""Time of one iteration of strategy 1 (all four searches on all nodes) on a 100-node tree,
N = 100,000 patterns and 10 variables, as asked by issue 2.

Run: ``python benchmarks/bench_symbolic_iteration.py [--n-samples 100000] [--repeat 3]``.
Prints the compile + first iteration time, then each warm iteration (wall and process CPU
seconds) with the tree size, and the load average (other processes share the CPU: compare
figures taken at similar load).

``--examples`` also times the paper's examples after a warm-up fit of the same shapes:
Newton's law (section 3, Table 3; strategy 1, goal MSE = mean target) and
``y = 2.4*x1 - x2/x1 - 10`` (x1 = 1..100, x2 = 200, 198, ..., 2, max 13 nodes).
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsr._config import precision
from jaxsr.symbolic.expression import ADD, DIV, MUL, SUB, Expression
from jaxsr.symbolic.strategies import DomeSearch


def random_tree(rng, n_ops: int, n_features: int) -> Expression:
    def build(n):
        if n == 0:
            if rng.uniform() < 0.4:
                return Expression.constant(float(np.round(rng.uniform(0.5, 3.0), 3)))
            return Expression.variable(int(rng.integers(n_features)))
        k = int(rng.integers(0, n))
        op = int(rng.choice([ADD, SUB, MUL, DIV], p=[0.35, 0.15, 0.3, 0.2]))
        return Expression.binary(op, build(k), build(n - 1 - k))

    return build(n_ops)


def examples() -> None:
    from jaxsr.symbolic import SymbolicRegressor

    try:
        from jaxsr.datasets import make_newton_gravitation
        X, y = make_newton_gravitation(1000, seed=0)
    except ImportError:  # pragma: no cover
        rng = np.random.default_rng(0)
        X = 10 ** np.c_[rng.uniform(23, 25, (1000, 2)), rng.uniform(8, 12, 1000)]
        y = 6.67392e-11 * X[:, 0] * X[:, 1] / X[:, 2] ** 2
    x1 = np.arange(1.0, 101.0)
    x2 = np.arange(200.0, 0.0, -2.0)
    runs = [
        ("Newton, strategy 1", X, y, dict(strategy=1, goal_mse=float(np.mean(y)))),
        ("2.4*x1 - x2/x1 - 10, strategy 1", np.c_[x1, x2], 2.4 * x1 - x2 / x1 - 10,
         dict(strategy=1, max_nodes=13)),
        ("2.4*x1 - x2/x1 - 10, strategy 3", np.c_[x1, x2], 2.4 * x1 - x2 / x1 - 10,
         dict(strategy=3, max_nodes=13)),
    ]
    for name, Xr, yr, params in runs:
        t0 = time.perf_counter()
        SymbolicRegressor(**params).fit(Xr, yr)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        sr = SymbolicRegressor(**params).fit(Xr, yr)
        warm = time.perf_counter() - t0
        print(f"{name}: {sr.n_iterations_} iterations, {warm:.3f} s warm ({cold:.1f} s with "
              f"compilation), MSE {sr.mse_:.6g} ({sr.stop_reason_}), {sr.expression_}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n-samples", type=int, default=100_000)
    p.add_argument("--n-features", type=int, default=10)
    p.add_argument("--n-nodes", type=int, default=101, help="odd: 2*operators + 1")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--examples", action="store_true", help="also time the paper's examples")
    args = p.parse_args()
    if args.examples:
        examples()
    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, size=(args.n_samples, args.n_features))
    # a valid tree (no denominator near 0) of exactly n_nodes nodes
    for _ in range(1000):
        e = random_tree(rng, (args.n_nodes - 1) // 2, args.n_features)
        ok = all(np.min(np.abs(e.subtree(int(e.right[i])).evaluate(X[:1000]))) > 1e-3
                 for i in range(e.n_nodes) if e.op[i] == DIV)
        if ok:
            break
    y = e.evaluate(X) + rng.normal(size=args.n_samples)
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, "
          f"N={args.n_samples}, M={args.n_features}, tree of {e.n_nodes} nodes, "
          f"height {e.height}, forbidden-set slots {int(e.forbidden_slot_counts().max())}")
    with precision("float64"):
        eng = DomeSearch(jnp.asarray(X.T), jnp.asarray(y), np.ones(args.n_features, bool),
                         max_nodes=None, max_height=None, min_improvement=1e-6,
                         feature_names=None)
        eng.expr = e
        eng.mse, _ = eng._true_mse(e)
        for it in range(args.repeat + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            rec = eng.step(1)
            jax.block_until_ready(eng.XT)
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            label = "compile + iteration" if it == 0 else f"warm iteration {it}"
            what = "no change" if rec is None else f"{rec['search']} at node {rec['node']}"
            print(f"{label}: {dt:.2f} s ({dc:.2f} s CPU; {what}; tree {eng.expr.n_nodes} "
                  f"nodes, capacity {eng.capacity}, slots {eng.n_slots}, MSE {eng.mse:.6g})")
            if rec is None:
                break
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
