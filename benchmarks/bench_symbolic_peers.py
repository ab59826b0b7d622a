"""Symbolic regression: jaxsr's ``SymbolicRegressor`` against pyoperon, gplearn and a linear model.

Data (generated once, in this process, and handed to the peers as one ``.npz`` file, so
every tool sees the same rows):

* Newton's law of gravitation (DoME paper, section 3): 1000 samples, masses log-uniform in
  ``[1e23, 1e25]``, distances log-uniform in ``[1e8, 1e12]`` (``jaxsr.datasets``);
* rational Feynman equations I.12.4, I.18.4, I.27.6 and I.9.18, with formulas and ranges read
  from ``shared/data/feynman/FeynmanEquations.csv`` (squares written as products), each
  variable uniform in its listed range, 1000 rows, seed 0;
* scikit-learn's diabetes data (442 patients, 10 features).

Each dataset is split 75 % / 25 % into train and test with a fixed seed.

Tools, in one run:

* jaxsr ``SymbolicRegressor`` (in this process; 'n/a' if it cannot be imported), strategy 3,
  at most 50 nodes, ``max_time`` 300 s; on Newton the paper's setting (strategy 1, goal MSE =
  mean of the training target; section 3);
* ``pyoperon.sklearn.SymbolicRegressor`` (``add,sub,mul,div,constant,variable``,
  ``max_length`` 50, its other defaults: population 1000, 1e6 evaluations, linear scaling;
  one thread per CPU core, ``max_time`` 300 s, ``random_state`` 0);
* ``gplearn.genetic.SymbolicRegressor`` (``add, sub, mul, div``, population 1000, 20
  generations, parsimony 0.001, ``random_state`` 0);
* ``sklearn.linear_model.LinearRegression`` (baseline).

The peers run in a subprocess of *their* python (``--peers-python`` or
``$JAXSR_PEERS_PYTHON``, default ``/tmp/benchvenv/bin/python``) running this same file with
``--mode peers``. Printed per dataset and tool: train and test R^2, test NMSE
(``MSE / Var(y_test)``), expression size in nodes, fit time (wall clock), and the time ratio
peer / jaxsr. Results: ``benchmarks/results/symbolic_peers.{txt,json}``.

Usage (repository root)::

    .venv/bin/python benchmarks/bench_symbolic_peers.py
    .venv/bin/python benchmarks/bench_symbolic_peers.py --datasets newton,I.18.4 --max-time 30
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_PEERS_PYTHON = "/tmp/benchvenv/bin/python"
FEYNMAN = ["I.12.4", "I.18.4", "I.27.6", "I.9.18"]
ALL_DATASETS = ["newton", *FEYNMAN, "diabetes"]
SEED = 0
TEST_FRACTION = 0.25


# ------------------------------------------------------------------------------ data
def make_datasets(names) -> dict[str, dict]:
    """``{name: {X, y, feature_names, note}}`` built with ``jaxsr.datasets``."""
    sys.path.insert(0, str(REPO))
    from jaxsr import datasets as ds

    out = {}
    for name in names:
        if name == "newton":
            X, y = ds.make_newton_gravitation(1000, seed=SEED)
            out[name] = {
                "X": X,
                "y": y,
                "names": ["m1", "m2", "r"],
                "note": "F = G*m1*m2/(r*r), G = 6.67392e-11",
            }
        elif name == "diabetes":
            X, y = ds.load_diabetes(as_frame=False)
            out[name] = {
                "X": X,
                "y": y,
                "names": [f"x{j + 1}" for j in range(X.shape[1])],
                "note": "scikit-learn diabetes (442 x 10)",
            }
        else:
            eq = ds.get_feynman_equation(name, source="csv")
            X, y = eq.sample(1000, SEED)
            out[name] = {"X": X, "y": y, "names": eq.variable_names, "note": eq.expression}
    return out


def split(n: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(TEST_FRACTION * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def metrics(y_tr, p_tr, y_te, p_te) -> dict:
    def r2(y, p):
        p = np.asarray(p, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(p)):
            return float("nan")
        return float(1.0 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))

    return {
        "r2_train": r2(y_tr, p_tr),
        "r2_test": r2(y_te, p_te),
        "nmse_test": 1.0 - r2(y_te, p_te),
    }


def _count_linear_nodes(n_features: int) -> int:
    # c0 + c1*x1 + ... + cp*xp: p products of (constant, variable) and p additions
    return 1 + 4 * n_features


# ------------------------------------------------------------------------------ peers
def run_peers(data_path: str, max_time: float, json_out: str) -> None:
    from gplearn.genetic import SymbolicRegressor as GPLearn
    from pyoperon.sklearn import SymbolicRegressor as Operon
    from sklearn.linear_model import LinearRegression

    blob = np.load(data_path, allow_pickle=False)
    names = [str(n) for n in blob["datasets"]]
    results = {}
    for name in names:
        X, y = blob[f"{name}__X"], blob[f"{name}__y"]
        tr, te = split(len(y))
        row = {}
        tools = {
            "pyoperon": lambda: Operon(
                allowed_symbols="add,sub,mul,div,constant,variable",
                max_length=50,
                n_threads=os.cpu_count() or 1,
                max_time=int(max_time),
                random_state=SEED,
            ),
            "gplearn": lambda: GPLearn(
                population_size=1000,
                generations=20,
                function_set=("add", "sub", "mul", "div"),
                parsimony_coefficient=0.001,
                random_state=SEED,
                n_jobs=1,
            ),
            "linear": LinearRegression,
        }
        for tool, make in tools.items():
            try:
                est = make()
                t0 = time.perf_counter()
                est.fit(X[tr], y[tr])
                seconds = time.perf_counter() - t0
                rec = metrics(y[tr], est.predict(X[tr]), y[te], est.predict(X[te]))
                if tool == "pyoperon":
                    rec["size"] = int(est.stats_["model_length"])
                    rec["expression"] = est.get_model_string(est.model_, precision=6)
                elif tool == "gplearn":
                    rec["size"] = int(est._program.length_)
                    rec["expression"] = str(est._program)
                else:
                    rec["size"] = _count_linear_nodes(X.shape[1])
                    rec["expression"] = " + ".join(
                        [f"{est.intercept_:.6g}"]
                        + [f"{c:.6g}*x{j + 1}" for j, c in enumerate(est.coef_)]
                    )
                rec["seconds"] = seconds
            except Exception as err:  # report, keep going
                rec = {"error": f"{type(err).__name__}: {err}"}
            row[tool] = rec
            print(
                f"[peers] {name} {tool}: R2 test {rec.get('r2_test', float('nan')):.6g} "
                f"size {rec.get('size')} in {rec.get('seconds', float('nan')):.2f} s",
                file=sys.stderr,
                flush=True,
            )
        results[name] = row
    from importlib.metadata import version

    payload = {
        "versions": {p: version(p) for p in ("pyoperon", "gplearn", "scikit-learn")},
        "results": results,
    }
    Path(json_out).write_text(json.dumps(payload, indent=1))


# ------------------------------------------------------------------------------ jaxsr
def jaxsr_available() -> str | None:
    try:
        sys.path.insert(0, str(REPO))
        from jaxsr.symbolic import SymbolicRegressor  # noqa: F401
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return None


def jaxsr_params(name: str, y_train: np.ndarray, max_time: float) -> dict:
    if name == "newton":  # the paper's setting (section 3)
        return {"strategy": 1, "goal_mse": float(np.mean(y_train)), "max_time": max_time}
    return {"strategy": 3, "max_nodes": 50, "max_time": max_time}


def run_jaxsr(name, X, y, max_time, warm) -> dict:
    from jaxsr.symbolic import SymbolicRegressor

    tr, te = split(len(y))
    params = jaxsr_params(name, y[tr], max_time)
    rec = {"params": params}
    for run in ("cold", "warm") if warm else ("cold",):
        est = SymbolicRegressor(**params)
        t0 = time.perf_counter()
        est.fit(X[tr], y[tr])
        rec[f"seconds_{run}"] = time.perf_counter() - t0
    rec.update(metrics(y[tr], est.predict(X[tr]), y[te], est.predict(X[te])))
    rec["size"] = int(est.expression_tree_.n_nodes)
    rec["expression"] = est.expression_
    rec["iterations"] = int(est.n_iterations_)
    rec["stop_reason"] = str(est.stop_reason_)
    rec["seconds"] = rec.get("seconds_warm", rec["seconds_cold"])
    return rec


# ------------------------------------------------------------------------------ report
TOOLS = ["jaxsr", "pyoperon", "gplearn", "linear"]


def table(rows: dict, datasets: dict) -> str:
    head = (
        f"{'dataset':<9} {'rows':>4} {'vars':>4} {'tool':<9} {'R2 train':>12} "
        f"{'R2 test':>12} {'NMSE test':>10} {'size':>5} {'seconds':>8} {'t/t_jaxsr':>9} "
        f"{'1st fit s':>9} {'':>5}"
    )
    lines = [head, "-" * len(head)]
    for name, row in rows.items():
        n, m = datasets[name]["X"].shape
        tj = (row.get("jaxsr") or {}).get("seconds")
        for tool in TOOLS:
            r = row.get(tool) or {}
            if "r2_test" not in r:
                lines.append(
                    f"{name:<9} {n:>4} {m:>4} {tool:<9} {'n/a':>12}"
                    + (f"  ({r['error'][:60]})" if "error" in r else "")
                )
                continue
            ratio = "" if tool == "jaxsr" or not tj else f"{r['seconds'] / tj:.2f}"
            first = f"{r['seconds_cold']:.2f}" if "seconds_cold" in r else ""
            lines.append(
                f"{name:<9} {n:>4} {m:>4} {tool:<9} {r['r2_train']:>12.9f} {r['r2_test']:>12.9f}"
                f" {r['nmse_test']:>10.3g} {r['size']:>5} {r['seconds']:>8.2f} {ratio:>9} "
                f"{first:>9} {'exact' if r['r2_train'] > 1 - 1e-12 else '':>5}"
            )
        lines.append("")
    lines.append(
        "seconds: wall clock of fit on the training rows (jaxsr: second fit, after JIT "
        "compilation; 1st fit s: jaxsr's first fit, with compilation); "
        "t/t_jaxsr: peer time / jaxsr time; exact: train R^2 > 1 - 1e-12; "
        "size: nodes of the expression (pyoperon: model_length, with its linear "
        "scaling; gplearn: program length; linear: 1 + 4 * n_features)."
    )
    lines.append("")
    for name, row in rows.items():
        lines.append(f"{name} ({datasets[name]['note']}):")
        for tool in TOOLS:
            expr = (row.get(tool) or {}).get("expression")
            if expr:
                lines.append(f"  {tool:<9} {expr}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["all", "peers"], default="all")
    ap.add_argument("--datasets", default=",".join(ALL_DATASETS))
    ap.add_argument("--max-time", type=float, default=300.0)
    ap.add_argument(
        "--peers-python", default=os.environ.get("JAXSR_PEERS_PYTHON", DEFAULT_PEERS_PYTHON)
    )
    ap.add_argument("--data", help="peers mode: the .npz written by the main mode")
    ap.add_argument("--json-out", help="peers mode: where to write the JSON")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--from-json", help="print the table of a saved results JSON and exit")
    ap.add_argument("--no-warm", action="store_true", help="jaxsr: one fit only")
    ap.add_argument("--out", default=str(HERE / "results" / "symbolic_peers.json"))
    args = ap.parse_args(argv)

    if args.mode == "peers":
        run_peers(args.data, args.max_time, args.json_out)
        return 0
    if args.from_json:  # re-render a saved run
        saved = json.loads(Path(args.from_json).read_text())
        shapes = {
            n: {"X": np.empty((d["rows"], d["features"])), "note": d["note"]}
            for n, d in saved["datasets"].items()
        }
        print(table(saved["results"], shapes))
        return 0

    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ALL_DATASETS))
    if unknown:
        ap.error(f"unknown datasets {unknown}; known: {ALL_DATASETS}")
    data = make_datasets(names)
    rows: dict[str, dict] = {n: {} for n in names}
    peers_versions = None
    if not args.no_peers and Path(args.peers_python).exists():
        with tempfile.TemporaryDirectory() as tmp:
            npz = Path(tmp) / "data.npz"
            arrays = {"datasets": np.array(names)}
            for n in names:
                arrays[f"{n}__X"] = data[n]["X"]
                arrays[f"{n}__y"] = data[n]["y"]
            np.savez(npz, **arrays)
            out = Path(tmp) / "peers.json"
            subprocess.run(
                [
                    args.peers_python,
                    str(Path(__file__).resolve()),
                    "--mode",
                    "peers",
                    "--data",
                    str(npz),
                    "--json-out",
                    str(out),
                    "--max-time",
                    str(args.max_time),
                ],
                check=True,
            )
            peers = json.loads(out.read_text())
        peers_versions = peers["versions"]
        for n in names:
            rows[n].update(peers["results"][n])
    elif not args.no_peers:
        print(f"peers python {args.peers_python} not found: peers are n/a", file=sys.stderr)

    reason = jaxsr_available()
    if reason:
        print(f"jaxsr SymbolicRegressor not importable ({reason}): n/a", file=sys.stderr)
    for n in names:
        if reason is None:
            try:
                rows[n]["jaxsr"] = run_jaxsr(
                    n, data[n]["X"], data[n]["y"], args.max_time, warm=not args.no_warm
                )
            except Exception as err:
                rows[n]["jaxsr"] = {"error": f"{type(err).__name__}: {err}"}
            r = rows[n]["jaxsr"]
            print(
                f"[jaxsr] {n}: R2 test {r.get('r2_test', float('nan')):.6g} size "
                f"{r.get('size')} in {r.get('seconds', float('nan')):.2f} s",
                file=sys.stderr,
                flush=True,
            )

    text = table(rows, data)
    print(text)
    payload = {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "peers_versions": peers_versions,
        "split": {"test_fraction": TEST_FRACTION, "seed": SEED},
        "datasets": {
            n: {
                "rows": int(data[n]["X"].shape[0]),
                "features": int(data[n]["X"].shape[1]),
                "names": data[n]["names"],
                "note": data[n]["note"],
            }
            for n in names
        },
        "results": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    out.with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
