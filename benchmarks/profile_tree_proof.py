"""What the proof of optimality of one tree search is made of (deep searches).

Runs the host search (:class:`~jaxsr.trees.search.OptimalTreeSearch`, its engine as Python
on the numpy kernels, which visits the same subproblems as the compiled one) on one OSRT
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


def lookahead_deep_bound(P, mask, d):
    """min over splits of the k-Means bounds of the two children with one of them deep
    (at least 4 leaves), and the depth-3 kernel's optimum: a lower bound of every tree of
    the support with at most ``d - 1`` split levels."""
    from jaxsr.trees.bounds import kmeans_bound
    from jaxsr.trees.kmeans import kmeans_losses_np
    from jaxsr.trees.problem import exact_subtree, leaf_cost, sub_stats

    cmax = 1 << max(d - 2, 0)

    def side(m):
        sel = P.korder[m[P.korder]]
        st = sub_stats(P, sel)
        losses = kmeans_losses_np(st[:, 0], st[:, 1], st[:, 2], cmax, 0.0)
        leaf = float(leaf_cost(P, m))
        return (min(leaf, kmeans_bound(losses, P.lam, P.norm, 2)),
                kmeans_bound(losses, P.lam, P.norm, 4))

    best = np.inf
    for f in range(P.M):
        t = mask & P.Xc_bool[:, f]
        fl = mask & ~P.Xc_bool[:, f]
        if not t.any() or not fl.any():
            continue
        (lt, dt), (lf, df) = side(t), side(fl)
        best = min(best, dt + lf, lt + df)
    return min(float(exact_subtree(P, mask, 3)[0]), best)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", nargs="?", default="yacht", help="OSRT dataset (name prefix)")
    p.add_argument("--regularization", type=float, default=0.001)
    p.add_argument("--depth-budget", type=int, default=7)
    a = p.parse_args(argv)

    from bench_trees_peers import load_binarized, shared_data_dir
    from jaxsr.trees.interpreted import engine as interpreted_engine

    from jaxsr.trees.search import OptimalTreeSearch

    root = shared_data_dir() / "osrt" / "binarized"
    path = sorted(q for q in root.glob("*.csv") if q.stem.startswith(a.dataset))[0]
    X, y, _ = load_binarized(path)
    lam = a.regularization
    search = OptimalTreeSearch(np.asarray(X, bool), np.asarray(y, float), np.ones(len(y)),
                               regularization=lam, depth_budget=a.depth_budget, native=False)
    P = search.problem
    expansions = []  # (level budget, key, support, cap, lower bound on arrival, similarity)
    seen = {}  # key -> (support, its packed words) of every subproblem visited so far
    # the engine run as Python (native=False): its subproblem visits are wrapped here
    eng = interpreted_engine()
    glob = eng.run_chunk.__wrapped__.__globals__
    visit = glob["_visit"]

    def entry(memo, words, d):
        i = eng.lookup(memo, words, d)
        return None if i < 0 else (float(memo.lb[i]),
                                   bool(memo.solved[i]))

    def recorded(Pe, memo, ctr, fst, fr, L, d, leaf, E, cap, stopped):
        mask, words = fr.cmask.copy(), fr.cwords.copy()
        key = (np.packbits(mask).tobytes(), int(d))
        e0 = entry(memo, words, int(d))
        sim = -np.inf
        if e0 is None or not (e0[1] or e0[0] >= cap):
            mean = P.cls_mean
            lo, hi = mean[mask].min(), mean[mask].max()
            st = P.stats
            worst = (st[:, 3] + st[:, 0] * np.maximum((mean - lo) ** 2, (mean - hi) ** 2)
                     ) / P.norm
            for k2, (m2, w2) in seen.items():
                e2 = entry(memo, w2, k2[1])
                if k2[1] >= key[1] and k2 != key and e2 is not None:
                    sim = max(sim, e2[0] - float(worst[m2 & ~mask].sum()))
        e, pushed = visit(Pe, memo, ctr, fst, fr, L, d, leaf, E, cap, stopped)
        seen[key] = (mask, words)
        if pushed:
            expansions.append((int(d), key, mask, cap, -np.inf if e0 is None else e0[0],
                               sim))
        return e, pushed

    glob["_visit"] = recorded
    t0 = time.perf_counter()
    res = search.run()
    secs = time.perf_counter() - t0
    glob["_visit"] = visit
    print(f"{path.stem}: N={len(y)}, {P.U} classes, {P.M} features, "
          f"lambda {lam}, depth budget {a.depth_budget}")
    print(f"objective {res.objective:.6f} ({res.status.name.lower()}), "
          f"{res.n_subproblems} subproblems, {res.n_kernel_calls} kernel calls, "
          f"{res.n_kmeans} k-means bounds, {secs:.2f} s (numpy kernels)")
    rows = collections.defaultdict(list)
    for d, key, mask, cap, lb0, sim in expansions:
        final = search.memo[key]
        proof = bool(final.lb >= cap * (1 - 1e-12)) and np.isfinite(cap)
        look = lookahead_deep_bound(P, mask, d) if proof else -np.inf
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
