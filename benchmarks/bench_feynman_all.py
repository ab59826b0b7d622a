"""The whole AI Feynman benchmark: exact recovery and fit time, jaxsr and its peers.

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
* ``jaxsr-beam-paper``: ``+ - * /`` only with ``beam_width``;
* ``pyoperon``: ``pyoperon.sklearn.SymbolicRegressor`` with ``+ - * /``, the same unary
  functions, constants and variables, ``max_length`` 50, one thread, ``max_time``,
  ``random_state`` 0;
* ``gplearn``: ``gplearn.genetic.SymbolicRegressor`` with ``add, sub, mul, div`` and the
  unary functions gplearn has (``sqrt, log, sin, cos``; protected versions), population
  1000, parsimony 0.001, one job, ``random_state`` 0, grown one generation at a time
  (``warm_start``) until ``max_time`` is spent (gplearn has no time limit of its own; the
  last generation may overrun it), at most 1000 generations.

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

**Resumable runs** (``--records FILE.jsonl``): one JSON line per (tool, equation), written as
soon as the fit ends, holding the relative test MSE, wall and CPU seconds, the expression,
the tool's full settings (data sizes and seeds, max_time, its parameters), their short hash
``settings_key`` and the git commit (``+dirty`` with uncommitted changes). A rerun of the
same command skips every (equation, tool, settings) already in the file, so a run can be
stopped at any time and continued, or run in pieces and merged (concatenate the files);
``--summary-only`` prints the table of a records file, one column per tool and settings
(``tool@key``), each over the equations it has run. ``--stride-order k`` runs every k-th
equation first (a partial run is spread over the list). The peers run one process per
equation. On a shared CPU:

    PYTHONPATH=$PWD setsid nice -n 19 taskset -c 1 .venv/bin/python \
        benchmarks/bench_feynman_all.py --records benchmarks/results/feynman_all.jsonl \
        --tools jaxsr,pyoperon,gplearn --strategy 2 --max-time 15 --warm --stride-order 6
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
GPLEARN_MAX_GENERATIONS = 1000


def relative_mse(pred, y) -> float:
    with np.errstate(all="ignore"):
        r = float(np.mean((np.asarray(pred, dtype=np.float64) - y) ** 2) / np.mean(y**2))
    return r if np.isfinite(r) else float("inf")


# ------------------------------------------------------------------------------ peers
def peer_settings(tool: str, unary: list[str], max_time: float) -> dict:
    """The parameters of a peer's fit (stored in each of its records)."""
    if tool == "pyoperon":
        symbols = ",".join(["add", "sub", "mul", "div", *unary, "constant", "variable"])
        return {
            "allowed_symbols": symbols,
            "max_length": 50,
            "n_threads": 1,
            "max_time": int(max_time),
            "random_state": 0,
        }
    fs = ["add", "sub", "mul", "div", *[u for u in unary if u in GPLEARN_UNARY]]
    return {
        "population_size": 1000,
        "function_set": fs,
        "parsimony_coefficient": 0.001,
        "random_state": 0,
        "n_jobs": 1,
        "max_time": float(max_time),
        "max_generations": GPLEARN_MAX_GENERATIONS,
    }


def fit_peer(tool: str, params: dict, X, y):
    """One peer fit under ``params["max_time"]`` seconds (wall). gplearn has no time
    limit of its own: it is grown one generation at a time (``warm_start``) until the
    time is spent (the last generation may overrun it) or ``max_generations``."""
    if tool == "pyoperon":
        from pyoperon.sklearn import SymbolicRegressor as Operon

        return Operon(**params).fit(X, y)
    from gplearn.genetic import SymbolicRegressor as GPLearn

    kw = {k: v for k, v in params.items() if k not in ("max_time", "max_generations")}
    kw["function_set"] = tuple(kw["function_set"])
    t0 = time.perf_counter()
    est = GPLearn(generations=1, warm_start=True, **kw).fit(X, y)
    g = 1
    while time.perf_counter() - t0 < params["max_time"] and g < params["max_generations"]:
        if est.run_details_["best_fitness"][-1] <= 0.0:  # gplearn's own stopping rule
            break
        g += 1
        est.set_params(generations=g)
        est.fit(X, y)
    est.generations_run_ = g
    return est


