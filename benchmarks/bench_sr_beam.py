"""Beam search against its width on the 17 built-in rational Feynman equations.

For each equation, strategy and beam width ``B``: fit ``SymbolicRegressor(beam_width=B)``
on ``n`` samples (seed 0) and score on fresh inputs (seed 1). "Exact" means a relative
test MSE ``mean((pred - y)**2) / mean(y**2) < 1e-16``. Times are of a warm fit: each
equation is first fitted once at ``B = 1`` and once at the smallest ``B > 1`` with
``max_iterations=2`` (compiling the kernels of its shapes; not counted), then every width
is fitted once and timed (wall and process CPU seconds). Run it pinned to one core::

    PYTHONPATH=$PWD taskset -c 1 /work/main/.venv/bin/python benchmarks/bench_sr_beam.py \
        --widths 1,4,16,64 --strategies 2 --out benchmarks/results/sr_beam.json

Prints a table per strategy: exact recoveries and median / total fit time per ``B``, and
the ratio of the median to ``B = 1``'s.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def fit_one(name, strategy, width, n, max_nodes, max_time):
    from jaxsr import SymbolicRegressor
    from jaxsr.datasets import feynman_equation

    X, y = feynman_equation(name, n, seed=0)
    Xt, yt = feynman_equation(name, 1000, seed=1)
    row = {"equation": name, "strategy": strategy, "beam_width": width}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        sr = SymbolicRegressor(
            strategy=strategy,
            max_nodes=max_nodes,
            beam_width=width,
            max_time=max_time or None,
            progress=False,
        ).fit(X, y)
        with np.errstate(all="ignore"):
            rel = float(np.mean((sr.predict(Xt) - yt) ** 2) / np.mean(yt**2))
        row.update(
            rel_test_mse=rel if np.isfinite(rel) else float("inf"),
            exact=bool(rel < 1e-16),
            n_nodes=int(sr.n_nodes_),
            stop=sr.stop_reason_,
            iterations=int(sr.n_iterations_),
            expression=sr.expression_,
            readable=str(sr),
            error="",
        )
    except Exception as e:  # noqa: BLE001 - counted, reported
        row.update(
            rel_test_mse=float("inf"),
            exact=False,
            n_nodes=-1,
            stop="error",
            iterations=0,
            expression="",
            readable="",
            error=f"{type(e).__name__}: {e}"[:200],
        )
    row["seconds"] = time.perf_counter() - t0
    row["cpu_seconds"] = time.process_time() - c0
    return row


def warm(name, strategy, widths, n, max_nodes):
    from jaxsr import SymbolicRegressor
    from jaxsr.datasets import feynman_equation

    X, y = feynman_equation(name, n, seed=0)
    for w in sorted({1, min([w for w in widths if w > 1], default=1)}):
        try:
            SymbolicRegressor(
                strategy=strategy,
                max_nodes=max_nodes,
                beam_width=w,
                max_iterations=2,
                progress=False,
            ).fit(X, y)
        except Exception:  # noqa: BLE001 - the timed fit reports it
            pass


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--max-nodes", type=int, default=30)
    p.add_argument("--max-time", type=float, default=60.0, help="seconds per fit; 0: none")
    p.add_argument("--widths", default="1,4,16,64")
    p.add_argument("--strategies", default="2")
    p.add_argument("--equations", default="")
    p.add_argument("--no-warm", action="store_true")
    p.add_argument("--out", default="")
    a = p.parse_args(argv)

    import jaxsr
    from jaxsr.datasets import feynman_equation_names

    jaxsr.enable_compilation_cache("/tmp/jaxsr_cache_sr_beam")
    names = a.equations.split(",") if a.equations else feynman_equation_names()
    widths = [int(w) for w in a.widths.split(",")]
    strategies = [int(s) for s in a.strategies.split(",")]
    rows = []
    t_start = time.perf_counter()
    for s in strategies:
        for name in names:
            if not a.no_warm:
                warm(name, s, widths, a.n, a.max_nodes)
            for w in widths:
                row = fit_one(name, s, w, a.n, a.max_nodes, a.max_time)
                rows.append(row)
                print(
                    f"s{s} B={w:<3d} {name:9s} exact={row['exact']!s:5s} "
                    f"rel={row['rel_test_mse']:.1e} nodes={row['n_nodes']:3d} "
                    f"it={row['iterations']:3d} {row['stop']:15s} {row['seconds']:6.1f}s "
                    f"{row['readable'][:60]} {row['error']}",
                    file=sys.stderr,
                    flush=True,
                )
                if a.out:  # partial results survive an interrupted run
                    _save(a, rows, widths, strategies, t_start)
    summary = _save(a, rows, widths, strategies, t_start)
    print(_table(summary))


def _summary(rows, widths, strategies):
    out = {}
    for s in strategies:
        base = None
        for w in widths:
            rs = [r for r in rows if r["strategy"] == s and r["beam_width"] == w]
            if not rs:
                continue
            med = float(np.median([r["seconds"] for r in rs]))
            base = med if w == 1 else base
            out[f"s{s}_B{w}"] = {
                "strategy": s,
                "beam_width": w,
                "of": len(rs),
                "exact": sum(r["exact"] for r in rs),
                "errors": sum(r["stop"] == "error" for r in rs),
                "max_time_stops": sum(r["stop"] == "max_time" for r in rs),
                "median_seconds": med,
                "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in rs])),
                "total_seconds": float(np.sum([r["seconds"] for r in rs])),
                "median_ratio_to_B1": (med / base) if base else None,
                "exact_equations": [r["equation"] for r in rs if r["exact"]],
            }
    return out


def _table(summary):
    lines = [
        "| strategy | B | exact | median fit s (wall) | median CPU s | ratio to B=1 | "
        "total s | max_time stops |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in summary.values():
        ratio = "-" if v["median_ratio_to_B1"] is None else f"{v['median_ratio_to_B1']:.2f}"
        lines.append(
            f"| {v['strategy']} | {v['beam_width']} | {v['exact']}/{v['of']} | "
            f"{v['median_seconds']:.2f} | {v['median_cpu_seconds']:.2f} | {ratio} | "
            f"{v['total_seconds']:.0f} | {v['max_time_stops']} |"
        )
    return "\n".join(lines)


def _save(a, rows, widths, strategies, t_start):
    summary = _summary(rows, widths, strategies)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(
                {
                    "n": a.n,
                    "max_nodes": a.max_nodes,
                    "max_time": a.max_time,
                    "widths": widths,
                    "strategies": strategies,
                    "elapsed_seconds": time.perf_counter() - t_start,
                    "summary": summary,
                    "rows": rows,
                },
                f,
                indent=1,
            )
        with open(a.out.rsplit(".", 1)[0] + ".txt", "w") as f:
            f.write(_table(summary) + "\n")
    return summary


if __name__ == "__main__":
    main()
