"""Rational laws whose denominator is a sum: the development laws and a held-out family.

Saturating responses, harmonic combinations and dividers, ``y = P(x)/Q(x)`` with ``Q`` a
sum of terms, 3-4 variables drawn uniformly from ``[1, 5]`` (seed 0, 500 training rows;
1000 fresh noiseless test rows, seed 1), Gaussian target noise of std ``level * RMS(y)``.
Four laws were used while building the rational starting structures
(:mod:`jaxsr.symbolic.rational`); the held-out laws were written down before any of them
was run and not used to change anything. Each law is fitted by ``SymbolicRegressor`` with
its defaults (``max_time`` per fit) and, for comparison, with ``rational_start=False``
(the search from the mean alone). A fit "recovers" the law when it has at most 15 nodes and
a relative test MSE below 1e-10 (noise 0) or a test R^2 above 0.999 (noise > 0). Run it
pinned to one core::

    PYTHONPATH=$PWD taskset -c 1 .venv/bin/python benchmarks/bench_sr_rational.py \\
        --out benchmarks/results/sr_rational.txt

The table gives per law and configuration the nodes, the relative test MSE, the test R^2,
the CPU seconds of the fit (warm: every configuration's kernels are compiled by a first
fit that is not counted) and the selected expression.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

DEVELOPMENT = {
    "x1*x2/(x1+x2+x3)": (3, lambda x: x[:, 0] * x[:, 1] / (x[:, 0] + x[:, 1] + x[:, 2])),
    "x1*x3/(x1+x2)": (3, lambda x: x[:, 0] * x[:, 2] / (x[:, 0] + x[:, 1])),
    "(x1-x2)/(x1+x2+x3)": (3, lambda x: (x[:, 0] - x[:, 1]) / (x[:, 0] + x[:, 1] + x[:, 2])),
    "2.5*x1/(1+0.3*x2*x3)": (3, lambda x: 2.5 * x[:, 0] / (1 + 0.3 * x[:, 1] * x[:, 2])),
}
HELD_OUT = {
    "1/(1/x1+1/x2)": (3, lambda x: 1 / (1 / x[:, 0] + 1 / x[:, 1])),
    "1/(1/x1+1/x2+1/x3)": (3, lambda x: 1 / (1 / x[:, 0] + 1 / x[:, 1] + 1 / x[:, 2])),
    "x1*x2/(x2+0.5*(1+x3))": (3, lambda x: x[:, 0] * x[:, 1] / (x[:, 1] + 0.5 * (1 + x[:, 2]))),
    "(x1+x2)/(1+x1*x3)": (3, lambda x: (x[:, 0] + x[:, 1]) / (1 + x[:, 0] * x[:, 2])),
    "x1/(x1+x2*x3)": (3, lambda x: x[:, 0] / (x[:, 0] + x[:, 1] * x[:, 2])),
    "(x1*x2-x3)/(x1+x2)": (3, lambda x: (x[:, 0] * x[:, 1] - x[:, 2]) / (x[:, 0] + x[:, 1])),
    "3*x1*x4/(x2+x3+x4)": (4, lambda x: 3 * x[:, 0] * x[:, 3] / (x[:, 1] + x[:, 2] + x[:, 3])),
    "(x1-x2)/(1+x1*x2)": (3, lambda x: (x[:, 0] - x[:, 1]) / (1 + x[:, 0] * x[:, 1])),
}
CONFIGS = {"default": {}, "no-rational": {"rational_start": False}}


def data(law, n, seed, noise=0.0):
    m, f = {**DEVELOPMENT, **HELD_OUT}[law]
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 5.0, (n, m))
    y = f(X)
    if noise:
        y = y + noise * np.sqrt(np.mean(y**2)) * np.random.default_rng(
            [seed, int(noise * 1e6)]
        ).standard_normal(n)
    return X, y


def fit_one(law, config, noise, max_time):
    from jaxsr import SymbolicRegressor

    X, y = data(law, 500, 0, noise)
    Xt, yt = data(law, 1000, 1)
    c0, t0 = time.process_time(), time.perf_counter()
    sr = SymbolicRegressor(progress=False, max_time=max_time, **CONFIGS[config]).fit(X, y)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    with np.errstate(all="ignore"):
        p = sr.predict(Xt)
        rel = float(np.mean((p - yt) ** 2) / np.mean(yt**2))
        r2 = float(1 - np.mean((p - yt) ** 2) / np.var(yt))
    ok = sr.n_nodes_ <= 15 and (rel < 1e-10 if noise == 0 else r2 > 0.999)
    return {
        "law": law,
        "set": "development" if law in DEVELOPMENT else "held-out",
        "config": config,
        "noise": noise,
        "nodes": int(sr.n_nodes_),
        "rel_test_mse": rel,
        "test_r2": r2,
        "recovered": bool(ok),
        "cpu_seconds": cpu,
        "seconds": wall,
        "stop": sr.stop_reason_,
        "expression": sr.expression_,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", default="default,no-rational")
    p.add_argument("--noise", default="0,0.01")
    p.add_argument("--laws", default="", help="comma list (default: all)")
    p.add_argument("--max-time", type=float, default=60.0)
    p.add_argument("--out", default="")
    a = p.parse_args(argv)
    laws = a.laws.split(",") if a.laws else list(DEVELOPMENT) + list(HELD_OUT)
    configs = a.configs.split(",")
    noises = [float(v) for v in a.noise.split(",")]
    from jaxsr import SymbolicRegressor

    for c in configs:  # compile every configuration's kernels once (not counted)
        X, y = data(laws[0], 500, 0)
        SymbolicRegressor(progress=False, max_iterations=2, **CONFIGS[c]).fit(X, y)
    rows = []
    for noise in noises:
        for law in laws:
            for c in configs:
                r = fit_one(law, c, noise, a.max_time)
                rows.append(r)
                print(
                    f"{r['set']:11s} {law:24s} {c:12s} noise={noise:<5g} nodes={r['nodes']:3d} "
                    f"rel={r['rel_test_mse']:.2e} r2={r['test_r2']:.6f} "
                    f"cpu={r['cpu_seconds']:6.1f} {'ok' if r['recovered'] else '--'} "
                    f"{r['expression'][:70]}",
                    file=sys.stderr,
                    flush=True,
                )
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=HERE, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        commit = "unknown"
    head = (
        f"# {time.strftime('%Y-%m-%dT%H:%M:%S')}; {platform.platform()}; git {commit}; "
        f"command: {' '.join(sys.argv)}"
    )
    lines = [
        head,
        f"{'set':11s} {'law':24s} {'config':12s} {'noise':>5s} {'nodes':>5s} "
        f"{'rel MSE':>9s} {'test R2':>10s} {'cpu s':>6s} rec  expression",
    ]
    for r in rows:
        lines.append(
            f"{r['set']:11s} {r['law']:24s} {r['config']:12s} {r['noise']:5g} "
            f"{r['nodes']:5d} {r['rel_test_mse']:9.2e} {r['test_r2']:10.6f} "
            f"{r['cpu_seconds']:6.1f} {'yes' if r['recovered'] else 'no ':3s}  "
            f"{r['expression']}"
        )
    lines.append("")
    lines.append("recovered (<= 15 nodes; noise 0: rel. test MSE < 1e-10, else test R^2 > 0.999):")
    for s in ("development", "held-out"):
        for c in configs:
            for noise in noises:
                sel = [
                    r for r in rows if r["set"] == s and r["config"] == c and r["noise"] == noise
                ]
                if sel:
                    lines.append(
                        f"  {s:11s} {c:12s} noise {noise:<5g} "
                        f"{sum(r['recovered'] for r in sel)}/{len(sel)}, median cpu "
                        f"{np.median([r['cpu_seconds'] for r in sel]):.1f} s"
                    )
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
        Path(a.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
