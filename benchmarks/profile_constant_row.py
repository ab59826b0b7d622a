"""Where the time of one general-case constant search row goes.

Builds the tree of ``bench_symbolic_iteration.py`` (10 variables, ``--nodes``, N samples
``--n``, seed 0), takes the equations of its general-case nodes (``c != 0`` or a forbidden
set) and, for each (node, candidate row) as ``search_all`` forms it (the constant row, the
``k op x`` rows, the two ``k op p`` rows), the child equation and forbidden set, then:

* the warm time of :func:`~jaxsr.symbolic.optimal_constant` on ``--rows`` of them (median
  of 5 calls each, jaxsr's compile options, one process) and the number of exact
  evaluations of ``f`` (``N`` terms each) its candidate search made;
* with ``--count-every K``: those evaluations over every ``K``-th row (untimed), their
  median and the terms an iteration evaluates at that rate, against the multiply-adds of
  the ``[101, N] x [N, 40]`` product of ``bench_symbolic_iteration.py``;
* with ``--trace``: an XLA profile of those calls (``jax.profiler``), the ``--top``
  operations by time per row with their source (``op_name``): which sort, search, loop
  and fusion costs what. Nested operations (a while loop and its body) are both listed.

Run on one core::

    PYTHONPATH=$PWD taskset -c 0 python benchmarks/profile_constant_row.py --n 100000 \\
        --nodes 11 --rows 3 --trace
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def general_rows(n_samples: int, n_nodes: int, n_features: int = 10):
    """``(node, row name, a, b, c, d, S, n_used)`` of every searched general-case row."""
    import jax.numpy as jnp
    from bench_symbolic_iteration import valid_tree

    from jaxsr.symbolic.equations import child_equation, child_forbidden
    from jaxsr.symbolic.searches import CE_OPS, CV_OPS
    from jaxsr.symbolic.strategies import DomeSearch

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, size=(n_samples, n_features))
    e = valid_tree(rng, n_nodes, X[:1000])
    y = e.evaluate(X) + rng.normal(size=n_samples)
    XT = jnp.asarray(X.T)
    eng = DomeSearch(
        XT,
        jnp.asarray(y),
        np.ones(n_features, bool),
        max_nodes=None,
        max_height=None,
        min_improvement=1e-6,
        feature_names=None,
    )
    eng.expr, eng._cache = e, None
    tree, sem, eqs, S = eng.analyse()
    n_slots = np.asarray(tree.n_slots)
    rows = []
    for j in range(e.n_nodes):
        if not (np.any(np.asarray(eqs.c[j]) != 0) or n_slots[j] > 0):
            continue
        specs = (
            [("k", CV_OPS[0], None)]
            + [(f"k op{o} x{m}", o, m) for m in range(n_features) for o in CV_OPS]
            + [(f"k op{o} p", o, "p") for o in CE_OPS]
        )
        for name, op, m in specs:
            w = jnp.zeros_like(eqs.a[j]) if m is None else (sem[j] if m == "p" else XT[m])
            a2, b2, c2, d2 = child_equation(op, True, eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], w)
            S2 = child_forbidden(op, True, S[j], w[None, :])
            rows.append((j, name, a2, b2, c2, d2, S2, jnp.asarray(n_slots[j], jnp.int32)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--n", type=int, default=10000, help="samples N")
    p.add_argument("--nodes", type=int, default=51, help="tree size (odd)")
    p.add_argument("--rows", type=int, default=10, help="rows timed, spread over all")
    p.add_argument("--trace", action="store_true", help="XLA profile of those rows")
    p.add_argument("--top", type=int, default=30, help="operations listed")
    p.add_argument(
        "--count-every",
        type=int,
        default=0,
        help="count the exact evaluations of every K-th row (0: no)",
    )
    a = p.parse_args(argv)

    import jax

    from jaxsr._config import COMPILE_OPTIONS, precision
    from jaxsr.symbolic import constant as C

    solve = jax.jit(C.optimal_constant.__wrapped__, compiler_options=COMPILE_OPTIONS)

    def evaluations(a_, b_, c_, d_, S_, n_used):
        """Exact evaluations of f by the candidate search (N of them when exhaustive, none
        where a closed form applies)."""
        cz, case33, case34, _ = C._case_flags(a_, b_, c_, d_)
        exhaustive = a_.shape[0] <= C.EXHAUSTIVE_MAX
        n_points = C._select(a_, b_, c_, d_, S_, n_used, exhaustive)[2]
        return jax.numpy.where(cz | case33 | case34, 0, n_points)

    count = jax.jit(evaluations, compiler_options=COMPILE_OPTIONS)
    with precision("float64"):
        rows = general_rows(a.n, a.nodes)
        pick = sorted(set(np.linspace(0, len(rows) - 1, a.rows).astype(int).tolist()))
        print(f"N={a.n}, {a.nodes} nodes: {len(rows)} general-case rows, timing {len(pick)}")
        for i in pick:
            j, name, *args = rows[i]
            jax.block_until_ready(solve(*args))
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                jax.block_until_ready(solve(*args))
                ts.append(time.perf_counter() - t0)
            print(
                f"  node {j:3d} {name:12s} {1e3 * statistics.median(ts):9.2f} ms, "
                f"{int(count(*args)):5d} evaluations of f"
            )
        if a.count_every > 0:
            ev = [int(count(*r[2:])) for r in rows[:: a.count_every]]
            med = statistics.median(ev)
            print(
                f"exact evaluations of f per row over {len(ev)} rows: min {min(ev)}, "
                f"median {med:g}, max {max(ev)}; an iteration's {len(rows)} general-case "
                f"rows at the median: {len(rows) * med * a.n:.3g} terms (the benchmark's "
                f"matmul [101, N] x [N, 40]: {101 * 40 * a.n:.3g} multiply-adds); at "
                f"one evaluation per row: {len(rows) * a.n:.3g} terms"
            )
        if not a.trace:
            return
        hlo = solve.lower(*rows[pick[0]][2:]).compile().as_text()
        with tempfile.TemporaryDirectory() as tmp:
            jax.profiler.start_trace(tmp)
            for i in pick:
                jax.block_until_ready(solve(*rows[i][2:]))
            jax.profiler.stop_trace()
            data = jax.profiler.ProfileData.from_file(
                glob.glob(f"{tmp}/**/*.xplane.pb", recursive=True)[0]
            )
            total, count = collections.Counter(), collections.Counter()
            for plane in data.planes:
                for line in plane.lines:
                    if "XLA" not in line.name:  # XLA's threads, not Python's
                        continue
                    for ev in line.events:
                        if not ev.name.startswith("ThunkExecutor"):
                            total[ev.name] += ev.duration_ns
                            count[ev.name] += 1
    source = {}
    for line in hlo.splitlines():
        m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = .*?op_name=\"([^\"]*)\"", line)
        if m:
            source[m.group(1)] = m.group(2).replace("jit(optimal_constant)/", "")
    rows_n = len(pick)
    print(f"XLA profile, per row (mean over the {rows_n} rows): ms, calls, operation, source")
    for name, ns in total.most_common(a.top):
        print(
            f"  {ns / rows_n / 1e6:8.3f} {count[name] / rows_n:7.1f}  {name:28s} "
            f"{source.get(name, '')[-90:]}"
        )


if __name__ == "__main__":
    main()
