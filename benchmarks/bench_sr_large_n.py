"""Symbolic regression at large N: jaxsr's defaults (the search sample), jaxsr's exact search
on every row, and pyoperon, on the same data in one run.

The law ``y = x1*x2/x3 + x4 - x5**2`` (``--laws``: also ``x1*x2 + x3/x4``), ``x`` uniform
in ``[1, 2]``, 5 features, noise 0, at ``N`` training rows (``--sizes``, default 1e4 1e5
1e6); the test set is 10,000 other rows of the same law. Each fit runs in its own
subprocess (its peak resident memory, ``ru_maxrss``, is its own) under the same wall
budget (``--max-time``, default 120 s):

* ``default``: ``SymbolicRegressor(max_time=T)``, whose ``search_sample="auto"`` searches
  on 10,000 rows of a larger fit;
* ``exact``: the same with ``search_sample=None``: the paper's search on every row;
* ``sample=K`` (``--tools sample=5000 ...``): the defaults with ``search_sample=K``, to
  choose the default size;
* ``pyoperon``: ``pyoperon.sklearn.SymbolicRegressor`` (length 50, 1 thread, the same
  settings as ``bench_sr_defaults.py``) in the peers' python (``--peers-python``, default
  ``/tmp/benchvenv/bin/python``; the ``bench`` extra).

Printed and written (``--out``): CPU seconds and wall seconds of the fit, peak RSS (MiB), test
R^2, nodes of the model, and for jaxsr the stop reason and whether the law was recovered
(test R^2 above 1 - 1e-12). Pin a core to compare runs:

    PYTHONPATH=$PWD taskset -c 0 .venv/bin/python benchmarks/bench_sr_large_n.py \\
        --out benchmarks/results/sr_large_n.txt
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_PEERS_PYTHON = os.environ.get("JAXSR_PEERS_PYTHON", "/tmp/benchvenv/bin/python")
EXACT_R2 = 1.0 - 1e-12


LAWS = {
    "x1*x2/x3 + x4 - x5**2": lambda X: X[:, 0] * X[:, 1] / X[:, 2] + X[:, 3] - X[:, 4] ** 2,
    "x1*x2 + x3/x4": lambda X: X[:, 0] * X[:, 1] + X[:, 2] / X[:, 3],
}
LAW = next(iter(LAWS))


def law_data(n: int, seed: int, law: str = LAW):
    """``(X, y)``: ``X (n, 5)`` uniform in [1, 2]; ``y`` the law (:data:`LAWS`)."""
    X = np.random.default_rng(seed).uniform(1.0, 2.0, (n, 5))
    return X, LAWS[law](X)


def operon_nodes(model: str) -> int:
    """Nodes of a pyoperon model string over ``+ - * /`` (leaves and binary operators)."""
    leaves = len(re.findall(r"X\d+|\d+\.?\d*(?:[eE][-+]?\d+)?", model))
    return max(1, 2 * leaves - 1)


def one_fit(tool: str, n: int, max_time: float, law: str = LAW) -> dict:
    """``--mode fit``: one fit in this process; a record (printed as JSON). ``tool``:
    ``default``, ``exact``, ``pyoperon`` or ``sample=K`` (the defaults with
    ``search_sample=K``)."""
    X, y = law_data(n, seed=0, law=law)
    Xt, yt = law_data(10_000, seed=1, law=law)
    c0, t0 = time.process_time(), time.perf_counter()
    if tool == "pyoperon":
        from pyoperon.sklearn import SymbolicRegressor as Operon

        est = Operon(
            allowed_symbols="add,sub,mul,div,constant,variable",
            max_length=50,
            n_threads=1,
            max_time=int(max_time),
            random_state=0,
        ).fit(X, y)
        pred = est.predict(Xt)
        extra = {"nodes": operon_nodes(est.get_model_string(est.model_, 16))}
    else:
        from jaxsr import SymbolicRegressor

        params = {"max_time": max_time, "progress": False}
        if tool == "exact":
            params["search_sample"] = None
        elif tool.startswith("sample="):
            params["search_sample"] = int(tool.split("=")[1])
        est = SymbolicRegressor(**params).fit(X, y)
        pred = est.predict(Xt)
        extra = {
            "nodes": int(est.n_nodes_),
            "stop_reason": est.stop_reason_,
            "sample_rows": (None if est.search_rows_ is None else int(est.search_rows_.shape[0])),
            "expression": est.expression_,
        }
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    r2 = 1.0 - float(np.mean((pred - yt) ** 2) / np.var(yt))
    return {
        "tool": tool,
        "law": law,
        "n": n,
        "wall_s": wall,
        "cpu_s": cpu,
        "r2": r2,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **extra,
    }


def run_case(python: str, tool: str, n: int, max_time: float, law: str = LAW) -> dict:
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--mode",
        "fit",
        "--tool",
        tool,
        "--n",
        str(n),
        "--max-time",
        str(max_time),
        "--law",
        law,
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"tool": tool, "law": law, "n": n, "error": (proc.stderr or "")[-400:]}
    return json.loads(lines[-1])


def table(records: list[dict]) -> str:
    head = (
        f"{'law':<22} {'tool':<12} {'N':>8} | {'CPU s':>7} {'wall s':>7} {'MiB':>6} | "
        f"{'test R^2':>12} {'nodes':>5} | stop / sample rows"
    )
    out = [head, "-" * len(head)]
    for r in records:
        if "error" in r:
            out.append(
                f"{r['law']:<22} {r['tool']:<12} {r['n']:>8.0e} | failed: {r['error'][-120:]!r}"
            )
            continue
        law = " law" if r["r2"] > EXACT_R2 else ""
        tail = (
            f"{r.get('stop_reason', '')} / {r.get('sample_rows')}"
            if r["tool"] != "pyoperon"
            else ""
        )
        out.append(
            f"{r['law']:<22} {r['tool']:<12} {r['n']:>8.0e} | {r['cpu_s']:7.1f} "
            f"{r['wall_s']:7.1f} {r['peak_mib']:6.0f} | {r['r2']:12.9f} "
            f"{r['nodes']:5d}{law:>4} | {tail}"
        )
    return "\n".join(out)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", choices=("run", "fit"), default="run")
    p.add_argument("--tool", default="default", help="default, exact, pyoperon or sample=K")
    p.add_argument("--law", choices=list(LAWS), default=LAW)
    p.add_argument("--laws", nargs="+", choices=list(LAWS), default=[LAW])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    p.add_argument("--tools", nargs="+", default=["default", "exact", "pyoperon"])
    p.add_argument("--max-time", type=float, default=120.0)
    p.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    if a.mode == "fit":
        print(json.dumps(one_fit(a.tool, a.n, a.max_time, a.law)))
        return
    records = []
    for law in a.laws:
        for n in (int(s) for s in a.sizes):
            for tool in a.tools:
                python = a.peers_python if tool == "pyoperon" else sys.executable
                records.append(run_case(python, tool, n, a.max_time, law))
                print(table(records[-1:]).splitlines()[-1], flush=True)
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    text = (
        f"# produced by: benchmarks/bench_sr_large_n.py --sizes "
        f"{' '.join(f'{s:g}' for s in a.sizes)} --tools {' '.join(a.tools)} "
        f"--max-time {a.max_time:g} (commit "
        f"{commit}, one process per fit), "
        f"{_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores\n"
        f"# x uniform in [1, 2]^5, noise 0; test: 10,000 other rows; 'law': test R^2 > "
        f"1 - 1e-12; sample=K: the defaults with search_sample=K\n" + table(records) + "\n"
    )
    print(text)
    if a.out:
        Path(a.out).write_text(text)
        Path(a.out).with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


if __name__ == "__main__":
    main()
