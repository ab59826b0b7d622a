"""The panel that chooses ``SymbolicRegressor``'s defaults: configurations of jaxsr, pyoperon
and a linear baseline, on rational Feynman laws with noise and on 8 real datasets.

The defaults of :class:`jaxsr.SymbolicRegressor` are the configuration that wins this
panel, run in one run next to a peer (pyoperon) under the same wall budget per fit.

Data (float64; every tool gets the same arrays, the peer reads them from an ``.npz``):

* **Feynman**: the rational laws of ``jaxsr.datasets`` (``--feynman builtin``: the 17 built
  in; ``--feynman all``: the 58 of ``FeynmanEquations.csv``, the 17 first, with their
  built-in samples), ``--n-train`` rows (seed 0) and ``--n-test`` fresh noiseless test rows
  (seed 1); at each noise level of ``--noise`` (default 0, 0.01, 0.1) the *training*
  targets get Gaussian noise of std ``level * RMS(y_train)`` (seed: CRC-32 of
  ``"<law>:<level>"``, fixed per law and level).
* **Real**: the 8 raw OSRT datasets of ``shared/data/osrt/raw`` (read as ``jaxsr tree``
  reads them, with the options of :data:`REAL_DATASETS`), text columns one-hot encoded as
  ``jaxsr symbolic`` does (:data:`REAL_FEATURES`), ``--splits`` random 75/25 splits (seeds
  0, 1, 2; ``jaxsr``'s CLI split), at most ``--max-train`` training rows (a fixed random
  subset of the split's training rows).

Tools (one row each in the table):

* jaxsr configurations, ``--configs`` names of :data:`CONFIGS` (``default`` is
  ``SymbolicRegressor()`` with the defaults of the jaxsr imported *now*, so the same
  command measures new defaults once they change), plus ``--config-json NAME='{...}'``
  for others; always ``progress=False`` and ``max_time=--max-time``. All fits run in this
  process (jaxsr's JIT and on-disk compilation caches stay warm from fit to fit; the first
  fit of a configuration on a data shape may spend seconds of its ``max_time`` compiling,
  unless ``--warm``: an untimed one-iteration fit first);
* ``pyoperon`` (``--peers pyoperon``): ``pyoperon.sklearn.SymbolicRegressor`` with
  ``add,sub,mul,div,constant,variable``, ``max_length`` 50, its default population, one
  thread, the same ``max_time`` and ``random_state`` 0 (``bench_feynman_all.peer_settings``),
  in a subprocess of ``--peers-python`` per dataset; ``pyoperon-srbench``: the same run as
  SRBench runs Operon (:data:`PEERS`: local search by 5 Levenberg-Marquardt iterations,
  population 500, at most 500,000 evaluations);
* ``linear``: scikit-learn's ``LinearRegression`` (always; its nodes are counted as those
  of ``c0 + c1*x1 + ... + cp*xp``, ``4p + 1``).

Measured per fit: test R^2, relative test MSE ``mean((pred - y)^2) / mean(y^2)``, exact
recovery (relative test MSE < 1e-16 at noise 0: a lower bound of symbolic equivalence),
nodes of the selected model (jaxsr's ``n_nodes_``; pyoperon's model string counted the same
way: constants, variables and binary operators, its linear scaling and variable weights
included), wall and CPU seconds of the fit (``time.process_time`` of the fitting process:
all its threads, jaxsr's background compilation thread included), ``stop_reason_``.

**Records** (``--records FILE.jsonl``, default ``benchmarks/results/sr_defaults.jsonl``):
one JSON line per (tool and settings, dataset, noise level or split), appended as soon as
the fit ends, with the settings (the estimator's full parameters and the data protocol),
their hash ``settings_key`` and the git commit (``bench_feynman_all``'s helpers). A rerun
of the same command skips what is there: stop at any time and continue, or run parts
(``--panels``, ``--laws``, ``--limit-laws``, ``--noise``, ``--datasets``, ``--splits``,
``--configs``) and let one file collect them. ``--summary-only`` prints the table of a
records file; ``--out`` writes it (``.txt``; the numbers are the records').

Configurations of equal settings (``default`` and ``paper-s3`` while the defaults are the
paper's) are fitted once; the others copy that record (``copied_from``).

Table, one row per tool and settings key: exact recoveries at noise 0 out of the built-in
laws and out of all laws run (and ``~exact``, below :data:`NEAR_EXACT`, which pyoperon's
float32 arithmetic can reach); at noise 0.01 the laws with test R^2 > 0.999 and at most 15
nodes; at 0.1 the median test R^2 and nodes; on real data the median test R^2 over all
splits, the splits with test R^2 < 0 where linear's is > 0, the median nodes; the median
wall and CPU seconds per fit.

    PYTHONPATH=$PWD setsid nice -n 19 taskset -c 1 .venv/bin/python \\
        benchmarks/bench_sr_defaults.py --configs default,paper,s2-b4-bic,guard,bp10,bp10be \\
        --peers pyoperon --feynman all --warm --out benchmarks/results/sr_defaults.txt
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_feynman_all import (  # noqa: E402 - the benchmarks folder is not a package
    DEFAULT_PEERS_PYTHON,
    EXACT,
    append_record,
    fit_peer,
    git_commit,
    load_records,
    peer_settings,
    relative_mse,
    run_jaxsr,
    settings_key,
)

#: jaxsr configurations by name: ``SymbolicRegressor(**params, progress=False,
#: max_time=...)``; ``default`` is the estimator's own defaults.
CONFIGS: dict[str, dict] = {
    "default": {},
    "paper": {
        "strategy": 3,
        "beam_width": 1,
        "bic_patience": None,
        "backward_elimination": False,
        "model_selection": "best",
        "extrapolation_limit": None,
        "domain": "rows",
        "rational_start": False,
    },
    # the defaults without the rational start (the defaults before it)
    "no-rational": {"rational_start": False},
    "paper-s3": {"strategy": 3, "beam_width": 1},
    "s1": {"strategy": 1},
    "s2": {"strategy": 2},
    "s3": {"strategy": 3},
    "s2-b4": {"strategy": 2, "beam_width": 4},
    "s2-b4-val": {"strategy": 2, "beam_width": 4, "validation_fraction": 0.25},
    "s3-b4": {"strategy": 3, "beam_width": 4},
    # the defaults part by part: each adds one to the one before
    "s2-b4-bic": {
        "beam_width": 4,
        "bic_patience": None,
        "backward_elimination": False,
        "extrapolation_limit": None,
    },
    "guard": {"beam_width": 4, "bic_patience": None, "backward_elimination": False},
    "bp10": {"beam_width": 4, "backward_elimination": False},
    "bp10be": {"beam_width": 4},
    "bp10-b4-16": {"beam_width": [4, 16]},
}

#: The raw OSRT datasets as ``jaxsr tree`` reads them (``tests/test_cli.py``):
#: ``(file under osrt/raw, jaxsr.cli._read_csv options, target column, columns to drop)``.
REAL_DATASETS: dict[str, tuple[str, dict, str, tuple[str, ...]]] = {
    "airfoil": ("airfoil/airfoil_self_noise.dat", {"header": False}, "x6", ()),
    "garment": (
        "garment/garments_worker_productivity.csv",
        {},
        "actual_productivity",
        ("date", "wip"),
    ),  # wip: missing values
    "optical": ("optical/optical.csv", {"sep": ";", "decimal": ","}, "Channel Utilization", ()),
    "real_estate": (
        "real_estate/real_estate.csv",
        {},
        "Y house price of unit area",
        ("No",),
    ),  # a row number
    "seoul_bike": ("seoul_bike/seoul_bike.csv", {}, "Rented Bike Count", ()),
    "servo": ("servo/servo.data", {}, "class", ()),
    "sync": ("sync/synchronous_machine.csv", {"sep": ";", "decimal": ","}, "If", ()),
    "yacht": ("yacht/yacht_hydrodynamics.data", {"header": False}, "x7", ()),
}

#: How the data of every fit are made (part of every tool's settings key).
PROTOCOL = {
    "feynman": {
        "train_seed": 0,
        "test_seed": 1,
        "noise": "y_train + N(0, (level * rms(y_train))^2), seed crc32('law:level')",
    },
    "real": {
        "test_fraction": 0.25,
        "split": "jaxsr.cli._split(n, 0.25, seed)",
        # the key's text since the first run (changing it would change every key):
        # the features are now REAL_FEATURES, recorded in each real record
        "features": "numeric columns only",
        "subsample": "rng(seed).permutation(n_train)[:max_train], sorted",
    },
}
NOISE_R2, NOISE_NODES = 0.999, 15  # the criterion at noise 0.01
#: A looser recovery level, at float32's rounding (pyoperon computes in float32: its exact
#: fits reach relative test MSEs near 1e-14, never EXACT's 1e-16).
NEAR_EXACT = 1e-10


# ------------------------------------------------------------------------------ data
def noise_seed(law: str, level: float) -> int:
    return zlib.crc32(f"{law}:{level:g}".encode())


def feynman_item(name: str, level: float, n_train: int, n_test: int) -> dict:
    """The arrays of one law at one noise level (noise on the training targets only)."""
    from jaxsr.datasets import get_feynman_equation

    eq = get_feynman_equation(name)
    X, y = eq.sample(n_train, seed=PROTOCOL["feynman"]["train_seed"])
    Xt, yt = eq.sample(n_test, seed=PROTOCOL["feynman"]["test_seed"])
    if level > 0:
        rms = float(np.sqrt(np.mean(y**2)))
        y = y + np.random.default_rng(noise_seed(name, level)).normal(0.0, level * rms, y.shape)
    return {"X": X, "y": y, "Xt": Xt, "yt": yt}


_REAL_CACHE: dict[tuple, tuple] = {}
#: How the real datasets' text columns enter (recorded in each real record, and in its item
#: key as ``/onehot``; the numeric-only records of earlier runs keep their plain keys).
REAL_FEATURES = "numeric columns, text columns one-hot (jaxsr.cli._one_hot)"


def real_table(
    name: str, one_hot: bool = True
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """``(X, y, feature names, text columns)`` of one raw OSRT dataset: the text columns
    one-hot encoded as ``jaxsr symbolic`` does (``one_hot``), else left out."""
    if (name, one_hot) not in _REAL_CACHE:
        from jaxsr.cli import _features_and_target, _non_numeric, _one_hot, _read_csv
        from jaxsr.datasets import shared_data_dir

        rel, options, target, drop = REAL_DATASETS[name]
        path = shared_data_dir() / "osrt" / "raw" / rel
        df = _read_csv(str(path), **options)
        X, y = _features_and_target(df, str(path), target, drop)
        text = _non_numeric(X)
        if one_hot:
            import contextlib
            import io

            with contextlib.redirect_stderr(io.StringIO()):  # the CLI's note on stderr
                X = _one_hot(X, str(path))
        else:
            X = X.drop(columns=text)
        _REAL_CACHE[(name, one_hot)] = (
            X.to_numpy(np.float64),
            y.to_numpy(np.float64),
            [str(c) for c in X.columns],
            [str(c) for c in text],
        )
    return _REAL_CACHE[(name, one_hot)]


def real_item(name: str, split: int, max_train: int) -> dict:
    from jaxsr.cli import _split

    X, y, _, _ = real_table(name)
    train, test = _split(len(y), PROTOCOL["real"]["test_fraction"], split)
    if len(train) > max_train:
        keep = np.random.default_rng(split).permutation(len(train))[:max_train]
        train = train[np.sort(keep)]
    return {"X": X[train], "y": y[train], "Xt": X[test], "yt": y[test]}


# ------------------------------------------------------------------------------ measures
def r2_score(rel_mse: float, yt: np.ndarray) -> float:
    """Test R^2 from the relative test MSE (``MSE / mean(y^2)``): ``1 - MSE / Var(y)``."""
    if not np.isfinite(rel_mse):
        return float("-inf")
    return float(1.0 - rel_mse * np.mean(yt**2) / np.var(yt))


def operon_nodes(model_string: str) -> int:
    """Nodes of a pyoperon model string over ``+ - * /``: leaves (numbers, variables) and
    one binary operator fewer (pyoperon writes every variable with its weight, ``w * X1``,
    and the linear scaling ``a + b * (...)``, all counted)."""
    body = re.sub(r"X\d+", "v", model_string)
    leaves = len(re.findall(r"v|\d+\.?\d*(?:[eE][-+]?\d+)?", body))
    return max(2 * leaves - 1, 1)


def run_linear(X, y, Xt, yt) -> dict:
    from sklearn.linear_model import LinearRegression

    t0, c0 = time.perf_counter(), time.process_time()
    lin = LinearRegression().fit(X, y)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "rel_test_mse": relative_mse(lin.predict(Xt), yt),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "n_nodes": 4 * X.shape[1] + 1,
    }


def run_jaxsr_fit(params: dict, item: dict, warm: bool) -> dict:
    """``bench_feynman_all.run_jaxsr`` (a timed fit, optionally after an untimed
    one-iteration fit that compiles this data shape's kernels)."""
    return run_jaxsr(params, item["X"], item["y"], item["Xt"], item["yt"], warm)


# ------------------------------------------------------------------------------ peers
#: The peers by name: ``pyoperon`` at its defaults (``bench_feynman_all.peer_settings``: no
#: constant optimisation, ``optimizer_iterations=0``) and ``pyoperon-srbench`` as SRBench
#: runs Operon (``cavalab/srbench``, ``experiment/methods/OperonRegressor.py``: 5
#: Levenberg-Marquardt iterations of local search per individual, population and pool 500,
#: tournament 5, keep-best reinsertion, the basic offspring generator, at most 500,000
#: evaluations, ``max_length`` 50, one thread), over ``+ - * /`` like jaxsr.
PEERS = ("pyoperon", "pyoperon-srbench")


def operon_settings(peer: str, max_time: float) -> dict:
    params = peer_settings("pyoperon", [], max_time)
    if peer == "pyoperon-srbench":
        params.update(
            optimizer="lm",
            optimizer_iterations=5,
            population_size=500,
            pool_size=500,
            tournament_size=5,
            reinserter="keep-best",
            offspring_generator="basic",
            max_evaluations=500_000,
        )
    return params


def run_peers_mode(data_path: str, max_time: float, json_out: str, peer: str = "pyoperon") -> None:
    """``--mode peers`` (under the peers' python): pyoperon (settings ``peer``) on every
    dataset of the ``.npz``; its measures by dataset id in ``json_out``."""
    blob = np.load(data_path, allow_pickle=False)
    params = operon_settings(peer, max_time)
    out = {}
    for key in (str(k) for k in blob["ids"]):
        X, y, Xt, yt = (blob[f"{key}__{s}"] for s in ("X", "y", "Xt", "yt"))
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            est = fit_peer("pyoperon", params, X, y)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            text = str(est.get_model_string(est.model_, 6))
            rec = {
                "rel_test_mse": relative_mse(est.predict(Xt), yt),
                "seconds": seconds,
                "cpu_seconds": cpu,
                "n_nodes": operon_nodes(text),
                "operon_length": int(est.model_.Length),
                "expression": text[:500],
            }
        except Exception as err:  # noqa: BLE001 - reported in the record, the run goes on
            rec = {
                "error": f"{type(err).__name__}: {err}"[:200],
                "rel_test_mse": float("inf"),
                "seconds": float("nan"),
            }
        out[key] = rec
    Path(json_out).write_text(json.dumps(out))


def run_peer(
    python: str, key: str, item: dict, max_time: float, peer: str = "pyoperon"
) -> dict | None:
    """pyoperon (settings ``peer``) on one dataset in a subprocess of ``python``; ``None``
    when it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(
            path, ids=np.array([key]), **{f"{key}__{s}": item[s] for s in ("X", "y", "Xt", "yt")}
        )
        out_json = os.path.join(tmp, "peers.json")
        proc = subprocess.run(
            [
                python,
                str(Path(__file__).resolve()),
                "--mode",
                "peers",
                "--data",
                path,
                "--json-out",
                out_json,
                "--max-time",
                str(max_time),
                "--peers",
                peer,
            ]
        )
        try:
            return json.loads(Path(out_json).read_text())[key]
        except (OSError, ValueError, KeyError) as err:
            print(f"pyoperon failed on {key} (rc {proc.returncode}): {err}", file=sys.stderr)
            return None


# ------------------------------------------------------------------------------ settings
def jaxsr_configs(names: list[str], extra: dict[str, dict], max_time: float) -> dict[str, dict]:
    """``{name: constructor parameters}`` of the configurations asked for."""
    from jaxsr import SymbolicRegressor

    accepted = set(SymbolicRegressor().get_params())
    table = dict(CONFIGS, **extra)
    out = {}
    for name in names:
        if name not in table:
            raise SystemExit(
                f"unknown configuration {name!r}; known: {', '.join(table)} "
                "(or give it with --config-json NAME='{...}')"
            )
        unknown = set(table[name]) - accepted
        if unknown:
            raise SystemExit(
                f"{name}: SymbolicRegressor has no parameter(s) {', '.join(sorted(unknown))}"
            )
        out[name] = dict(table[name], progress=False, max_time=max_time)
    return out


def jaxsr_settings(params: dict, a) -> dict:
    """The settings of a jaxsr configuration: the estimator's full parameters as built now
    (so a change of a default makes a new settings key) and the data protocol."""
    from jaxsr import SymbolicRegressor

    full = json.loads(json.dumps(SymbolicRegressor(**params).get_params(), default=str))
    return {"params": full, "warm": bool(a.warm), **data_settings(a)}


def data_settings(a) -> dict:
    return {
        "protocol": PROTOCOL,
        "n_train": a.n_train,
        "n_test": a.n_test,
        "max_train": a.max_train,
    }


# ------------------------------------------------------------------------------ run
def item_ids(a) -> list[tuple[str, str, float | None, int | None]]:
    """``(panel, dataset, noise, split)`` of every fit asked for, law by law and level by
    level, then dataset by dataset and split by split."""
    from jaxsr.datasets import feynman_equation_names

    out = []
    if "feynman" in a.panels:
        laws = feynman_equation_names(include_csv=a.feynman == "all")
        if a.feynman == "all" and len(laws) < 58:
            raise SystemExit(
                f"FeynmanEquations.csv not found (only {len(laws)} laws); set JAXSR_SHARED_DATA"
            )
        if a.laws:
            laws = a.laws.split(",")
        if a.limit_laws:
            laws = laws[: a.limit_laws]
        levels = [float(v) for v in a.noise.split(",") if v != ""]
        out += [("feynman", law, lv, None) for law in laws for lv in levels]
    if "real" in a.panels:
        names = list(REAL_DATASETS) if a.datasets == "all" else a.datasets.split(",")
        for n in names:
            if n not in REAL_DATASETS:
                raise SystemExit(f"unknown dataset {n!r}; known: {', '.join(REAL_DATASETS)}")
        out += [("real", n, None, s) for n in names for s in range(a.splits)]
    return out


def item_key(panel: str, dataset: str, noise, split) -> str:
    return (
        f"{panel}/{dataset}/noise={noise:g}"
        if panel == "feynman"
        else f"{panel}/{dataset}/split={split}/onehot"
    )


def run(a, configs: dict[str, dict], peers: list[str]) -> None:
    """Every (tool, dataset) not yet in the records file, dataset by dataset; each fit is
    appended as soon as it ends."""
    import warnings

    import jax

    from jaxsr.datasets import feynman_equation_names
    from jaxsr.symbolic.regressor import ExtrapolationWarning

    # every Feynman test set has a few rows outside the training ranges: expected here
    warnings.simplefilter("ignore", ExtrapolationWarning)

    builtin = set(feynman_equation_names())
    commit = git_commit()
    settings = {c: dict(tool="jaxsr", **jaxsr_settings(p, a)) for c, p in configs.items()}
    settings["linear"] = dict(tool="linear", **data_settings(a))
    for peer in peers:
        settings[peer] = dict(
            tool="pyoperon", params=operon_settings(peer, a.max_time), **data_settings(a)
        )
    keys = {c: settings_key(s) for c, s in settings.items()}
    records = load_records(a.records)
    done = {(r["config"], r["settings_key"], r["item"]) for r in records}
    # configurations of the same settings (``default`` and ``paper-s3`` while the defaults
    # are the paper's) are one fit: the later ones copy its record
    same = {(r["settings_key"], r["item"]): r for r in records}
    env = {"jax": jax.__version__, "python": platform.python_version()}
    fits = dict.fromkeys(settings, 0)
    warmed: set[tuple] = set()  # (configuration, rows, features) compiled by --warm
    noted = set()
    for panel, dataset, noise, split in item_ids(a):
        key = item_key(panel, dataset, noise, split)
        todo = [c for c in settings if (c, keys[c], key) not in done]
        if not todo:
            continue
        if panel == "feynman":
            item = feynman_item(dataset, noise, a.n_train, a.n_test)
        else:
            item = real_item(dataset, split, a.max_train)
            _, _, features, text = real_table(dataset)
            if dataset not in noted:
                noted.add(dataset)
                print(
                    f"{dataset}: {len(features)} numeric features"
                    + (f" after one-hot encoding text columns {', '.join(text)}" if text else ""),
                    file=sys.stderr,
                    flush=True,
                )
        base = {
            "item": key,
            "panel": panel,
            "dataset": dataset,
            "noise": noise,
            "split": split,
            "builtin": panel == "feynman" and dataset in builtin,
            "n_train": len(item["y"]),
            "n_test": len(item["yt"]),
            "n_features": int(item["X"].shape[1]),
        }
        if panel == "real":
            base["features"] = REAL_FEATURES
        for c in todo:
            load1 = os.getloadavg()[0]
            if c == "linear":
                rec = run_linear(item["X"], item["y"], item["Xt"], item["yt"])
            elif (keys[c], key) in same:
                first = same[(keys[c], key)]
                rec = {
                    k: v
                    for k, v in first.items()
                    if k not in base
                    and k
                    not in (
                        "tool",
                        "config",
                        "settings",
                        "settings_key",
                        "commit",
                        "env",
                        "fit_index",
                        "load1_before",
                        "utc",
                        "r2",
                        "exact",
                        "copied_from",
                    )
                }
                rec["copied_from"] = first.get("copied_from", first["config"])
            elif c in PEERS:
                rec = run_peer(a.peers_python, key, item, a.max_time, c)
                if rec is None:
                    continue
            else:
                shape = (c, *item["X"].shape)
                rec = run_jaxsr_fit(configs[c], item, a.warm and shape not in warmed)
                warmed.add(shape)
            rec["r2"] = r2_score(rec["rel_test_mse"], item["yt"])
            rec["exact"] = bool(rec["rel_test_mse"] < EXACT)
            full = dict(
                base,
                tool=settings[c]["tool"],
                config=c,
                settings=settings[c],
                settings_key=keys[c],
                commit=commit,
                env=env,
                fit_index=fits[c],
                load1_before=round(load1, 2),
                utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **rec,
            )
            fits[c] += 1
            append_record(a.records, full)
            same.setdefault((keys[c], key), full)
            print(
                f"{key} {c}: R2 {rec['r2']:.6g} rel {rec['rel_test_mse']:.2e} "
                f"nodes {rec.get('n_nodes', '-')} {rec['seconds']:.1f} s "
                f"(cpu {rec.get('cpu_seconds', float('nan')):.1f}) {rec.get('stop', '')} "
                f"{str(rec.get('expression', rec.get('error', '')))[:70]}",
                file=sys.stderr,
                flush=True,
            )


# ------------------------------------------------------------------------------ report
def _median(values) -> float:
    v = np.array([x for x in values if x is not None], dtype=float)
    v = v[~np.isnan(v)]
    return float(np.median(v)) if v.size else float("nan")


def summarize(records: list[dict]) -> dict:
    """The table's numbers, one row per (config, settings key), each over the fits it has
    run (latest record of each fit)."""
    latest: dict[tuple, dict] = {}
    for r in records:
        latest[(r["config"], r["settings_key"], r["item"])] = r
    linear = {r["item"]: r["r2"] for (c, _, _), r in latest.items() if c == "linear"}
    srbench = {r["item"]: r["r2"] for (c, _, _), r in latest.items() if c == "pyoperon-srbench"}
    rows: dict[str, dict] = {}
    for (c, k, _), r in latest.items():
        rows.setdefault(
            f"{c}@{k[:4]}", {"records": [], "settings": r["settings"], "commits": set()}
        )
        rows[f"{c}@{k[:4]}"]["records"].append(r)
        rows[f"{c}@{k[:4]}"]["commits"].add(r.get("commit", "unknown"))
    out = {}
    for name, info in rows.items():
        recs = info["records"]
        f0 = [r for r in recs if r["panel"] == "feynman" and r["noise"] == 0]
        f1 = [r for r in recs if r["panel"] == "feynman" and r["noise"] == 0.01]
        f2 = [r for r in recs if r["panel"] == "feynman" and r["noise"] == 0.1]
        # the real panel as it is run now (text columns one-hot): items ending "/onehot"
        real = [r for r in recs if r["panel"] == "real" and r["item"].endswith("/onehot")]
        by_ds = {
            d: _median(r["r2"] for r in real if r["dataset"] == d)
            for d in dict.fromkeys(r["dataset"] for r in real)
        }
        lin_ds = {
            d: _median(linear.get(r["item"]) for r in real if r["dataset"] == d) for d in by_ds
        }
        b0 = [r for r in f0 if r["builtin"]]
        out[name] = {
            "exact_builtin": sum(r["exact"] for r in b0),
            "laws_builtin": len(b0),
            "exact_all": sum(r["exact"] for r in f0),
            "laws_all": len(f0),
            "near_exact_all": sum(r["rel_test_mse"] < NEAR_EXACT for r in f0),
            "noise01_good": sum(
                r["r2"] > NOISE_R2 and (r.get("n_nodes") or 1e9) <= NOISE_NODES for r in f1
            ),
            "noise01_laws": len(f1),
            "noise10_median_r2": _median(r["r2"] for r in f2),
            "noise10_median_nodes": _median(r.get("n_nodes") for r in f2),
            "noise10_laws": len(f2),
            "real_median_r2": _median(r["r2"] for r in real),
            "real_worse_than_zero": sum(
                r["r2"] < 0 and linear.get(r["item"], -1.0) > 0 for r in real
            ),
            "real_median_nodes": _median(r.get("n_nodes") for r in real),
            "real_splits": len(real),
            "real_r2_by_dataset": by_ds,
            "real_median_of_medians": _median(by_ds.values()),
            "real_mean_of_medians": (
                float(np.mean(list(by_ds.values()))) if by_ds else float("nan")
            ),
            "real_datasets_above_linear": sum(v > lin_ds[d] for d, v in by_ds.items()),
            "real_datasets": len(by_ds),
            "real_won_vs_linear": sum(r["r2"] > linear.get(r["item"], np.inf) for r in real),
            "real_won_vs_srbench": sum(r["r2"] > srbench.get(r["item"], np.inf) for r in real),
            "real_median_cpu": _median(r.get("cpu_seconds") for r in real),
            "median_seconds": _median(r["seconds"] for r in recs),
            "median_cpu_seconds": _median(r.get("cpu_seconds") for r in recs),
            "max_seconds": max(
                (r["seconds"] for r in recs if np.isfinite(r["seconds"])), default=float("nan")
            ),
            "fits": len(recs),
            "errors": sum("error" in r for r in recs),
            "stops": {
                s: sum(r.get("stop") == s for r in recs)
                for s in sorted({r["stop"] for r in recs if r.get("stop")})
            },
            "settings": info["settings"],
            "commits": sorted(info["commits"]),
        }
    return out


def header(records: list[dict]) -> str:
    import jax

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    loads = [r["load1_before"] for r in records if "load1_before" in r]
    commits = sorted({r.get("commit", "unknown") for r in records})
    jaxes = sorted({r.get("env", {}).get("jax", "?") for r in records})
    return (
        f"# {_dt.datetime.now().isoformat(timespec='seconds')}; {platform.platform()}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
        f"({cores} usable here); load {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"now, median {_median(loads):.2f} before the fits; jax {jax.__version__} "
        f"(records: {', '.join(jaxes)}); git {git_commit()[:12]} (records: "
        f"{', '.join(c[:12] + ('+dirty' if c.endswith('+dirty') else '') for c in commits)})"
    )


def table(rows: dict) -> str:
    def cnt(a, b):
        return f"{a}/{b}" if b else "-"

    def num(x, fmt):
        return "-" if x is None or not np.isfinite(x) else format(x, fmt)

    lines = [
        f"{'tool@key':<18} {'exact17':>7} {'exact':>7} {'~exact':>7} {'n.01 ok':>7} "
        f"{'n.1 R2':>8} "
        f"{'n.1 nod':>7} {'real R2':>8} {'R2<0<lin':>8} {'real nod':>8} {'med s':>6} "
        f"{'med cpu':>7} {'max s':>6} {'fits':>5} {'err':>4}"
    ]
    for name, r in rows.items():
        lines.append(
            f"{name:<18} {cnt(r['exact_builtin'], r['laws_builtin']):>7} "
            f"{cnt(r['exact_all'], r['laws_all']):>7} "
            f"{cnt(r['near_exact_all'], r['laws_all']):>7} "
            f"{cnt(r['noise01_good'], r['noise01_laws']):>7} "
            f"{num(r['noise10_median_r2'], '.4f'):>8} {num(r['noise10_median_nodes'], 'g'):>7} "
            f"{num(r['real_median_r2'], '.4f'):>8} "
            f"{cnt(r['real_worse_than_zero'], r['real_splits']):>8} "
            f"{num(r['real_median_nodes'], 'g'):>8} {num(r['median_seconds'], '.1f'):>6} "
            f"{num(r['median_cpu_seconds'], '.1f'):>7} {num(r['max_seconds'], '.1f'):>6} "
            f"{r['fits']:>5} {r['errors']:>4}"
        )
    datasets = list(dict.fromkeys(d for r in rows.values() for d in r["real_r2_by_dataset"]))
    if datasets:
        lines.append(
            f"\nreal data (text columns one-hot), per tool over its datasets:\n"
            f"{'tool@key':<18} {'med-med':>8} {'mean':>8} {'>lin ds':>7} "
            f"{'won/lin':>8} {'won/opLM':>8} {'splits':>6} {'med cpu':>7}"
        )
        for name, r in rows.items():
            if not r["real_splits"]:
                continue
            lines.append(
                f"{name:<18} {num(r['real_median_of_medians'], '.4f'):>8} "
                f"{num(r['real_mean_of_medians'], '.4f'):>8} "
                f"{cnt(r['real_datasets_above_linear'], r['real_datasets']):>7} "
                f"{cnt(r['real_won_vs_linear'], r['real_splits']):>8} "
                f"{cnt(r['real_won_vs_srbench'], r['real_splits']):>8} "
                f"{r['real_splits']:>6} {num(r['real_median_cpu'], '.1f'):>7}"
            )
        lines.append(
            f"\nreal data, median test R^2 over the splits:\n{'tool@key':<18} "
            + " ".join(f"{d[:11]:>11}" for d in datasets)
        )
        for name, r in rows.items():
            lines.append(
                f"{name:<18} "
                + " ".join(f"{num(r['real_r2_by_dataset'].get(d), '.4f'):>11}" for d in datasets)
            )
    lines.append(
        "\nexact17 / exact: noise 0, relative test MSE < 1e-16, of the built-in laws / of all "
        f"laws run; ~exact: the same below {NEAR_EXACT:g}; n.01 ok: noise 0.01, test R^2 > "
        f"{NOISE_R2} and at most {NOISE_NODES} nodes; n.1 R2 / nod: noise 0.1, medians; "
        "real R2 / nod: medians over all splits; "
        "R2<0<lin: splits with test R^2 < 0 where linear's is > 0; med s / med cpu / max s: "
        "wall and CPU seconds per fit, over all its fits; med-med / mean: the median / mean "
        "over the datasets of each dataset's median test R^2; >lin ds: datasets whose median "
        "is above linear's; won/lin, won/opLM: splits of higher test R^2 than linear's / "
        "pyoperon-srbench's; med cpu: median CPU seconds of its real-data fits"
    )
    lines.append("\nrows (config@settings key: settings; stop reasons; commits):")
    for name, r in rows.items():
        s = r["settings"]
        lines.append(
            f"  {name}: {s['tool']} {json.dumps(s.get('params', {}), sort_keys=True)}"
            f"; {json.dumps(r['stops'])}; "
            + ", ".join(c[:12] + ("+dirty" if c.endswith("+dirty") else "") for c in r["commits"])
        )
    return "\n".join(lines)


def report(a) -> None:
    records = load_records(a.records)
    rows = summarize(records)
    text = header(records) + "\n" + table(rows)
    print(text)
    if a.out:  # the numbers are the records file's: the table is the only other file
        Path(a.out).write_text(text + "\n")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", default="all", choices=("all", "peers"), help=argparse.SUPPRESS)
    p.add_argument("--data", default="", help=argparse.SUPPRESS)
    p.add_argument("--json-out", default="", help=argparse.SUPPRESS)
    p.add_argument(
        "--configs",
        default="default",
        help=f"comma list of jaxsr configurations: {', '.join(CONFIGS)}",
    )
    p.add_argument(
        "--config-json",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help='an ad-hoc configuration, e.g. s2b8=\'{"strategy": 2, '
        '"beam_width": 8}\' (repeatable; run without naming it in --configs)',
    )
    p.add_argument("--peers", default="", help=f"comma list of {', '.join(PEERS)}, or empty")
    p.add_argument("--peers-python", default=DEFAULT_PEERS_PYTHON)
    p.add_argument("--max-time", type=float, default=30.0, help="seconds per fit, every tool")
    p.add_argument("--panels", default="feynman,real")
    p.add_argument("--feynman", default="builtin", choices=("builtin", "all"))
    p.add_argument("--laws", default="", help="comma list of laws (instead of --feynman)")
    p.add_argument("--limit-laws", type=int, default=0, help="only the first K laws")
    p.add_argument("--noise", default="0,0.01,0.1")
    p.add_argument("--n-train", type=int, default=1000)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--datasets", default="all", help=f"all or of {', '.join(REAL_DATASETS)}")
    p.add_argument("--splits", type=int, default=3, help="random splits, seeds 0..K-1")
    p.add_argument("--max-train", type=int, default=10_000)
    p.add_argument(
        "--warm",
        action="store_true",
        help="jaxsr: an untimed one-iteration fit before the first timed fit of "
        "each configuration on each data shape (rows, features), so that "
        "compiling its programs is not charged to max_time",
    )
    p.add_argument("--records", default=str(HERE / "results" / "sr_defaults.jsonl"))
    p.add_argument("--summary-only", action="store_true")
    p.add_argument("--out", default="", help="the table (.txt) and its numbers (.json)")
    a = p.parse_args(argv)
    if a.mode == "peers":
        run_peers_mode(a.data, a.max_time, a.json_out, a.peers or "pyoperon")
        return
    sys.path.insert(0, str(REPO))
    if a.summary_only:
        report(a)
        return
    extra = {}
    for spec in a.config_json:
        name, _, text = spec.partition("=")
        try:
            extra[name.strip()] = json.loads(text)
        except ValueError as err:
            p.error(f"--config-json {spec!r}: {err}")
    names = list(dict.fromkeys([c for c in a.configs.split(",") if c] + list(extra)))
    peers = [t for t in a.peers.split(",") if t]
    if set(peers) - set(PEERS):
        p.error(f"--peers: of {', '.join(PEERS)}")
    if peers and not Path(a.peers_python).exists():
        p.error(f"--peers-python {a.peers_python} not found")
    a.panels = [x for x in a.panels.split(",") if x]
    run(a, jaxsr_configs(names, extra, a.max_time), peers)
    report(a)


if __name__ == "__main__":
    main()
