"""The tree the search found: from the memo's best splits to a :class:`~jaxsr.trees.tree.Tree`.

The search (:mod:`jaxsr.trees.engine`) keeps, per subproblem ``(support, levels)``, the
root split of the best tree found (:class:`~jaxsr.trees.solver.Entry`); the tree is rebuilt
top down from the root's entry. A child's levels are recomputed exactly as the engine's
expansion computed its memo key (:func:`~jaxsr.trees.problem.children` and
:func:`~jaxsr.trees.problem.levels`, the same arithmetic). An entry whose best tree is the
shallow kernel's (``klev = L``) is rebuilt by the kernel with ``L`` split levels, and a
root whose best tree is the greedy incumbent (``feat = GREEDY``) from the incumbent's nodes.
Leaf values, sample counts, weights and losses come at the end, for all nodes at once.
"""

from __future__ import annotations

import numpy as np

from .problem import TreeProblem, children, exact_subtree, leaf_cost, levels
from .solver import GREEDY
from .tree import Tree

__all__ = ["GREEDY", "extract_tree", "node_values", "memo_key"]

NODE_VALUE_ELEMENTS = 1 << 22  # (nodes x samples) per chunk of node_values (32 MiB)


def memo_key(mask, d):
    """The memo key of the subproblem ``(mask, d)``: the support's ``np.packbits`` bytes
    and its levels (as :class:`~jaxsr.trees.engine.MemoView` reads it)."""
    return (np.packbits(mask).tobytes(), int(d))


def root_feature(P: TreeProblem, memo, mask, d):
    """Root split of the best tree found on ``(mask, d)`` and its children's levels.

    Returns ``(feature, child_levels, replay)``: ``replay`` says the children are memo
    entries of the search, whose levels are recomputed exactly as the expansion computed
    their keys (:func:`child_levels`). A memo entry whose best tree came from the shallow
    kernel (``klev = L``) is the best tree with ``L`` split levels: its children are
    rebuilt with ``L`` levels.
    """
    if d <= 1:
        return -1, 0, False
    e = memo.get(memo_key(mask, d))
    shallow = P.kl and d <= P.kl + 1
    if e is not None and (e.solved or not shallow):
        if e.klev >= 1:
            return int(e.feat), int(e.klev), False
        if shallow:
            # solved by the kernel at once: its children are no memo entries, so they are
            # rebuilt as below, without replaying the expansion's keys
            return int(e.feat), d - 1, False
        return int(e.feat), d - 1, True
    if shallow:
        return exact_subtree(P, mask, d - 1)[1], d - 1, False
    # never reached: a leaf can only be optimal here if it was pruned as such
    return -1, 0, False


def child_levels(P: TreeProblem, mask, d, f):
    """Levels of the two children of split ``f`` of ``(mask, d)``, as the engine's
    expansion computed them (same arithmetic, so the same memo keys)."""
    F, a, comp, leafT, leafF = children(P, mask)
    i = int(np.flatnonzero(F == f)[0])
    return levels(P, d - 1, a[i], leafT[i]), levels(P, d - 1, comp[i], leafF[i])


def median_leaf(P: TreeProblem, mask):
    """``(value, samples, weight, loss)`` of an absolute-loss leaf on ``mask``, in ``y``
    units: a weighted median, which is a training target taken as it is. ``loss`` is
    ``inf`` where it exceeds the float64 range (``|y|`` near the float maximum)."""
    sm = mask[P.inv]
    ys, ws = P.y[sm], P.w[sm]
    W = float(ws.sum())
    o = np.argsort(ys, kind="stable")
    ww = ws[o] if W > 0 else np.ones(o.size)
    cw = np.cumsum(ww)
    k = int(np.argmax(cw >= 0.5 * cw[-1]))
    t = float(ys[o][k])
    v = float(P.y_raw[sm][o][k])
    loss = float(P.scale.loss_to_y(np.sum(ws * np.abs(ys - t)), 1))
    return v, int(sm.sum()), W * P.scale.w_max, loss


