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
fine for batches of small subproblems); the host versions used by the search find each row
by divide and conquer in O(n log n) time and O(n) memory (Song and Zhong 2020 use the same
monotonicity). Choosing ``j = 0`` leaves clusters empty, so ``D_k`` is the loss with *at most*
``k`` clusters and is non-increasing in ``k``.

Two layers share one implementation:

* pure, jittable JAX functions (:func:`weighted_kmeans`, :func:`weighted_kmedians`,
  :func:`kmeans_lower_bound`) with fixed shapes: items outside a ``mask`` get zero weight
  and vanish from every cluster, so a batch of subproblems is a ``jax.vmap`` away;
* host (numpy) versions used inside the search (:func:`kmeans_losses_np`,
  :func:`kmedians_losses_np`) that stop adding clusters as soon as the gain drops to
  ``lambda`` (Theorem 3.7: the losses are convex in ``k``).
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
    "kmeans_losses_np",
    "kmedians_losses_np",
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
        m = jnp.searchsorted(PW[1:], half.reshape(-1), side="left",
                             method="compare_all").reshape(n, n)
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


def kmeans_lower_bound(weights, sums, sq_sums, mask, regularization, max_clusters: int,
                       normalizer=1.0, min_clusters: int = 1):
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


# --------------------------------------------------------------------------- host versions
# The host versions never build the n x n table. Both costs satisfy the quadrangle
# inequality (1-D clustering of sorted items; the classes' internal spread adds a modular
# term), so the leftmost optimal split point ``j*(i)`` of every DP row is non-decreasing in
# ``i`` and a row is found by divide and conquer over ``i``: O(n log n) cost evaluations per
# row, in O(n) memory, each level of the recursion evaluated as one vectorised batch.


def _kmeans_cost_fn(W, S, Q):
    PW, PS, PQ = _prefix(np, W), _prefix(np, S), _prefix(np, Q)

    def cost(j, i):
        w = PW[i + 1] - PW[j]
        s = PS[i + 1] - PS[j]
        q = PQ[i + 1] - PQ[j]
        return sse(w, s, q)

    return cost


def _kmedians_cost_fn(v, w):
    n = v.shape[0]
    PW, PV = _prefix(np, w), _prefix(np, w * v)

    def cost(j, i):
        half = PW[j] + 0.5 * (PW[i + 1] - PW[j])
        m = np.searchsorted(PW[1:], half, side="left")
        m = np.clip(m, j, i).clip(0, n - 1)
        vm = v[m]
        left = vm * (PW[m] - PW[j]) - (PV[m] - PV[j])
        right = (PV[i + 1] - PV[m + 1]) - vm * (PW[i + 1] - PW[m + 1])
        return np.maximum(left + right, 0.0)

    return cost


def _dc_row(prev, cost, n):
    """``D[i] = min_{0 <= j <= i} prev[j] + cost(j, i)`` by divide and conquer."""
    D = np.empty(n)
    opt = np.zeros(n, dtype=np.int64)
    D[0] = prev[0] + cost(np.zeros(1, np.int64), np.zeros(1, np.int64))[0]
    if n > 1:
        j = np.arange(n)
        v = prev + cost(j, np.full(n, n - 1))
        k = int(np.argmin(v))
        D[n - 1], opt[n - 1] = v[k], k
    seg_l = np.zeros(1, np.int64)
    seg_r = np.full(1, n - 1, np.int64)
    while True:
        keep = seg_r - seg_l > 1
        seg_l, seg_r = seg_l[keep], seg_r[keep]
        if seg_l.size == 0:
            return D
        mid = (seg_l + seg_r) // 2
        lo = opt[seg_l]
        hi = np.maximum(np.minimum(opt[seg_r], mid), lo)
        L = hi - lo + 1
        starts = np.concatenate([[0], np.cumsum(L)[:-1]])
        seg = np.repeat(np.arange(L.size), L)
        jj = lo[seg] + (np.arange(int(L.sum())) - starts[seg])
        vals = prev[jj] + cost(jj, mid[seg])
        mins = np.minimum.reduceat(vals, starts)
        pos = np.where(vals <= mins[seg], np.arange(vals.size), vals.size)
        D[mid] = mins
        opt[mid] = jj[np.minimum.reduceat(pos, starts)]
        seg_l, seg_r = np.concatenate([seg_l, mid]), np.concatenate([mid, seg_r])


