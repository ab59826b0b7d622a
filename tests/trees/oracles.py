"""Numpy oracles of the engine's kernels (the engine itself is C++, jaxsr.trees.engine):
the exact shallow subtrees as matrix products, the host k-means / k-medians DP (a table or
rows by divide and conquer) and the absolute losses of a set and of the children of splits.
The tests compare the engine, the JAX kernels and brute force against them."""

import numpy as np

from jaxsr.trees.kmeans import _prefix
from jaxsr.trees.losses import _deviations, sse
from jaxsr.trees.subtrees import N, Q, S, W


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
                npairs = (
                    (Nn[0], Nn[1]),
                    (Nn[1].transpose(0, 2, 1), Nn[2]),
                    (Nn[1].transpose(2, 0, 1), Nn[2].transpose(1, 0, 2)),
                    (Nn[2].transpose(1, 2, 0), Nn[3]),
                )
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
        split = np.minimum(LaT + lamn, np.min(sT, axis=1)) + np.minimum(
            LaF + lamn, np.min(sF, axis=1)
        )
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


def _dp_host(
    cost,
    n: int,
    max_clusters: int,
    stop_gain: float | None,
    table_fn=None,
    table_first: int = _TABLE_MAX,
    table=None,
) -> np.ndarray:
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
        if (
            table is None
            and table_fn is not None
            and (n <= table_first or (n <= _TABLE_MAX and full_rows >= n // 32))
        ):
            table = table_fn()  # built only once a full row is needed
        D = np.min(prev[:, None] + table, axis=0) if table is not None else _dc_row(prev, cost, n)
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
    return _dp_host(
        _kmeans_cost_fn(W, S, Q), n, max_clusters, stop_gain, lambda: _kmeans_table_np(W, S, Q)
    )


_KMEANS_TABLE_FIRST = 160  # below this the table is built first (cheaper than any row)


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
    return _dp_host(
        _kmedians_cost_fn(v, w),
        n,
        max_clusters,
        stop_gain,
        lambda: _kmedians_table_np(v, w),
        _KMEDIANS_TABLE_FIRST,
    )


def absolute_loss(ys, ws, unit=None):
    """The absolute loss of one set of samples: ``sum w |y - median|``, the median the
    first sample at which the cumulative weight reaches half of the total (that of
    :func:`absolute_losses`), summed in sample order like
    the engine's absolute task (so the same float; a one-column
    :func:`absolute_losses` sums pairwise).

    Args:
      ys: ``(n,)`` float64 targets sorted ascending. ws: ``(n,)`` float64 weights.
      unit: whether every weight is 1 (None: look); the median is then the
        ``ceil(n / 2)``-th sample.

    Returns:
      float (0 for no sample).
    """
    n = ys.shape[0]
    if n == 0:
        return 0.0
    if unit is None:
        unit = ws.min() == 1.0 == ws.max()
    if unit:
        d = np.abs(ys - ys[(n - 1) // 2])
    else:
        cw = np.cumsum(ws)
        d = np.abs(ys - ys[np.searchsorted(cw, 0.5 * cw[-1])])  # first cw[k] >= half
        d *= ws
    return float(np.cumsum(d)[-1])  # a running sum: in sample order


def absolute_split_losses(ys, ws, member, unit=None):
    """The absolute losses of the two children of ``B`` splits of one set of samples.

    The first child of split ``b`` holds the samples with ``member[:, b]``, the second the
    others; the losses are those of :func:`absolute_losses` on the ``2B`` children's
    columns (the same floats: the same cumulative weights and the same sums in sample
    order), both children of every split in one ``(n, 2B)`` pass. With unit weights
    (every weight 1: an unweighted fit) the median of a child of ``c`` samples is its
    ``ceil(c / 2)``-th sample, read from the positions of its members instead of from
    cumulative sums.

    Args:
      ys: ``(n,)`` float64 targets sorted ascending. ws: ``(n,)`` float64 weights.
      member: ``(n, B)`` bool. unit: whether every weight is 1 (None: look).

    Returns:
      ``(lossT (B,), lossF (B,))`` float64: the children with and without ``member``.
    """
    n, B = member.shape
    if n == 0 or B == 0:
        return np.zeros(B), np.zeros(B)
    if unit is None:
        unit = ws.min() == 1.0 == ws.max()
    if unit:
        inside = np.concatenate((member, ~member), axis=1)  # (n, 2B): both children
        Wm = inside.astype(np.float64)
        rows = np.ascontiguousarray(inside.T)  # a child's members, in sample order
        pos = np.flatnonzero(rows)
        edge = np.arange(0, 2 * B * n + 1, n)
        at = pos.searchsorted(edge)  # child j's members: pos[at[j]:at[j + 1]]
        c = at[1:] - at[:-1]
        # the ceil(c/2)-th member: the first at which the count reaches c / 2
        k = pos[at[:-1] + (c - 1) // 2] - edge[:-1]
        if not c.all():
            k[c == 0] = 0  # an empty child (loss 0): the first sample, as argmax gives
    else:
        Wm = np.empty((n, 2 * B))
        w = ws[:, None]
        np.multiply(w, member, out=Wm[:, :B])
        np.subtract(w, Wm[:, :B], out=Wm[:, B:])  # w (1 - member), exactly
        cw = np.cumsum(Wm, axis=0)
        k = np.argmax(cw >= 0.5 * cw[-1], axis=0)
    loss = _deviations(ys, k, Wm)
    return loss[:B], loss[B:]
