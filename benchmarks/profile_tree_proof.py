"""What the proof of optimality of one tree search is made of (deep searches).

Runs the host search (:class:`~jaxsr.trees.search.OptimalTreeSearch`, the Python solver with
the numpy kernels, which visits the same subproblems as the compiled one) on one OSRT
dataset and records every subproblem it expands: its level budget ``d``, the cap it was
visited with (the incumbent's budget for it), and its lower bound on arrival. After the
search it prints, per level budget:

* how many expansions there were and how many of them only proved the subproblem
  infeasible (its bound ends at or above its cap: no tree of it was used);
* the gap each of those had to close, ``(cap - lower bound) / lambda`` (in leaves);
* how many of them two further sound bounds would have pruned at once:
  ``lookahead``: the k-Means bound after one split with one side deep (a tree the depth-3
  kernel does not cover has a child of at least 3 split levels, so at least 4 leaves),
  combined with the kernel's optimum over the shallow trees; ``similarity``: the bound of
  any subproblem met before, less the worst cost of the samples it has and this one lacks
  (MurTree / STreeD's similarity bound for squared loss: a sample of target ``y`` costs at
  most ``max((y - lo)^2, (y - hi)^2)`` in a tree whose leaf values lie in ``[lo, hi]``).

Run (the shared data beside the repository, or ``JAXSR_SHARED_DATA``)::

    PYTHONPATH=$PWD taskset -c 1 python benchmarks/profile_tree_proof.py yacht \\
        --regularization 0.001 --depth-budget 7
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def lookahead_deep_bound(search, mask, d):
    """min over splits of the k-Means bounds of the two children with one of them deep
    (at least 4 leaves), and the depth-3 kernel's optimum: a lower bound of every tree of
    the support with at most ``d - 1`` split levels."""
    from jaxsr.trees.bounds import kmeans_bound
    from jaxsr.trees.kmeans import kmeans_losses_np

    cmax = 1 << max(d - 2, 0)

    def side(m):
        sel = search.korder[m[search.korder]]
        st = search._sub_stats(sel)
        losses = kmeans_losses_np(st[:, 0], st[:, 1], st[:, 2], cmax, 0.0)
        leaf = float(search._leaf_cost(m))
        return (min(leaf, kmeans_bound(losses, search.lam, search.norm, 2)),
                kmeans_bound(losses, search.lam, search.norm, 4))

    best = np.inf
    for f in range(search.M):
        t = mask & search.Xc_bool[:, f]
        fl = mask & ~search.Xc_bool[:, f]
        if not t.any() or not fl.any():
            continue
        (lt, dt), (lf, df) = side(t), side(fl)
        best = min(best, dt + lf, lt + df)
    return min(float(search._kernel(mask, 3)[0]), best)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", nargs="?", default="yacht", help="OSRT dataset (name prefix)")
    p.add_argument("--regularization", type=float, default=0.001)
    p.add_argument("--depth-budget", type=int, default=7)
    a = p.parse_args(argv)

    from bench_trees_peers import load_binarized, shared_data_dir

    from jaxsr.trees.search import OptimalTreeSearch

    root = shared_data_dir() / "osrt" / "binarized"
    path = sorted(q for q in root.glob("*.csv") if q.stem.startswith(a.dataset))[0]
    X, y, _ = load_binarized(path)
    lam = a.regularization
    search = OptimalTreeSearch(np.asarray(X, bool), np.asarray(y, float), np.ones(len(y)),
                               regularization=lam, depth_budget=a.depth_budget, native=False)
    expansions = []  # (level budget, key, support, cap, lower bound on arrival)
    seen = {}  # key -> support of every subproblem visited so far
    visit = search.visit

    def recorded(key, mask, tot, leaf, cap, is_root=False, stopped=False):
        e0 = search.memo.get(key)
        sim = -np.inf
        if e0 is None or not (e0.solved or e0.lb >= cap):
            mean = search.cls_mean
            lo, hi = mean[mask].min(), mean[mask].max()
            st = search.stats
            worst = (st[:, 3] + st[:, 0] * np.maximum((mean - lo) ** 2, (mean - hi) ** 2)
                     ) / search.norm
            for k2, m2 in seen.items():
                e2 = search.memo.get(k2)
                if k2[1] >= key[1] and k2 != key and e2 is not None:
                    sim = max(sim, e2.lb - float(worst[m2 & ~mask].sum()))
        e, exp = visit(key, mask, tot, leaf, cap, is_root, stopped)
        seen[key] = mask.copy()
        if exp is not None:
            expansions.append((key[1], key, mask.copy(), cap,
                               -np.inf if e0 is None else e0.lb, sim))
        return e, exp

    search.visit = recorded
    t0 = time.perf_counter()
    res = search.run()
    secs = time.perf_counter() - t0
    print(f"{path.stem}: N={len(y)}, {search.U} classes, {search.M} features, "
          f"lambda {lam}, depth budget {a.depth_budget}")
    print(f"objective {res.objective:.6f} ({res.status.name.lower()}), "
          f"{res.n_subproblems} subproblems, {res.n_kernel_calls} kernel calls, "
          f"{res.n_kmeans} k-means bounds, {secs:.2f} s (numpy kernels)")
    rows = collections.defaultdict(list)
    for d, key, mask, cap, lb0, sim in expansions:
        final = search.memo[key]
        proof = bool(final.lb >= cap * (1 - 1e-12)) and np.isfinite(cap)
        look = lookahead_deep_bound(search, mask, d) if proof else -np.inf
        rows[d].append((proof, (cap - lb0) / lam if proof else np.nan,
                        bool(look >= cap), bool(sim >= cap)))
    print("\nlevels | expanded  infeasibility proofs | gap in leaves: median  max "
          "| pruned by lookahead-deep  similarity")
    for d in sorted(rows, reverse=True):
        r = rows[d]
        proofs = [x for x in r if x[0]]
        gaps = [x[1] for x in proofs if np.isfinite(x[1])]
        med = f"{np.median(gaps):6.2f}" if gaps else "   n/a"
        mx = f"{max(gaps):5.2f}" if gaps else "  n/a"
        print(f"{d:6d} | {len(r):8d}  {len(proofs):20d} | {med:>20s} {mx} "
              f"| {sum(x[2] for x in proofs):24d}  {sum(x[3] for x in proofs):10d}")


if __name__ == "__main__":
    main()
