"""Compiled (numba) host kernels of the search: the shallow-subtree solver and k-means.

The search (:mod:`jaxsr.trees.search`) visits thousands of small subproblems; in numpy
each costs a few dozen array operations (0.2-1.5 ms, mostly call overhead and temporaries),
against microseconds of work. These are the same two ideas as loops compiled once per
process (``cache=True``: later processes load them from disk, from :data:`CACHE_FOLDER`):

* :func:`subtree_splits` -- the exact best trees with 1 to 3 levels of splits of one
  support, squared loss, per root feature (STreeD / MurTree's specialised depth-two solver,
  one level deeper): for each root feature and side, the pair statistics of that side
  (``O(U k^2)``, ``k`` features set per class) and then the best depth-2 tree from them in
  ``O(M^2)``. Called by :func:`jaxsr.trees.subtrees.best_subtree_np`.
* :func:`kmeans_losses` -- the constrained 1-D k-means losses with the early stop of
  Theorem 3.7 (OSRT Algorithm 1), each DP row by divide and conquer over the monotone split
  points. Called by :func:`jaxsr.trees.kmeans.kmeans_losses_np`.

This module imports numba; the others import it only when a host search needs it, so
``import jaxsr`` does not pay for it. Losses are in loss units (``loss + lambda *
normaliser * leaves``); the callers divide by the normaliser.
"""

from __future__ import annotations

import contextlib
import os
import types

import numba
import numpy as np

from . import bounds, kernel_cache, losses

__all__ = ["subtree_splits", "kmeans_losses"]


# Where the kernels of this package are cached (:mod:`jaxsr.trees.kernel_cache`: a folder
# per version of their sources), or None (then they are compiled in memory,
# once per process). Folders of other sources or versions are left where they are: they
# may belong to another install that shares the base folder.
CACHE_FOLDER = kernel_cache.cache_folder()


@contextlib.contextmanager
def _numba_cache_dir(path: str | None):
    """Point numba's documented ``NUMBA_CACHE_DIR`` setting (``numba.config.CACHE_DIR``)
    at ``path`` for the duration: numba chooses a function's cache locator, and with it
    the folder, when caching is enabled at decoration, and a set ``CACHE_DIR`` selects
    its user-provided-folder locator. The previous value is restored right after, so
    numba's other users are not affected."""
    before = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = path or ""
    try:
        yield
    finally:
        numba.config.CACHE_DIR = before


def _njit(**options):
    """``numba.njit(**options)``; with ``cache=True`` the function is cached in
    :data:`CACHE_FOLDER`."""
    def decorate(f):
        if not options.get("cache"):
            return numba.njit(**options)(f)
        with _numba_cache_dir(CACHE_FOLDER):
            return numba.njit(**options)(f)

    return decorate


def _can_cache() -> bool:
    """Whether numba caches this package's kernels in :data:`CACHE_FOLDER`: it needs that
    folder (None without a writable base folder), and numba's locator of a set
    ``CACHE_DIR`` first in its list (``NUMBA_CACHE_LOCATOR_CLASSES`` can change that).
    Otherwise the kernels are compiled in memory once per process instead (tens of CPU
    seconds on the first tree search) rather than cached where a digest of their sources
    does not key them."""
    if CACHE_FOLDER is None:
        return False

    def probe():  # pragma: no cover - never called
        return 0

    try:
        f = _njit(cache=True)(probe)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return False
    return os.path.abspath(f.stats.cache_path).startswith(CACHE_FOLDER + os.sep)


_NB = dict(cache=_can_cache(), nogil=True, fastmath=False, error_model="numpy")


# the formulas of :mod:`jaxsr.trees.losses`, compiled inline into every kernel below
_sse = _njit(inline="always", **_NB)(losses.sse_one)
_objective = _njit(inline="always", **_NB)(losses.objective)
_centre = _njit(inline="always", **_NB)(losses.centre)
_recentred = _njit(inline="always", **_NB)(losses.recentred)
# a plain-Python kernel of another module, compiled: its calls of the formulas above
# resolve to their compiled versions; PLAIN maps it back to the plain function (which
# :mod:`jaxsr.trees.interpreted` runs)
_FORMULAS = {"objective": _objective, "sse_one": _sse, "centre": _centre,
             "recentred": _recentred}
PLAIN: dict = {}


def compile_plain(f, **options):
    """``numba.njit`` of the plain-Python function ``f`` (the one implementation of its
    idea, in the module named after it) with the loss formulas it calls bound to their
    compiled versions; cached like the kernels of this module."""
    g = dict(f.__globals__)
    g.update({k: v for k, v in _FORMULAS.items() if k in f.__code__.co_names})
    fc = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    fc.__qualname__, fc.__doc__ = f.__qualname__, f.__doc__
    out = _njit(**{**_NB, **options})(fc)
    PLAIN[out] = f
    return out


