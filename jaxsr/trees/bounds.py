"""Leaf statistics and lower bounds of subproblems (OSRT section 3).

A *subproblem* is a support set over the equivalence classes (unique binary feature rows)
together with the number of levels ``r`` a subtree on it may still use (``r = 1``: a leaf).
Every class ``u`` carries six statistics, the columns of ``class_stats``:

====  =====================================================================
``W``  summed sample weight of the class
``S``  summed ``w * y`` (``y`` centred on its weighted mean, for accuracy)
``Q``  summed ``w * y^2``
``E``  the class's own loss around its best constant (equivalence loss, eq. 4)
``N``  number of samples (unweighted; for ``min_samples_leaf``)
``C``  1 (so sums count classes)
====  =====================================================================

Sums over a support set are matrix products, so the statistics of the children of *every*
split of a subproblem come out of one product ``class_features.T @ (mask * class_stats)``
(:func:`leaf_statistics`). The bounds, all in objective units (loss / normaliser +
lambda * leaves):

* one leaf: ``(Q - S^2 / W) / normaliser + lambda`` for squared loss (:func:`leaf_cost`);
* equivalent points (Theorem 3.3): a tree that splits costs at least
  ``sum_u E_u / normaliser + 2 lambda`` (``+ lambda`` without the one-step lookahead of
  Theorem 3.2, which counts the second leaf a split must create);
* k-Means equivalent points (Theorem 3.5): :func:`kmeans_bound` from the host k-means
  losses (the search), :func:`jaxsr.trees.kmeans.kmeans_lower_bound` (jittable);
* hierarchical (Theorem 3.1): a bound of a subproblem holds for all its descendants; the
  search prunes a split whose children's bounds already reach the best objective found.

The lower bound of a subproblem is ``min(leaf cost, bound for trees that split)``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = [
    "STAT_W",
    "STAT_S",
    "STAT_Q",
    "STAT_E",
    "STAT_N",
    "STAT_C",
    "N_STATS",
    "leaf_statistics",
    "squared_loss",
    "leaf_cost",
    "equivalent_points_bound",
    "kmeans_bound",
    "kmeans_bound_of",
    "useful_levels",
    "useful_levels_of",
]

from .losses import (  # noqa: E402
    N_STATS,
    STAT_C,
    STAT_E,
    STAT_N,
    STAT_Q,
    STAT_S,
    STAT_W,
    objective,
    sse,
)


def leaf_statistics(class_features, class_stats, mask):
    """Statistics of a subproblem and of the "feature is true" child of every split.

    Args:
      class_features: ``(U, M)`` float 0/1, the binary feature row of each class.
      class_stats: ``(U, s)`` float, per-class statistics (columns ``W, S, Q, E, N, C``).
      mask: ``(U,)`` bool or 0/1, the support set.

    Returns:
      ``(true_stats, total)``: ``true_stats`` of shape ``(M, s)`` are the sums over the
      classes of the support with feature ``m`` equal to 1; ``total`` ``(s,)`` the sums over
      the support. The "false" child of split ``m`` is ``total - true_stats[m]``.
      Pure; jittable; ``jax.vmap`` over ``mask`` gives a batch of subproblems.
    """
    st = (
        jnp.asarray(class_stats) * jnp.asarray(mask).astype(jnp.asarray(class_stats).dtype)[:, None]
    )
    return jnp.asarray(class_features, dtype=st.dtype).T @ st, jnp.sum(st, axis=0)


def squared_loss(stats):
    """Sum of weighted squared errors around the weighted mean: ``Q - S^2 / W`` (>= 0).

    Args:
      stats: ``(..., s)`` float statistics (columns as in the module docstring).

    Returns:
      ``(...)`` float. Numpy in, numpy out; JAX in, JAX out.
    """
    return sse(stats[..., STAT_W], stats[..., STAT_S], stats[..., STAT_Q])


def leaf_cost(stats, regularization, normalizer, min_samples_leaf=1):
    """Objective of a single leaf: ``squared_loss / normalizer + lambda``.

    Args:
      stats: ``(..., s)`` float statistics.
      regularization: ``lambda``.
      normalizer: the loss normaliser (``SST``, or ``sum of weights`` for the raw mean loss).
      min_samples_leaf: a leaf needs at least ``max(1, min_samples_leaf)`` samples.

    Returns:
      ``(...)`` float; ``inf`` where the leaf holds too few samples.
    """
    xp = np if isinstance(stats, np.ndarray) else jnp
    ok = stats[..., STAT_N] >= max(1, min_samples_leaf)
    return xp.where(ok, objective(squared_loss(stats), normalizer, regularization), xp.inf)


def equivalent_points_bound(stats, regularization, normalizer, lookahead=True, *, leaves=None):
    """Equivalent points bound for trees that split (Theorem 3.3, with Theorem 3.2).

    The search calls it for every child of every split (its cheap bound) and for the trees
    the shallow kernel does not cover (``leaves = exact_levels + 2``).

    Args:
      stats: ``(..., s)`` float statistics.
      regularization, normalizer: as in :func:`leaf_cost`.
      lookahead: count the two leaves every split creates (``2 lambda``) instead of one.
      leaves: the least number of leaves of the trees bounded (overrides ``lookahead``).

    Returns:
      ``(...)`` float: ``E / normalizer + leaves * lambda``.
    """
    if leaves is None:
        leaves = 2 if lookahead else 1
    return objective(stats[..., STAT_E], normalizer, regularization, float(leaves))


def kmeans_bound(losses, regularization, normalizer, min_leaves=1):
    """k-Means equivalent points bound of the trees with at least ``min_leaves`` leaves.

    Theorem 3.5: a tree with ``C`` leaves on a subproblem costs at least
    ``losses[C - 1] / normalizer + lambda C``, with ``losses`` the constrained k-means
    losses (:func:`jaxsr.trees.engine.kmeans_losses`). The table may stop early, at
    the first ``C`` whose gain is at most ``lambda * normalizer`` (Theorem 3.7: the losses
    are convex in ``C``, so the penalised loss does not decrease after it), or at the most
    leaves a tree may have. Below ``min_leaves`` entries, the missing loss is at least the
    last one minus the last gain per extra cluster (convexity again), and at least 0.

    Args:
      losses: ``(K,)`` float losses for ``1..K`` clusters (``K >= 1``).
      regularization, normalizer: as in :func:`leaf_cost`.
      min_leaves: 1 (every tree), 2 (trees that split: lookahead, Theorem 3.2), or more.

    Returns:
      float, a lower bound in objective units.
    """
    losses = np.asarray(losses, dtype=np.float64)
    return float(kmeans_bound_of(losses, losses.shape[0], regularization, normalizer, min_leaves))


def kmeans_bound_of(losses, k, lam, norm, min_leaves):
    """:func:`kmeans_bound` of the first ``k >= 1`` entries of ``losses`` (a float64
    array): plain scalar arithmetic (the engine's copy is ``kmeans_bound`` in
    ``engine/bounds.hpp``; the device path and the tests use this one)."""
    if k >= min_leaves:
        best = np.inf
        for c in range(int(min_leaves), k + 1):
            best = min(best, objective(losses[c - 1], norm, lam, c))
        return best
    gain = losses[k - 2] - losses[k - 1] if k >= 2 else 0.0
    lo = max(losses[k - 1] - (min_leaves - k) * gain, 0.0)
    return objective(lo, norm, lam, min_leaves)


def useful_levels(d, stats, leaf, regularization, normalizer, min_samples_leaf, equivalent):
    """The levels a subtree on a support can use to any purpose (``>= 1``).

    At most ``d``; at most the support's classes and ``samples / min_samples_leaf`` (the
    most leaves it can have); and with ``lambda > 0`` at most the leaves ``h`` with
    ``E / normaliser + lambda h`` still below the leaf cost (a tree with more leaves costs
    more than the leaf, Theorem 3.3; ``E = 0`` without the equivalent points bound).

    Args:
      d: int, the levels allowed. stats: ``(..., 6)`` float statistics. leaf: ``(...)``
        float leaf costs. regularization, normalizer: as in :func:`leaf_cost`.
      min_samples_leaf: int >= 1. equivalent: use the equivalent points loss.

    Returns:
      ``(...)`` int64.
    """
    return useful_levels_of(
        d,
        stats[..., STAT_C],
        stats[..., STAT_N],
        stats[..., STAT_E],
        leaf,
        regularization,
        normalizer,
        min_samples_leaf,
        equivalent,
    ).astype(np.int64)


def useful_levels_of(d, classes, samples, eq_loss, leaf, lam, norm, m1, equivalent):
    """:func:`useful_levels` from a support's class count, sample count and equivalence
    loss (floats or arrays of one shape), as a float ``>= 1``: numpy array operations that
    work on scalars too (the engine's copy: ``useful_levels`` in ``engine/bounds.hpp``)."""
    r = np.minimum(np.minimum(classes, np.floor(samples / m1)), d)
    if lam > 0:
        gap = leaf - (eq_loss / norm if equivalent else 0.0)
        r = np.minimum(r, np.floor(gap / lam * (1 + 1e-9) + 1e-9))
    return np.maximum(r, 1.0)
