"""Optimal sparse regression trees: jaxsr against the PyPI packages ``osrt`` and ``pystreed``.

On every CSV of ``shared/data/osrt/binarized/`` (last column = target, the others 0/1), with
squared loss, ``regularization`` (lambda) 0.01 and ``depth_budget`` 5 (plus a few extra
cases, e.g. ``sync`` with lambda 0.1 where pystreed's k-means bound is known to go wrong), in
one run:

* jaxsr's ``OptimalTreeRegressor`` (in this process; 'n/a' when it cannot be imported);
* ``osrt`` 0.2.2 (config: ``regularization``, ``depth_budget``, ``minimum_captured_points: 1``
  (its default 7 is a minimum leaf size that changes the optimum), ``k_cluster: True``,
  ``time_limit``; it computes in float32);
* ``pystreed`` 1.4 ``STreeDRegressor(optimization_task="cost-complex-regression",
  max_depth=depth_budget - 1, cost_complexity=regularization)``, with its default
  ``regression_lower_bound="kmeans"`` and with ``"equivalent"``.

The peers need no JAX and live in another virtual environment, so they run in a subprocess
of *their* python (``--peers-python``, or ``$JAXSR_PEERS_PYTHON``, default
``/tmp/benchvenv/bin/python``) that runs this same file with ``--mode peers`` and writes JSON.

Every tool's objective is recomputed here the same way, in float64, from the tool's own
predictions on the training data and its own leaf count:

    objective = SSE / SST + lambda * leaves,   SSE = sum (y - prediction)^2,
                                               SST = sum (y - mean(y))^2

(OSRT's normalised squared loss; pystreed's cost-complex objective charges lambda per branch
node, i.e. lambda * (leaves - 1), the same optimum.) Times are wall-clock seconds around
``fit``; for jaxsr both the first fit of the case and a second fit on the same data (the host
engine is compiled ahead of time, at install: the first fit of a process pays only imports).

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_trees_peers.py                 # all, one run, table
    .venv/bin/python benchmarks/bench_trees_peers.py --datasets sync,servo
    /tmp/benchvenv/bin/python benchmarks/bench_trees_peers.py --mode peers --json-out p.json

The combined results go to ``benchmarks/results/trees_peers.json`` (``--out``) and the table
to ``benchmarks/results/trees_peers.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
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
EXTRA_CASES = [("sync", 0.1, 5), ("sync", 0.05, 5)]


# ------------------------------------------------------------------------------ data
def shared_data_dir() -> Path:
    """``shared/data``: from ``jaxsr.datasets`` when importable, else walk up from here."""
    try:
        sys.path.insert(0, str(REPO))
        from jaxsr.datasets import shared_data_dir as _sdd

        return Path(_sdd())
    except Exception:  # peers' python has no jax; or jaxsr.datasets not there yet
        pass
    finally:
        if sys.path and sys.path[0] == str(REPO):
            sys.path.pop(0)
    env = os.environ.get("JAXSR_SHARED_DATA")
    if env and Path(env).is_dir():
        return Path(env)
    for parent in HERE.parents:
        cand = parent / "shared" / "data"
        if cand.is_dir():
            return cand
    raise FileNotFoundError("shared/data not found; set JAXSR_SHARED_DATA to its path")


def dataset_paths() -> dict[str, Path]:
    folder = shared_data_dir() / "osrt" / "binarized"
    return {p.stem: p for p in sorted(folder.glob("*.csv"))}


def load_binarized(path: Path):
    """``(X, y, names)``: X ``(n, m)`` uint8 0/1, y ``(n,)`` float64, m feature names."""
    import pandas as pd

    df = pd.read_csv(path)
    X = df.iloc[:, :-1].to_numpy()
    if not np.isin(X, (0, 1)).all():
        raise ValueError(f"{path.name}: features are not all 0/1")
    y = df.iloc[:, -1].to_numpy(dtype=np.float64)
    return X.astype(np.uint8), y, [str(c) for c in df.columns[:-1]]


def objective(y: np.ndarray, pred: np.ndarray, leaves: int, lam: float) -> tuple[float, float]:
    """``(SSE/SST + lam*leaves, SSE/SST)`` in float64 from predictions and a leaf count."""
    y = np.asarray(y, dtype=np.float64)
    pred = np.asarray(pred, dtype=np.float64).reshape(-1)
    sst = float(np.sum((y - y.mean()) ** 2))
    sse = float(np.sum((y - pred) ** 2))
    loss = sse / sst if sst > 0 else (0.0 if sse == 0 else float("inf"))
    return loss + lam * leaves, loss


@contextlib.contextmanager
def _quiet():
    """Silence stdout, also the C++ level (osrt prints from both)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            with contextlib.redirect_stdout(devnull):
                yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


