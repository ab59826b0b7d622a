"""Exact recovery of the 17 built-in Feynman equations by strategy.

For each equation and strategy: fit ``SymbolicRegressor`` on ``n`` samples (seed 0) and
score on fresh inputs (seed 1). "Exact" means a relative test MSE
``mean((pred - y)**2) / mean(y**2) < 1e-16``. Exceptions are counted, not raised.

    PYTHONPATH=$PWD taskset -c 1 .venv/bin/python benchmarks/bench_sr_recovery.py \
        --n 300 --max-nodes 30 --max-time 0 --max-iterations 200 \
        --out benchmarks/results/sr_recovery.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--max-nodes", type=int, default=30)
    p.add_argument("--max-time", type=float, default=20.0, help="seconds; 0: no limit")
    p.add_argument("--max-iterations", type=int, default=0, help="0: no limit")
    p.add_argument("--strategies", default="1,2,3,4")
    p.add_argument("--equations", default="")
    p.add_argument("--out", default="")
    p.add_argument("--label", default="")
    a = p.parse_args(argv)

    from jaxsr import SymbolicRegressor
    from jaxsr.datasets import feynman_equation, feynman_equation_names

    names = a.equations.split(",") if a.equations else feynman_equation_names()
    rows = []
    for s in [int(v) for v in a.strategies.split(",")]:
        for name in names:
            X, y = feynman_equation(name, a.n, seed=0)
            Xt, yt = feynman_equation(name, 1000, seed=1)
            t0 = time.perf_counter()
            row = {"strategy": s, "equation": name}
            try:
                sr = SymbolicRegressor(
                    strategy=s,
                    max_nodes=a.max_nodes,
                    max_time=a.max_time or None,
                    max_iterations=a.max_iterations or None,
                ).fit(X, y)
                with np.errstate(all="ignore"):
                    rel = float(np.mean((sr.predict(Xt) - yt) ** 2) / np.mean(yt**2))
                row.update(
                    rel_test_mse=rel if np.isfinite(rel) else float("inf"),
                    exact=bool(rel < 1e-16),
                    n_nodes=int(sr.expression_tree_.n_nodes),
                    stop=sr.stop_reason_,
                    expression=sr.expression_,
                    error="",
                )
            except Exception as e:  # noqa: BLE001 - counted, reported
                row.update(
                    rel_test_mse=float("inf"),
                    exact=False,
                    n_nodes=-1,
                    stop="error",
                    expression="",
                    error=f"{type(e).__name__}: {e}"[:200],
                )
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            print(
                f"s{s} {name:9s} exact={row['exact']!s:5s} rel={row['rel_test_mse']:.2e} "
                f"nodes={row['n_nodes']:3d} {row['stop']:15s} {row['seconds']:6.1f}s "
                f"{row['error']}",
                file=sys.stderr,
                flush=True,
            )
    summary = {}
    for s in sorted({r["strategy"] for r in rows}):
        rs = [r for r in rows if r["strategy"] == s]
        summary[s] = {
            "exact": sum(r["exact"] for r in rs),
            "errors": sum(r["stop"] == "error" for r in rs),
            "of": len(rs),
        }
        print(f"strategy {s}: exact {summary[s]['exact']}/{len(rs)}, errors {summary[s]['errors']}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(
                {
                    "label": a.label,
                    "n": a.n,
                    "max_nodes": a.max_nodes,
                    "max_time": a.max_time,
                    "max_iterations": a.max_iterations,
                    "summary": summary,
                    "rows": rows,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