@_njit(**_NB)
def _pairs(ones, nones, st, sub, nsub, M, a, P, tot):
    """Statistics of a support ``sub[:nsub]``: total ``tot (4,)``, singles ``a (M, 4)``
    and pairs ``P[g, h] (g <= h)`` over the features set in each class (``ones``)."""
    for c in range(4):
        tot[c] = 0.0
    for g in range(M):
        for c in range(4):
            a[g, c] = 0.0
        for h in range(g, M):
            for c in range(4):
                P[g, h, c] = 0.0
    for t in range(nsub):
        u = sub[t]
        s0, s1, s2, s3 = st[u, 0], st[u, 1], st[u, 2], st[u, 3]
        tot[0] += s0
        tot[1] += s1
        tot[2] += s2
        tot[3] += s3
        k = nones[u]
        for x in range(k):
            g = ones[u, x]
            a[g, 0] += s0
            a[g, 1] += s1
            a[g, 2] += s2
            a[g, 3] += s3
            for z in range(x, k):
                h = ones[u, z]
                P[g, h, 0] += s0
                P[g, h, 1] += s1
                P[g, h, 2] += s2
                P[g, h, 3] += s3


@_njit(**_NB)
def _depth1_children(M, a, P, tot, lamn, m1, c1T, c1F):
    """Best trees with at most one split of ``S & x_g`` (``c1T[g]``) and ``S & ~x_g``
    (``c1F[g]``) for every ``g``, from the statistics of ``S`` (:func:`_pairs`)."""
    for g in range(M):
        c1T[g] = _sse(a[g, 0], a[g, 1], a[g, 2]) + lamn
        c1F[g] = _sse(tot[0] - a[g, 0], tot[1] - a[g, 1], tot[2] - a[g, 2]) + lamn
    for g in range(M):
        for h in range(g + 1, M):
            # the four quadrants of (g, h): TT, TF (g set, h not), FT, FF
            tw, ts, tq, tn = P[g, h, 0], P[g, h, 1], P[g, h, 2], P[g, h, 3]
            fw, fs, fq, fn = a[g, 0] - tw, a[g, 1] - ts, a[g, 2] - tq, a[g, 3] - tn
            ew, es, eq, en = a[h, 0] - tw, a[h, 1] - ts, a[h, 2] - tq, a[h, 3] - tn
            zw = tot[0] - a[g, 0] - ew
            zs = tot[1] - a[g, 1] - es
            zq = tot[2] - a[g, 2] - eq
            zn = tot[3] - a[g, 3] - en
            LTT = _sse(tw, ts, tq)
            LTF = _sse(fw, fs, fq)
            LFT = _sse(ew, es, eq)
            LFF = _sse(zw, zs, zq)
            okTT, okTF, okFT, okFF = tn >= m1, fn >= m1, en >= m1, zn >= m1
            if okTT and okTF:  # S & g split on h
                v = LTT + LTF + 2.0 * lamn
                if v < c1T[g]:
                    c1T[g] = v
            if okFT and okFF:  # S & ~g split on h
                v = LFT + LFF + 2.0 * lamn
                if v < c1F[g]:
                    c1F[g] = v
            if okTT and okFT:  # S & h split on g
                v = LTT + LFT + 2.0 * lamn
                if v < c1T[h]:
                    c1T[h] = v
            if okTF and okFF:  # S & ~h split on g
                v = LTF + LFF + 2.0 * lamn
                if v < c1F[h]:
                    c1F[h] = v


