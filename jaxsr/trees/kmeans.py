"""Weighted 1-D k-means and k-medians by dynamic programming (OSRT section 3.3-3.5).

The k-Means equivalent-points lower bound (Theorem 3.5, Algorithm 1) needs the optimal
loss of clustering a subproblem's targets into ``C`` groups, under the constraint that
samples with identical features (an *equivalence class*) stay together. Theorem 3.6 turns
that into weighted 1-D k-means over the classes' mean targets (weights = class sizes) plus
a constant correction. Here the correction is folded into the cost of a cluster directly:
the cost of a group of classes is the sum of squared errors of *all* their samples around
the group's mean,

    cost(group) = sum_u Q_u - (sum_u S_u)^2 / (sum_u W_u),

with ``W_u, S_u, Q_u`` the (weighted) count, sum and sum of squares of class ``u``'s
targets. For classes with no internal spread (``Q_u = W_u v_u^2``) this is exactly weighted
k-means on the values ``v_u``; in general it is weighted k-means plus the correction
``sum y^2 - sum_u W_u v_u^2`` of Algorithm 1, line 18.

In one dimension an optimal clustering is contiguous in sorted order (of the class means),
so the loss with at most ``k`` clusters of the first ``i + 1`` sorted items satisfies

    D_1[i] = cost(0..i),
    D_k[i] = min_{0 <= j <= i} D_{k-1}[j - 1] + cost(j..i),    D_{k-1}[-1] = 0,

an O(K n^2) dynamic programme with an ``n x n`` cost table in the JAX layer (fixed shapes,
fine for batches of small subproblems); the engine's DP used by the search
(``engine/kmeans.cpp``, :func:`jaxsr.trees.engine.kmeans_losses`) finds each row by divide
and conquer in O(n log n) time and O(n) memory (Song and Zhong 2020 use the same
monotonicity). Choosing ``j = 0`` leaves clusters empty, so ``D_k`` is the loss with *at most*
``k`` clusters and is non-increasing in ``k``.

This module holds the pure, jittable JAX functions (:func:`weighted_kmeans`,
:func:`weighted_kmedians`, :func:`kmeans_lower_bound`) with fixed shapes: items outside a
``mask`` get zero weight and vanish from every cluster, so a batch of subproblems is a
``jax.vmap`` away (the device path). The engine's DP stops adding clusters as soon as the
gain drops to ``lambda`` (Theorem 3.7: the losses are convex in ``k``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .losses import objective, sse

__all__ = [
    "kmeans_cost_matrix",
    "kmedians_cost_matrix",
    "kmeans_dp",
    "weighted_kmeans",
    "weighted_kmedians",
    "kmeans_lower_bound",
    "penalized_minimum",
]


# --------------------------------------------------------------------------- cost matrices
def _prefix(xp, a):
    zero = xp.zeros((1,), dtype=a.dtype)
    return xp.concatenate([zero, xp.cumsum(a)])


def _kmeans_cost(xp, W, S, Q):
    n = W.shape[0]
    PW, PS, PQ = _prefix(xp, W), _prefix(xp, S), _prefix(xp, Q)
    w = PW[None, 1:] - PW[:-1, None]  # [j, i]: items j..i
    s = PS[None, 1:] - PS[:-1, None]
    q = PQ[None, 1:] - PQ[:-1, None]
    c = sse(w, s, q)
    upper = xp.arange(n)[:, None] <= xp.arange(n)[None, :]
    return xp.where(upper, c, xp.inf)


def kmeans_cost_matrix(weights, sums, sq_sums):
    """Cost of every contiguous group of sorted items for the (constrained) k-means loss.

    Args:
      weights: ``(n,)`` float, ``W_u`` (class sizes or summed sample weights; 0 = absent).
      sums: ``(n,)`` float, ``S_u = sum of w*y`` over the class.
      sq_sums: ``(n,)`` float, ``Q_u = sum of w*y^2`` over the class.
      The items must be sorted by their mean ``S_u / W_u``.

    Returns:
      ``(n, n)`` float: entry ``[j, i]`` (``j <= i``) is ``sum Q - (sum S)^2 / sum W`` over
      items ``j..i`` (0 for an all-zero group); ``inf`` below the diagonal.
    """
    return _kmeans_cost(jnp, jnp.asarray(weights), jnp.asarray(sums), jnp.asarray(sq_sums))


def _kmedians_cost(xp, v, w):
    """Weighted absolute deviation of items j..i around their weighted median."""
    n = v.shape[0]
    PW, PV = _prefix(xp, w), _prefix(xp, w * v)
    j = xp.arange(n)[:, None]
    i = xp.arange(n)[None, :]
    half = PW[j] + 0.5 * (PW[i + 1] - PW[j])
    # first m with PW[m + 1] >= half, i.e. cumulative weight of j..m reaches half.
    if xp is np:
        m = np.searchsorted(PW[1:], half.reshape(-1), side="left").reshape(n, n)
    else:
        m = jnp.searchsorted(PW[1:], half.reshape(-1), side="left", method="compare_all").reshape(
            n, n
        )
    m = xp.clip(xp.maximum(m, j), 0, max(n - 1, 0))
    vm = v[m]
    left = vm * (PW[m] - PW[j]) - (PV[m] - PV[j])
    right = (PV[i + 1] - PV[m + 1]) - vm * (PW[i + 1] - PW[m + 1])
    c = xp.maximum(left + right, 0.0)
    return xp.where(j <= i, c, xp.inf)


def kmedians_cost_matrix(values, weights):
    """Cost of every contiguous group of sorted items for weighted k-medians.

    Args:
      values: ``(n,)`` float, sorted ascending.
      weights: ``(n,)`` float, non-negative (0 = absent).

    Returns:
      ``(n, n)`` float: entry ``[j, i]`` (``j <= i``) is ``sum_t w_t |v_t - median|`` over
      items ``j..i`` (median = weighted median); ``inf`` below the diagonal.
    """
    return _kmedians_cost(jnp, jnp.asarray(values), jnp.asarray(weights))


# --------------------------------------------------------------------------- the DP
def kmeans_dp(cost, max_clusters: int):
    """Optimal loss with at most ``k`` contiguous clusters, ``k = 1..max_clusters``.

    Args:
      cost: ``(n, n)`` float cost matrix (``[j, i]`` = cost of items ``j..i``, ``inf`` for
        ``j > i``), e.g. from :func:`kmeans_cost_matrix`.
      max_clusters: static int ``K >= 1``.

    Returns:
      ``(K,)`` float: ``D_k[n - 1]`` for ``k = 1..K`` (zeros when ``n == 0``).
      Pure and jittable (``max_clusters`` static); ``jax.vmap`` over a leading batch axis.
    """
    n = cost.shape[0]
    if n == 0:
        return jnp.zeros((max_clusters,), dtype=cost.dtype)
    D1 = cost[0]
    if max_clusters == 1:
        return D1[-1:]

    def row(D, _):
        prev = jnp.concatenate([jnp.zeros((1,), cost.dtype), D[:-1]])
        D = jnp.min(prev[:, None] + cost, axis=0)
        return D, D[-1]

    _, rest = jax.lax.scan(row, D1, None, length=max_clusters - 1)
    return jnp.concatenate([D1[-1:], rest])


def weighted_kmeans(values, weights, max_clusters: int, sq_sums=None):
    """Weighted 1-D k-means losses for ``k = 1..max_clusters`` (OSRT Definition 3.3).

    Args:
      values: ``(n,)`` float, sorted ascending (class means ``v_u``).
      weights: ``(n,)`` float, non-negative weights ``w_u``; 0 removes an item (a mask).
      max_clusters: static int ``K >= 1``.
      sq_sums: optional ``(n,)`` float ``Q_u``; default ``w_u v_u^2`` (plain weighted
        k-means). Passing the classes' real sums of squares gives the constrained k-means
        of Definition 3.2 (weighted k-means plus the correction of Algorithm 1).

    Returns:
      ``(K,)`` float: the optimal loss with at most ``k`` clusters. Jittable, vmappable.

    Example:
      >>> import jax.numpy as jnp
      >>> [round(float(x), 6) for x in weighted_kmeans(jnp.array([0., 1., 10.]),
      ...                                               jnp.array([1., 1., 2.]), 3)]
      [90.75, 0.5, 0.0]
    """
    v = jnp.asarray(values)
    w = jnp.asarray(weights, dtype=v.dtype)
    q = w * v * v if sq_sums is None else jnp.asarray(sq_sums, dtype=v.dtype)
    return kmeans_dp(_kmeans_cost(jnp, w, w * v, q), max_clusters)


def weighted_kmedians(values, weights, max_clusters: int):
    """Weighted 1-D k-medians losses (sum of ``w |v - median|``), ``k = 1..max_clusters``.

    The absolute-loss analogue of :func:`weighted_kmeans` (OSRT supports L1 loss, Table 1).

    Args:
      values: ``(n,)`` float, sorted ascending.
      weights: ``(n,)`` float, non-negative; 0 removes an item.
      max_clusters: static int ``K >= 1``.

    Returns:
      ``(K,)`` float losses. Jittable, vmappable.
    """
    v = jnp.asarray(values)
    w = jnp.asarray(weights, dtype=v.dtype)
    return kmeans_dp(_kmedians_cost(jnp, v, w), max_clusters)


def penalized_minimum(losses, regularization, normalizer=1.0, min_clusters: int = 1):
    """``min_{C >= min_clusters} losses[C - 1] / normalizer + regularization * C``.

    By Theorem 3.7 this equals stopping Algorithm 1 at the first ``C`` whose gain is at most
    ``regularization``. Works on numpy and JAX arrays (last axis = ``C``).
    """
    xp = jnp if isinstance(losses, jax.Array) else np
    K = losses.shape[-1]
    C = xp.arange(1, K + 1, dtype=losses.dtype)
    obj = objective(losses, normalizer, regularization, C)
    obj = xp.where(C >= min_clusters, obj, xp.inf)
    return xp.min(obj, axis=-1)


def kmeans_lower_bound(
    weights,
    sums,
    sq_sums,
    mask,
    regularization,
    max_clusters: int,
    normalizer=1.0,
    min_clusters: int = 1,
):
    """k-Means equivalent-points lower bound of a subproblem (Theorem 3.5, Algorithm 1).

    Args:
      weights, sums, sq_sums: ``(U,)`` float statistics ``W_u, S_u, Q_u`` of *all*
        equivalence classes, sorted by class mean ``S_u / W_u``.
      mask: ``(U,)`` bool or 0/1, the subproblem's support over the classes.
      regularization: ``lambda`` (in the units of ``loss / normalizer``).
      max_clusters: static int, the most leaves a subtree may have (``2^(r-1)`` with ``r``
        levels left; capping keeps the bound valid and tightens it).
      normalizer: the loss normaliser (``SST`` for OSRT's normalised objective).
      min_clusters: 2 gives the bound for trees that split at least once (lookahead).

    Returns:
      scalar float: ``min_C Constrained_k-Means(C) / normalizer + lambda * C`` -- a lower
      bound on the objective of every tree on the subproblem with at most ``max_clusters``
      leaves. Jittable; ``jax.vmap`` over ``mask`` batches subproblems.
    """
    m = jnp.asarray(mask).astype(jnp.asarray(weights).dtype)
    losses = kmeans_dp(_kmeans_cost(jnp, weights * m, sums * m, sq_sums * m), max_clusters)
    return penalized_minimum(losses, regularization, normalizer, min_clusters)