def run_peers(
    data_path: str, tools: list[str], unary: list[str], max_time: float, json_out: str
) -> None:
    """``--mode peers``: every peer of ``tools`` on every equation of the ``.npz``."""
    blob = np.load(data_path, allow_pickle=False)
    names = [str(n) for n in blob["names"]]
    results = {}
    for name in names:
        X, y = blob[f"{name}__X"], blob[f"{name}__y"]
        Xt, yt = blob[f"{name}__Xt"], blob[f"{name}__yt"]
        row = {}
        for tool in tools:
            params = peer_settings(tool, unary, max_time)
            try:
                t0, c0 = time.perf_counter(), time.process_time()
                est = fit_peer(tool, params, X, y)
                seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
                rec = {
                    "rel_test_mse": relative_mse(est.predict(Xt), yt),
                    "seconds": seconds,
                    "cpu_seconds": cpu,
                }
                if tool == "gplearn":
                    rec["generations"] = int(est.generations_run_)
                    rec["expression"] = str(est._program)[:500]
                else:
                    try:
                        rec["expression"] = str(est.get_model_string(est.model_, 6))[:500]
                    except Exception:  # noqa: BLE001 - the string is only for reading
                        pass
            except Exception as err:  # report, keep going
                rec = {
                    "error": f"{type(err).__name__}: {err}"[:200],
                    "rel_test_mse": float("inf"),
                    "seconds": float("nan"),
                }
            row[tool] = rec
            print(
                f"[peers] {name} {tool}: rel {rec['rel_test_mse']:.2e} {rec['seconds']:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        results[name] = row
    Path(json_out).write_text(json.dumps(results, indent=1))


# ------------------------------------------------------------------------------ jaxsr
def jaxsr_configs(tools, unary, beam_width, max_nodes, max_time, strategy=None) -> dict[str, dict]:
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
        elif tool == "jaxsr-beam-paper" and "beam_width" in accepted:
            out[tool] = dict(base, beam_width=beam_width)
        elif tool.startswith("jaxsr"):
            print(f"{tool}: this jaxsr has no such option; skipped", file=sys.stderr)
    return out


def unary_fit_kind() -> dict:
    """The parts of jaxsr's fit with unary operators that are not parameters (recorded in
    the settings, so that a record of another kind of fit is not taken for this one): the
    share of ``max_time`` of its paper's search, of its square-target search
    and the pair terminals offered."""
    from jaxsr.symbolic import regressor, unary

    out = {}
    if hasattr(regressor, "PAPER_SHARE"):
        out["paper_search_share"] = round(float(regressor.PAPER_SHARE), 6)
    if hasattr(regressor, "SQUARE_SHARE"):
        out["square_target_share"] = round(float(regressor.SQUARE_SHARE), 6)
    if getattr(unary, "PAIR_TERMINALS", False):
        out["pair_terminals_max"] = int(unary.PAIR_TERMINALS_MAX)
    return out


def run_jaxsr(params: dict, X, y, Xt, yt, warm: bool = False) -> dict:
    from jaxsr import SymbolicRegressor

    if warm:  # compile this shape's first kernels in a fit that is not timed
        try:
            SymbolicRegressor(**dict(params, max_iterations=1, max_time=None)).fit(X, y)
        except Exception:  # noqa: BLE001 - the timed fit reports it
            pass
        if params.get("rational_start", True) and not params.get("unary_operators"):
            # a rational start (greedy) runs first, and with max_iterations=1 it is the only
            # search: compile the search from the mean (its beam) too
            try:
                SymbolicRegressor(
                    **dict(params, max_iterations=1, max_time=None, rational_start=False)
                ).fit(X, y)
            except Exception:  # noqa: BLE001 - the timed fit reports it
                pass
        if "cos" in params.get("unary_operators", ()):
            # and the kernels of a tree with a unary interior node (the polish of such a
            # tree differentiates through it: a program of its own for each data shape;
            # from cos(x1 + 0.5) alone the first change replaced the root, and the timed
            # fit of I.6.2 still compiled it, 24 s under load)
            try:
                SymbolicRegressor(
                    **dict(
                        params,
                        max_iterations=3,
                        max_time=None,
                        initial_expression="(cos(x1 + 0.5) * x1) + 0.0",
                    )
                ).fit(X, y)
            except Exception:  # noqa: BLE001 - the timed fit reports it
                pass
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        sr = SymbolicRegressor(**params).fit(X, y)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {
            "rel_test_mse": relative_mse(sr.predict(Xt), yt),
            "seconds": seconds,
            "cpu_seconds": cpu,
            "n_nodes": int(sr.n_nodes_),
            "stop": sr.stop_reason_,
            "train_rel_mse": relative_mse(sr.predict(X), y),
            "iterations": len(sr.history_),
            "expression": sr.expression_,
            **({"portfolio": sr.portfolio_} if getattr(sr, "portfolio_", None) else {}),
        }
    except Exception as err:  # report, keep going
        return {
            "error": f"{type(err).__name__}: {err}"[:200],
            "rel_test_mse": float("inf"),
            "seconds": float("nan"),
        }


# ------------------------------------------------------------------------------ records
def git_commit() -> str:
    """``HEAD`` of the repository this file is in (``+dirty`` with uncommitted changes to
    tracked files)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _short(commit: str) -> str:
    return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")


def settings_key(settings: dict) -> str:
    """A short, stable name of a tool's settings (records of the same key are one run)."""
    import hashlib

    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def load_records(path: str) -> list[dict]:
    """The records of a ``--records`` file (one JSON object a line; a torn last line,
    from a run stopped while writing, is skipped)."""
    out = []
    if path and os.path.exists(path):
        for line in Path(path).read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def append_record(path: str, rec: dict) -> None:
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())


