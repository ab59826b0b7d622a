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
  :func:`jaxsr.trees.losses.absolute_loss`, :func:`jaxsr.trees.losses.absolute_split_losses`
  (both children of every split in one pass; the compiled kernels' floats);
* ``support_splits``: :func:`jaxsr.trees.subtrees.distinct_splits`;
* ``split_leaves``: :func:`jaxsr.trees.losses.objective`,
  :func:`jaxsr.trees.bounds.useful_levels` over all splits and both sides at once;
* ``memo_bounds``: the memo lookups of all children at once (their hashes, first probes
  and chains as array operations; a probe past an occupied slot one by one);
* ``_hash``, ``_probe``: the same arithmetic on Python integers and lists (a memo lookup
  of one support, ~10x faster than on numpy scalars);
* ``split_sums``, ``admissible_splits``, ``order_splits``,
  ``support_leaf_loss``, ``support_totals``, ``support_in_order``, ``distinct_targets``,
  ``feature_lists``, ``_child``, ``_count``, ``_argsort_stable``: matrix products, sums
  and sorts.

The bookkeeping (memo hash table, frontier, bounds, best-first root, limits) is the
compiled engine's own code, so both run the same search over the same arrays and a search
can change engine between two steps (:class:`~jaxsr.trees.engine.Engine`):
when the background compilation is done, the search goes on compiled, with nothing
recomputed. Measured on diabetes, 4 quantile thresholds, CPU seconds on one pinned core
of a shared 2-core machine: absolute loss, lambda 0.01, depth budget 5: 11.7 s (a plain
Python search on the same numpy kernels: 12.1 s; compiled: 2.2 s); squared loss, lambda
0.002, depth budget 6: 9.4 s (9.3 s).
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
from .losses import (
    STAT_E,
    absolute_loss,
    absolute_split_losses,
    centre,
    objective,
    recentred,
    stats_loss,
)
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


_UNIT = (None, False)  # the weights last seen and whether they are all 1


def _unit_weights(ws):
    """Whether every weight of the fit is 1 (looked at once per fit: ``ws`` is the
    problem's constant array)."""
    global _UNIT
    u = _UNIT
    if u[0] is not ws:
        u = _UNIT = (ws, bool(ws.size == 0 or ws.min() == 1.0 == ws.max()))
    return u[1]


def _leaf_absolute(mask, ys, ws, cls_s):
    sm = mask[cls_s]
    return absolute_loss(ys[sm], ws[sm], _unit_weights(ws))


def _split_absolute(mask, ys, ws, cls_s, X, F, nk, lossT, lossF):
    sm = mask[cls_s]
    member = X[cls_s[sm]][:, F[:nk]] != 0
    lossT[:nk], lossF[:nk] = absolute_split_losses(ys[sm], ws[sm], member, _unit_weights(ws))


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
    st = np.empty((idx.size, 6))  # W, S, Q, E, N, 1 per class
    st[:, 0] = W
    st[:, 1], st[:, 2] = recentred(W, m, E, centre(float(W.sum()), float(W @ m)))
    st[:, 3] = E
    st[:, 4] = P.cls[3][idx]
    st[:, 5] = 1.0
    np.matmul(P.X[idx].T, st, out=a)
    st.sum(axis=0, out=tot)


def _leaf_loss(mask, W, mean, E):
    idx = np.flatnonzero(mask)
    Wi = W[idx]
    return float(recentred(Wi, mean[idx], E[idx],
                           centre(float(Wi.sum()), float(Wi @ mean[idx])))[1].sum())


def _child(P, fr, t, i, side):
    f = fr.feat[t, i]
    if side == 1:
        np.bitwise_and(fr.words[t], P.colw[f], out=fr.cwords)
        np.logical_and(fr.mask[t], P.X[:, f] != 0, out=fr.cmask)
    else:
        np.bitwise_and(fr.words[t], ~P.colw[f], out=fr.cwords)
        np.logical_and(fr.mask[t], P.X[:, f] == 0, out=fr.cmask)


def _split_leaves(P, fr, L, nk, d):
    lam, norm, m1, look = P.lam, P.norm, P.m1, P.look
    equiv = bool(P.equiv)
    st = fr.st[L, :, :nk]  # (2, nk, 6): the true children, then the false ones
    if P.l1:  # the absolute losses are in leafT, leafF already
        leaf = objective(np.stack((fr.leafT[L, :nk], fr.leafF[L, :nk])), norm, lam)
    else:
        leaf = objective(stats_loss(st), norm, lam)
    dd = useful_levels(d - 1, st, leaf, lam, norm, m1, equiv)  # both sides at once
    cheap = objective(st[..., STAT_E] if equiv else 0.0, norm, lam, look)
    lb = np.where(dd > 1, np.minimum(leaf, cheap), leaf)
    fr.leafT[L, :nk], fr.leafF[L, :nk] = leaf
    fr.dT[L, :nk], fr.dF[L, :nk] = dd
    fr.lbT[L, :nk], fr.lbF[L, :nk] = lb


def _admissible(fr, L, tot, keep, k, m1):
    a, comp = fr.st[L, 0], fr.st[L, 1]
    F = keep[:k]
    n = a[F, 4]
    F = F[(n >= m1) & (tot[4] - n >= m1)]
    nk = F.size
    rows = a[F]
    a[:nk] = rows
    np.subtract(tot, rows, out=comp[:nk])
    fr.feat[L, :nk] = F
    return nk


_MIX = np.uint64(0xBF58476D1CE4E5B9)
_SEED = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(31)


def _hashes(words):
    """``engine._hash`` of every row of ``(k, nw)`` uint64 words at once."""
    h = np.full(words.shape[0], _SEED, dtype=np.uint64)
    t = np.empty_like(h)
    for j in range(words.shape[1]):
        np.bitwise_xor(h, words[:, j], out=h)
        np.multiply(h, _MIX, out=h)
        np.right_shift(h, _SHIFT, out=t)
        np.bitwise_xor(h, t, out=h)
    return h


_M64 = (1 << 64) - 1


def _hash(w):
    """``engine._hash`` of one support on Python integers (exact modulo 2^64, and
    ~10x faster than the same loop on numpy scalars)."""
    h = 0x9E3779B97F4A7C15
    for x in w.tolist():
        h = ((h ^ x) * 0xBF58476D1CE4E5B9) & _M64
        h ^= h >> 31
    return np.uint64(h)


def _probe(memo, w, h):
    """``engine._probe``: the slot of support ``w`` (hash ``h``) or the empty slot where
    it goes, the words compared as Python lists."""
    table = memo.table
    msk = table.shape[0] - 1
    s = int(h) & msk
    wl = None
    while True:
        e = table[s]
        if e < 0:
            return s
        if wl is None:
            wl = w.tolist()
        if memo.words[e].tolist() == wl:
            return s
        s = (s + 1) & msk


def _find(memo, words, lev):
    """``engine.lookup`` of every row of ``words`` (``(k, nw)`` supports) with levels
    ``lev`` (``(k,)``) at once: the entry ids, -1 where the memo has none. The first probe
    of each support is one gather: an empty slot is a miss, a slot holding the support
    starts its chain, which is walked for all of them together; only a slot holding
    another support (linear probing, rare: the table is at most a quarter full) is
    probed one by one (:func:`_probe`)."""
    h = _hashes(words)
    table = memo.table
    slot = (h & np.uint64(table.shape[0] - 1)).astype(np.int64)
    e = table[slot]
    out = np.full(words.shape[0], -1, dtype=np.int64)
    used = np.flatnonzero(e >= 0)
    same = (memo.words[e[used]] == words[used]).all(axis=1)
    for r in used[~same]:
        slot[r] = _probe(memo, words[r], h[r])
        e[r] = table[slot[r]]
    todo = np.concatenate((used[same], used[~same][e[used[~same]] >= 0]))
    cur = e[todo]
    while todo.size:  # the chains of the supports found: the entry with their levels
        hit = memo.lev[cur] == lev[todo]
        out[todo[hit]] = cur[hit]
        nxt = memo.nxt[cur]
        go = ~hit & (nxt >= 0)
        todo, cur = todo[go], nxt[go]
    return out


def _memo_bounds(P, memo, fr, L, nk):
    F = fr.feat[L, :nk]
    dT, dF = fr.dT[L, :nk], fr.dF[L, :nk]
    iT, iF = np.flatnonzero(dT > 1), np.flatnonzero(dF > 1)
    nT = iT.size
    if nT + iF.size == 0:
        return
    words = np.empty((nT + iF.size, P.colw.shape[1]), dtype=np.uint64)
    np.bitwise_and(fr.words[L], P.colw[F[iT]], out=words[:nT])
    np.bitwise_and(fr.words[L], ~P.colw[F[iF]], out=words[nT:])
    ce = _find(memo, words, np.concatenate((dT[iT], dF[iF])))
    for i, c, lb in ((iT, ce[:nT], fr.lbT[L]), (iF, ce[nT:], fr.lbF[L])):
        got = c >= 0
        i = i[got]
        lb[i] = np.maximum(lb[i], memo.lb[c[got]])


def _order(fr, L, nk, ub):
    s = fr.lbsum[L, :nk]
    np.add(fr.lbT[L, :nk], fr.lbF[L, :nk], out=s)
    with np.errstate(over="ignore", invalid="ignore"):
        key = np.floor(s / max(1e-10 * ub, 1e-300))
    fr.order[L, :nk] = np.argsort(key, kind="stable")


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
    E._hash: _hash,
    E._probe: _probe,
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
        root_entry=_quiet(table[E.root_entry]), records=_records, chunk=_CHUNK)


@functools.cache
def _record_class(dtype):
    """A class of plain attributes named after the fields of ``dtype``, whose ``[0]`` is
    itself: the interpreted engine reads and writes ``ctr[0].steps`` at Python attribute
    speed (a numpy record costs ~1 us an access, 25% of an absolute-loss search)."""
    def item(self, i):
        return self

    return type("Record", (), {"__slots__": dtype.names, "__getitem__": item})


def _records(dtype, source=None):
    """:func:`jaxsr.trees.engine.records` for the interpreted engine (Python numbers)."""
    rec = _record_class(dtype)()
    for name in dtype.names:
        kind = float if dtype[name].kind == "f" else int
        setattr(rec, name, kind(0 if source is None else getattr(source[0], name)))
    return rec


def _quiet(f):
    """``f`` with numpy's overflow warnings off: the memo's hash multiplies uint64 numbers
    modulo 2^64 (numba wraps them silently, numpy scalars warn)."""
    @functools.wraps(f)
    def g(*args):
        with np.errstate(over="ignore"):
            return f(*args)

    return g
