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

from .._config import program
from .losses import objective, sse

__all__ = [
    "kernel_work",
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
        return n_classes * M * M * 3.0 + 40.0 * M**3 + 1.0
    return n_classes * M * 3.0 * (M if levels == 2 else 1) + 40.0 * M**2 + 1.0


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
    cost_false, _ = best_depth2(
        xp, tot_false, a[..., None, :, :] - P, P[..., None, :, :, :] - T, lam, norm, m1
    )
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
def optimal_subtree_cost(
    class_features,
    class_stats,
    mask,
    regularization,
    normalizer,
    levels: int = 2,
    min_samples_leaf: int = 1,
):
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
    return best_subtree(jnp, X, st, levels, regularization, normalizer, max(1, min_samples_leaf))
