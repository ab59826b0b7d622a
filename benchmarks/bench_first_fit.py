"""What a first symbolic fit costs: compilation against search, in CPU seconds.

Three measurements, each in its own fresh process (``--cpu`` pins them to one core):

1. **Fresh install**: a new ``HOME`` (so empty ``~/.cache/jaxsr``, the default folder of
   JAX's persistent compilation cache that jaxsr turns on) and no cache variables set:
   a default ``SymbolicRegressor().fit`` on scikit-learn's diabetes data (442 x 10).
   Reported: the fit's CPU seconds, the refit's in the same process (the search alone)
   and the XLA compilations.
2. **Ten shapes in one warm process** (the same fresh ``HOME``): generated data of N from
   50 to 5,000 rows, M from 1 to 20 columns, ``max_nodes`` default and 25; each fit is
   timed, then refitted: ``fit - refit`` is that fit's compilation. Reported: the
   compilation of fits 2-10 as a share of their fit CPU.
3. **A new process with a warm disk cache** (the ``HOME`` of 1 and 2): the diabetes fit
   again; its compilation is ``fit - refit``.

Targets: (1) at most 4 CPU s; (2) at most 25%; (3) at most 0.5 CPU s of compilation.

Run: ``python benchmarks/bench_first_fit.py [--cpu 1]``; writes
``benchmarks/results/first_fit.txt``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "first_fit.txt"

# (rows, columns, max_nodes or None for the default)
SHAPES = [
    (50, 1, None),
    (100, 2, None),
    (200, 3, 25),
    (442, 10, None),
    (500, 5, None),
    (1000, 8, 25),
    (1500, 12, None),
    (2000, 15, None),
    (3000, 20, None),
    (5000, 4, None),
]

CHILD = r"""
import json, sys, time
t_import = time.process_time()
import jax
import numpy as np
from jaxsr import SymbolicRegressor
t_import = time.process_time() - t_import
compiles = []
def listener(event, duration, fun_name=None, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        compiles.append(str(fun_name))
jax.monitoring.register_event_duration_secs_listener(listener)

def timed(X, y, **kw):
    compiles.clear()
    c = time.process_time()
    m = SymbolicRegressor(progress=False, **kw).fit(X, y)
    return time.process_time() - c, len(compiles), m.expression_

def fit_and_refit(X, y, **kw):
    fit, n_compiles, expr = timed(X, y, **kw)
    refit, again, expr2 = timed(X, y, **kw)
    assert expr == expr2, (expr, expr2)
    return {"fit_cpu": fit, "refit_cpu": refit, "compile_cpu": max(0.0, fit - refit),
            "compilations": n_compiles, "compilations_refit": again, "expression": expr}

mode = sys.argv[1]
out = {"import_cpu": t_import, "cache_dir": jax.config.jax_compilation_cache_dir}
if mode == "diabetes":
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    out["diabetes"] = fit_and_refit(X, y)
else:
    rng = np.random.default_rng(0)
    rows = []
    for n, m, max_nodes in json.loads(sys.argv[2]):
        X = rng.uniform(1.0, 3.0, (n, m))
        y = 2.0 * X[:, 0] + X[:, -1] ** 2 / X[:, 0] + 0.1 * rng.standard_normal(n)
        kw = {} if max_nodes is None else {"max_nodes": max_nodes}
        r = fit_and_refit(X, y, **kw)
        r.update(n=n, m=m, max_nodes=max_nodes)
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)
    out["shapes"] = rows
print(json.dumps(out))
"""


def _child(mode: str, home: str, cpu: int | None, *extra: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JAXSR_", "JAX_COMPILATION", "XDG_CACHE"))
    }
    env["HOME"] = home
    cmd = [sys.executable, "-c", CHILD, mode, *extra]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", type=int, default=None, help="pin the processes to this core")
    ap.add_argument("--out", default=str(RESULT))
    args = ap.parse_args(argv)
    home = tempfile.mkdtemp(prefix="jaxsr-first-fit-home-")
    fresh = _child("diabetes", home, args.cpu)
    shapes = _child("shapes", home, args.cpu, json.dumps(SHAPES))
    warm = _child("diabetes", home, args.cpu)

    d1, d3 = fresh["diabetes"], warm["diabetes"]
    rows = shapes["shapes"]
    later = rows[1:]
    share = sum(r["compile_cpu"] for r in later) / sum(r["fit_cpu"] for r in later)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    lines = [
        " ".join(
            ["$ python benchmarks/bench_first_fit.py", *(sys.argv[1:] if argv is None else argv)]
        )
        + f"   (commit {commit or '?'})",
        "bench_first_fit: the cost of a first symbolic fit (CPU seconds, "
        + (f"pinned to core {args.cpu}" if args.cpu is not None else "unpinned")
        + ")",
        f"date {datetime.date.today()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, python {platform.python_version()}",
        "compile CPU = fit CPU - refit CPU of the same data in the same process",
        "",
        "(1) fresh install (new HOME, empty caches), diabetes 442 x 10, defaults:",
        f"    fit {d1['fit_cpu']:.2f} CPU s (target <= 4), refit {d1['refit_cpu']:.2f}, "
        f"compile {d1['compile_cpu']:.2f}; {d1['compilations']} XLA compilations; "
        f"import {fresh['import_cpu']:.2f} CPU s",
        "",
        "(2) one warm process, 10 shapes (the same HOME after (1)):",
        "       N    M max_nodes   fit  refit compile compilations",
    ]
    for r in rows:
        lines.append(
            f"    {r['n']:5d} {r['m']:4d} {str(r['max_nodes'] or 50):>9s} "
            f"{r['fit_cpu']:6.2f} {r['refit_cpu']:6.2f} {r['compile_cpu']:6.2f} "
            f"{r['compilations']:5d}"
        )
    lines += [
        f"    fits 2-10: compile {sum(r['compile_cpu'] for r in later):.2f} of "
        f"{sum(r['fit_cpu'] for r in later):.2f} fit CPU s = {share:.0%} (target <= 25%)",
        "",
        "(3) new process, warm disk cache, diabetes again:",
        f"    fit {d3['fit_cpu']:.2f} CPU s, refit {d3['refit_cpu']:.2f}, compile "
        f"{d3['compile_cpu']:.2f} (target <= 0.5); {d3['compilations']} programs loaded; "
        f"import {warm['import_cpu']:.2f} CPU s",
        "",
        "raw: " + json.dumps({"fresh": fresh, "shapes": shapes, "warm": warm}),
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