def node_values(P: TreeProblem, masks):
    """Leaf values of ``K`` nodes: ``masks`` ``(K, U)`` bool -> ``(value, samples,
    weight, loss)``, each ``(K,)`` (float64, int64, float64, float64), in ``y`` units.

    Squared loss: the weighted mean, in a few array operations over ``(K, n)`` (chunks
    of :data:`NODE_VALUE_ELEMENTS`; a small tree's extraction was 40-60% of a fit of
    1-2 ms), ``loss`` ``inf`` where it exceeds the float64 range. Absolute loss: a
    weighted median node by node (:func:`median_leaf`)."""
    if P.l1:
        cols = np.array([median_leaf(P, m) for m in masks], dtype=float).reshape(-1, 4)
        return cols[:, 0], cols[:, 1].astype(np.int64), cols[:, 2], cols[:, 3]
    step = max(1, NODE_VALUE_ELEMENTS // max(P.n, 1))  # (K, n) arrays in chunks
    if masks.shape[0] > step:
        parts = [node_values(P, masks[i : i + step]) for i in range(0, masks.shape[0], step)]
        return tuple(np.concatenate(c) for c in zip(*parts, strict=True))
    sm = masks[:, P.inv]  # (K, n) samples of each node
    ws = np.where(sm, P.w[None, :], 0.0)
    W = ws.sum(1)
    cnt = sm.sum(1)
    # the mean as a shift from one of the node's own targets: exact for a node whose
    # targets are all equal (a plain sum of equal values rounds)
    t0 = P.y[np.argmax(sm, axis=1)]
    dy = np.where(sm, P.y[None, :] - t0[:, None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = t0 + np.where(W > 0, (ws * dy).sum(1) / W, dy.sum(1) / np.maximum(cnt, 1))
    r = np.where(sm, P.y[None, :] - t[:, None], 0.0)
    loss = P.scale.loss_to_y((ws * r * r).sum(1), 2)
    return (
        np.asarray(P.scale.to_y(t), float),
        cnt.astype(np.int64),
        W * P.scale.w_max,
        np.asarray(loss, float),
    )


def extract_tree(P: TreeProblem, memo, mask, d, incumbent_nodes=None) -> Tree:
    """The best tree found on the root ``(mask, d)`` (``d``: its memo key's levels).

    Args:
      P: the problem. memo: the search's memo as a mapping ``(packed support bytes,
        levels) -> Entry`` (:class:`~jaxsr.trees.engine.MemoView`). mask: ``(U,)``
        bool the root's support. incumbent_nodes: the greedy incumbent's nodes
        (:class:`~jaxsr.trees.incumbent.Incumbent`), read when the root's entry says its
        best tree is the incumbent.

    Depth first with an explicit stack (no recursion: a chain of any depth works).
    """
    rows = []  # (feature, true, false, value, n, w, loss)
    masks = []  # each row's support (the leaf values are computed at the end)
    todo = [(mask, d, True, -1, 0)]  # (support, levels, effective, parent row, side)
    if memo[memo_key(mask, d)].feat == GREEDY:
        todo = []  # the exact shallow subtrees of the greedy tree, built below
        stack = [0]
        parents = {0: (-1, 0)}
        while stack:
            j = stack.pop()
            m, f, t, fl, _, _, klev = incumbent_nodes[j]
            p, side = parents[j]
            if klev >= 1:  # the kernel's best tree with klev split levels
                todo.append((m, klev + 1, True, p, side))
                continue
            i = len(rows)
            rows.append([f, -1, -1, 0.0, 0, 0.0, 0.0])
            masks.append(m)
            if p >= 0:
                rows[p][side] = i
            if f >= 0:
                parents[fl], parents[t] = (i, 2), (i, 1)
                stack += [fl, t]
    while todo:
        m, d_in, effective, parent, side = todo.pop()
        dd = d_in if effective else levels(P, d_in, P.stats[m].sum(0), leaf_cost(P, m))
        f, dc, replay = root_feature(P, memo, m, dd)
        i = len(rows)
        rows.append([-1, -1, -1, 0.0, 0, 0.0, 0.0])
        masks.append(m)
        if parent >= 0:
            rows[parent][side] = i
        if f >= 0:
            dT, dF = child_levels(P, m, dd, f) if replay else (dc, dc)
            rows[i][0] = f
            # pushed false first, so the true child is numbered right after its parent
            todo.append((m & ~P.Xc_bool[:, f], dF, replay, i, 2))
            todo.append((m & P.Xc_bool[:, f], dT, replay, i, 1))
    if rows:
        vals = node_values(P, np.asarray(masks, dtype=bool).reshape(len(rows), -1))
        for r, v, n, W, loss in zip(rows, *vals, strict=True):
            r[3:] = [float(v), int(n), float(W), float(loss)]
    cols = list(zip(*rows, strict=True))
    return Tree(
        feature=np.asarray(cols[0], dtype=int),
        true_child=np.asarray(cols[1], dtype=int),
        false_child=np.asarray(cols[2], dtype=int),
        value=np.asarray(cols[3], dtype=float),
        n_samples=np.asarray(cols[4], dtype=int),
        weight=np.asarray(cols[5], dtype=float),
        loss=np.asarray(cols[6], dtype=float),
    )
