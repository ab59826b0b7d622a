"""Time of one iteration of strategy 1 (all four searches on all nodes) on a 100-node tree,
N = 100,000 patterns and 10 variables, as asked by issue 2.

Run: ``python benchmarks/bench_symbolic_iteration.py [--n-samples 100000] [--repeat 3]``.
Prints the compile+first iteration time, then each warm iteration with the time of every
kernel (semantics/equations/S, the four searches) and the tree size.
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n-samples", type=int, default=100_000)
    p.add_argument("--n-features", type=int, default=10)
    p.add_argument("--n-nodes", type=int, default=101, help="odd: 2*operators + 1")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
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
            t0 = time.perf_counter()
            rec = eng.step(1)
            jax.block_until_ready(eng.XT)
            dt = time.perf_counter() - t0
            label = "compile + iteration" if it == 0 else f"warm iteration {it}"
            what = "no change" if rec is None else f"{rec['search']} at node {rec['node']}"
            print(f"{label}: {dt:.2f} s ({what}; tree {eng.expr.n_nodes} nodes, capacity "
                  f"{eng.capacity}, slots {eng.n_slots}, MSE {eng.mse:.6g})")
            if rec is None:
                break


if __name__ == "__main__":
    main()
