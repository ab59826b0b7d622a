"""The general-case constant of a node equation (section 2.1): exhaustive vs branch and bound.

One general-case constant (``c != 0``: the node is under a division's denominator) at
N = 1e3, 1e4, 1e5 (1e6 with ``--sizes``): the earlier solver (every admissible zero
scored on all N terms, ``O(N**2)``, then Gauss-Newton) against the branch and bound of
``jaxsr/symbolic/constant.py`` (same candidate, then the same Gauss-Newton). Two kinds of
equations:

* ``random``: ``a, b, c, d`` standard normal (poles among the zeros everywhere: the hard
  case for pruning);
* ``tree``: the ``k + x`` child equations of the general nodes of the random valid tree
  of ``bench_symbolic_iteration.py`` (10 variables in [1, 2], 51 nodes), i.e. the rows
  a strategy-1 iteration on that tree solves.

The branch and bound is forced at every N (the library scores every candidate up to
``EXHAUSTIVE_MAX = 1024`` patterns, where it compiles faster).

Per (kind, N): median CPU and wall seconds of one solve (warm), the ratio, the exact
evaluations of f (N terms each) the branch and bound made against the admissible
candidates the exhaustive scorer evaluates, and the relative difference of the two f's.
Run pinned to one core: ``taskset -c 1 python benchmarks/bench_constant.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def equations(kind: str, n: int, count: int):
    import jax.numpy as jnp

    if kind == "random":
        rng = np.random.default_rng(n)
        return [tuple(rng.normal(size=n) for _ in range(4)) for _ in range(count)]
    from bench_symbolic_iteration import valid_tree

    from jaxsr.symbolic import node_equations, node_semantics
    from jaxsr.symbolic.equations import child_equation
    from jaxsr.symbolic.expression import ADD

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, size=(n, 10))
    e = valid_tree(rng, 51, X[:1000])
    y = e.evaluate(X) + rng.normal(size=n)
    tree = e.padded(dtype=np.float64)
    eq = node_equations(tree, node_semantics(tree, jnp.asarray(X.T)), jnp.asarray(y))
    out = []
    for j in range(int(tree.n_nodes)):
        row = [np.asarray(v[j]) for v in eq]
        if np.all(row[2] == 0):
            continue
        a, b, c, d = (np.asarray(v) for v in child_equation(ADD, True, *row, X[:, j % 10]))
        if np.all(c == c[0]) and np.all(d == d[0]):
            continue  # equation 34 applies
        out.append((a, b, c, d))
    step = max(1, len(out) // count)
    return out[::step][:count]


def timed(fn, args, repeat):
    import jax

    fn = fn.lower(*args).compile()  # compile only (an exhaustive call at 1e5 is a minute)
    walls, cpus, res = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = jax.block_until_ready(fn(*args))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5])
    p.add_argument("--kinds", nargs="+", default=["random", "tree"])
    p.add_argument("--count", type=int, default=3, help="equations per (kind, N)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--old-max",
        type=float,
        default=1e5,
        help="largest N at which the exhaustive solver is timed",
    )
    p.add_argument(
        "--old-count",
        type=int,
        default=1,
        help="equations timed with the exhaustive solver at N >= 1e5",
    )
    p.add_argument("--out", default=os.path.join(HERE, "results", "constant"))
    args = p.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from jaxsr.symbolic import constant as C

    new = jax.jit(lambda a, b, c, d: C._general(a, b, c, d, exhaustive=False))
    old = jax.jit(lambda a, b, c, d: C._general(a, b, c, d, exhaustive=True))
    points = jax.jit(lambda a, b, c, d: C._best_candidate(a, b, c, d)[2])
    n_adm = jax.jit(lambda a, b, c, d: jnp.sum(C._prepare(a, b, c, d, None, None)[1]))
    rows = []
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    for kind in args.kinds:
        for n in (int(s) for s in args.sizes):
            for i, eq in enumerate(equations(kind, n, args.count)):
                A = [jnp.asarray(v) for v in eq]
                r = {"kind": kind, "n": n, "eq": i}
                r["new_wall_s"], r["new_cpu_s"], (k_new, f_new) = timed(new, A, args.repeat)
                r["points"] = int(points(*A))
                r["admissible"] = int(n_adm(*A))
                r["f_new"] = float(f_new)
                if n <= args.old_max and (n < 1e5 or i < args.old_count):
                    rep = args.repeat if n < 1e5 else 1
                    r["old_wall_s"], r["old_cpu_s"], (k_old, f_old) = timed(old, A, rep)
                    r["f_old"] = float(f_old)
                    r["rel_diff_f"] = (
                        abs(r["f_new"] - r["f_old"]) / r["f_old"]
                        if np.isfinite(r["f_old"]) and r["f_old"] > 0
                        else 0.0
                    )
                rows.append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
                with open(args.out + ".json", "w") as fh:  # as it goes
                    json.dump({"rows": rows}, fh, indent=1)
    # table: medians per (kind, N)
    lines = [
        "| kind | N | eqs | old CPU s | new CPU s | old / new (CPU) | new wall s | "
        "exact evaluations new / old | max rel diff f |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in args.kinds:
        for n in (int(s) for s in args.sizes):
            rs = [r for r in rows if r["kind"] == kind and r["n"] == n]
            if not rs:
                continue
            olds = [r["old_cpu_s"] for r in rs if "old_cpu_s" in r]
            new_c = statistics.median(r["new_cpu_s"] for r in rs)
            old_c = statistics.median(olds) if olds else None
            pairs = [r["new_cpu_s"] for r in rs if "old_cpu_s" in r]
            ratio = (
                statistics.median(o / max(nw, 1e-9) for o, nw in zip(olds, pairs, strict=True))
                if olds
                else None
            )
            frac = statistics.median(r["points"] / max(r["admissible"], 1) for r in rs)
            diff = max((r.get("rel_diff_f", 0.0) for r in rs), default=0.0)
            lines.append(
                f"| {kind} | {n:.0e} | {len(rs)} | "
                f"{'-' if old_c is None else f'{old_c:.4g}'} | {new_c:.4g} | "
                f"{'-' if ratio is None else f'{ratio:.1f}x'} | "
                f"{statistics.median(r['new_wall_s'] for r in rs):.4g} | "
                f"{frac:.3f} | {diff:.1e} |"
            )
    text = "\n".join(lines)
    meta = {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "device": str(jax.devices()[0]),
        "argv": sys.argv[1:],
        "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "fanout": C.FANOUT,
        "point_budget": C.POINT_BUDGET,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as fh:
        json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    with open(args.out + ".txt", "w") as fh:
        fh.write(json.dumps(meta) + "\n\n" + text + "\n")
    print(text)


if __name__ == "__main__":
    main()
