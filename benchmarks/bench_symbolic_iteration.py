"""The time of one symbolic-regression iteration against a matrix product, measured in one run.

Parts (any combination; default ``--table``):

* ``--table``: one strategy-1 iteration (all four searches on all nodes) on a random valid
  tree of ``--nodes`` nodes (10 variables, N patterns ``--sizes``), warm (compiled), median
  of ``--repeat`` iterations on the same tree (wall and process CPU seconds), with the time
  of a ``[101, N] x [N, 40]`` float64 matrix product measured in the same process, the
  ratio of the two, the peak memory of the process (RSS; and the device's peak where JAX
  reports it) and the compile + first iteration time. Each (N, nodes) runs in its own
  subprocess, so the peak memory is that configuration's.
* ``--feynman``: strategies 3 and 1 (``--strategies``) on the 17 built-in Feynman equations
  (N = 1000, 30 nodes): median warm fit (the second fit of the same shapes), wall and CPU
  seconds, per equation, and on how many strategy 3 is at most strategy 1's time.
* ``--cold``: the first fit in a fresh process (N = 1000, 5 variables, max 20 nodes,
  strategy 3), compilation included, with jaxsr's persistent compilation cache switched
  off (``JAXSR_COMPILATION_CACHE=0``); then the same in a fresh process whose cache
  (``jaxsr.enable_compilation_cache``, on by default) an earlier process filled; then
  with no cache and ``jaxsr.fast_compilation``.

Run (pin to one core on a shared machine and compare figures taken at similar load)::

    PYTHONPATH=$PWD taskset -c 1 python benchmarks/bench_symbolic_iteration.py \\
        --sizes 10000,100000 --nodes 11,51,101 --feynman --cold \\
        --out benchmarks/results/symbolic_iteration

``--one N NODES`` is the subprocess entry point (prints one JSON line).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def random_tree(rng, n_ops: int, n_features: int):
    from jaxsr.symbolic.expression import ADD, DIV, MUL, SUB, Expression

    def build(n):
        if n == 0:
            if rng.uniform() < 0.4:
                return Expression.constant(float(np.round(rng.uniform(0.5, 3.0), 3)))
            return Expression.variable(int(rng.integers(n_features)))
        k = int(rng.integers(0, n))
        op = int(rng.choice([ADD, SUB, MUL, DIV], p=[0.35, 0.15, 0.3, 0.2]))
        return Expression.binary(op, build(k), build(n - 1 - k))

    return build(n_ops)


def valid_tree(rng, n_nodes, X):
    """A random tree of exactly ``n_nodes`` nodes with no denominator near 0 on ``X``."""
    from jaxsr.symbolic.expression import DIV

    for _ in range(1000):
        e = random_tree(rng, (n_nodes - 1) // 2, X.shape[1])
        if all(
            np.min(np.abs(e.subtree(int(e.right[i])).evaluate(X))) > 1e-3
            for i in range(e.n_nodes)
            if e.op[i] == DIV
        ):
            return e
    raise RuntimeError("no valid tree found")


def _median_time(fn, repeat):
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def _device_peak_bytes():
    import jax

    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:  # noqa: BLE001 - not every backend reports it
        return None
    return stats.get("peak_bytes_in_use")


def one(
    n_samples: int, n_nodes: int, repeat: int, n_features: int = 10, lean: str = "auto"
) -> dict:
    """One (N, nodes) configuration in this process; returns the measurements. ``lean``:
    ``"auto"`` (the engine's choice, :data:`~jaxsr.symbolic.strategies.LEAN_BYTES`),
    ``"1"`` (always from the semantics alone, ``search_lean``) or ``"0"`` (never)."""
    import jax
    import jax.numpy as jnp

    from jaxsr._config import precision
    from jaxsr.symbolic import strategies
    from jaxsr.symbolic.strategies import DomeSearch

    if lean != "auto":
        strategies.LEAN_BYTES = 0 if lean == "1" else 2**62

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, size=(n_samples, n_features))
    e = valid_tree(rng, n_nodes, X[:1000])
    y = e.evaluate(X) + rng.normal(size=n_samples)
    out = {
        "n_samples": n_samples,
        "n_nodes": int(e.n_nodes),
        "n_features": n_features,
        "general_nodes": int(np.sum(e.forbidden_slot_counts() > 0)),
        "platform": jax.devices()[0].platform,
        "device": str(jax.devices()[0]),
    }
    with precision("float64"):
        XT, yj = jnp.asarray(X.T), jnp.asarray(y)
        # the reference: a [101, N] x [N, 40] float64 matrix product
        A = jnp.asarray(rng.normal(size=(101, n_samples)))
        B = jnp.asarray(rng.normal(size=(n_samples, 40)))
        mm = jax.jit(lambda a, b: a @ b)
        jax.block_until_ready(mm(A, B))
        out["matmul_s"], out["matmul_cpu_s"] = _median_time(
            lambda a=A, b=B: jax.block_until_ready(mm(a, b)), 5
        )
        del A, B
        eng = DomeSearch(
            XT,
            yj,
            np.ones(n_features, bool),
            max_nodes=None,
            max_height=None,
            min_improvement=1e-6,
            feature_names=None,
        )

        out["lean"] = None

        def iteration():
            eng.expr, eng._cache = e, None
            eng.mse = eng._true_mse(e)[0]
            rec = eng.step(1)
            jax.block_until_ready(eng.XT)
            return rec

        t0, c0 = time.perf_counter(), time.process_time()
        rec = iteration()
        out["first_s"] = time.perf_counter() - t0
        out["first_cpu_s"] = time.process_time() - c0
        out["change"] = None if rec is None else f"{rec['search']} at node {rec['node']}"
        out["lean"] = bool(eng.lean())
        out["iteration_s"], out["iteration_cpu_s"] = _median_time(iteration, repeat)
    out["ratio_to_matmul"] = out["iteration_s"] / out["matmul_s"]
    # on a shared machine the CPU seconds are the steadier measure
    out["ratio_to_matmul_cpu"] = out["iteration_cpu_s"] / max(out["matmul_cpu_s"], 1e-9)
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["device_peak_bytes"] = _device_peak_bytes()
    return out


def memory(n_samples: int, n_nodes: int, lean: bool, n_features: int = 10) -> dict:
    """Peak memory of the analysis and the closed-form searches of one strategy-1 iteration
    on the table's tree (the searches on the nodes whose equation has ``c == 0`` and no
    forbidden set; the general-case rows, hours at N = 1e6, are masked off), with the full
    analysis held (``lean=False``: semantics, equations, forbidden sets and
    ``search_all``) or from the semantics alone (``search_lean``). In this process:
    one configuration per subprocess."""
    import jax
    import jax.numpy as jnp

    from jaxsr._config import precision
    from jaxsr.symbolic import strategies
    from jaxsr.symbolic.expression import capacity_bucket
    from jaxsr.symbolic.strategies import DomeSearch

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, size=(n_samples, n_features))
    e = valid_tree(rng, n_nodes, X[:1000])
    y = e.evaluate(X) + rng.normal(size=n_samples)
    strategies.LEAN_BYTES = 0 if lean else 2**62
    with precision("float64"):
        XT, yj = jnp.asarray(X.T), jnp.asarray(y)
        del X
        eng = DomeSearch(
            XT,
            yj,
            np.ones(n_features, bool),
            max_nodes=None,
            max_height=None,
            min_improvement=1e-6,
            feature_names=None,
        )
        eng.expr, eng._cache = e, None
        eng.mse = eng._true_mse(e)[0]
        specs = [
            ("constant", "all"),
            ("variable", "all"),
            ("constant-variable", "all"),
            ("constant-expression", "nonterminal"),
        ]
        cap = capacity_bucket(e.n_nodes + 2)
        closed = np.zeros(cap, bool)
        # no division's second child above: c == 0 and no forbidden set (closed form)
        closed[: e.n_nodes] = e.forbidden_slot_counts() == 0
        masked = [(name, np.asarray(eng.masks(cap)[m]) & closed) for name, m in specs]
        t0, c0 = time.perf_counter(), time.process_time()
        found = eng.candidates(masked)
        jax.block_until_ready(eng.XT)
        first = (time.perf_counter() - t0, time.process_time() - c0)
        eng._cache = None
        t0, c0 = time.perf_counter(), time.process_time()
        found = eng.candidates(masked)
        warm = (time.perf_counter() - t0, time.process_time() - c0)
    return {
        "n_samples": n_samples,
        "n_nodes": int(e.n_nodes),
        "lean": lean,
        "closed_nodes": int(closed.sum()),
        "capacity": int(cap),
        "n_slots": eng.n_slots,
        "candidates": len(found),
        "best": None
        if not found
        else [found[0].search, found[0].node, found[0].variable, found[0].op, found[0].reduction],
        "first_s": first[0],
        "first_cpu_s": first[1],
        "warm_s": warm[0],
        "warm_cpu_s": warm[1],
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def feynman(n_samples=1000, max_nodes=30, strategies=(3, 1)) -> dict:
    """Median warm fit (the second fit of the same shapes) per strategy on the 17 built-in
    Feynman equations; strategy 3 is the default and the paper's faster one."""
    from jaxsr import SymbolicRegressor
    from jaxsr.datasets import feynman_equation, feynman_equation_names

    out = {}
    for strategy in strategies:
        rows = []
        for name in feynman_equation_names():
            X, y = feynman_equation(name, n_samples, seed=0)
            params = dict(strategy=strategy, max_nodes=max_nodes, progress=False)
            SymbolicRegressor(**params).fit(X, y)  # compile these shapes
            t0, c0 = time.perf_counter(), time.process_time()
            sr = SymbolicRegressor(**params).fit(X, y)
            rows.append(
                {
                    "equation": name,
                    "wall_s": time.perf_counter() - t0,
                    "cpu_s": time.process_time() - c0,
                    "iterations": sr.n_iterations_,
                    "n_nodes": sr.n_nodes_,
                    "mse": sr.mse_,
                    "stop": sr.stop_reason_,
                }
            )
            print(
                f"  feynman s{strategy} {name}: {rows[-1]['wall_s']:.3f} s "
                f"({rows[-1]['cpu_s']:.3f} CPU-s), {sr.n_iterations_} iterations",
                file=sys.stderr,
                flush=True,
            )
        out[f"strategy{strategy}"] = {
            "median_wall_s": statistics.median(r["wall_s"] for r in rows),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in rows),
            "fits": rows,
        }
    return out


