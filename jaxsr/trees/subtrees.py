"""Exact optimal subtrees of depth 1 to 3 as matrix products (squared loss).

For squared loss a leaf's objective depends on its support only through the sums
``W, S, Q, N`` (weight, sum, sum of squares, count). The supports of all leaves of all
trees of depth 2 over a subproblem are intersections of the subproblem with two feature
literals, so their sums are the *pair statistics*

    P[f, g] = sum_u mask_u x_uf x_ug stats_u          (M, M, 4),

one matrix product; the other three quadrants follow by subtraction
(``x_f & not x_g = P[f, f] - P[f, g]`` and so on). Trees of depth 3 need the triple
statistics ``T[f, g, h]`` (one more product with the pair products ``x_ug x_uh``). The best
tree is then a handful of ``min`` reductions over the feature axes -- no search at all.
This is the "depth-two solver" idea of the fastest peers (MurTree / STreeD), extended one
level; the search (:mod:`jaxsr.trees.search`) calls it for every subproblem with at most
``levels + 1`` levels left.

``levels`` counts the splits on a root-to-leaf path (``depth_budget - 1``):

* ``levels = 1``: best of one leaf and every single split (:func:`best_depth1`);
* ``levels = 2``: one more split below each child (:func:`best_depth2`);
* ``levels = 3``: (:func:`best_depth3`).

All functions take an array module ``xp`` (``numpy`` on the host, ``jax.numpy`` inside
``jax.jit``), work on any leading batch axes, and return ``(cost, feature)``: the optimal
objective and the root split feature (``-1``: a single leaf is optimal; ties go to the
leaf, then to the lowest feature index). A split is allowed only if both children hold at
least ``max(1, min_samples_leaf)`` samples.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._config import program
from .losses import objective, sse

__all__ = [
    "kernel_work",
    "distinct_splits",
    "subtree_statistics",
    "best_depth1",
    "best_depth2",
    "best_depth3",
    "optimal_subtree_cost",
]

# columns of the compact statistics used here
W, S, Q, N = range(4)


def kernel_work(M, n_classes, levels):
    """Element operations of one exact-subtree call with ``levels`` split levels on
    ``n_classes`` classes and ``M`` features (rough: the products of the pair / triple
    statistics and the ``min`` reductions). Times a call before it is made under a time
    limit (the engine's copy: ``kernel_work`` in ``engine/terminal.hpp``)."""
    if levels >= 3:
        return n_classes * M * M * 3.0 + 40.0 * M ** 3 + 1.0
    return n_classes * M * 3.0 * (M if levels == 2 else 1) + 40.0 * M ** 2 + 1.0


def _loss(xp, st):
    return sse(st[..., W], st[..., S], st[..., Q])


def _pick(xp, leaf, split):
    best = xp.min(split, axis=-1)
    arg = xp.argmin(split, axis=-1)
    better = best < leaf
    return xp.where(better, best, leaf), xp.where(better, arg, -1)


def best_depth1(xp, tot, a, lam, norm, m1):
    """Best tree with at most one split.

    Args:
      xp: ``numpy`` or ``jax.numpy``.
      tot: ``(..., 4)`` statistics ``W, S, Q, N`` of the subproblem.
      a: ``(..., M, 4)`` statistics of its ``x_f = 1`` part for every feature ``f``.
      lam, norm: ``lambda`` and the loss normaliser; ``m1``: minimum samples per leaf.

    Returns:
      ``(cost (...), feature (...))``.
    """
    leaf = objective(_loss(xp, tot), norm, lam)
    comp = tot[..., None, :] - a
    ok = (a[..., N] >= m1) & (comp[..., N] >= m1)
    split = xp.where(ok, objective(_loss(xp, a) + _loss(xp, comp), norm, lam, 2), xp.inf)
    return _pick(xp, leaf, split)


def best_depth2(xp, tot, a, P, lam, norm, m1):
    """Best tree with at most two levels of splits; ``P``: ``(..., M, M, 4)`` pair stats."""
    leaf = objective(_loss(xp, tot), norm, lam)
    cost_true, _ = best_depth1(xp, a, P, lam, norm, m1)
    tot_false = tot[..., None, :] - a
    cost_false, _ = best_depth1(xp, tot_false, a[..., None, :, :] - P, lam, norm, m1)
    ok = (a[..., N] >= m1) & (tot_false[..., N] >= m1)
    return _pick(xp, leaf, xp.where(ok, cost_true + cost_false, xp.inf))


def best_depth3(xp, tot, a, P, T, lam, norm, m1):
    """Best tree with at most three levels of splits; ``T``: ``(..., M, M, M, 4)``."""
    leaf = objective(_loss(xp, tot), norm, lam)
    cost_true, _ = best_depth2(xp, a, P, T, lam, norm, m1)
    tot_false = tot[..., None, :] - a
    cost_false, _ = best_depth2(xp, tot_false, a[..., None, :, :] - P,
                                P[..., None, :, :, :] - T, lam, norm, m1)
    ok = (a[..., N] >= m1) & (tot_false[..., N] >= m1)
    return _pick(xp, leaf, xp.where(ok, cost_true + cost_false, xp.inf))


def subtree_statistics(xp, Xs, st, levels):
    """Sums over the subproblem of single, pair and triple feature products.

    Args:
      Xs: ``(U, M)`` float 0/1 feature rows of the classes in the support (or all classes
        with ``st`` masked).
      st: ``(U, 4)`` float statistics ``W, S, Q, N`` of those classes.
      levels: 1, 2 or 3 (static).

    Returns:
      ``[tot (4,), a (M, 4), P (M, M, 4), T (M, M, M, 4)]``, the first ``levels + 1``.
    """
    U, M = Xs.shape
    out = [xp.sum(st, axis=0), Xs.T @ st]
    if levels >= 2:
        B = (Xs[:, :, None] * st[:, None, :]).reshape(U, M * 4)
        out.append(xp.transpose((B.T @ Xs).reshape(M, 4, M), (0, 2, 1)))
        if levels >= 3:
            XX = (Xs[:, :, None] * Xs[:, None, :]).reshape(U, M * M)
            out.append(xp.transpose((B.T @ XX).reshape(M, 4, M, M), (0, 2, 3, 1)))
    return out


_BEST = {1: best_depth1, 2: best_depth2, 3: best_depth3}


def best_subtree(xp, Xs, st, levels, lam, norm, m1):
    """Optimal objective and root feature of a subproblem with ``levels`` split levels."""
    stats = subtree_statistics(xp, Xs, st, levels)
    return _BEST[levels](xp, *stats, lam, norm, m1)


@program(static_argnames=("levels", "min_samples_leaf"))
def optimal_subtree_cost(class_features, class_stats, mask, regularization, normalizer,
                         levels: int = 2, min_samples_leaf: int = 1):
    """Optimal objective of trees with at most ``levels`` levels of splits (squared loss).

    Args:
      class_features: ``(U, M)`` float 0/1.
      class_stats: ``(U, 4)`` float ``W, S, Q, N`` per class.
      mask: ``(U,)`` bool/0-1 support set (padding classes: mask 0).
      regularization: ``lambda``; normalizer: loss normaliser.
      levels: static, 1 to 3 (``depth_budget - 1`` of the subtree).
      min_samples_leaf: static.

    Returns:
      ``(cost, feature)``: scalar float objective ``loss / normalizer + lambda * leaves`` of
      the optimal subtree and its root split (-1 = leaf). ``jax.vmap`` over ``mask`` solves
      a batch of frontier subproblems in one call.
    """
    st = class_stats * jnp.asarray(mask).astype(class_stats.dtype)[:, None]
    X = jnp.asarray(class_features, dtype=class_stats.dtype)
    return best_subtree(jnp, X, st, levels, regularization, normalizer,
                        max(1, min_samples_leaf))


def best_subtree_np(Xs, st, levels, lam, norm, m1):
    """Host (numpy) version of :func:`optimal_subtree_cost` on the support's own rows.

    Same optimum as :func:`best_subtree` with ``numpy``, computed with fewer passes:

    * triple statistics only for ``g < h`` (``T`` is symmetric; half the product), the
      diagonal ``T[f, g, g] = P[f, g]``;
    * the eight octants of a depth-3 tree are three arrays up to a transposition of the
      feature axes (``TTF``, ``TFF``, ``FFF``; ``TTT = T``), each one subtraction from a
      quadrant of the pair statistics;
    * work in loss units (``loss + lambda * normaliser * leaves``), one division at the end;
    * below the root split the "both children non-empty" masks are dropped when
      ``min_samples_leaf = 1``: a split with an empty side costs its non-empty side with
      one level less plus ``lambda``, never less than an option already counted, so the
      minimum is unchanged (the root split keeps the mask, so the feature returned is a
      real split).

    Args:
      Xs: ``(U, M)`` float 0/1 rows of the support's classes; st: ``(U, 4)`` ``W, S, Q, N``.
      levels: 1, 2 or 3 split levels; lam, norm, m1: as in :func:`best_depth1`.

    Returns:
      ``(cost, feature)``: python float and int (``-1``: a leaf).
    """
    Xs = np.asarray(Xs, dtype=np.float64)
    keep = distinct_splits(Xs > 0.5)
    st = np.asarray(st, dtype=np.float64)
    with np.errstate(over="ignore"):
        c, f = _best_np(np.ascontiguousarray(Xs[:, keep]), st, levels, lam, norm, m1)
    return c, (int(keep[f]) if f >= 0 else -1)


def distinct_splits(Xb):
    """The features that split a support in distinct ways (one per split).

    A feature constant on the support splits nothing, and two features equal or
    complementary on it make the same split (the same two children, perhaps swapped), so
    every tree over the support is a tree over these features: the optimum does not
    change, and the work of the kernels and of the search shrinks (a deep subproblem has
    few classes, and most features are constant or repeated on them).

    Args:
      Xb: ``(U, M)`` bool rows of the support's classes.

    Returns:
      ``(k,)`` int, increasing: the lowest feature index of each distinct non-trivial
      split (so the tie-breaking "lowest feature first" is unchanged).
    """
    U, M = Xb.shape
    if U == 0 or M == 0:
        return np.zeros(0, dtype=np.int64)
    canon = Xb ^ Xb[:1]  # complements -> one column; constant -> all False
    nonconst = np.flatnonzero(canon.any(axis=0))
    if nonconst.size <= 1:
        return nonconst
    packed = np.packbits(canon[:, nonconst].T, axis=1)
    first = {}
    for i, row in enumerate(packed):  # first column of each distinct split (a dict: no
        first.setdefault(row.tobytes(), i)  # sort, and np.unique(axis=0) costs ~0.3 ms)
    return nonconst[np.fromiter(first.values(), dtype=np.int64, count=len(first))]


def _best_np(Xs, st, levels, lam, norm, m1):
    U, M = Xs.shape
    m1 = max(1, m1)
    lamn = lam * norm
    masked = m1 > 1
    nc = 4 if masked else 3  # columns carried into the pair / triple statistics
    tot = st.sum(0)
    a = Xs.T @ st  # (M, 4)
    aT = np.ascontiguousarray(a.T)  # (4, M)
    leaf_root = _lossc(tot) + lamn
    ok_root = (aT[N] >= m1) & (tot[N] - aT[N] >= m1)
    LaT = _lossc(aT)  # loss of the "x_f = 1" side
    LaF = _lossc(tot[:, None] - aT)
    if levels <= 1 or M == 0:
        split = LaT + LaF + 2.0 * lamn
    else:
        stc = st[:, :nc]
        B = (Xs[:, :, None] * stc[:, None, :]).reshape(U, M * nc).T  # (M*nc, U)
        P = (B @ Xs).reshape(M, nc, M).transpose(1, 0, 2)  # P[c, f, g]
        A = aT[:nc]
        TF2 = A[:, :, None] - P  # (f T, g F)
        FF2 = tot[:nc, None, None] - A[:, :, None] - A[:, None, :] + P
        L_TT, L_TF, L_FF = _lossc(P), _lossc(TF2), _lossc(FF2)
        L_FT = L_TF.T
        if levels == 2:
            d1 = (L_TT + lamn, L_TF + lamn, L_FT + lamn, L_FF + lamn)
        else:
            i, j = _triu(M)
            R = (B @ (Xs[:, i] * Xs[:, j])).reshape(M, nc, -1).transpose(1, 0, 2)
            T = np.empty((nc, M, M, M))
            T[:, :, i, j] = R
            T[:, :, j, i] = R
            dg = np.arange(M)
            T[:, :, dg, dg] = P
            TTF = P[:, :, :, None] - T  # (f T, g T, h F)
            TFF = TF2[:, :, :, None] - TTF.transpose(0, 1, 3, 2)  # (f T, g F, h F)
            FFF = FF2[:, :, :, None] - TFF.transpose(0, 2, 3, 1)  # (f F, g F, h F)
            L3 = _lossc(T)
            L_TTF, L_TFF, L_FFF = _lossc(TTF), _lossc(TFF), _lossc(FFF)
            pairs = (
                (L3, L_TTF),  # split (f T, g T) on h
                (L_TTF.transpose(0, 2, 1), L_TFF),  # (f T, g F)
                (L_TTF.transpose(2, 0, 1), L_TFF.transpose(1, 0, 2)),  # (f F, g T)
                (L_TFF.transpose(1, 2, 0), L_FFF),  # (f F, g F)
            )
            if masked:
                Nn = (T[N], TTF[N], TFF[N], FFF[N])
                npairs = ((Nn[0], Nn[1]), (Nn[1].transpose(0, 2, 1), Nn[2]),
                          (Nn[1].transpose(2, 0, 1), Nn[2].transpose(1, 0, 2)),
                          (Nn[2].transpose(1, 2, 0), Nn[3]))
            d1 = []
            for q, (x, y) in enumerate(pairs):
                tot3 = x + y
                if masked:
                    nx, ny = npairs[q]
                    tot3 = np.where((nx >= m1) & (ny >= m1), tot3, np.inf)
                leafq = (L_TT, L_TF, L_FT, L_FF)[q] + lamn
                d1.append(np.minimum(leafq, np.min(tot3, axis=2) + 2.0 * lamn))
        sT = d1[0] + d1[1]  # split the "x_f = 1" side on g
        sF = d1[2] + d1[3]
        if masked:
            nTT, nTF, nFF = P[N], TF2[N], FF2[N]
            sT = np.where((nTT >= m1) & (nTF >= m1), sT, np.inf)
            sF = np.where((nTF.T >= m1) & (nFF >= m1), sF, np.inf)
        split = (np.minimum(LaT + lamn, np.min(sT, axis=1))
                 + np.minimum(LaF + lamn, np.min(sF, axis=1)))
    return _tie_break(np.where(ok_root, split, np.inf), leaf_root, norm)


def _tie_break(split, leaf_root, norm):
    """``(cost, feature)`` from the costs of the root splits and of the leaf (loss units).

    Near-ties (1e-12 relative: rounding) go to the leaf, then to the lowest feature, so the
    tree does not depend on rounding (e.g. a rescaling of the sample weights).
    """
    if split.size == 0:
        return float(leaf_root / norm), -1
    best = float(np.min(split))
    if best < leaf_root * (1.0 - 1e-12):
        f = int(np.flatnonzero(split <= best + 1e-12 * abs(best))[0])
        return float(split[f] / norm), f
    return float(leaf_root / norm), -1


_TRIU: dict = {}


def _triu(M):
    if M not in _TRIU:
        _TRIU[M] = np.triu_indices(M, 1)
    return _TRIU[M]


def _lossc(x):
    """Squared loss (:func:`~jaxsr.trees.losses.sse`) of statistics with the columns on the
    first axis: ``(c, ...)``."""
    return sse(x[W], x[S], x[Q])