# The n x n cost table costs O(n^2) to build (k-medians: O(n^2 log n), a searchsorted per
# entry), then one vectorised pass per row; a divide-and-conquer row costs O(n log n) but
# ~0.2 ms of Python per row. Measured (2 cores, n = 384): k-means table ~3 ms, k-medians
# table ~7 ms, a D&C row ~0.3 ms. k-means (many rows at small lambda) builds the table for
# its first full row up to 384 items; k-medians up to 128 items, and up to 384 once n / 32
# rows have been computed by divide and conquer. Never above 384.
_TABLE_MAX = 384
_KMEDIANS_TABLE_FIRST = 128


def _dp_host(cost, n: int, max_clusters: int, stop_gain: float | None,
             table_fn=None, table_first: int = _TABLE_MAX, table=None) -> np.ndarray:
    """Losses ``D_k[n - 1]`` for ``k = 1, 2, ...`` with the early stop of Theorem 3.7.

    Only the last entry of a row is needed to decide whether to stop, and it takes one
    O(n) pass over the previous row (``min_j D_{k-1}[j - 1] + cost(j, n - 1)``); the full
    row ``D_k`` (O(n log n) by divide and conquer, or one pass over the cost table) is
    computed only when the next row is needed. With the stop at ``k`` clusters this costs
    ``k - 2`` full rows instead of ``k - 1``. ``table``: the ready ``n x n`` cost table
    (``cost`` is then unused), else built by ``table_fn`` once a full row is needed and
    ``n <= table_first`` (or enough rows were computed by divide and conquer).
    """
    if n == 0:
        return np.zeros(1)
    kmax = min(max_clusters, n)
    D = table[0] if table is not None else cost(np.zeros(n, np.int64), np.arange(n))
    out = [D[-1]]
    if kmax <= 1:
        return np.asarray(out)
    full_rows = 0
    if table is not None:
        last_col = table[:, -1]
    else:
        last_col = cost(np.arange(n), np.full(n, n - 1))  # cost(j, n - 1) for every j
    prev = np.empty(n)
    while True:
        prev[0] = 0.0
        prev[1:] = D[:-1]
        out.append(float(np.min(prev + last_col)))
        if len(out) >= kmax:
            break
        if stop_gain is not None and out[-2] - out[-1] <= stop_gain:
            break  # Theorem 3.7: every further cluster gains even less
        # the full row D_k, needed for row k + 1
        if table is None and table_fn is not None and (
                n <= table_first or (n <= _TABLE_MAX and full_rows >= n // 32)):
            table = table_fn()  # built only once a full row is needed
        D = np.min(prev[:, None] + table, axis=0) if table is not None else _dc_row(
            prev, cost, n)
        full_rows += 1
    return np.asarray(out)


_LOWER = np.tril(np.ones((_TABLE_MAX, _TABLE_MAX), dtype=bool), -1)  # j > i: no group


def _kmeans_table_np(W, S, Q):
    """Host twin of :func:`_kmeans_cost` with fewer passes (n <= ``_TABLE_MAX``).

    ``sum S = 0`` exactly where ``sum W = 0`` (prefix sums over zero items cancel exactly),
    so ``S^2 / max(W, tiny)`` needs no mask.
    """
    n = W.shape[0]
    PW, PS, PQ = _prefix(np, W), _prefix(np, S), _prefix(np, Q)
    w = PW[None, 1:] - PW[:-1, None]
    s = PS[None, 1:] - PS[:-1, None]
    c = PQ[None, 1:] - PQ[:-1, None]
    np.multiply(s, s, out=s)
    np.maximum(w, 1e-300, out=w)
    with np.errstate(over="ignore"):
        np.divide(s, w, out=s)
    np.subtract(c, s, out=c)
    np.maximum(c, 0.0, out=c)
    np.copyto(c, np.inf, where=_LOWER[:n, :n])
    return c


def kmeans_losses_np(W, S, Q, max_clusters: int, stop_gain: float | None = None):
    """Host version of the constrained k-means losses (items already sorted by mean).

    Args:
      W, S, Q: ``(n,)`` float64 class statistics sorted by mean ``S / W``.
      max_clusters: most clusters; stop_gain: see below.

    Returns:
      ``(k,)`` float64 losses for ``1..k`` clusters. Stops after the first ``k`` whose gain
      ``D_{k-1} - D_k`` is at most ``stop_gain`` (Theorem 3.7), so the result may be
      shorter than ``max_clusters``; the penalised minimum over the returned prefix equals
      the one over all ``k``.
    """
    W, S, Q = (np.asarray(a, np.float64) for a in (W, S, Q))
    n = W.shape[0]
    if 1 < n <= _KMEANS_TABLE_FIRST:
        return _dp_host(None, n, max_clusters, stop_gain, table=_kmeans_table_np(W, S, Q))
    return _dp_host(_kmeans_cost_fn(W, S, Q), n, max_clusters, stop_gain,
                    lambda: _kmeans_table_np(W, S, Q))


_KMEANS_TABLE_FIRST = 160  # below this the table is built first (cheaper than any row)
KMEDIANS_MAX_VALUES = 20000  # the search skips a k-medians bound over more distinct targets


def _kmedians_table_np(v, w):
    """Host twin of :func:`_kmedians_cost` (the same floats) with fewer passes and
    temporaries (n <= ``_TABLE_MAX``)."""
    n = v.shape[0]
    PW, PV = _prefix(np, w), _prefix(np, w * v)
    lo = PW[:-1, None]  # PW[j]
    half = PW[None, 1:] - lo
    half *= 0.5
    half += lo
    m = np.searchsorted(PW[1:], half.reshape(-1), side="left").reshape(n, n)
    np.maximum(m, np.arange(n)[:, None], out=m)
    np.minimum(m, n - 1, out=m)
    vm = v[m]
    left = PW[m]
    left -= lo
    left *= vm
    t = PV[m]
    t -= PV[:-1, None]
    left -= t  # vm (PW[m] - PW[j]) - (PV[m] - PV[j])
    m += 1
    right = PV[m]
    np.subtract(PV[None, 1:], right, out=right)
    t = PW[m]
    np.subtract(PW[None, 1:], t, out=t)
    t *= vm
    right -= t  # (PV[i + 1] - PV[m + 1]) - vm (PW[i + 1] - PW[m + 1])
    left += right
    np.maximum(left, 0.0, out=left)
    np.copyto(left, np.inf, where=_LOWER[:n, :n])
    return left


def kmedians_losses_np(values, weights, max_clusters: int, stop_gain: float | None = None):
    """Host version of :func:`weighted_kmedians` with the same early stop.

    Up to ``_KMEDIANS_TABLE_FIRST`` items and with at least 3 clusters the cost table is
    built first (its first row and last column are the two rows the DP reads before its
    first full row, and a full row, which needs the table, follows unless the first gain
    already stops it)."""
    v, w = np.asarray(values, np.float64), np.asarray(weights, np.float64)
    n = v.shape[0]
    if 1 < n <= _KMEDIANS_TABLE_FIRST and max_clusters > 2:
        return _dp_host(None, n, max_clusters, stop_gain, table=_kmedians_table_np(v, w))
    return _dp_host(_kmedians_cost_fn(v, w), n, max_clusters, stop_gain,
                    lambda: _kmedians_table_np(v, w), _KMEDIANS_TABLE_FIRST)