@_njit(**_NB)
def pack_rows(X):
    """``np.packbits(X, axis=1)`` of an ``(n, M)`` bool matrix: ``(n, ceil(M / 8))`` uint8,
    feature ``j`` at bit ``7 - j % 8`` (big-endian) of byte ``j // 8`` (~20x faster than
    numpy's for tens of features)."""
    n, M = X.shape
    out = np.zeros((n, (M + 7) // 8), dtype=np.uint8)
    for u in range(n):
        for j in range(M):
            if X[u, j]:
                out[u, j >> 3] |= np.uint8(128 >> (j & 7))
    return out


@_njit(**_NB)
def feature_lists(X):
    """The set features of each row: ``ones[u, :nones[u]]`` are the ``g`` with
    ``X[u, g] != 0``, in increasing order (``ones`` is ``(U, M)`` int64, zero-padded;
    ``nones`` ``(U,)`` int64)."""
    U, M = X.shape
    ones = np.zeros((U, M), dtype=np.int64)
    nones = np.zeros(U, dtype=np.int64)
    for u in range(U):
        k = 0
        for g in range(M):
            if X[u, g]:
                ones[u, k] = g
                k += 1
        nones[u] = k
    return ones, nones


@_njit(**_NB)
def subtree_splits(X, st, levels, lamn, m1, split):
    """Best tree of a support with at most ``levels`` split levels, per root feature.

    Args:
      X: ``(U, M)`` uint8 0/1 rows of the support's classes (the distinct splits).
      st: ``(U, 4)`` float64 ``W, S, Q, N`` per class.
      levels: 1, 2 or 3. lamn: ``lambda * normaliser``. m1: least samples per leaf.
      split: ``(M,)`` float64 out: the cost (loss units) of the best tree whose root
        splits on feature ``f``, ``inf`` where a side has fewer than ``m1`` samples.

    Returns:
      float, the cost of a single leaf (loss units).
    """
    U, M = X.shape
    ones, nones = feature_lists(X)
    a = np.empty((M, 4))
    P = np.empty((M, M, 4))
    tot = np.empty(4)
    c1T = np.empty(M)
    c1F = np.empty(M)
    sub = np.arange(U)
    if levels <= 1:
        for c in range(4):
            tot[c] = 0.0
            for f in range(M):
                a[f, c] = 0.0
        for u in range(U):
            for c in range(4):
                tot[c] += st[u, c]
            for x in range(nones[u]):
                g = ones[u, x]
                for c in range(4):
                    a[g, c] += st[u, c]
        for f in range(M):
            if a[f, 3] >= m1 and tot[3] - a[f, 3] >= m1:
                split[f] = (_sse(a[f, 0], a[f, 1], a[f, 2])
                            + _sse(tot[0] - a[f, 0], tot[1] - a[f, 1], tot[2] - a[f, 2])
                            + 2.0 * lamn)
            else:
                split[f] = np.inf
        return _sse(tot[0], tot[1], tot[2]) + lamn
    _pairs(ones, nones, st, sub, U, M, a, P, tot)
    leaf = _sse(tot[0], tot[1], tot[2]) + lamn
    if levels == 2:
        _depth1_children(M, a, P, tot, lamn, m1, c1T, c1F)
        for f in range(M):
            if a[f, 3] >= m1 and tot[3] - a[f, 3] >= m1:
                split[f] = c1T[f] + c1F[f]
            else:
                split[f] = np.inf
        return leaf
    _depth3_splits(ones, nones, st, U, M, a, P, tot, lamn, m1, split)
    return leaf


@_njit(**_NB)
def _depth3_splits(ones, nones, st, U, M, a, P, tot, lamn, m1, split):
    """``split[r]``: the best tree with three split levels whose root splits on ``r``.

    Every set met below the root is ``S & (+-x_f) & (+-x_g) & (+-x_h)`` for one unordered
    triple ``f < g < h``; its statistics are one inclusion-exclusion of the triple, pair
    and single sums, so each of the ``8 C(M, 3)`` octant losses is computed once (not once
    per order of the three splits). ``c1[i, j, si, sj]`` (``i < j``) is the best tree with
    at most one split of the quadrant ``x_i = si, x_j = sj``: a leaf, or a split on a third
    feature (taken over every triple containing ``i, j``). The depth-2 tree of a root side
    ``x_r = sr`` then splits on ``p`` into two such quadrants.
    """
    c1 = np.empty((M, M, 2, 2))
    oc = np.empty((8, 4))
    L = np.empty(8)
    for i in range(M):
        for j in range(i + 1, M):
            tw, ts, tq = P[i, j, 0], P[i, j, 1], P[i, j, 2]
            c1[i, j, 1, 1] = _sse(tw, ts, tq) + lamn
            c1[i, j, 1, 0] = _sse(a[i, 0] - tw, a[i, 1] - ts, a[i, 2] - tq) + lamn
            c1[i, j, 0, 1] = _sse(a[j, 0] - tw, a[j, 1] - ts, a[j, 2] - tq) + lamn
            c1[i, j, 0, 0] = _sse(tot[0] - a[i, 0] - a[j, 0] + tw,
                                  tot[1] - a[i, 1] - a[j, 1] + ts,
                                  tot[2] - a[i, 2] - a[j, 2] + tq) + lamn
    T = np.empty((M, M, 4))  # T[g, h] for g < h: sums over the classes with f, g, h set
    two = 2.0 * lamn
    pos = np.zeros(U, dtype=np.int64)
    for f in range(M):
        for g in range(f + 1, M):
            for h in range(g + 1, M):
                for c in range(4):
                    T[g, h, c] = 0.0
        for u in range(U):
            # ones[u] is increasing and f visits every feature in order, so the next
            # feature of class u not yet passed is at pos[u]
            k = nones[u]
            x0 = pos[u]
            if x0 >= k or ones[u, x0] != f:
                continue
            x0 += 1
            pos[u] = x0
            s0, s1, s2, s3 = st[u, 0], st[u, 1], st[u, 2], st[u, 3]
            for x in range(x0, k):
                g = ones[u, x]
                for z in range(x + 1, k):
                    h = ones[u, z]
                    T[g, h, 0] += s0
                    T[g, h, 1] += s1
                    T[g, h, 2] += s2
                    T[g, h, 3] += s3
        for g in range(f + 1, M):
            for h in range(g + 1, M):
                # octants o = 4 sf + 2 sg + sh (1: the feature is set)
                for c in range(4):
                    t = T[g, h, c]
                    pfg, pfh, pgh = P[f, g, c], P[f, h, c], P[g, h, c]
                    oc[7, c] = t
                    oc[6, c] = pfg - t
                    oc[5, c] = pfh - t
                    oc[3, c] = pgh - t
                    oc[4, c] = a[f, c] - pfg - pfh + t
                    oc[2, c] = a[g, c] - pfg - pgh + t
                    oc[1, c] = a[h, c] - pfh - pgh + t
                    oc[0, c] = tot[c] - a[f, c] - a[g, c] - a[h, c] + pfg + pfh + pgh - t
                for o in range(8):
                    L[o] = _sse(oc[o, 0], oc[o, 1], oc[o, 2])
                # the best split of each quadrant, without data-dependent branches (a
                # split with a side short of m1 samples is not admissible: inf)
                for sa in range(2):
                    for sb in range(2):
                        # quadrant (f, g) = (sa, sb) split on h
                        o1, o0 = 4 * sa + 2 * sb + 1, 4 * sa + 2 * sb
                        v = L[o1] + L[o0] + two
                        v = v if (oc[o1, 3] >= m1) & (oc[o0, 3] >= m1) else np.inf
                        c1[f, g, sa, sb] = min(c1[f, g, sa, sb], v)
                        # quadrant (f, h) = (sa, sb) split on g
                        o1, o0 = 4 * sa + 2 + sb, 4 * sa + sb
                        v = L[o1] + L[o0] + two
                        v = v if (oc[o1, 3] >= m1) & (oc[o0, 3] >= m1) else np.inf
                        c1[f, h, sa, sb] = min(c1[f, h, sa, sb], v)
                        # quadrant (g, h) = (sa, sb) split on f
                        o1, o0 = 4 + 2 * sa + sb, 2 * sa + sb
                        v = L[o1] + L[o0] + two
                        v = v if (oc[o1, 3] >= m1) & (oc[o0, 3] >= m1) else np.inf
                        c1[g, h, sa, sb] = min(c1[g, h, sa, sb], v)
    for r in range(M):
        if not (a[r, 3] >= m1 and tot[3] - a[r, 3] >= m1):
            split[r] = np.inf
            continue
        cost = 0.0
        for sr in range(2):
            if sr == 1:
                best = _sse(a[r, 0], a[r, 1], a[r, 2]) + lamn
            else:
                best = _sse(tot[0] - a[r, 0], tot[1] - a[r, 1], tot[2] - a[r, 2]) + lamn
            nr = a[r, 3] if sr == 1 else tot[3] - a[r, 3]
            for p in range(M):
                if p == r:
                    continue
                i, j = (r, p) if r < p else (p, r)
                # counts of the quadrants (x_r = sr, x_p = 1) and (x_r = sr, x_p = 0)
                pn = P[i, j, 3]
                n1 = pn if sr == 1 else a[p, 3] - pn
                n0 = nr - n1
                if n1 >= m1 and n0 >= m1:
                    if r < p:
                        v = c1[i, j, sr, 1] + c1[i, j, sr, 0]
                    else:
                        v = c1[i, j, 1, sr] + c1[i, j, 0, sr]
                    if v < best:
                        best = v
            cost += best
        split[r] = cost


@_njit(inline="always", **_NB)
def _cost(A, B, C, j, i, medians):
    """Cost of the sorted items ``j..i``.

    k-means (``medians`` False): ``A, B, C`` are the prefix sums of ``W, S, Q`` and the
    cost is :func:`_sse` of the items' sums. k-medians (``medians`` True): ``A, B`` are
    the prefix sums of the weights ``w`` and of ``w v``, ``C`` the sorted values ``v``,
    and the cost is ``sum w |v - median|`` around the first item ``m`` at which the
    cumulative weight reaches half of the items' weight (the arithmetic of
    :func:`jaxsr.trees.kmeans.kmedians_losses_np`).
    """
    if not medians:
        return _sse(A[i + 1] - A[j], B[i + 1] - B[j], C[i + 1] - C[j])
    half = A[j] + 0.5 * (A[i + 1] - A[j])
    lo, hi = j, i
    while lo < hi:  # the first m in [j, i] with A[m + 1] >= half (i when none)
        mid = (lo + hi) // 2
        if A[mid + 1] >= half:
            hi = mid
        else:
            lo = mid + 1
    vm = C[lo]
    left = vm * (A[lo] - A[j]) - (B[lo] - B[j])
    right = (B[i + 1] - B[lo + 1]) - vm * (A[i + 1] - A[lo + 1])
    v = left + right
    return v if v > 0.0 else 0.0


@_njit(**_NB)
def _dc_row(prev, A, B, C, medians, n, D, opt, stack):
    """``D[i] = min_{0 <= j <= i} prev[j] + cost(j, i)``, leftmost minimiser monotone in
    ``i`` (quadrangle inequality): divide and conquer with an explicit stack."""
    top = 0
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, n - 1, 0, n - 1
    top = 1
    while top > 0:
        top -= 1
        lo, hi, olo, ohi = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        best = np.inf
        bj = olo
        for j in range(olo, min(mid, ohi) + 1):
            v = prev[j] + _cost(A, B, C, j, mid, medians)
            if v < best:
                best = v
                bj = j
        D[mid] = best
        opt[mid] = bj
        stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = lo, mid - 1, olo, bj
        top += 1
        stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = mid + 1, hi, bj, ohi
        top += 1


@_njit(**_NB)
def _cluster_losses(A, B, C, medians, n, max_clusters, stop_gain, use_stop, out):
    """The 1-D clustering DP of :func:`kmeans_losses` and :func:`kmedians_losses` on the
    prefix arrays of :func:`_cost` (``n`` items)."""
    if n == 0:
        out[0] = 0.0
        return 1
    kmax = min(max_clusters, n)
    D = np.empty(n)
    for i in range(n):
        D[i] = _cost(A, B, C, 0, i, medians)
    out[0] = D[n - 1]
    if kmax <= 1:
        return 1
    prev = np.empty(n)
    opt = np.empty(n, dtype=np.int64)
    depth = 2
    while (1 << depth) < n + 2:
        depth += 1
    stack = np.empty((2 * depth + 4, 4), dtype=np.int64)
    k = 1
    while True:
        prev[0] = 0.0
        for i in range(1, n):
            prev[i] = D[i - 1]
        last = np.inf
        for j in range(n):
            v = prev[j] + _cost(A, B, C, j, n - 1, medians)
            if v < last:
                last = v
        out[k] = last
        k += 1
        if k >= kmax:
            break
        if use_stop and out[k - 2] - out[k - 1] <= stop_gain:
            break
        _dc_row(prev, A, B, C, medians, n, D, opt, stack)
    return k


@_njit(**_NB)
def kmeans_losses(W, S, Q, max_clusters, stop_gain, use_stop, out):
    """Constrained k-means losses ``D_k[n - 1]``, ``k = 1, 2, ...`` (items sorted by mean).

    Args:
      W, S, Q: ``(n,)`` float64 class statistics, sorted by mean ``S / W``.
      max_clusters: most clusters. stop_gain, use_stop: stop after the first ``k`` whose
        gain ``D_{k-1} - D_k`` is at most ``stop_gain`` (Theorem 3.7) when ``use_stop``.
      out: ``(>= min(max_clusters, n),)`` float64, the losses written here.

    Returns:
      int, how many losses were written (at least 1).
    """
    n = W.shape[0]
    PW = np.zeros(n + 1)
    PS = np.zeros(n + 1)
    PQ = np.zeros(n + 1)
    for i in range(n):
        PW[i + 1] = PW[i] + W[i]
        PS[i + 1] = PS[i] + S[i]
        PQ[i + 1] = PQ[i] + Q[i]
    return _cluster_losses(PW, PS, PQ, False, n, max_clusters, stop_gain, use_stop, out)


@_njit(**_NB)
def kmedians_losses(v, w, max_clusters, stop_gain, use_stop, out):
    """Weighted 1-D k-medians losses, ``k = 1, 2, ...`` (the DP of :func:`kmeans_losses`).

    Args:
      v: ``(n,)`` float64 values, sorted ascending. w: ``(n,)`` float64 weights >= 0.
      max_clusters, stop_gain, use_stop, out: as in :func:`kmeans_losses`.

    Returns:
      int, how many losses were written (at least 1).
    """
    n = v.shape[0]
    PW = np.zeros(n + 1)
    PV = np.zeros(n + 1)
    for i in range(n):
        PW[i + 1] = PW[i] + w[i]
        PV[i + 1] = PV[i] + w[i] * v[i]
    return _cluster_losses(PW, PV, v, True, n, max_clusters, stop_gain, use_stop, out)


@_njit(**_NB)
def support_kmeans_losses(sel, W, mean, E, max_clusters, stop_gain, use_stop, out):
    """:func:`kmeans_losses` of a support's classes ``sel`` (sorted by mean), re-centred.

    The class statistics are re-centred on the support's own weighted mean ``mu``
    (:func:`jaxsr.trees.losses.recentre`: ``S = W (m - mu)``, ``Q = E + W (m - mu)^2``), so
    every loss rounds relative to the support's spread. ``out[0]`` is the loss of one
    cluster, i.e. of a leaf on the support.

    Args:
      sel: ``(n,)`` int64 class indices, in increasing class mean.
      W, mean, E: ``(U,)`` float64 weight, mean target and internal loss of every class.
      max_clusters, stop_gain, use_stop, out: as in :func:`kmeans_losses`.

    Returns:
      int, how many losses were written.
    """
    n = sel.shape[0]
    Wt = 0.0
    St = 0.0
    for t in range(n):
        Wt += W[sel[t]]
        St += W[sel[t]] * mean[sel[t]]
    mu = _centre(Wt, St)
    w = np.empty(n)
    s = np.empty(n)
    q = np.empty(n)
    for t in range(n):
        u = sel[t]
        w[t] = W[u]
        s[t], q[t] = _recentred(W[u], mean[u], E[u], mu)
    return kmeans_losses(w, s, q, max_clusters, stop_gain, use_stop, out)


@_njit(**_NB)
def support_totals(mask, E, N):
    """``(sum E, sum N, classes)`` of a ``(U,)`` bool support: its equivalence loss, its
    samples and its number of classes (float, float, int)."""
    Et = 0.0
    Nt = 0.0
    C = 0
    for u in range(mask.shape[0]):
        if mask[u]:
            Et += E[u]
            Nt += N[u]
            C += 1
    return Et, Nt, C


@_njit(**_NB)
def support_in_order(mask, korder, sel):
    """``sel[:C]`` the classes of a support in the order ``korder`` (by mean)."""
    t = 0
    for i in range(korder.shape[0]):
        u = korder[i]
        if mask[u]:
            sel[t] = u
            t += 1


@_njit(**_NB)
def support_leaf_loss(mask, W, mean, E):
    """Squared loss of one leaf on the classes of a ``(U,)`` bool support ``mask``,
    around the support's own weighted mean (the same number as :func:`_sse` of the
    re-centred sums): ``sum E + sum W (m - mu)^2``."""
    Wt = 0.0
    St = 0.0
    for u in range(mask.shape[0]):
        if mask[u]:
            Wt += W[u]
            St += W[u] * mean[u]
    mu = _centre(Wt, St)
    loss = 0.0
    for u in range(mask.shape[0]):
        if mask[u]:
            loss += _recentred(W[u], mean[u], E[u], mu)[1]
    return loss


@_njit(**_NB)
def absolute_leaf_loss(mask, ys, ws, cls_s):
    """Absolute loss of one leaf on a support: ``sum w |y - median|`` over its samples,
    the median the first sample (in ``y`` order) at which the cumulative weight reaches
    half of the total (the arithmetic of :func:`jaxsr.trees.losses.absolute_losses`).

    Args:
      mask: ``(U,)`` bool support over the classes. ys, ws: ``(n,)`` float64 internal
        targets sorted ascending and their weights. cls_s: ``(n,)`` int64 their classes.

    Returns:
      float, internal units (0 for an empty support).
    """
    n = ys.shape[0]
    W = 0.0
    for i in range(n):
        if mask[cls_s[i]]:
            W += ws[i]
    half = 0.5 * W
    c = 0.0
    med = 0.0
    for i in range(n):
        if mask[cls_s[i]]:
            c += ws[i]
            if c >= half:
                med = ys[i]
                break
    loss = 0.0
    for i in range(n):
        if mask[cls_s[i]]:
            loss += ws[i] * abs(ys[i] - med)
    return loss


@_njit(**_NB)
def absolute_split_losses(mask, ys, ws, cls_s, X, F, nk, lossT, lossF):
    """Absolute losses of the two children of the splits ``F[:nk]`` of a support.

    The "true" child of split ``q`` holds the support's classes with feature ``F[q]`` set,
    the "false" child the others; each child's loss is :func:`absolute_leaf_loss` of its
    samples (one pass over the support's samples per quantity, all splits at once).

    Args:
      mask, ys, ws, cls_s: as in :func:`absolute_leaf_loss`. X: ``(U, M)`` uint8 class
        rows. F: ``(>= nk,)`` int64 features. nk: number of splits.
      lossT, lossF: ``(>= nk,)`` float64 out, the children's losses (internal units).
    """
    n = ys.shape[0]
    WT = np.zeros(nk)
    WF = np.zeros(nk)
    for i in range(n):
        u = cls_s[i]
        if not mask[u]:
            continue
        w = ws[i]
        for q in range(nk):
            if X[u, F[q]] != 0:
                WT[q] += w
            else:
                WF[q] += w
    medT = np.zeros(nk)
    medF = np.zeros(nk)
    doneT = np.zeros(nk, dtype=np.bool_)
    doneF = np.zeros(nk, dtype=np.bool_)
    cT = np.zeros(nk)
    cF = np.zeros(nk)
    left = 2 * nk
    for i in range(n):
        u = cls_s[i]
        if not mask[u]:
            continue
        w = ws[i]
        for q in range(nk):
            if X[u, F[q]] != 0:
                if not doneT[q]:
                    cT[q] += w
                    if cT[q] >= 0.5 * WT[q]:
                        medT[q] = ys[i]
                        doneT[q] = True
                        left -= 1
            elif not doneF[q]:
                cF[q] += w
                if cF[q] >= 0.5 * WF[q]:
                    medF[q] = ys[i]
                    doneF[q] = True
                    left -= 1
        if left == 0:
            break
    for q in range(nk):
        lossT[q] = 0.0
        lossF[q] = 0.0
    for i in range(n):
        u = cls_s[i]
        if not mask[u]:
            continue
        w = ws[i]
        y = ys[i]
        for q in range(nk):
            if X[u, F[q]] != 0:
                lossT[q] += w * abs(y - medT[q])
            else:
                lossF[q] += w * abs(y - medF[q])


@_njit(**_NB)
def distinct_targets(mask, ys, ws, cls_s, vals, wts):
    """The distinct targets of a support's samples and their summed weights.

    Args:
      mask, ys, ws, cls_s: as in :func:`absolute_leaf_loss`. vals, wts: ``(>= n,)``
        float64 out: ``vals[:k]`` increasing, ``wts[:k]`` the weight of each.

    Returns:
      int ``k``.
    """
    k = 0
    for i in range(ys.shape[0]):
        if mask[cls_s[i]]:
            if k == 0 or ys[i] > vals[k - 1]:
                vals[k] = ys[i]
                wts[k] = ws[i]
                k += 1
            else:
                wts[k - 1] += ws[i]
    return k


@_njit(**_NB)
def absolute_support_bounds(mask, ys, ws, cls_s, E, N, d, lam, norm, m1, look, equiv,
                            use_kmeans, max_values):
    """Leaf loss and lower bounds of a new subproblem, absolute loss (the search's
    leaf and split bounds; :func:`support_bounds` for squared loss).

    The k-medians bound (Theorem 3.5 relaxed: 1-D weighted k-medians of the support's
    distinct targets, summed weights; valid, weaker than the constrained problem) for
    subproblems with at least 3 levels and at most ``max_values`` distinct targets.

    Args:
      mask, ys, ws, cls_s: as in :func:`absolute_leaf_loss`. E, N: ``(U,)`` float64 the
        classes' absolute losses and sample counts. d, lam, norm, m1, look, equiv,
        use_kmeans: as in :func:`support_bounds`. max_values: the most distinct targets
        of a k-medians bound.

    Returns:
      ``(leaf, b, deep, n_kmedians)``: ``leaf`` the loss of one leaf (internal units),
      ``b`` a bound of every tree that splits, ``deep`` of every tree with at least 2
      leaves (objective units), ``n_kmedians`` 1 when the k-medians bound was computed.
    """
    Et, Nt, C = support_totals(mask, E, N)
    leaf = absolute_leaf_loss(mask, ys, ws, cls_s)
    eq = Et if equiv else 0.0  # the equivalent points loss (Theorem 3.3)
    b = _objective(eq, norm, lam, look)
    cmax = min(C, int(np.floor(Nt / m1)))
    if d - 1 < 40:
        cmax = min(cmax, 1 << (d - 1))
    deep = np.inf if cmax < 2 else _objective(eq, norm, lam, 2)
    if not use_kmeans or d <= 2:
        return leaf, b, deep, 0
    if cmax < look:
        return leaf, np.inf, np.inf, 0
    vals = np.empty(ys.shape[0])
    wts = np.empty(ys.shape[0])
    k = distinct_targets(mask, ys, ws, cls_s, vals, wts)
    if k == 0 or k > max_values:
        return leaf, b, deep, 0
    out = np.empty(max(1, min(cmax, k)))
    kk = kmedians_losses(vals[:k], wts[:k], cmax, lam * norm, True, out)
    return leaf, max(b, kmeans_bound(out, kk, lam, norm, look)), deep, 1


@_njit(**_NB)
def support_splits(mask, X, keep):
    """The features that split a support in distinct ways (``subtrees.distinct_splits``).

    Each column, restricted to the support's classes, is packed into bits relative to the
    support's first class (so equal and complementary columns pack alike; a constant
    column packs to zero) and hashed; a column is kept when no earlier kept column packs
    the same. ``O(M n)`` for ``n`` classes (the column-by-column comparison was
    ``O(M k n)``).

    Args:
      mask: ``(U,)`` bool support over the classes. X: ``(U, M)`` uint8 rows of all
        classes. keep: ``(M,)`` int64 out.

    Returns:
      int ``k``: ``keep[:k]`` are, in increasing order, the lowest feature of each
      distinct split that is not constant on the support (equal or complementary columns
      make the same split).
    """
    U, M = X.shape
    idx = np.flatnonzero(mask)
    n = idx.shape[0]
    if n == 0:
        return 0
    nwd = (n + 63) // 64
    cw = np.zeros((M, nwd), dtype=np.uint64)
    r0 = idx[0]
    for t in range(1, n):
        u = idx[t]
        wd = t >> 6
        bit = np.uint64(1) << np.uint64(t & 63)
        for j in range(M):
            if X[u, j] != X[r0, j]:
                cw[j, wd] |= bit
    T = 1
    while T < 2 * M:
        T *= 2
    table = np.full(T, -1, dtype=np.int64)
    msk = np.uint64(T - 1)
    k = 0
    for j in range(M):
        h = np.uint64(0x9E3779B97F4A7C15)
        nz = False
        for q in range(nwd):
            v = cw[j, q]
            if v != 0:
                nz = True
            h ^= v
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
        if not nz:
            continue
        s = np.int64(h & msk)
        new = True
        while table[s] >= 0:
            c = table[s]
            same = True
            for q in range(nwd):
                if cw[c, q] != cw[j, q]:
                    same = False
                    break
            if same:
                new = False
                break
            s = (s + 1) & np.int64(msk)
        if new:
            table[s] = j
            keep[k] = j
            k += 1
    return k


@_njit(**_NB)
def support_subtree(mask, X, W, mean, E, N, levels, lamn, m1):
    """Exact best tree with at most ``levels`` split levels on a support (squared loss).

    :func:`subtree_splits` on the support's classes, its distinct splits
    (:func:`support_splits`) and its statistics re-centred on its own mean, then the
    tie-breaking of :func:`jaxsr.trees.subtrees.best_subtree_np` (near-ties, ``1e-12``
    relative, go to the leaf, then to the lowest feature).

    Args:
      mask: ``(U,)`` bool support. X: ``(U, M)`` uint8 rows of all classes. W, mean, E,
        N: ``(U,)`` float64 class weight, mean target, internal loss, sample count.
      levels: 1, 2 or 3. lamn: ``lambda * normaliser``. m1: least samples per leaf.

    Returns:
      ``(cost, feature)``: loss units (divide by the normaliser), feature -1 for a leaf.
    """
    U, M = X.shape
    keep = np.empty(M, dtype=np.int64)
    k = support_splits(mask, X, keep)
    idx = np.flatnonzero(mask)
    n = idx.shape[0]
    Wt = 0.0
    St = 0.0
    for t in range(n):
        Wt += W[idx[t]]
        St += W[idx[t]] * mean[idx[t]]
    mu = _centre(Wt, St)
    Xs = np.empty((n, k), dtype=np.uint8)
    st = np.empty((n, 4))
    for t in range(n):
        u = idx[t]
        for q in range(k):
            Xs[t, q] = X[u, keep[q]]
        st[t, 0] = W[u]
        st[t, 1], st[t, 2] = _recentred(W[u], mean[u], E[u], mu)
        st[t, 3] = N[u]
    split = np.empty(k)
    leaf = subtree_splits(Xs, st, levels, lamn, m1, split)
    if k == 0:
        return leaf, -1
    best = np.inf
    for q in range(k):
        if split[q] < best:
            best = split[q]
    if best < leaf * (1.0 - 1e-12):
        for q in range(k):
            if split[q] <= best + 1e-12 * abs(best):
                return split[q], keep[q]
    return leaf, -1


kmeans_bound = compile_plain(bounds.kmeans_bound_of)


@_njit(**_NB)
def support_bounds(mask, korder, W, mean, E, N, d, lam, norm, m1, look, kl, equiv,
                   use_kmeans):
    """Leaf loss and lower bounds of a new subproblem (squared loss; the search's
    leaf and split bounds in one call).

    Args:
      mask: ``(U,)`` bool support. korder: ``(U,)`` int64 classes by increasing mean.
      W, mean, E, N: ``(U,)`` float64 class weight, mean, internal loss, sample count.
      d: levels of the subproblem. lam, norm: lambda and the normaliser. m1: least
        samples per leaf. look: leaves of a tree that splits (2, or 1 without the
        lookahead bound). kl: the shallow kernel's levels. equiv, use_kmeans: bounds used.

    Returns:
      ``(leaf, b, deep)``: the loss of one leaf (loss units, around the support's own
      mean); ``b`` bounds every tree that splits and ``deep`` every tree with at least
      ``kl + 2`` leaves (objective units: the equivalent points bound, Theorem 3.3, and
      the k-Means bound, Theorem 3.5, with the early stop of Theorem 3.7).
    """
    Et, Nt, C = support_totals(mask, E, N)
    leaf = support_leaf_loss(mask, W, mean, E)
    eq = Et if equiv else 0.0  # the equivalent points loss (Theorem 3.3)
    b = _objective(eq, norm, lam, look)
    cmax = min(C, int(np.floor(Nt / m1)))
    if d - 1 < 40:
        cmax = min(cmax, 1 << (d - 1))
    kdeep = kl + 2
    deep = np.inf if cmax < kdeep else _objective(eq, norm, lam, kdeep)
    if not use_kmeans or d <= kl:
        return leaf, b, deep
    if cmax < look:
        return leaf, np.inf, np.inf
    sel = np.empty(C, dtype=np.int64)
    support_in_order(mask, korder, sel)
    out = np.empty(max(1, min(cmax, C)))
    k = support_kmeans_losses(sel, W, mean, E, cmax, lam * norm, True, out)
    if kl > 0 and cmax >= kdeep:
        deep = max(deep, kmeans_bound(out, k, lam, norm, kdeep))
    return leaf, max(b, kmeans_bound(out, k, lam, norm, look)), deep