# ------------------------------------------------------------------------------ report
def summary(results: dict, tools: list[str], rational: dict[str, bool]) -> str:
    lines = [
        f"{'tool':<13} {'exact':>7} {'rational':>9} {'other':>7} {'median s':>9} "
        f"{'max s':>7} {'med CPU s':>9} {'errors':>6}"
    ]
    for tool in tools:
        rows = [(n, r[tool]) for n, r in results.items() if tool in r]
        if not rows:
            continue
        ex = [n for n, r in rows if r["rel_test_mse"] < EXACT]
        n_rat = sum(rational[n] for n, _ in rows)
        secs = np.array([r["seconds"] for _, r in rows], dtype=float)
        secs = secs[np.isfinite(secs)]
        cpu = np.array([r.get("cpu_seconds", np.nan) for _, r in rows], dtype=float)
        cpu = cpu[np.isfinite(cpu)]
        lines.append(
            f"{tool:<13} {len(ex):>3}/{len(rows):<3} {sum(rational[n] for n in ex):>4}/"
            f"{n_rat:<4} {sum(not rational[n] for n in ex):>3}/{len(rows) - n_rat:<3} "
            f"{np.median(secs) if secs.size else float('nan'):>9.2f} "
            f"{secs.max() if secs.size else float('nan'):>7.1f} "
            f"{np.median(cpu) if cpu.size else float('nan'):>9.2f} "
            f"{sum('error' in r for _, r in rows):>6}"
        )
    per = [f"\n{'equation':<10} {'rat':>3} " + " ".join(f"{t:>20}" for t in tools)]
    for name, r in results.items():
        if not any(t in r for t in tools):
            continue
        cells = []
        for t in tools:
            c = r.get(t)
            cells.append(
                f"{'':>20}"
                if c is None
                else f"{c['rel_test_mse']:>10.1e} {c['seconds']:>7.1f}s"
                f"{'*' if c['rel_test_mse'] < EXACT else ' '}"
            )
        per.append(f"{name:<10} {'y' if rational[name] else 'n':>3} " + " ".join(cells))
    return "\n".join(lines + per) + "\n(* = exact: relative test MSE < 1e-16)"