_COLD = """
import time, resource
t0 = time.perf_counter()
import jax
import numpy as np
from jaxsr import SymbolicRegressor
compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, d, **kw: compiles.append(d)
    if event == "/jax/core/compile/backend_compile_duration" else None)
rng = np.random.default_rng(0)
X = rng.uniform(1.0, 2.0, size=(1000, 5))
y = 2.0 * X[:, 0] * X[:, 1] / X[:, 2] + X[:, 3] - 0.5 * X[:, 4]
t1, c1 = time.perf_counter(), time.process_time()
sr = SymbolicRegressor(max_nodes=20, strategy=3, progress=False).fit(X, y)
t2, c2 = time.perf_counter(), time.process_time()
big = sorted(compiles)[-5:]
print(f"{t2 - t1:.3f} {t2 - t0:.3f} {sr.n_iterations_} {c2 - c1:.3f} {len(compiles)} "
      f"{sum(compiles):.3f} " + (",".join(f"{v:.2f}" for v in big) or "-"))
"""


def _cold_run(cache_dir=None, fast=False) -> dict:
    env = {
        **os.environ,
        "JAXSR_COMPILATION_CACHE": "0",
        "PYTHONPATH": ROOT,
        "JAXSR_FAST_COMPILE": "1" if fast else "0",
    }
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if cache_dir is not None:
        env.update(JAXSR_COMPILATION_CACHE="1", JAXSR_CACHE_DIR=str(cache_dir))
    res = subprocess.run(
        [sys.executable, "-c", _COLD], capture_output=True, text=True, env=env, check=True
    )
    fit_s, total_s, iters, cpu_s, n_comp, comp_s, big = res.stdout.split()
    return {
        "first_fit_s": float(fit_s),
        "with_imports_s": float(total_s),
        "iterations": int(iters),
        "fit_cpu_s": float(cpu_s),
        "xla_compilations": int(n_comp),
        "xla_compile_wall_s": float(comp_s),
        "largest_compiles_s": [] if big == "-" else [float(v) for v in big.split(",")],
    }


