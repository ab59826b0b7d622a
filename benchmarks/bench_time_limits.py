"""Wall time of a time-limited fit against its limit, as a user's script sees it.

``SymbolicRegressor(max_time=T)`` and ``OptimalTreeRegressor(time_limit=T)`` promise a fit
of at most ``1.1 * T + 1`` seconds of wall time. For each case and limit, one fresh process
(``import jaxsr`` done, nothing else: JAX loads inside the fit, nothing is compiled, the
persistent compilation cache off, as a user's first call) fits once and records:

* ``wall``: seconds around ``fit``, as the caller's clock sees them, and ``cpu``: the
  process's CPU seconds over the same span (a loaded machine stretches ``wall`` beyond
  ``cpu`` while every core is busy);
* ``bound``: ``1.1 * T + 1``; ``within``: ``wall <= bound``;
* ``stop``: the fit's ``stop_reason_`` (symbolic) or ``status_`` (tree);
* ``exit``: seconds from ``fit``'s return to the end of the process (Python's exit
  waits for a symbolic fit's worker that is still inside a compilation).

The data take far longer than the limits to fit: 3000 rows of 12 uniform features and a
noisy rational-trigonometric target (symbolic), and the same data binarized with small
``regularization`` and no depth budget (trees), plus 20,000 rows of 8 features.

Usage (from the repository root; the machine's load is recorded with the results)::

    .venv/bin/python benchmarks/bench_time_limits.py
    .venv/bin/python benchmarks/bench_time_limits.py --limits 3 --cases sr-3000x12

Writes ``benchmarks/results/time_limits.{json,txt}`` (``--out``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# name: (estimator, rows, features, extra parameters)
CASES = {
    "sr-3000x12": ("symbolic", 3000, 12, {}),
    "sr-20000x8": ("symbolic", 20000, 8, {}),
    "tree-3000x12": ("tree", 3000, 12, {"regularization": 5e-5, "depth_budget": None}),
    "tree-20000x8": ("tree", 20000, 8, {"regularization": 5e-5, "depth_budget": None}),
}
DEFAULT_LIMITS = (3.0, 10.0)

_CHILD = r"""
import json, sys, time, warnings
import numpy as np
import jaxsr

kind, n, m, limit, extra = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.uniform(1.0, 3.0, (n, m))
y = np.sin(X[:, 0]) * X[:, 1] + X[:, 2] ** 3 / X[:, 3] + 0.05 * rng.normal(size=n)
if kind == "symbolic":
    est = jaxsr.SymbolicRegressor(max_time=limit, progress=False, **extra)
else:
    est = jaxsr.OptimalTreeRegressor(time_limit=limit, progress=False, **extra)
warnings.simplefilter("ignore")
c0, t0 = time.process_time(), time.perf_counter()
est.fit(X, y)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
stop = est.stop_reason_ if kind == "symbolic" else est.status_
print(json.dumps({"wall": wall, "cpu": cpu, "stop": stop, "returned": time.time()}),
      flush=True)
"""


def run_case(name: str, limit: float) -> dict:
    kind, n, m, extra = CASES[name]
    env = {**os.environ, "JAXSR_CACHE_DIR": "none"}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([kind, n, m, limit, extra])],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )
    ended = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {limit}: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    bound = 1.1 * limit + 1.0
    return {
        "case": name,
        "limit": limit,
        "wall": round(out["wall"], 3),
        "cpu": round(out["cpu"], 3),
        "bound": round(bound, 3),
        "within": out["wall"] <= bound,
        "stop": out["stop"],
        "exit": round(ended - out["returned"], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--limits", default=",".join(str(t) for t in DEFAULT_LIMITS))
    ap.add_argument("--out", default=str(HERE / "results" / "time_limits"))
    args = ap.parse_args()
    rows = []
    load0 = os.getloadavg()
    for name in args.cases.split(","):
        for limit in (float(t) for t in args.limits.split(",")):
            row = run_case(name, limit)
            rows.append(row)
            print(row, flush=True)
    meta = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_before": load0,
        "load_after": os.getloadavg(),
    }
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [
        f"# {meta['date']}, {meta['cpus']} CPUs, load average before "
        f"{load0[0]:.2f}, after {meta['load_after'][0]:.2f} (1 min)",
        "# wall = seconds around fit in a fresh process (JAX loaded inside it, nothing "
        "compiled); bound = 1.1 * limit + 1; exit = fit's return to the process's end",
        f"{'case':14} {'limit':>6} {'wall':>7} {'cpu':>7} {'bound':>6} {'within':>6} "
        f"{'exit':>6}  stop",
    ]
    for r in rows:
        lines.append(
            f"{r['case']:14} {r['limit']:6.1f} {r['wall']:7.2f} {r['cpu']:7.2f} "
            f"{r['bound']:6.2f} {str(r['within']):>6} {r['exit']:6.2f}  {r['stop']}"
        )
    worst = max(rows, key=lambda r: r["wall"] - r["bound"])
    lines.append(
        f"worst wall - bound {worst['wall'] - worst['bound']:+.2f} s "
        f"({worst['case']}, limit {worst['limit']:g}); "
        f"{sum(r['within'] for r in rows)} of {len(rows)} within the bound"
    )
    Path(args.out + ".txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
