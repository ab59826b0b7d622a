"""The whole AI Feynman benchmark: exact recovery and fit time, jaxsr and its peers (issue 12).

Data: every equation of ``shared/data/feynman/FeynmanEquations.csv`` (100; its formulas and
variable ranges, ``jaxsr.datasets.feynman_equation(..., rational_only=False)``), ``--n``
training rows (seed 0) and ``--n-test`` fresh test rows (seed 1), float64. The same arrays
go to every tool (the peers read them from one ``.npz``).

Tools, in one run (``--tools``):

* ``jaxsr``: ``SymbolicRegressor`` with its defaults (strategy 3) and ``max_nodes``,
  ``max_time`` as given: the paper's method, ``+ - * /`` only;
* ``jaxsr-unary``: the same with ``unary_operators`` (``--unary``), when jaxsr has them;
* ``jaxsr-beam``: the same with ``unary_operators`` and ``beam_width`` (``--beam-width``),
  when jaxsr has them;
* ``pyoperon``: ``pyoperon.sklearn.SymbolicRegressor`` with ``+ - * /``, the same unary
  functions, constants and variables, ``max_length`` 50, one thread, ``max_time``,
  ``random_state`` 0;
* ``gplearn``: ``gplearn.genetic.SymbolicRegressor`` with ``add, sub, mul, div`` and the
  unary functions gplearn has (``sqrt, log, sin, cos``; protected versions), population
  1000, 20 generations, parsimony 0.001, one job, ``random_state`` 0.

A fit counts as an **exact recovery** when its relative test MSE
``mean((prediction - y)**2) / mean(y**2)`` is below ``1e-16`` on the fresh rows (close to the
float64 rounding level; SRBench's symbolic-equivalence rule would also accept formulas with
constants off in the last digits, so this count is a lower bound of SRBench's). Printed: per
tool, the recoveries (all equations, and the rational / non-rational ones), the median and
the largest fit time; per equation, each tool's relative test MSE and seconds.

The peers run in a subprocess of *their* python (``--peers-python`` or
``$JAXSR_PEERS_PYTHON``, default ``/tmp/benchvenv/bin/python``) running this same file with
``--mode peers``.

    PYTHONPATH=$PWD taskset -c 1 .venv/bin/python benchmarks/bench_feynman_all.py \
        --max-time 60 --out benchmarks/results/feynman_all.txt
    # a subset: --equations I.6.2a,I.12.1  or  --every 5 (every 5th equation)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_PEERS_PYTHON = os.environ.get("JAXSR_PEERS_PYTHON", "/tmp/benchvenv/bin/python")
EXACT = 1e-16
GPLEARN_UNARY = ("sqrt", "log", "sin", "cos")


def relative_mse(pred, y) -> float:
    with np.errstate(all="ignore"):
        r = float(np.mean((np.asarray(pred, dtype=np.float64) - y) ** 2) / np.mean(y ** 2))
    return r if np.isfinite(r) else float("inf")


# ------------------------------------------------------------------------------ peers
def run_peers(data_path: str, tools: list[str], unary: list[str], max_time: float,
              json_out: str) -> None:
    blob = np.load(data_path, allow_pickle=False)
    names = [str(n) for n in blob["names"]]
    results = {}
    for name in names:
        X, y = blob[f"{name}__X"], blob[f"{name}__y"]
        Xt, yt = blob[f"{name}__Xt"], blob[f"{name}__yt"]
        row = {}
        for tool in tools:
            try:
                if tool == "pyoperon":
                    from pyoperon.sklearn import SymbolicRegressor as Operon

                    symbols = ",".join(["add", "sub", "mul", "div", *unary, "constant",
                                        "variable"])
                    est = Operon(allowed_symbols=symbols, max_length=50, n_threads=1,
                                 max_time=int(max_time), random_state=0)
                else:
                    from gplearn.genetic import SymbolicRegressor as GPLearn

                    fs = ("add", "sub", "mul", "div",
                          *[u for u in unary if u in GPLEARN_UNARY])
                    est = GPLearn(population_size=1000, generations=20, function_set=fs,
                                  parsimony_coefficient=0.001, random_state=0, n_jobs=1)
                t0 = time.perf_counter()
                est.fit(X, y)
                seconds = time.perf_counter() - t0
                rec = {"rel_test_mse": relative_mse(est.predict(Xt), yt), "seconds": seconds}
            except Exception as err:  # report, keep going
                rec = {"error": f"{type(err).__name__}: {err}"[:200], "rel_test_mse":
                       float("inf"), "seconds": float("nan")}
            row[tool] = rec
            print(f"[peers] {name} {tool}: rel {rec['rel_test_mse']:.2e} "
                  f"{rec['seconds']:.1f} s", file=sys.stderr, flush=True)
        results[name] = row
    Path(json_out).write_text(json.dumps(results, indent=1))


# ------------------------------------------------------------------------------ jaxsr
def jaxsr_configs(tools, unary, beam_width, max_nodes, max_time,
                  strategy=None) -> dict[str, dict]:
    sys.path.insert(0, str(REPO))
    from jaxsr import SymbolicRegressor

    accepted = SymbolicRegressor().get_params()
    base = {"max_nodes": max_nodes, "max_time": max_time, "progress": False}
    if strategy is not None:
        base["strategy"] = int(strategy)
    out = {}
    for tool in tools:
        if tool == "jaxsr":
            out[tool] = dict(base)
        elif tool == "jaxsr-unary" and "unary_operators" in accepted:
            out[tool] = dict(base, unary_operators=tuple(unary))
        elif tool == "jaxsr-beam" and {"unary_operators", "beam_width"} <= set(accepted):
            out[tool] = dict(base, unary_operators=tuple(unary), beam_width=beam_width)
        elif tool.startswith("jaxsr"):
            print(f"{tool}: this jaxsr has no such option; skipped", file=sys.stderr)
    return out


def run_jaxsr(params: dict, X, y, Xt, yt, warm: bool = False) -> dict:
    from jaxsr import SymbolicRegressor

    if warm:  # compile this shape's first kernels in a fit that is not timed
        try:
            SymbolicRegressor(**dict(params, max_iterations=1, max_time=None)).fit(X, y)
        except Exception:  # noqa: BLE001 - the timed fit reports it
            pass
    try:
        t0 = time.perf_counter()
        sr = SymbolicRegressor(**params).fit(X, y)
        seconds = time.perf_counter() - t0
        return {"rel_test_mse": relative_mse(sr.predict(Xt), yt), "seconds": seconds,
                "n_nodes": int(sr.n_nodes_), "stop": sr.stop_reason_,
                "expression": sr.expression_}
    except Exception as err:  # report, keep going
        return {"error": f"{type(err).__name__}: {err}"[:200], "rel_test_mse": float("inf"),
                "seconds": float("nan")}


# ------------------------------------------------------------------------------ report
def summary(results: dict, tools: list[str], rational: dict[str, bool]) -> str:
    lines = [f"{'tool':<13} {'exact':>7} {'rational':>9} {'other':>7} {'median s':>9} "
             f"{'max s':>7} {'errors':>6}"]
    for tool in tools:
        rows = [(n, r[tool]) for n, r in results.items() if tool in r]
        if not rows:
            continue
        ex = [n for n, r in rows if r["rel_test_mse"] < EXACT]
        n_rat = sum(rational[n] for n, _ in rows)
        secs = np.array([r["seconds"] for _, r in rows], dtype=float)
        secs = secs[np.isfinite(secs)]
        lines.append(
            f"{tool:<13} {len(ex):>3}/{len(rows):<3} {sum(rational[n] for n in ex):>4}/"
            f"{n_rat:<4} {sum(not rational[n] for n in ex):>3}/{len(rows) - n_rat:<3} "
            f"{np.median(secs) if secs.size else float('nan'):>9.2f} "
            f"{secs.max() if secs.size else float('nan'):>7.1f} "
            f"{sum('error' in r for _, r in rows):>6}")
    per = [f"\n{'equation':<10} {'rat':>3} " + " ".join(f"{t:>20}" for t in tools)]
    for name, r in results.items():
        cells = []
        for t in tools:
            c = r.get(t)
            cells.append(f"{'':>20}" if c is None else
                         f"{c['rel_test_mse']:>10.1e} {c['seconds']:>7.1f}s"
                         f"{'*' if c['rel_test_mse'] < EXACT else ' '}")
        per.append(f"{name:<10} {'y' if rational[name] else 'n':>3} " + " ".join(cells))
    return "\n".join(lines + per) + "\n(* = exact: relative test MSE < 1e-16)"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", default="all", choices=("all", "peers"))
    p.add_argument("--data", default="")
    p.add_argument("--json-out", default="")
    p.add_argument("--equations", default="", help="comma-separated ids (default: all 100)")
    p.add_argument("--every", type=int, default=1, help="take every k-th equation")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--max-time", type=float, default=60.0)
    p.add_argument("--max-nodes", type=int, default=30)
    p.add_argument("--unary", default="sqrt,exp,log,sin,cos")
    p.add_argument("--beam-width", type=int, default=16)
    p.add_argument("--strategy", type=int, default=None, help="jaxsr's (default: its own)")
    p.add_argument("--tools", default="jaxsr,jaxsr-unary,jaxsr-beam,pyoperon,gplearn")
    p.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    p.add_argument("--parallel-peers", action="store_true",
                   help="run the peers' process while jaxsr runs (give each its own core)")
    p.add_argument("--warm", action="store_true",
                   help="jaxsr: one untimed one-iteration fit per tool and equation first")
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    tools = [t for t in a.tools.split(",") if t]
    unary = [u for u in a.unary.split(",") if u]
    if a.mode == "peers":
        run_peers(a.data, tools, unary, a.max_time, a.json_out)
        return

    sys.path.insert(0, str(REPO))
    from jaxsr.datasets import feynman_equation_names, get_feynman_equation

    names = (a.equations.split(",") if a.equations else
             feynman_equation_names(include_csv=True, rational_only=False)[:: a.every])
    data, rational = {}, {}
    for name in names:
        eq = get_feynman_equation(name, rational_only=False)
        rational[name] = eq.rational
        X, y = eq.sample(a.n, seed=0)
        Xt, yt = eq.sample(a.n_test, seed=1)
        data[name] = (X, y, Xt, yt)

    results: dict[str, dict] = {n: {} for n in names}
    peers = [t for t in tools if t in ("pyoperon", "gplearn")]
    proc = tmp = None
    if peers:  # in their own process; with --parallel-peers at the same time as jaxsr
        tmp = tempfile.TemporaryDirectory()
        path = os.path.join(tmp.name, "data.npz")
        blob = {"names": np.array(names)}
        for n, (X, y, Xt, yt) in data.items():
            blob.update({f"{n}__X": X, f"{n}__y": y, f"{n}__Xt": Xt, f"{n}__yt": yt})
        np.savez(path, **blob)
        out_json = os.path.join(tmp.name, "peers.json")
        proc = subprocess.Popen([a.peers_python, str(Path(__file__).resolve()), "--mode",
                                 "peers", "--data", path, "--json-out", out_json, "--tools",
                                 ",".join(peers), "--unary", ",".join(unary), "--max-time",
                                 str(a.max_time)])
        if not a.parallel_peers:
            proc.wait()
    configs = jaxsr_configs(tools, unary, a.beam_width, a.max_nodes, a.max_time, a.strategy)
    for name, (X, y, Xt, yt) in data.items():
        for tool, params in configs.items():
            rec = run_jaxsr(params, X, y, Xt, yt, a.warm)
            results[name][tool] = rec
            print(f"{name} {tool}: rel {rec['rel_test_mse']:.2e} {rec['seconds']:.1f} s "
                  f"{rec.get('expression', rec.get('error', ''))[:80]}", file=sys.stderr,
                  flush=True)
    if proc is not None:
        proc.wait()
        try:
            for name, row in json.loads(Path(out_json).read_text()).items():
                results[name].update(row)
        except (OSError, ValueError) as err:
            print(f"peers failed: {err}", file=sys.stderr)
        tmp.cleanup()
    shown = [t for t in tools if any(t in r for r in results.values())]
    text = summary(results, shown, rational) + (
        f"\nN = {a.n} training rows (seed 0), {a.n_test} test rows (seed 1); max_time "
        f"{a.max_time} s; jaxsr strategy {a.strategy or 'default'}, max_nodes "
        f"{a.max_nodes}; unary {','.join(unary)}; beam "
        f"{a.beam_width}; {len(names)} equations")
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
        Path(a.out).with_suffix(".json").write_text(json.dumps(
            {"rational": rational, "results": results}, indent=1))


if __name__ == "__main__":
    main()