def portfolio_record(name: str, plain: dict, unary: dict) -> dict:
    """``jaxsr|unary``: the paper's fit, and the fit with unary operators, and of the two
    the one of lower *training* MSE (nothing of the test rows is used to choose); its
    time is the sum of both fits. The training MSE is the record's, or the recorded
    expression re-evaluated on the regenerated training rows (older records)."""

    def train(rec):
        if "train_rel_mse" in rec:
            return rec["train_rel_mse"]
        if "expression" not in rec:
            return float("inf")
        from jaxsr.datasets import get_feynman_equation
        from jaxsr.symbolic import Expression

        n = rec["settings"]["n"]
        X, y = get_feynman_equation(name, rational_only=False).sample(n, seed=0)
        with np.errstate(all="ignore"):
            return relative_mse(Expression.parse(rec["expression"]).evaluate(X), y)

    best = plain if train(plain) <= train(unary) else unary
    out = dict(
        best,
        seconds=plain["seconds"] + unary["seconds"],
        chosen="jaxsr" if best is plain else "jaxsr-unary",
    )
    if "cpu_seconds" in plain and "cpu_seconds" in unary:
        out["cpu_seconds"] = plain["cpu_seconds"] + unary["cpu_seconds"]
    return out


def records_table(
    records: list[dict], names: list[str], columns: list[str] | None = None
) -> tuple[str, dict]:
    """:func:`summary` of a records file: one column per (tool, settings key), over the
    equations each has run (in the order of ``names``, then any others); the settings
    and commits of each column are listed under the table. ``columns``: only the
    columns whose ``tool@key`` starts with one of these."""
    cols: dict[str, dict] = {}
    results: dict[str, dict] = {}
    rational: dict[str, bool] = {}
    order = {n: i for i, n in enumerate(names)}
    for rec in sorted(records, key=lambda r: order.get(r["equation"], len(order))):
        col = f"{rec['tool']}@{rec['settings_key'][:4]}"
        if columns and not any(col.startswith(c) for c in columns):
            continue
        info = cols.setdefault(col, {"settings": rec["settings"], "commits": set()})
        info["commits"].add(rec.get("commit", "unknown"))
        results.setdefault(rec["equation"], {})[col] = rec
        rational[rec["equation"]] = bool(rec.get("rational"))
    names_cols = list(cols)
    plain = next((c for c in names_cols if c.startswith("jaxsr@")), None)
    unary = next((c for c in names_cols if c.startswith("jaxsr-unary@")), None)
    if plain and unary:  # the derived portfolio column (docstring of portfolio_record)
        col = "jaxsr|unary"
        for name, row in results.items():
            if plain in row and unary in row:
                row[col] = portfolio_record(name, row[plain], row[unary])
        cols[col] = {"settings": {"portfolio": [plain, unary]}, "commits": set()}
    text = summary(results, list(cols), rational)
    common = {n: r for n, r in results.items() if all(c in r for c in cols)}
    if common and len(common) < len(results):
        text += (
            f"\n\nthe {len(common)} equations every column has run:\n"
            + summary(common, list(cols), rational).split("\n\n")[0]
        )
    legend = ["\ncolumns (tool@settings key: settings; commits):"]
    for col, info in cols.items():
        legend.append(
            f"  {col}: {json.dumps(info['settings'], sort_keys=True)}; "
            f"{', '.join(sorted(map(_short, info['commits'])))}"
        )
    return text + "\n".join(legend), {"rational": rational, "results": results}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", default="all", choices=("all", "peers"))
    p.add_argument("--data", default="")
    p.add_argument("--json-out", default="")
    p.add_argument("--equations", default="", help="comma-separated ids (default: all 100)")
    p.add_argument("--every", type=int, default=1, help="take every k-th equation")
    p.add_argument(
        "--stride-order",
        type=int,
        default=0,
        help="k > 0: run the equations in the order i %% k, then i (every k-th "
        "first, so that a partial run is spread over the list)",
    )
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--max-time", type=float, default=60.0)
    p.add_argument("--max-nodes", type=int, default=30)
    p.add_argument("--unary", default="sqrt,exp,log,sin,cos")
    p.add_argument("--beam-width", type=int, default=16)
    p.add_argument("--strategy", type=int, default=None, help="jaxsr's (default: its own)")
    p.add_argument("--tools", default="jaxsr,jaxsr-unary,jaxsr-beam,pyoperon,gplearn")
    p.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    p.add_argument(
        "--parallel-peers",
        action="store_true",
        help="run the peers' process while jaxsr runs (give each its own core)",
    )
    p.add_argument(
        "--warm",
        action="store_true",
        help="jaxsr: one untimed one-iteration fit per tool and equation first "
        "(with cos among the unary operators, also a 3-iteration one from "
        "(cos(x1 + 0.5) * x1) + 0.0)",
    )
    p.add_argument(
        "--records",
        default="",
        help="resumable run: a JSON-lines file, one record per (tool, equation) "
        "with its settings and commit; (tool, equation, settings) already "
        "there are skipped, new ones appended as they finish",
    )
    p.add_argument(
        "--summary-only",
        action="store_true",
        help="with --records: only print (and --out) the table of the records",
    )
    p.add_argument(
        "--columns",
        default="",
        help="with --summary-only: only the columns (tool@key) starting with "
        "one of these comma-separated prefixes",
    )
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    tools = [t for t in a.tools.split(",") if t]
    unary = [u for u in a.unary.split(",") if u]
    if a.mode == "peers":
        run_peers(a.data, tools, unary, a.max_time, a.json_out)
        return

    sys.path.insert(0, str(REPO))
    from jaxsr.datasets import feynman_equation_names, get_feynman_equation

    all_names = feynman_equation_names(include_csv=True, rational_only=False)
    if not a.equations and len(all_names) < 100:
        p.error(
            f"FeynmanEquations.csv not found (only the {len(all_names)} built-in "
            "equations): run from a checkout next to shared/, or set JAXSR_SHARED_DATA"
        )
    names = a.equations.split(",") if a.equations else all_names[:: a.every]
    if a.stride_order > 0:
        names = sorted(names, key=lambda n: (names.index(n) % a.stride_order, names.index(n)))
    if a.summary_only:
        if not a.records:
            p.error("--summary-only needs --records")
        text, _ = records_table(
            load_records(a.records), names, [c for c in a.columns.split(",") if c]
        )
        print(text)
        if a.out:  # the numbers are the records file's: the table is the only other file
            Path(a.out).write_text(text + "\n")
        return
    if a.records:
        run_resumable(a, names, tools, unary)
        return
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
        proc = subprocess.Popen(
            [
                a.peers_python,
                str(Path(__file__).resolve()),
                "--mode",
                "peers",
                "--data",
                path,
                "--json-out",
                out_json,
                "--tools",
                ",".join(peers),
                "--unary",
                ",".join(unary),
                "--max-time",
                str(a.max_time),
            ]
        )
        if not a.parallel_peers:
            proc.wait()
    configs = jaxsr_configs(tools, unary, a.beam_width, a.max_nodes, a.max_time, a.strategy)
    for name, (X, y, Xt, yt) in data.items():
        for tool, params in configs.items():
            rec = run_jaxsr(params, X, y, Xt, yt, a.warm)
            results[name][tool] = rec
            print(
                f"{name} {tool}: rel {rec['rel_test_mse']:.2e} {rec['seconds']:.1f} s "
                f"{rec.get('expression', rec.get('error', ''))[:80]}",
                file=sys.stderr,
                flush=True,
            )
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
        f"{a.beam_width}; {len(names)} equations"
    )
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
        Path(a.out).with_suffix(".json").write_text(
            json.dumps({"rational": rational, "results": results}, indent=1)
        )


