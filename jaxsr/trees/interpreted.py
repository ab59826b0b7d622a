"""The compiled engine run as Python, for the fits that cannot wait for numba.

A fresh install has no compiled kernels in numba's cache, and compiling them takes 40-50
CPU seconds (:mod:`jaxsr.trees.warmup`). Meanwhile the search runs *the same engine*
(:mod:`jaxsr.trees.engine`, :mod:`jaxsr.trees.compiled`): the Python source of
every compiled function, executed by the interpreter, with the data-parallel kernels bound
to their numpy versions (one array operation where the compiled code loops over classes,
features or samples):

* ``support_subtree``: :func:`jaxsr.trees.subtrees.best_subtree_np`;
* ``support_kmeans_losses``, ``kmedians_losses``:
  :func:`jaxsr.trees.kmeans.kmeans_losses_np`, :func:`jaxsr.trees.kmeans.kmedians_losses_np`;
* ``absolute_leaf_loss``, ``absolute_split_losses``:
  :func:`jaxsr.trees.losses.absolute_losses`;
* ``support_splits``: :func:`jaxsr.trees.subtrees.distinct_splits`;
* ``split_leaves``: :func:`jaxsr.trees.losses.objective`,
  :func:`jaxsr.trees.bounds.useful_levels` over all splits at once;
* ``split_sums``, ``admissible_splits``, ``memo_bounds``, ``order_splits``,
  ``support_leaf_loss``, ``support_totals``, ``support_in_order``, ``distinct_targets``,
  ``feature_lists``, ``_child``, ``_count``, ``_argsort_stable``: matrix products, sums,
  sorts, and the memo's hash of all children at once.

The bookkeeping (memo hash table, frontier, bounds, best-first root, limits) is the
compiled engine's own code, so both run the same search over the same arrays and a search
can change engine between two steps (:class:`~jaxsr.trees.engine.Engine`):
when the background compilation is done, the search goes on compiled, with nothing
recomputed. Measured on diabetes, 4 quantile thresholds, one shared core: squared loss,
lambda 0.002, depth budget 6: 14.9 s (a plain Python search on the same numpy kernels:
15.3 s; compiled: 2.8 s); absolute loss, lambda 0.01, depth budget 5: 28.5 s (19.5 s;
compiled: 2.5 s).
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba.core.dispatcher import Dispatcher

from . import compiled
from . import engine as E
from .bounds import useful_levels
from .kmeans import kmeans_losses_np, kmedians_losses_np
from .losses import STAT_E, absolute_losses, centre, objective, recentred, stats_loss
from .subtrees import best_subtree_np, distinct_splits

__all__ = ["engine"]

_CHUNK = 64  # subproblem visits per step (a step returns for progress and the switch)


def _subtree(mask, X, W, mean, E, N, levels, lamn, m1):
    idx = np.flatnonzero(mask)
    Wi = W[idx]
    S, Q = recentred(Wi, mean[idx], E[idx], centre(float(Wi.sum()), float(Wi @ mean[idx])))
    c, f = best_subtree_np(X[idx].astype(np.float64), np.stack([Wi, S, Q, N[idx]], axis=1),
                           int(levels), float(lamn), 1.0, float(m1))
    return c, np.int64(f)


def _kmeans(sel, W, mean, E, max_clusters, stop_gain, use_stop, out):
    Wi = W[sel]
    S, Q = recentred(Wi, mean[sel], E[sel], centre(float(Wi.sum()), float(Wi @ mean[sel])))
    r = kmeans_losses_np(Wi, S, Q, int(max_clusters), float(stop_gain) if use_stop else None)
    out[:r.size] = r
    return r.size


def _kmedians(v, w, max_clusters, stop_gain, use_stop, out):
    r = kmedians_losses_np(v, w, int(max_clusters), float(stop_gain) if use_stop else None)
    out[:r.size] = r
    return r.size


def _leaf_absolute(mask, ys, ws, cls_s):
    sm = mask[cls_s]
    return float(absolute_losses(ys[sm], ws[sm][:, None])[0][0])


def _split_absolute(mask, ys, ws, cls_s, X, F, nk, lossT, lossF):
    sm = mask[cls_s]
    Xn = X[cls_s[sm]][:, F[:nk]] != 0
    w = ws[sm][:, None]
    lossT[:nk] = absolute_losses(ys[sm], w * Xn)[0]
    lossF[:nk] = absolute_losses(ys[sm], w * ~Xn)[0]


def _distinct_targets(mask, ys, ws, cls_s, vals, wts):
    sm = mask[cls_s]
    v, w = ys[sm], ws[sm]
    if v.size == 0:
        return 0
    starts = np.concatenate([[0], np.flatnonzero(np.diff(v) > 0) + 1])
    k = starts.size
    vals[:k] = v[starts]
    wts[:k] = np.add.reduceat(w, starts)
    return k


def _splits(mask, X, keep):
    idx = np.flatnonzero(mask)
    f = distinct_splits(X[idx] != 0)
    keep[:f.size] = f
    return f.size


def _split_sums(P, mask, a, tot):
    idx = np.flatnonzero(mask)
    W, m, E = P.cls[0][idx], P.cls[1][idx], P.cls[2][idx]
    S, Q = recentred(W, m, E, centre(float(W.sum()), float(W @ m)))
    st = np.stack([W, S, Q, E, P.cls[3][idx], np.ones(idx.size)], axis=1)
    a[:] = P.X[idx].T @ st
    tot[:] = st.sum(0)


def _leaf_loss(mask, W, mean, E):
    idx = np.flatnonzero(mask)
    Wi = W[idx]
    return float(recentred(Wi, mean[idx], E[idx],
                           centre(float(Wi.sum()), float(Wi @ mean[idx])))[1].sum())


def _child(P, fr, t, i, side):
    f = fr.ki[t, E.K_F, i]
    if side == 1:
        np.bitwise_and(fr.words[t], P.colw[f], out=fr.cwords)
        np.logical_and(fr.mask[t], P.X[:, f] != 0, out=fr.cmask)
    else:
        np.bitwise_and(fr.words[t], ~P.colw[f], out=fr.cwords)
        np.logical_and(fr.mask[t], P.X[:, f] == 0, out=fr.cmask)


def _split_leaves(P, fr, L, nk, d):
    lam, norm, m1, look = P.prm[0], P.prm[1], P.prm[2], P.prm[3]
    equiv = bool(P.iprm[1])
    a, comp = fr.st[L, 0, :nk], fr.st[L, 1, :nk]
    K = E
    if P.iprm[4]:
        lt = objective(fr.kf[L, K.K_LEAFT, :nk], norm, lam)
        lf = objective(fr.kf[L, K.K_LEAFF, :nk], norm, lam)
    else:
        lt = objective(stats_loss(a), norm, lam)
        lf = objective(stats_loss(comp), norm, lam)
    dt = useful_levels(d - 1, a, lt, lam, norm, m1, equiv)
    df = useful_levels(d - 1, comp, lf, lam, norm, m1, equiv)
    cheapT = objective(a[:, STAT_E] if equiv else 0.0, norm, lam, look)
    cheapF = objective(comp[:, STAT_E] if equiv else 0.0, norm, lam, look)
    fr.kf[L, K.K_LEAFT, :nk], fr.kf[L, K.K_LEAFF, :nk] = lt, lf
    fr.ki[L, K.K_DT, :nk], fr.ki[L, K.K_DF, :nk] = dt, df
    fr.kf[L, K.K_LBT, :nk] = np.where(dt > 1, np.minimum(lt, cheapT), lt)
    fr.kf[L, K.K_LBF, :nk] = np.where(df > 1, np.minimum(lf, cheapF), lf)


def _admissible(fr, L, tot, keep, k, m1):
    a, comp = fr.st[L, 0], fr.st[L, 1]
    F = keep[:k]
    F = F[(a[F, 4] >= m1) & (tot[4] - a[F, 4] >= m1)]
    nk = F.size
    rows = a[F]
    a[:nk] = rows
    comp[:nk] = tot[None, :] - rows
    fr.ki[L, E.K_F, :nk] = F
    return nk


_MIX = np.uint64(0xBF58476D1CE4E5B9)


def _memo_bounds(P, memo, fr, L, nk):
    K = E
    F = fr.ki[L, K.K_F, :nk]
    w = fr.words[L][None, :]
    for words, dcol, lbcol in ((w & P.colw[F], K.K_DT, K.K_LBT),
                               (w & ~P.colw[F], K.K_DF, K.K_LBF)):
        dd = fr.ki[L, dcol, :nk]
        idx = np.flatnonzero(dd > 1)
        h = np.full(idx.size, 0x9E3779B97F4A7C15, dtype=np.uint64)
        for j in range(words.shape[1]):  # engine._hash of every child at once
            h ^= words[idx, j]
            h *= _MIX
            h ^= h >> np.uint64(31)
        for t, i in enumerate(idx):
            ce = K._lookup.py_func(memo, K._probe.py_func(memo, words[i], h[t]), dd[i])
            if ce >= 0:
                fr.kf[L, lbcol, i] = max(fr.kf[L, lbcol, i], memo.f[ce, K.M_LB])


def _order(fr, L, nk, ub):
    K = E
    s = fr.kf[L, K.K_LBT, :nk] + fr.kf[L, K.K_LBF, :nk]
    fr.kf[L, K.K_LBSUM, :nk] = s
    with np.errstate(over="ignore", invalid="ignore"):
        key = np.floor(s / max(1e-10 * ub, 1e-300))
    fr.ki[L, K.K_ORDER, :nk] = np.argsort(key, kind="stable")


def _argsort(key, out, tmp):
    out[:key.shape[0]] = np.argsort(key, kind="stable")


def _totals(mask, E, N):
    return float(E[mask].sum()), float(N[mask].sum()), int(np.count_nonzero(mask))


def _in_order(mask, korder, sel):
    s = korder[mask[korder]]
    sel[:s.size] = s


def _feature_lists(X):
    nz = X != 0
    nones = nz.sum(1).astype(np.int64)
    order = np.argsort(~nz, axis=1, kind="stable")  # set features first, increasing
    ones = np.where(np.arange(X.shape[1])[None, :] < nones[:, None], order, 0)
    return ones.astype(np.int64), nones


_TWINS = {
    compiled.support_subtree: _subtree,
    compiled.support_kmeans_losses: _kmeans,
    compiled.kmedians_losses: _kmedians,
    compiled.absolute_leaf_loss: _leaf_absolute,
    compiled.absolute_split_losses: _split_absolute,
    compiled.distinct_targets: _distinct_targets,
    compiled.support_splits: _splits,
    compiled.support_leaf_loss: _leaf_loss,
    E.split_sums: _split_sums,
    E._child: _child,
    E._argsort_stable: _argsort,
    E.split_leaves: _split_leaves,
    E.admissible_splits: _admissible,
    E.memo_bounds: _memo_bounds,
    E.order_splits: _order,
    E._count: np.count_nonzero,
    compiled.support_totals: _totals,
    compiled.support_in_order: _in_order,
    compiled.feature_lists: _feature_lists,
}


@functools.cache
def engine() -> E.Engine:
    """The engine of :mod:`jaxsr.trees.engine` as Python functions (built once
    per process; nothing is compiled): every numba function of the two modules becomes its
    Python source bound to Python globals, and the kernels of the table above their numpy
    versions."""
    modules = (compiled, E)
    dispatchers = {v for m in modules for v in vars(m).values() if isinstance(v, Dispatcher)}
    glob = {m.__name__: dict(vars(m)) for m in modules}
    table = {}
    for d in dispatchers:
        f = compiled.PLAIN.get(d, d.py_func)
        g = glob.get(f.__module__)
        table[d] = f if g is None else types.FunctionType(
            f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    table.update(_TWINS)
    for g in glob.values():
        for name, v in list(g.items()):
            if isinstance(v, Dispatcher):
                g[name] = table[v]
    # the time limit: a clock read at every check (a Python step is slow next to the read)
    glob[E.__name__]["_TICKS"] = 1
    return E.Engine(
        run_chunk=_quiet(table[E.run_chunk]),
        insert=_quiet(table[E.insert]),
        lookup=_quiet(table[E.lookup]),
        rebuild_table=_quiet(table[E.rebuild_table]),
        feature_lists=table[compiled.feature_lists],
        finish_expansion=_quiet(table[E.finish_expansion]),
        root_entry=_quiet(table[E.root_entry]), chunk=_CHUNK)


def _quiet(f):
    """``f`` with numpy's overflow warnings off: the memo's hash multiplies uint64 numbers
    modulo 2^64 (numba wraps them silently, numpy scalars warn)."""
    @functools.wraps(f)
    def g(*args):
        with np.errstate(over="ignore"):
            return f(*args)

    return g