def cold() -> dict:
    """The first fit in a fresh process with no compilation cache; then, in a second fresh
    process, with jaxsr's persistent compilation cache (on by default,
    ``jaxsr.enable_compilation_cache``) filled by a first process: what a user sees from
    the second session on; last, with no cache and jaxsr's fast compilation options
    (``JAXSR_FAST_COMPILE=1``, :func:`jaxsr.fast_compilation`)."""
    import tempfile

    out = _cold_run()
    out["fast_compile"] = _cold_run(fast=True)
    with tempfile.TemporaryDirectory(prefix="jaxsr-cache-") as tmp:
        _cold_run(tmp)  # fills the cache
        out["with_cache"] = _cold_run(tmp)
    return out


def _fmt_bytes(b):
    return "n/a" if b is None else f"{b / 2**30:.2f} GiB"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--table", action="store_true")
    p.add_argument("--sizes", default="10000,100000", help="comma-separated N")
    p.add_argument("--nodes", default="11,51,101", help="comma-separated tree sizes (odd)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument(
        "--row-timeout",
        type=float,
        default=None,
        help="--table: seconds per (N, nodes) row; a row past it is reported as "
        "not measured (the table is saved after every row)",
    )
    p.add_argument("--feynman", action="store_true")
    p.add_argument("--strategies", default="3,1", help="strategies of --feynman")
    p.add_argument("--cold", action="store_true")
    p.add_argument("--out", default="", help="write OUT.json and OUT.txt")
    p.add_argument("--one", nargs=2, type=int, metavar=("N", "NODES"), help=argparse.SUPPRESS)
    p.add_argument(
        "--lean",
        default="auto",
        choices=("auto", "0", "1"),
        help="--table: searches from the semantics alone (1), never (0), or the "
        "engine's choice by size (auto)",
    )
    p.add_argument(
        "--memory",
        default="",
        metavar="N:NODES,...",
        help="peak memory of the analysis + closed-form searches, full vs lean",
    )
    p.add_argument("--memory-one", nargs=3, type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one[0], a.one[1], a.repeat, lean=a.lean)))
        return
    if a.memory_one:
        print(json.dumps(memory(a.memory_one[0], a.memory_one[1], bool(a.memory_one[2]))))
        return
    if a.memory:
        rows = []
        for item in a.memory.split(","):
            n, nodes = (int(float(v)) for v in item.split(":"))
            for lean in (0, 1):
                res = subprocess.run(
                    [sys.executable, __file__, "--memory-one", str(n), str(nodes), str(lean)],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONPATH": ROOT},
                )
                if res.returncode != 0:
                    print(res.stderr[-2000:], file=sys.stderr)
                    rows.append(
                        {
                            "n_samples": n,
                            "n_nodes": nodes,
                            "lean": bool(lean),
                            "error": res.stderr[-300:],
                        }
                    )
                    continue
                rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
                print(f"  {rows[-1]}", file=sys.stderr, flush=True)
        lines = [
            f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}",
            "",
            "analysis + closed-form searches of one strategy-1 iteration (general-case "
            "rows masked off), 10 variables:",
            "",
            "| N | nodes (closed) | analysis | peak RSS | first wall s | first CPU s | "
            "warm wall s | warm CPU s | candidates | best |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            if "error" in r:
                lines.append(
                    f"| {r['n_samples']:.0e} | {r['n_nodes']} | "
                    f"{'lean' if r['lean'] else 'full'} | error |" + " |" * 6
                )
                continue
            lines.append(
                f"| {r['n_samples']:.0e} | {r['n_nodes']} ({r['closed_nodes']}) | "
                f"{'lean' if r['lean'] else 'full'} | {_fmt_bytes(r['peak_rss_bytes'])} | "
                f"{r['first_s']:.2f} | {r['first_cpu_s']:.2f} | {r['warm_s']:.2f} | "
                f"{r['warm_cpu_s']:.2f} | {r['candidates']} | {r['best']} |"
            )
        print("\n".join(lines))
        _save(a.out, {"memory": rows}, lines)
        return
    if not (a.table or a.feynman or a.cold):
        a.table = True
    lines = [
        f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())}",
        f"python {platform.python_version()}, {platform.platform()}",
    ]
    result = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_before": os.getloadavg(),
        }
    }
    if a.table:
        rows = []
        for n in [int(float(v)) for v in a.sizes.split(",")]:
            for nodes in [int(v) for v in a.nodes.split(",")]:
                try:
                    res = subprocess.run(
                        [
                            sys.executable,
                            __file__,
                            "--one",
                            str(n),
                            str(nodes),
                            "--repeat",
                            str(a.repeat),
                            "--lean",
                            a.lean,
                        ],
                        capture_output=True,
                        text=True,
                        env={**os.environ, "PYTHONPATH": ROOT},
                        timeout=a.row_timeout,
                    )
                except subprocess.TimeoutExpired:
                    print(
                        f"  N={n} nodes={nodes}: not measured in {a.row_timeout:.0f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    rows.append(
                        {
                            "n_samples": n,
                            "n_nodes": nodes,
                            "error": f"not measured: over --row-timeout {a.row_timeout:.0f} s",
                        }
                    )
                    result["table"] = rows
                    _save(a.out, result, lines)
                    continue
                if res.returncode != 0:
                    print(res.stderr[-2000:], file=sys.stderr)
                    rows.append({"n_samples": n, "n_nodes": nodes, "error": res.stderr[-300:]})
                    continue
                r = json.loads(res.stdout.strip().splitlines()[-1])
                rows.append(r)
                result["table"] = rows
                _save(a.out, result, lines)
                print(
                    f"  N={n} nodes={nodes}: {r['iteration_s']:.3f} s "
                    f"({r['iteration_cpu_s']:.3f} CPU-s), {r['ratio_to_matmul_cpu']:.0f}x matmul "
                    f"(CPU-s), "
                    f"peak {_fmt_bytes(r['peak_rss_bytes'])}",
                    file=sys.stderr,
                    flush=True,
                )
        result["table"] = rows
        lines.append("")
        lines.append(
            "| N | nodes (general) | warm iteration wall s | CPU s | matmul wall s | "
            "CPU s | ratio wall | ratio CPU | peak RSS | device peak | "
            "compile + first s |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "error" in r:
                lines.append(
                    f"| {r['n_samples']:.0e} | {r['n_nodes']} | {r['error'][:60]} |" + " |" * 8
                )
                continue
            lines.append(
                f"| {r['n_samples']:.0e} | {r['n_nodes']} ({r['general_nodes']})"
                f"{', lean' if r.get('lean') else ''} | {r['iteration_s']:.3f} | "
                f"{r['iteration_cpu_s']:.3f} | {r['matmul_s']:.4f} | "
                f"{r['matmul_cpu_s']:.4f} | {r['ratio_to_matmul']:.0f}x | "
                f"{r['ratio_to_matmul_cpu']:.0f}x | {_fmt_bytes(r['peak_rss_bytes'])} | "
                f"{_fmt_bytes(r['device_peak_bytes'])} | {r['first_s']:.1f} |"
            )
        if rows and "platform" in rows[0]:
            lines.append(
                f"\nplatform: {rows[0]['platform']} ({rows[0]['device']}); "
                "general = nodes below a division's denominator (c != 0); lean = "
                "searches from the semantics alone (search_lean)"
            )
    _save(a.out, result, lines)  # after each part: a timeout keeps what was measured
    if a.feynman:
        f = feynman(strategies=tuple(int(v) for v in a.strategies.split(",")))
        result["feynman"] = f
        for key, v in f.items():
            lines.append(
                f"\nFeynman (17 built-in, N=1000, 30 nodes), {key}, warm fit: median "
                f"{v['median_wall_s']:.3f} s wall, {v['median_cpu_s']:.3f} CPU-s"
            )
        if "strategy3" in f and "strategy1" in f:
            pairs = list(zip(f["strategy3"]["fits"], f["strategy1"]["fits"], strict=True))
            faster = sum(a3["cpu_s"] <= a1["cpu_s"] for a3, a1 in pairs)
            lines.append(
                f"strategy 3 at most strategy 1's CPU time on {faster}/{len(pairs)} equations"
            )
            lines.append(
                "\n| equation | s3 CPU s | s3 iterations | s3 MSE | s1 CPU s | "
                "s1 iterations | s1 MSE |"
            )
            lines.append("|---|---|---|---|---|---|---|")
            for a3, a1 in pairs:
                lines.append(
                    f"| {a3['equation']} | {a3['cpu_s']:.3f} | {a3['iterations']} | "
                    f"{a3['mse']:.3g} | {a1['cpu_s']:.3f} | {a1['iterations']} | "
                    f"{a1['mse']:.3g} |"
                )
        _save(a.out, result, lines)
    if a.cold:
        c = cold()
        result["cold_first_fit"] = c
        lines.append(
            f"\ncold first fit (fresh process, no compilation cache; N=1000, 5 vars, "
            f"max 20 nodes, strategy 3): {c['first_fit_s']:.2f} s "
            f"({c['with_imports_s']:.2f} s with imports, {c['iterations']} iterations, "
            f"{c['fit_cpu_s']:.2f} CPU-s of the fit); {c['xla_compilations']} XLA "
            f"compilations, {c['xla_compile_wall_s']:.2f} s wall in all, largest "
            f"{c['largest_compiles_s']} s"
        )
        w = c["with_cache"]
        lines.append(
            f"same first fit in a fresh process with the persistent compilation cache "
            f"filled by an earlier process: {w['first_fit_s']:.2f} s "
            f"({w['fit_cpu_s']:.2f} CPU-s of the fit, {w['with_imports_s']:.2f} s with "
            f"imports); {w['xla_compilations']} XLA compilations"
        )
        fc = c["fast_compile"]
        lines.append(
            f"same first fit, no cache, JAXSR_FAST_COMPILE=1 (jaxsr.fast_compilation): "
            f"{fc['first_fit_s']:.2f} s ({fc['fit_cpu_s']:.2f} CPU-s of the fit, "
            f"{fc['with_imports_s']:.2f} s with imports); {fc['xla_compilations']} XLA "
            f"compilations, {fc['xla_compile_wall_s']:.2f} s wall in all, largest "
            f"{fc['largest_compiles_s']} s"
        )
    lines.append(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print("\n".join(lines))
    _save(a.out, result, lines)


def _save(out, result, lines):
    if not out:
        return
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".json", "w") as fh:
        json.dump(result, fh, indent=1, default=float)
    with open(out + ".txt", "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