# ------------------------------------------------------------------------------ peers
def run_osrt(X, y, names, lam, depth_budget, time_limit) -> dict:
    import pandas as pd
    from osrt.model.osrt import OSRT

    config = {
        "regularization": lam,
        "depth_budget": depth_budget,
        "minimum_captured_points": 1,
        "k_cluster": True,
        "time_limit": time_limit,
        "metric": "L2",
        "verbose": False,
        "diagnostics": False,
    }
    Xf = pd.DataFrame(X.astype(int), columns=names)
    model = OSRT(config)
    with _quiet():
        t0 = time.perf_counter()
        model.fit(Xf, pd.DataFrame(y))
        seconds = time.perf_counter() - t0
        pred = np.asarray(model.predict(Xf), dtype=np.float64)
    leaves = int(model.leaves())
    obj, loss = objective(y, pred, leaves, lam)
    return {
        "objective": obj,
        "loss": loss,
        "leaves": leaves,
        "depth": int(model.max_depth()),
        "seconds": seconds,
        "solver_seconds": float(model.time),
        "timed_out": bool(model.timeout),
        "reported_lower_bound": float(model.lb),
        "reported_upper_bound": float(model.ub),
        "reported_loss": float(model.reported_loss),
        "config": config,
    }


def run_pystreed(X, y, lam, depth_budget, time_limit, lower_bound) -> dict:
    from pystreed import STreeDRegressor

    params = {
        "optimization_task": "cost-complex-regression",
        "max_depth": depth_budget - 1,
        "cost_complexity": lam,
        "regression_lower_bound": lower_bound,
        "time_limit": time_limit,
    }
    model = STreeDRegressor(**params)
    Xi = X.astype(np.intc)
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(Xi, y)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    same_features = bool(np.array_equal(model.binarizer_.transform(Xi), Xi))
    pred = np.asarray(model.predict(Xi), dtype=np.float64)
    leaves = int(model.get_n_leaves())
    obj, loss = objective(y, pred, leaves, lam)
    return {
        "objective": obj,
        "loss": loss,
        "leaves": leaves,
        "depth": int(model.get_depth()),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "optimal_claimed": bool(model.fit_result.is_optimal()),
        "features_unchanged_by_its_binarizer": same_features,
        "params": params,
    }


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("osrt", "pystreed", "scikit-learn", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def peers_main(
    cases, time_limit, json_out, tools=("osrt", "pystreed", "pystreed_equivalent")
) -> None:
    paths = dataset_paths()
    results = []
    for name, lam, budget in cases:
        X, y, names = load_binarized(paths[name])
        row = {
            "dataset": name,
            "rows": int(X.shape[0]),
            "features": int(X.shape[1]),
            "regularization": lam,
            "depth_budget": budget,
        }
        for key, fn in [
            (
                "osrt",
                lambda X=X, y=y, n=names, l=lam, b=budget: run_osrt(X, y, n, l, b, time_limit),
            ),
            (
                "pystreed",
                lambda X=X, y=y, l=lam, b=budget: run_pystreed(X, y, l, b, time_limit, "kmeans"),
            ),
            (
                "pystreed_equivalent",
                lambda X=X, y=y, l=lam, b=budget: run_pystreed(
                    X, y, l, b, time_limit, "equivalent"
                ),
            ),
        ]:
            if key not in tools:
                continue
            try:
                row[key] = fn()
            except Exception as err:  # report, keep going
                row[key] = {"error": f"{type(err).__name__}: {err}"}
            print(
                f"[peers] {name} lambda={lam} budget={budget} {key}: "
                f"{_fmt_obj(row[key])} in {_fmt_s(row[key].get('seconds'))}",
                file=sys.stderr,
                flush=True,
            )
        results.append(row)
    payload = {
        "versions": _versions(),
        "python": sys.version.split()[0],
        "time_limit": time_limit,
        "results": results,
    }
    Path(json_out).write_text(json.dumps(payload, indent=1))


# ------------------------------------------------------------------------------ jaxsr
def _make_jaxsr(lam, depth_budget, time_limit, backend="auto"):
    sys.path.insert(0, str(REPO))
    from jaxsr.trees import OptimalTreeRegressor  # noqa: PLC0415

    wanted = {
        "regularization": lam,
        "depth_budget": depth_budget,
        "loss": "squared_error",
        "time_limit": time_limit,
        "binarizer": None,
        "backend": backend,
    }
    accepted = OptimalTreeRegressor().get_params()
    return OptimalTreeRegressor(**{k: v for k, v in wanted.items() if k in accepted})


def run_jaxsr(X, y, lam, depth_budget, time_limit, warm=True, backend="auto") -> dict:
    out = {"backend": backend}
    for run in ("cold", "warm") if warm else ("cold",):
        model = _make_jaxsr(lam, depth_budget, time_limit, backend)
        t0, c0 = time.perf_counter(), time.process_time()
        model.fit(X.astype(np.float64), y)
        seconds = time.perf_counter() - t0
        out[f"seconds_{run}"] = seconds
        out[f"cpu_seconds_{run}"] = time.process_time() - c0
    pred = np.asarray(model.predict(X.astype(np.float64)), dtype=np.float64)
    leaves = int(model.n_leaves_)
    obj, loss = objective(y, pred, leaves, lam)
    out.update(
        {
            "objective": obj,
            "loss": loss,
            "leaves": leaves,
            "depth": int(getattr(model, "depth_", -1)),
            "seconds": out.get("seconds_warm", out["seconds_cold"]),
            "cpu_seconds": out.get("cpu_seconds_warm", out["cpu_seconds_cold"]),
            "reported_objective": float(getattr(model, "objective_", float("nan"))),
            "lower_bound": float(getattr(model, "lower_bound_", float("nan"))),
            "optimal": bool(getattr(model, "optimal_", False)),
            "timed_out": bool(getattr(model, "timed_out_", False)),
        }
    )
    return out


def jaxsr_available() -> str | None:
    """``None`` if ``jaxsr.trees.OptimalTreeRegressor`` imports, else the reason."""
    try:
        sys.path.insert(0, str(REPO))
        from jaxsr.trees import OptimalTreeRegressor  # noqa: F401
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return None


# ------------------------------------------------------------------------------ report
def _fmt_obj(r) -> str:
    if not r or "objective" not in r:
        return "n/a"
    return f"{r['objective']:.6f}"


def _fmt_s(s) -> str:
    return "n/a" if s is None else f"{s:.3f}"


def _ratio(a, b) -> str:
    if a is None or b is None or b <= 0:
        return "n/a"
    return f"{a / b:.2f}"


def table(results) -> str:
    head = (
        f"{'dataset':<30} {'rows':>5} {'feat':>4} {'lam':>5} {'D':>2} | "
        f"{'jaxsr s':>8} {'jaxsr obj':>9} {'L':>3} | {'osrt s':>8} {'osrt obj':>9} {'L':>3} | "
        f"{'streed s':>8} {'streed obj':>10} {'L':>3} | {'str-eq s':>8} {'str-eq obj':>10} "
        f"{'L':>3} | {'osrt/jx':>7} {'str/jx':>7} | {'jx 1st':>7} | {'jx-jax s':>8} "
        f"{'jx-jax obj':>10} {'1st':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        j, o = r.get("jaxsr") or {}, r.get("osrt") or {}
        s, e = r.get("pystreed") or {}, r.get("pystreed_equivalent") or {}
        jj = r.get("jaxsr_jax") or {}

        def cell(d, w=9):
            if "objective" not in d:
                return f"{'n/a':>8} {'n/a':>{w}} {'':>3}"
            flag = "*" if d.get("timed_out") else " "
            return f"{d['seconds']:>8.3f} {d['objective']:>{w - 1}.6f}{flag}{d['leaves']:>3}"

        lines.append(
            f"{r['dataset'][:30]:<30} {r['rows']:>5} {r['features']:>4} "
            f"{r['regularization']:>5g} {r['depth_budget']:>2} | {cell(j)} | {cell(o)} | "
            f"{cell(s, 10)} | {cell(e, 10)} | "
            f"{_ratio(o.get('seconds'), j.get('seconds')):>7} "
            f"{_ratio(s.get('seconds'), j.get('seconds')):>7} | "
            f"{_fmt_s(j.get('seconds_cold')):>7} | {cell(jj, 10)[:-4]} "
            f"{_fmt_s(jj.get('seconds_cold')):>6}"
        )
    lines.append("")
    lines.append(
        "times: wall-clock seconds around fit (jaxsr: second fit of the case; "
        "jx 1st: jaxsr's first fit of the case; jaxsr = backend 'auto', which "
        "is the host engine (C++, compiled at install); jx-jax = backend 'jax', the "
        "batched jitted kernels); "
        "obj = SSE/SST + lambda*leaves recomputed in float64 from each tool's own "
        "predictions; L = leaves; * = osrt timed out (no certificate); "
        "streed = pystreed kmeans bound (default), str-eq = pystreed equivalent bound; "
        "osrt/jx, str/jx = peer time / jaxsr time."
    )
    return "\n".join(lines)


def summary(results) -> str:
    """Per depth budget: total seconds, geometric mean and worst of pystreed / jaxsr."""
    lines = [
        f"{'budget':>6} {'cases':>5} | {'jaxsr total s':>13} {'streed total s':>14} "
        f"{'total ratio':>11} | {'geo-mean str/jx':>15} {'worst str/jx':>12} "
        f"{'worst case':<30} | {'jx worse obj':>12} {'str worse obj':>13}"
    ]
    budgets = sorted({r["depth_budget"] for r in results})
    for b in budgets + ["all"]:
        rows = [r for r in results if b == "all" or r["depth_budget"] == b]
        pairs = [(r, (r.get("jaxsr") or {}), (r.get("pystreed") or {})) for r in rows]
        pairs = [(r, j, s) for r, j, s in pairs if "seconds" in j and "seconds" in s]
        if not pairs:
            continue
        tj = sum(j["seconds"] for _, j, _ in pairs)
        ts = sum(s["seconds"] for _, _, s in pairs)
        ratios = [max(s["seconds"], 1e-6) / max(j["seconds"], 1e-6) for _, j, s in pairs]
        geo = float(np.exp(np.mean(np.log(ratios))))
        k = int(np.argmin(ratios))
        worst = pairs[k][0]
        tag = f"{worst['dataset']} lam={worst['regularization']:g}"
        jw = sum(j["objective"] > s["objective"] * (1 + 1e-9) + 1e-12 for _, j, s in pairs)
        sw = sum(s["objective"] > j["objective"] * (1 + 1e-9) + 1e-12 for _, j, s in pairs)
        lines.append(
            f"{b!s:>6} {len(pairs):>5} | {tj:>13.3f} {ts:>14.3f} {ts / tj:>11.3f} | "
            f"{geo:>15.3f} {ratios[k]:>12.3f} {tag:<30} | {jw:>12} {sw:>13}"
        )
    lines.append(
        "ratios = pystreed seconds / jaxsr seconds (> 1: jaxsr faster); "
        "worse obj = cases where that tool's objective is above the other's."
    )
    return "\n".join(lines)


def cpu_table(results) -> str:
    """Process CPU seconds per case (jaxsr's second and first fit, pystreed) and, per depth
    budget, totals, the total ratio, the geometric mean and the worst case of pystreed /
    jaxsr, and how many cases each tool certified (jaxsr ``optimal_``, pystreed's claim)."""
    lines = [
        "CPU seconds (process time around fit; jaxsr = second fit, 1st = first fit):",
        f"{'dataset':<34} {'lam':>6} {'D':>2} | {'jx cpu':>8} {'jx 1st':>8} "
        f"{'str cpu':>8} | {'str/jx':>7} | jx opt",
    ]
    for r in results:
        j, st = r.get("jaxsr") or {}, r.get("pystreed") or {}
        jc, sc = j.get("cpu_seconds"), st.get("cpu_seconds")
        lines.append(
            f"{r['dataset'][:34]:<34} {r['regularization']:>6g} {r['depth_budget']:>2} | "
            f"{_fmt_s(jc):>8} {_fmt_s(j.get('cpu_seconds_cold')):>8} {_fmt_s(sc):>8} | "
            f"{_ratio(sc, jc):>7} | {j.get('optimal', 'n/a')}"
        )
    budgets = sorted({r["depth_budget"] for r in results})
    for b in budgets + ["all"]:
        rows = [r for r in results if b == "all" or r["depth_budget"] == b]
        pairs = [((r.get("jaxsr") or {}), (r.get("pystreed") or {}), r) for r in rows]
        pairs = [
            (j, st, r)
            for j, st, r in pairs
            if j.get("cpu_seconds") is not None and st.get("cpu_seconds") is not None
        ]
        if not pairs:
            continue
        tj = sum(j["cpu_seconds"] for j, _, _ in pairs)
        ts = sum(st["cpu_seconds"] for _, st, _ in pairs)
        ratios = [max(st["cpu_seconds"], 1e-6) / max(j["cpu_seconds"], 1e-6) for j, st, _ in pairs]
        k = int(np.argmin(ratios))
        w = pairs[k][2]
        cj = sum(bool(j.get("optimal")) for j, _, _ in pairs)
        cs = sum(bool(st.get("optimal_claimed")) for _, st, _ in pairs)
        lines.append(
            f"CPU totals, budget {b}: jaxsr {tj:.3f} s, pystreed {ts:.3f} s, total ratio "
            f"{ts / tj:.3f}, geo-mean {float(np.exp(np.mean(np.log(ratios)))):.3f}, "
            f"worst {ratios[k]:.3f} ({w['dataset']} {w['regularization']:g} "
            f"D{w['depth_budget']}); certified jaxsr {cj}/{len(pairs)}, "
            f"pystreed claims {cs}/{len(pairs)}"
        )
    return "\n".join(lines)


def merge_results(paths, note=None) -> dict:
    """One results payload from several saved runs (e.g. one process per dataset)."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    payload = {k: v for k, v in runs[0].items() if k != "results"}
    payload["results"] = [r for run in runs for r in run["results"]]
    payload["merged_from"] = [str(p) for p in paths]
    if note:
        payload["note"] = note
    return payload


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["all", "peers", "jaxsr"], default="all")
    ap.add_argument("--datasets", default=None, help="comma-separated stems (default: all)")
    ap.add_argument(
        "--regularization",
        default="0.01",
        help="lambda, or a comma-separated list (every dataset x lambda x budget)",
    )
    ap.add_argument("--depth-budget", default="5", help="an int or a comma-separated list")
    ap.add_argument(
        "--peers",
        default="osrt,pystreed,pystreed_equivalent",
        help="peers to run (comma-separated)",
    )
    ap.add_argument("--no-extra", action="store_true", help="skip the extra cases (sync 0.1)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="per tool and case (s)")
    ap.add_argument(
        "--peers-python", default=os.environ.get("JAXSR_PEERS_PYTHON", DEFAULT_PEERS_PYTHON)
    )
    ap.add_argument(
        "--peers-json",
        default=None,
        help="reuse a peers JSON written earlier instead of running the peers",
    )
    ap.add_argument("--json-out", default=None, help="peers mode: where to write the JSON")
    ap.add_argument("--out", default=str(HERE / "results" / "trees_peers.json"))
    ap.add_argument("--no-warm", action="store_true", help="jaxsr: one fit only")
    ap.add_argument(
        "--backends",
        default="auto,jax",
        help="jaxsr backends to time (auto = the compiled host engine)",
    )
    ap.add_argument("--from-json", help="print the table of a saved results JSON and exit")
    ap.add_argument(
        "--merge",
        help="comma-separated saved results JSONs: write them as one "
        "(--out, and its .txt table) and exit",
    )
    ap.add_argument("--note", default=None, help="--merge: a note stored in the JSON")
    args = ap.parse_args(argv)
    if args.merge:
        payload = merge_results([p for p in args.merge.split(",") if p], args.note)
        res = payload["results"]
        text = table(res) + "\n\n" + summary(res) + "\n\n" + cpu_table(res)
        print(text)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(payload, indent=1) + "\n")
        out.with_suffix(".txt").write_text(text + "\n")
        return 0

    names = list(dataset_paths())
    if args.datasets:
        names = [n.strip() for n in args.datasets.split(",") if n.strip()]
        unknown = sorted(set(names) - set(dataset_paths()))
        if unknown:
            ap.error(f"unknown datasets {unknown}; known: {sorted(dataset_paths())}")
    lams = [float(v) for v in str(args.regularization).split(",") if v.strip()]
    budgets = [int(v) for v in str(args.depth_budget).split(",") if v.strip()]
    cases = [(n, lam, b) for b in budgets for lam in lams for n in names]
    if not args.no_extra:
        cases += [c for c in EXTRA_CASES if c[0] in names and c not in cases]

    if args.mode == "peers":
        peers_main(
            cases, args.time_limit, args.json_out or "/dev/stdout", tuple(args.peers.split(","))
        )
        return 0
    if args.from_json:  # re-render a saved run
        res = json.loads(Path(args.from_json).read_text())["results"]
        print(table(res) + "\n\n" + summary(res) + "\n\n" + cpu_table(res))
        return 0

    peers = {"results": []}
    if args.mode == "all":
        if args.peers_json:
            peers = json.loads(Path(args.peers_json).read_text())
        elif not Path(args.peers_python).exists():
            print(
                f"peers python {args.peers_python} not found: peers are n/a "
                "(pip install -e '.[bench]' in a venv, pass --peers-python)",
                file=sys.stderr,
            )
        else:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "peers.json"
                cmd = [
                    args.peers_python,
                    str(Path(__file__).resolve()),
                    "--mode",
                    "peers",
                    "--json-out",
                    str(out),
                    "--time-limit",
                    str(args.time_limit),
                    "--regularization",
                    str(args.regularization),
                    "--depth-budget",
                    str(args.depth_budget),
                    "--datasets",
                    ",".join(names),
                    "--peers",
                    args.peers,
                ]
                if args.no_extra:
                    cmd.append("--no-extra")
                subprocess.run(cmd, check=True)
                peers = json.loads(out.read_text())
    by_case = {(r["dataset"], r["regularization"], r["depth_budget"]): r for r in peers["results"]}

    reason = jaxsr_available()
    if reason:
        print(f"jaxsr OptimalTreeRegressor not importable ({reason}): n/a", file=sys.stderr)
    paths = dataset_paths()
    results = []
    for name, lam, budget in cases:
        X, y, _ = load_binarized(paths[name])
        row = dict(
            by_case.get((name, lam, budget))
            or {
                "dataset": name,
                "rows": int(X.shape[0]),
                "features": int(X.shape[1]),
                "regularization": lam,
                "depth_budget": budget,
            }
        )
        for backend in args.backends.split(",") if reason is None else []:
            key = "jaxsr" if backend == "auto" else f"jaxsr_{backend}"
            try:
                row[key] = run_jaxsr(
                    X, y, lam, budget, args.time_limit, warm=not args.no_warm, backend=backend
                )
            except Exception as err:
                row[key] = {"error": f"{type(err).__name__}: {err}"}
            print(
                f"[{key}] {name} lambda={lam} budget={budget}: {_fmt_obj(row[key])} "
                f"in {_fmt_s(row[key].get('seconds'))}",
                file=sys.stderr,
                flush=True,
            )
        results.append(row)

    text = table(results) + "\n\n" + summary(results) + "\n\n" + cpu_table(results)
    print(text)
    payload = {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "peers_versions": peers.get("versions"),
        "time_limit": args.time_limit,
        "objective": "SSE/SST + lambda*leaves, float64, from each tool's own predictions",
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    out.with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