def run_resumable(a, names: list[str], tools: list[str], unary: list[str]) -> None:
    """``--records``: equation by equation, every tool of ``tools`` whose record (same
    equation, tool and settings) is not yet in the file; each finished fit is appended at
    once, so a run can be stopped at any time and continued (or run in pieces, on other
    days, and merged) with the same command line."""
    from jaxsr.datasets import get_feynman_equation

    commit = git_commit()
    done = {(r["equation"], r["tool"], r["settings_key"]) for r in load_records(a.records)}
    data_settings = {"n": a.n, "n_test": a.n_test, "train_seed": 0, "test_seed": 1}
    configs = jaxsr_configs(tools, unary, a.beam_width, a.max_nodes, a.max_time, a.strategy)
    settings = {
        t: dict(
            data_settings,
            warm=a.warm,
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in c.items()},
        )
        for t, c in configs.items()
    }
    for t, c in configs.items():  # the second warm-up fit of run_jaxsr
        if a.warm and "cos" in c.get("unary_operators", ()):
            settings[t]["warm_unary_node"] = "(cos(x1 + 0.5) * x1) + 0.0, 3 iterations"
        if c.get("unary_operators"):  # what the estimator's unary fit is
            settings[t].update(unary_fit_kind())
    peers = [t for t in tools if t in ("pyoperon", "gplearn")]
    for t in peers:
        settings[t] = dict(data_settings, **peer_settings(t, unary, a.max_time))
    keys = {t: settings_key(s) for t, s in settings.items()}
    for name in names:
        todo = [t for t in settings if (name, t, keys[t]) not in done]
        if not todo:
            continue
        eq = get_feynman_equation(name, rational_only=False)
        X, y = eq.sample(a.n, seed=0)
        Xt, yt = eq.sample(a.n_test, seed=1)
        base = {"equation": name, "rational": bool(eq.rational), "commit": commit}

        def emit(tool, rec, base=base):
            full = dict(
                base,
                tool=tool,
                settings=settings[tool],
                settings_key=keys[tool],
                utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **rec,
            )
            append_record(a.records, full)
            print(
                f"{base['equation']} {tool}: rel {rec['rel_test_mse']:.2e} "
                f"{rec['seconds']:.1f} s "
                f"{str(rec.get('expression', rec.get('error', '')))[:80]}",
                file=sys.stderr,
                flush=True,
            )

        for tool in [t for t in todo if t in configs]:
            emit(tool, run_jaxsr(configs[tool], X, y, Xt, yt, a.warm))
        todo_peers = [t for t in todo if t in peers]
        if todo_peers:  # their own python, one process per equation
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "data.npz")
                np.savez(
                    path,
                    names=np.array([name]),
                    **{f"{name}__X": X, f"{name}__y": y, f"{name}__Xt": Xt, f"{name}__yt": yt},
                )
                out_json = os.path.join(tmp, "peers.json")
                proc = subprocess.run(
                    [
                        a.peers_python,
                        str(Path(__file__).resolve()),
                        "--mode",
                        "peers",
                        "--data",
                        path,
                        "--json-out",
                        out_json,
                        "--tools",
                        ",".join(todo_peers),
                        "--unary",
                        ",".join(unary),
                        "--max-time",
                        str(a.max_time),
                    ]
                )
                try:
                    row = json.loads(Path(out_json).read_text())[name]
                except (OSError, ValueError, KeyError) as err:
                    print(f"peers failed on {name} (rc {proc.returncode}): {err}", file=sys.stderr)
                    row = {}
                for tool in todo_peers:
                    if tool in row:
                        emit(tool, row[tool])
    text, _ = records_table(load_records(a.records), names)
    print(text)
    if a.out:  # the numbers are the records file's: the table is the only other file
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
