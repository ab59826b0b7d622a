"""The search: one branch and bound over subproblems (OSRT section 4), squared and absolute
loss, compiled by numba (or run as Python on the numpy kernels, :mod:`jaxsr.trees.interpreted`).

A subproblem is a support over the equivalence classes and the levels a subtree on it may
use (:mod:`jaxsr.trees.search` describes the bounds and reformulations); the search is
depth first in the style of GOSDT / MurTree, with the state in named arrays:

* the memo is an open-addressing hash table over the bit-packed supports (``uint64``
  words), each slot the head of a chain of the entries of that support with different
  levels (so the lower bounds of a support with more levels are found at once); entries
  are rows of arrays (:class:`Memo`, the fields of :class:`~jaxsr.trees.solver.Entry`);
* the frontier stack is preallocated per level (:class:`Frames`: per frame the children
  of every split, their bounds, the order in which the splits are tried and the split
  being worked on); a child's support is its parent's words and'ed with the column of its
  split, not a stored mask;
* a new subproblem's leaf and bounds come from :func:`~jaxsr.trees.compiled.support_bounds`
  (squared loss) or :func:`~jaxsr.trees.compiled.absolute_support_bounds`, the children of
  its splits from :func:`split_sums`, :func:`split_leaves` (and
  :func:`~jaxsr.trees.compiled.absolute_split_losses`), the exact shallow subtrees from
  :func:`~jaxsr.trees.compiled.support_subtree`.

The Python layer (:func:`init`, :func:`step`, :func:`terminate`) builds the arrays, runs
the loop for up to ``chunk`` subproblem visits per :func:`step`, grows the arrays when
the loop asks for room, hands the children of an expansion to the device when the loop
asks for it (``backend="jax"``), and reads the status (:class:`~jaxsr.trees.solver.Status`).
The time limit is checked inside the loop (a clock read before each split).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numba
import numpy as np

from . import bounds, solver, subtrees
from .compiled import (
    _NB,
    _centre,
    _njit,
    _objective,
    _recentred,
    _sse,
    absolute_split_losses,
    absolute_support_bounds,
    compile_plain,
    feature_lists,
    support_bounds,
    support_leaf_loss,
    support_splits,
    support_subtree,
)
from .kmeans import KMEDIANS_MAX_VALUES
from .solver import Entry, Status

__all__ = ["Problem", "Memo", "Frames", "CompiledState", "Engine", "COMPILED", "init",
           "step", "terminate", "CompiledMemo"]

NEXT, TRUE, FALSE = solver.NEXT, solver.TRUE, solver.FALSE
RTOL = solver.RTOL
_UNTRIED = -2
GREEDY = solver.GREEDY
# ctr (int64 counters)
C_N, C_STEPS, C_KERNEL, C_KMEANS, C_STATUS, C_STOPPED, C_TOP, C_GROW, C_STARTED, \
    C_MAXSTEPS, C_ROOT, C_TRIES, C_TICK, C_DEVICE = range(14)
# fst (float64 state)
F_ROOTLB, F_RATE, F_DEADLINE, F_T0, F_BF, F_BFTRIES, F_NOW = range(7)
_TICKS = 16  # the limit check reads the clock (object mode, ~2-5 us) every 16th time
_SLOW_KERNEL = 0.01  # kernel calls predicted to take this fraction of the time left are timed
# memo columns (Memo.i, Memo.f)
M_LEV, M_FEAT, M_SOLVED, M_KLEV, M_NXT = range(5)
M_LB, M_UB, M_DEEP = range(3)
# frame columns (Frames.si, Frames.sf, Frames.ki, Frames.kf)
S_EID, S_NK, S_POS, S_PHASE, S_CUR, S_COMPLETED = range(6)
S_CAP, S_BOUND, S_TUB = range(3)
K_F, K_DT, K_DF, K_ORDER = range(4)
K_LEAFT, K_LEAFF, K_LBT, K_LBF, K_LBSUM = range(5)
_MEMO_CAP = 1024  # first memo capacity (entries; doubled when the loop asks)
_MAX_FRAMES = 64  # first frontier depth (doubled when the loop asks)
_STATUS = {1: Status.OPTIMAL, 2: Status.TIME_LIMIT, 3: Status.NODE_LIMIT}


class Problem(NamedTuple):
    """Constant data of one fit (the search's class statistics and parameters).

    X: ``(U, M)`` uint8 class rows. ones: ``(U, M)`` int64, the features set per class
    (first ``nones[u]``). colw: ``(M, nw)`` uint64 packed feature columns. cls: ``(4, U)``
    float64 class weight, mean target, internal loss, sample count. korder: ``(U,)``
    int64 classes by mean. prm: ``[lambda, normaliser, min_samples_leaf, lookahead
    leaves, most distinct targets of a k-medians bound]``. iprm: ``[exact_levels,
    equivalent, kmeans, hierarchical, absolute loss, device]`` (device: an expansion with
    at least 3 levels returns to Python for the device to evaluate its children).
    ys, ws: ``(n,)`` float64 the internal targets sorted ascending and their weights,
    cls_s: ``(n,)`` int64 their classes (absolute loss; empty for squared loss).
    """

    X: np.ndarray
    ones: np.ndarray
    nones: np.ndarray
    colw: np.ndarray
    cls: np.ndarray
    korder: np.ndarray
    prm: np.ndarray
    iprm: np.ndarray
    ys: np.ndarray
    ws: np.ndarray
    cls_s: np.ndarray


class Memo(NamedTuple):
    """Memo entries as rows (``cap`` of them; the first ``ctr[C_N]`` in use) and the hash
    table (``-1``: empty; else the newest entry of one support, whose entries with other
    levels follow through ``M_NXT``).

    words: ``(cap, nw)`` uint64 packed supports. i: ``(cap, 5)`` int64 levels, feature,
    solved, klev, next entry of the same support. f: ``(cap, 3)`` float64 lb, ub, deep
    (the fields of :class:`~jaxsr.trees.solver.Entry`). table: ``(T,)`` int64, ``T`` a
    power of two at least 4 ``cap``.
    """

    words: np.ndarray
    i: np.ndarray
    f: np.ndarray
    table: np.ndarray


class Frames(NamedTuple):
    """The frontier stack, one row per level (``D`` rows; the top is ``ctr[C_TOP]``): the
    fields of a frontier frame.

    words, mask: ``(D, nw)`` / ``(D, U)`` the support. si: ``(D, 6)`` int64 memo entry,
    number of splits ``k``, pos, phase, cur, completed. sf: ``(D, 3)`` cap, bound, t_ub.
    ki: ``(D, 4, M)`` int64 F, dT, dF, order. kf: ``(D, 5, M)`` leafT, leafF, lbT, lbF,
    lbsum. st: ``(D, 2, M, 6)`` the children's statistics (true, false). aux: ``(2, M)``
    int64 the root's best-first tries and a scratch. cmask, cwords: the child being
    visited (scratch).
    """

    words: np.ndarray
    mask: np.ndarray
    si: np.ndarray
    sf: np.ndarray
    ki: np.ndarray
    kf: np.ndarray
    st: np.ndarray
    aux: np.ndarray
    cmask: np.ndarray
    cwords: np.ndarray


class Engine(NamedTuple):
    """The functions of the engine that the Python layer calls: compiled (:data:`COMPILED`)
    or their Python source with numpy kernels (:func:`jaxsr.trees.interpreted.engine`)."""

    run_chunk: object
    insert: object
    lookup: object
    rebuild_table: object
    feature_lists: object
    finish_expansion: object
    root_entry: object
    chunk: int  # subproblem visits per :func:`step`


class CompiledState(NamedTuple):
    """The solver state at the Python boundary (arrays are updated in place by
    :func:`step`). ``root_key``, ``root_lb``, ``status``, ``steps``, ``t0`` as in
    :class:`~jaxsr.trees.search.SearchResult`; ``engine`` the :class:`Engine` that runs it
    (the arrays are the same for both, so a search can change engine between steps);
    ``device``: None, or ``device(state, L)`` evaluates the children of the expansion of
    level ``L`` on the device, writes their memo entries through ``state.pending`` and
    returns whether it evaluated all of them."""

    engine: Engine
    problem: Problem
    memo: Memo
    frames: Frames
    ctr: np.ndarray
    fst: np.ndarray
    root_key: tuple
    root_lb: float
    status: Status | None
    steps: int
    t0: float
    device: object = None
    pending: list | None = None


# ----------------------------------------------------------------------------- helpers
@_njit(cache=_NB["cache"])  # (object mode: no nogil)
def _clock():
    with numba.objmode(t="float64"):
        t = time.perf_counter()
    return t


@_njit(**_NB)
def _reaches(a, b):
    return a >= (b * (1.0 - RTOL) if b > 0 else b * (1.0 + RTOL))


@_njit(**_NB)
def _improves(a, b):
    return a < b * (1.0 - RTOL) if b > 0 else a < b


@_njit(**_NB)
def _nl(x):
    """Integer ``x`` typed as int64, not as a literal (one compiled version per callee)."""
    return x + np.int64(0)


@_njit(**_NB)
def _hash(w):
    h = np.uint64(0x9E3779B97F4A7C15)
    for j in range(w.shape[0]):
        h ^= w[j]
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@_njit(**_NB)
def _find_slot(memo, w):
    """The table slot of support ``w``: its chain, or the empty slot where it goes."""
    return _probe(memo, w, _hash(w))


@_njit(**_NB)
def _probe(memo, w, h):
    """:func:`_find_slot` of support ``w`` whose hash is ``h``."""
    table = memo.table
    msk = np.uint64(table.shape[0] - 1)
    s = np.int64(h & msk)
    nw = w.shape[0]
    while True:
        e = table[s]
        if e < 0:
            return s
        same = True
        for j in range(nw):
            if memo.words[e, j] != w[j]:
                same = False
                break
        if same:
            return s
        s = (s + 1) & np.int64(msk)


@_njit(**_NB)
def _lookup(memo, slot, lev):
    e = memo.table[slot]
    while e >= 0:
        if memo.i[e, M_LEV] == lev:
            return e
        e = memo.i[e, M_NXT]
    return -1


@_njit(**_NB)
def _insert(memo, ctr, slot, w, lev, lb, ub, feat, solved, klev, deep):
    i = ctr[C_N]
    ctr[C_N] = i + 1
    for j in range(w.shape[0]):
        memo.words[i, j] = w[j]
    memo.i[i, M_LEV] = lev
    memo.f[i, M_LB] = lb
    memo.f[i, M_UB] = ub
    memo.i[i, M_FEAT] = feat
    memo.i[i, M_SOLVED] = solved
    memo.i[i, M_KLEV] = klev
    memo.f[i, M_DEEP] = deep
    memo.i[i, M_NXT] = memo.table[slot]
    memo.table[slot] = i
    return i


@_njit(**_NB)
def rebuild_table(memo, n):
    """Fill an empty ``memo.table`` with the chains of the first ``n`` entries (in the
    order of their creation, as :func:`_insert` chains them)."""
    memo.table[:] = -1
    for i in range(n):
        s = _find_slot(memo, memo.words[i])
        memo.i[i, M_NXT] = memo.table[s]
        memo.table[s] = i


@_njit(**_NB)
def lookup(memo, w, lev):
    """Entry id of support ``w`` with ``lev`` levels, or -1."""
    return _lookup(memo, _find_slot(memo, w), lev)


@_njit(**_NB)
def insert(memo, ctr, w, lev, lb, ub, feat, solved, klev, deep):
    """Add (or overwrite) the entry of ``(w, lev)``; returns its id."""
    s = _find_slot(memo, w)
    e = _lookup(memo, s, lev)
    if e >= 0:
        memo.f[e, M_LB] = lb
        memo.f[e, M_UB] = ub
        memo.f[e, M_DEEP] = deep
        memo.i[e, M_FEAT] = feat
        memo.i[e, M_SOLVED] = solved
        memo.i[e, M_KLEV] = klev
        return e
    return _insert(memo, ctr, s, w, lev, lb, ub, feat, solved, klev, deep)


_useful_levels = compile_plain(bounds.useful_levels_of, inline="always")


@_njit(**_NB)
def _deff(P, d, C, Nn, E, leaf):
    """The levels that can matter to one set (:func:`jaxsr.trees.bounds.useful_levels`)."""
    return np.int64(_useful_levels(float(d), C, Nn, E, leaf, P.prm[0], P.prm[1], P.prm[2],
                                   P.iprm[1] != 0))


@_njit(**_NB)
def _cheap(P, E):
    """Equivalent points bound of the trees that split
    (:func:`jaxsr.trees.problem.cheap_split_bound`)."""
    return _objective(E if P.iprm[1] else 0.0, P.prm[1], P.prm[0], P.prm[3])


@_njit(**_NB)
def _eq(P, E):
    """Equivalent points loss of a support (objective units; 0 without that bound)."""
    return E / P.prm[1] if P.iprm[1] else 0.0


@_njit(**_NB)
def _leaf_budget(P, E, cap):
    """The most leaves of a tree that can cost less than ``cap`` (``lambda > 0``).

    A tree with ``L`` leaves costs at least ``eq + lambda L`` (its loss is at least the
    equivalent points loss ``eq`` of the support, Theorem 3.3), so only trees with
    ``L <= lmax`` leaves, the largest ``L`` with ``eq + lambda L`` short of the cap (by
    :data:`RTOL`), can beat it; a tree with more than ``lmax - 1`` split levels has more
    than ``lmax`` leaves. So the best tree with ``lmax - 1`` levels is the optimum when it
    costs less than the cap, and else every tree costs at least
    ``min(its cost, eq + lambda (lmax + 1))``, which reaches the cap. Returns 0 when not
    even a leaf can beat the cap; at most ``2^30``."""
    lam = P.prm[0]
    eq = _eq(P, E)
    x = (cap - eq) / lam
    if not x < 2.0 ** 30:
        return np.int64(1 << 30)
    L = np.int64(max(np.floor(x), 0.0))
    while L >= 1 and _reaches(eq + lam * L, cap):
        L -= 1
    while not _reaches(eq + lam * (L + 1), cap):
        L += 1
    return L


_kernel_work = compile_plain(subtrees.kernel_work, inline="always")


@_njit(**_NB)
def _count(mask):
    """Number of classes of a ``(U,)`` bool support."""
    n = 0
    for u in range(mask.shape[0]):
        if mask[u]:
            n += 1
    return n


@_njit(**_NB)
def _affordable(P, fst, mask, levels):
    """A kernel call on ``mask`` is predicted to end before the deadline (as of the last
    clock read; always without a time limit)."""
    if not fst[F_DEADLINE] < np.inf:
        return True
    work = _kernel_work(P.X.shape[1], _count(mask), levels)
    return fst[F_RATE] * work < fst[F_DEADLINE] - fst[F_NOW]


@_njit(**_NB)
def _kernel(P, mask, levels):
    c, f = support_subtree(mask, P.X, P.cls[0], P.cls[1], P.cls[2], P.cls[3], levels,
                           P.prm[0] * P.prm[1], P.prm[2])
    return c / P.prm[1], f


@_njit(**_NB)
def _child(P, fr, t, i, side):
    """The child's support of split ``i`` of level ``t`` into ``fr.cmask``/``cwords``."""
    f = fr.ki[t, K_F, i]
    nw = fr.cwords.shape[0]
    if side == 1:
        for j in range(nw):
            fr.cwords[j] = fr.words[t, j] & P.colw[f, j]
        for u in range(fr.cmask.shape[0]):
            fr.cmask[u] = fr.mask[t, u] and P.X[u, f] != 0
    else:
        for j in range(nw):
            fr.cwords[j] = fr.words[t, j] & ~P.colw[f, j]
        for u in range(fr.cmask.shape[0]):
            fr.cmask[u] = fr.mask[t, u] and P.X[u, f] == 0


@_njit(**_NB)
def _entry(P, memo, ctr, slot, w, mask, d):
    """A new subproblem's memo entry: its leaf and bounds; solved when a bound reaches the
    leaf. The same support with more levels has an optimum no larger (any tree with ``d``
    levels also has fewer than ``d'``), so its lower bound holds here."""
    lam, norm = P.prm[0], P.prm[1]
    kl = P.iprm[0]
    if P.iprm[4]:
        loss, sb, deep, nkm = absolute_support_bounds(
            mask, P.ys, P.ws, P.cls_s, P.cls[2], P.cls[3], d, lam, norm, P.prm[2], P.prm[3],
            P.iprm[1] != 0, P.iprm[2] != 0, P.prm[4])
        ctr[C_KMEANS] += nkm
    else:
        loss, sb, deep = support_bounds(mask, P.korder, P.cls[0], P.cls[1], P.cls[2],
                                        P.cls[3], d, lam, norm, P.prm[2], P.prm[3], kl,
                                        P.iprm[1] != 0, P.iprm[2] != 0)
        if P.iprm[2] and d > max(kl, 1):
            ctr[C_KMEANS] += 1
    leaf = _objective(loss, norm, lam)
    if d <= 1 or _reaches(sb, leaf):
        return _insert(memo, ctr, slot, w, d, leaf, leaf, _nl(-1), _nl(1), _nl(-1),
                       np.inf)
    klev = _nl(_UNTRIED) if (kl > 0 and d > kl + 1) else _nl(-1)
    lb = min(leaf, sb)
    # the same support with more levels: its lower bound holds here
    e2 = memo.table[slot]
    while e2 >= 0:
        if memo.i[e2, M_LEV] > d and memo.f[e2, M_LB] > lb:
            lb = min(memo.f[e2, M_LB], leaf)
        e2 = memo.i[e2, M_NXT]
    if _reaches(lb, leaf):
        return _insert(memo, ctr, slot, w, d, leaf, leaf, _nl(-1), _nl(1), klev,
                       max(deep, sb))
    return _insert(memo, ctr, slot, w, d, lb, leaf, _nl(-1), _nl(0), klev,
                   max(deep, sb))


@_njit(**_NB)
def root_entry(P, memo, ctr, w, mask, d, incumbent):
    """Insert the root's entry (:func:`_entry`: its leaf and bounds), its best tree the
    incumbent (``feat = GREEDY``) when that is better than the leaf: objective
    ``incumbent`` (inf: none). Returns the entry's id."""
    e = _entry(P, memo, ctr, _find_slot(memo, w), w, mask, d)
    if memo.i[e, M_SOLVED] == 0 and _improves(incumbent, memo.f[e, M_UB]):
        memo.f[e, M_UB] = incumbent
        memo.i[e, M_FEAT] = GREEDY
        memo.f[e, M_LB] = min(memo.f[e, M_LB], incumbent)
        if _reaches(memo.f[e, M_LB], incumbent):
            memo.f[e, M_LB] = incumbent
            memo.i[e, M_SOLVED] = 1
    return e


@_njit(**_NB)
def split_sums(P, mask, a, tot):
    """The six statistics of a support, ``tot`` ``(6,)``, and of its part with feature
    ``g`` set, ``a[g]`` ``(M, 6)``: weight, ``S`` and ``Q`` re-centred on the support's own
    mean (:func:`jaxsr.trees.losses.recentred`), equivalence loss, samples, classes."""
    U, M = P.X.shape
    Wt = 0.0
    St = 0.0
    for u in range(U):
        if mask[u]:
            Wt += P.cls[0][u]
            St += P.cls[0][u] * P.cls[1][u]
    mu = _centre(Wt, St)
    for g in range(M):
        for c in range(6):
            a[g, c] = 0.0
    for c in range(6):
        tot[c] = 0.0
    for u in range(U):
        if not mask[u]:
            continue
        w = P.cls[0][u]
        s, q = _recentred(w, P.cls[1][u], P.cls[2][u], mu)
        eu = P.cls[2][u]
        nu = P.cls[3][u]
        tot[0] += w
        tot[1] += s
        tot[2] += q
        tot[3] += eu
        tot[4] += nu
        tot[5] += 1.0
        for x in range(P.nones[u]):
            g = P.ones[u, x]
            a[g, 0] += w
            a[g, 1] += s
            a[g, 2] += q
            a[g, 3] += eu
            a[g, 4] += nu
            a[g, 5] += 1.0


@_njit(**_NB)
def _expansion(P, memo, ctr, fst, fr, L, e, cap):
    """Expand the subproblem of entry ``e`` into level ``L`` (its support is ``fr.cmask``):
    the children of every admissible distinct split, their leaf costs, levels and bounds,
    and the order of the splits (by bound sum; :func:`finish_expansion`).

    Returns True when level ``L`` now holds an expansion, False when the subproblem has
    no admissible split (its leaf is then optimal)."""
    fr.words[L, :] = fr.cwords
    mask = fr.mask[L]
    mask[:] = fr.cmask
    a = fr.st[L, 0]
    tot = np.zeros(6)
    split_sums(P, mask, a, tot)
    keep = fr.aux[1]
    k = support_splits(mask, P.X, keep)
    nk = admissible_splits(fr, L, tot, keep, k, P.prm[2])
    if nk == 0:
        memo.f[e, M_LB] = memo.f[e, M_UB]
        memo.i[e, M_FEAT] = -1
        memo.i[e, M_SOLVED] = 1
        memo.i[e, M_KLEV] = -1
        memo.f[e, M_DEEP] = np.inf
        return False
    if P.iprm[4]:  # the children's losses, written into the leaf rows first
        absolute_split_losses(mask, P.ys, P.ws, P.cls_s, P.X, fr.ki[L, K_F], nk,
                              fr.kf[L, K_LEAFT], fr.kf[L, K_LEAFF])
    split_leaves(P, fr, L, nk, memo.i[e, M_LEV])
    fr.si[L, S_NK] = nk
    fr.si[L, S_EID] = e
    fr.sf[L, S_CAP] = cap
    fr.si[L, S_POS] = 0
    fr.si[L, S_PHASE] = NEXT
    fr.sf[L, S_BOUND] = np.inf
    fr.sf[L, S_TUB] = np.inf
    fr.si[L, S_COMPLETED] = 1
    fr.si[L, S_CUR] = -1
    if L == 0:
        for i in range(nk):
            fr.aux[0, i] = 0
    if P.iprm[5] and memo.i[e, M_LEV] >= 3:
        # the children's bounds or exact subtrees on the device: the loop returns to
        # Python (C_DEVICE), which calls finish_expansion once they are in the memo
        ctr[C_DEVICE] = 1
        return True
    finish_expansion(P, memo, ctr, fst, fr, L, True)
    return True


@_njit(**_NB)
def finish_expansion(P, memo, ctr, fst, fr, L, root_bounds):
    """The end of an expansion of level ``L``: with ``root_bounds`` at the root, the memo
    entries (bounds, k-Means included) of every child at once (anytime: the root's lower
    bound is the least bound sum over all its splits from the start); then the children's
    lower bounds from the memo and the order of the splits."""
    nk = fr.si[L, S_NK]
    e = fr.si[L, S_EID]
    deadline = fst[F_DEADLINE]
    if L == 0 and root_bounds:
        for i in range(nk):
            if deadline < np.inf and _clock() > deadline:
                break
            for side in (1, 0):
                dd = fr.ki[L, K_DT, i] if side == 1 else fr.ki[L, K_DF, i]
                if dd <= 1:
                    continue
                _child(P, fr, L, i, side)
                s = _find_slot(memo, fr.cwords)
                if _lookup(memo, s, dd) < 0:
                    _entry(P, memo, ctr, s, fr.cwords, fr.cmask, dd)
    memo_bounds(P, memo, fr, L, nk)
    order_splits(fr, L, nk, memo.f[e, M_UB])


@_njit(**_NB)
def admissible_splits(fr, L, tot, keep, k, m1):
    """Keep, of the splits ``keep[:k]`` of level ``L``, those whose children both hold at
    least ``m1`` samples: their features into ``ki[L, K_F]`` and their children's
    statistics into the first rows of ``st[L, 0]`` (from the per-feature sums there) and
    ``st[L, 1]`` (``tot`` minus them). Returns their number."""
    a = fr.st[L, 0]
    comp = fr.st[L, 1]
    nk = 0
    for q in range(k):
        f = keep[q]
        if a[f, 4] >= m1 and tot[4] - a[f, 4] >= m1:
            fr.ki[L, K_F, nk] = f
            for c in range(6):
                a[nk, c] = a[f, c]
                comp[nk, c] = tot[c] - a[f, c]
            nk += 1
    return nk


@_njit(**_NB)
def memo_bounds(P, memo, fr, L, nk):
    """Raise the children's lower bounds of the ``nk`` splits of level ``L`` to their memo
    entries' (children with more than one level that the memo holds)."""
    nw = fr.cwords.shape[0]
    for i in range(nk):
        for side in (1, 0):
            dd = fr.ki[L, K_DT, i] if side == 1 else fr.ki[L, K_DF, i]
            if dd <= 1:
                continue
            f = fr.ki[L, K_F, i]
            for j in range(nw):
                if side == 1:
                    fr.cwords[j] = fr.words[L, j] & P.colw[f, j]
                else:
                    fr.cwords[j] = fr.words[L, j] & ~P.colw[f, j]
            ce = _lookup(memo, _find_slot(memo, fr.cwords), dd)
            if ce >= 0:
                if side == 1:
                    fr.kf[L, K_LBT, i] = max(fr.kf[L, K_LBT, i], memo.f[ce, M_LB])
                else:
                    fr.kf[L, K_LBF, i] = max(fr.kf[L, K_LBF, i], memo.f[ce, M_LB])


@_njit(**_NB)
def order_splits(fr, L, nk, ub):
    """The bound sums of the ``nk`` splits of level ``L`` and the order in which they are
    tried: by bound sum, sums equal up to rounding (``1e-10`` of the leaf ``ub``) in feature
    order, so near-ties do not depend on the rounding."""
    key = np.empty(nk)
    qq = max(1e-10 * ub, 1e-300)
    for i in range(nk):
        fr.kf[L, K_LBSUM, i] = fr.kf[L, K_LBT, i] + fr.kf[L, K_LBF, i]
        key[i] = np.floor(fr.kf[L, K_LBSUM, i] / qq)
    _argsort_stable(key, fr.ki[L, K_ORDER], fr.aux[1])


@_njit(**_NB)
def split_leaves(P, fr, L, nk, d):
    """For the ``nk`` splits of the subproblem of level ``L`` (``d`` levels), from their
    children's statistics (absolute loss: the children's losses already in the leaf rows):
    the children's leaf costs, the levels that can matter to them (:func:`_deff`) and
    their cheap lower bounds (the leaf, or at most the equivalent points bound of the trees
    that split)."""
    lam, norm = P.prm[0], P.prm[1]
    a = fr.st[L, 0]
    comp = fr.st[L, 1]
    for i in range(nk):
        if P.iprm[4]:
            lt = _objective(fr.kf[L, K_LEAFT, i], norm, lam)
            lf = _objective(fr.kf[L, K_LEAFF, i], norm, lam)
        else:
            lt = _objective(max(_sse(a[i, 0], a[i, 1], a[i, 2]), a[i, 3]), norm, lam)
            lf = _objective(max(_sse(comp[i, 0], comp[i, 1], comp[i, 2]), comp[i, 3]), norm,
                            lam)
        fr.kf[L, K_LEAFT, i] = lt
        fr.kf[L, K_LEAFF, i] = lf
        dt = _deff(P, d - 1, a[i, 5], a[i, 4], a[i, 3], lt)
        df = _deff(P, d - 1, comp[i, 5], comp[i, 4], comp[i, 3], lf)
        fr.ki[L, K_DT, i] = dt
        fr.ki[L, K_DF, i] = df
        fr.kf[L, K_LBT, i] = min(lt, _cheap(P, a[i, 3])) if dt > 1 else lt
        fr.kf[L, K_LBF, i] = min(lf, _cheap(P, comp[i, 3])) if df > 1 else lf


@_njit(**_NB)
def _argsort_stable(key, out, tmp):
    """``out[:n] = argsort(key, kind="stable")`` (bottom-up merge sort; ``tmp``: scratch)."""
    n = key.shape[0]
    for i in range(n):
        out[i] = i
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if key[out[j]] < key[out[i]]:
                    tmp[k] = out[j]
                    j += 1
                else:
                    tmp[k] = out[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = out[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = out[j]
                j += 1
                k += 1
        for i in range(n):
            out[i] = tmp[i]
        width *= 2


@_njit(**_NB)
def _visit(P, memo, ctr, fst, fr, L, d, leaf, E, cap, stopped):
    """Visit the child in ``fr.cmask``/``fr.cwords`` with ``d``
    levels. Returns ``(entry id, pushed)``: pushed means level ``L`` holds its expansion."""
    kl = P.iprm[0]
    slot = _find_slot(memo, fr.cwords)
    e = _lookup(memo, slot, d)
    if e < 0 and stopped:
        # unwinding after a limit: the leaf and the cheap bound, no k-means
        e = _insert(memo, ctr, slot, fr.cwords, d, min(leaf, _cheap(P, E)), leaf, _nl(-1),
                    _nl(0), _nl(-1), np.inf)
        return e, False
    if e < 0:
        e = _entry(P, memo, ctr, slot, fr.cwords, fr.cmask, d)
    if memo.i[e, M_SOLVED] != 0 or _reaches(memo.f[e, M_LB], cap) or stopped:
        return e, False
    if kl > 0 and cap < np.inf and P.prm[0] > 0:
        # only trees with at most lmax leaves, so at most lmax - 1 split levels, can beat
        # the cap (_leaf_budget): when that is fewer levels than the subproblem has and
        # the kernel covers them, the kernel decides at once
        lmax = _leaf_budget(P, E, cap)
        lev = lmax - 1
        if lev < d - 1 and lev <= kl and (lev < 1 or _affordable(P, fst, fr.cmask, lev)):
            if lev >= 1:
                c, f = _kernel(P, fr.cmask, lev)
                ctr[C_KERNEL] += 1
            else:
                c = _objective(support_leaf_loss(fr.cmask, P.cls[0], P.cls[1], P.cls[2]),
                               P.prm[1], P.prm[0])
                f = _nl(-1)
            if not _reaches(c, cap):  # the optimum: every deeper tree reaches the cap
                memo.f[e, M_LB] = c
                memo.f[e, M_UB] = c
                memo.f[e, M_DEEP] = np.inf
                memo.i[e, M_FEAT] = f
                memo.i[e, M_SOLVED] = 1
                memo.i[e, M_KLEV] = lev if lev >= 1 else -1  # rebuilt with lev levels
                return e, False
            lbk = min(c, _eq(P, E) + P.prm[0] * (lmax + 1))  # reaches the cap
            memo.f[e, M_LB] = max(memo.f[e, M_LB], min(lbk, memo.f[e, M_UB]))
            return e, False
    if kl > 0 and d <= kl + 1:
        c, f = _kernel(P, fr.cmask, d - 1)
        ctr[C_KERNEL] += 1
        memo.f[e, M_LB] = c
        memo.f[e, M_UB] = c
        memo.f[e, M_DEEP] = np.inf
        memo.i[e, M_FEAT] = f
        memo.i[e, M_SOLVED] = 1
        memo.i[e, M_KLEV] = -1
        return e, False
    if (memo.i[e, M_KLEV] == _UNTRIED and d > kl + 1
            and not _reaches(memo.f[e, M_LB], memo.f[e, M_DEEP])):
        n = _count(fr.cmask)
        M = P.X.shape[1]
        deadline = fst[F_DEADLINE]
        t_k = 0.0
        work = _kernel_work(M, n, kl)
        # a call predicted to take more than 1% of the time left (as of the last clock
        # read) is timed, and skipped when it would not fit
        timed = deadline < np.inf and fst[F_RATE] * work > _SLOW_KERNEL * (deadline
                                                                          - fst[F_NOW])
        if timed:
            t_k = _clock()
            if fst[F_RATE] * work >= deadline - t_k:
                memo.i[e, M_KLEV] = -1
                return e, _expansion(P, memo, ctr, fst, fr, L, e, cap)
        c, f = _kernel(P, fr.cmask, kl)
        if timed:
            fst[F_RATE] = max(fst[F_RATE], (_clock() - t_k) / work)
        ctr[C_KERNEL] += 1
        memo.i[e, M_KLEV] = -1
        if c < memo.f[e, M_UB]:
            memo.f[e, M_UB] = c
            memo.i[e, M_FEAT] = f
            memo.i[e, M_KLEV] = kl
        memo.f[e, M_LB] = max(memo.f[e, M_LB], min(c, memo.f[e, M_DEEP]))
        if _reaches(memo.f[e, M_LB], memo.f[e, M_UB]):
            memo.f[e, M_LB] = memo.f[e, M_UB]
            memo.i[e, M_SOLVED] = 1
        if memo.i[e, M_SOLVED] != 0 or _reaches(memo.f[e, M_LB], cap):
            return e, False
    return e, _expansion(P, memo, ctr, fst, fr, L, e, cap)


@_njit(**_NB)
def _solve_child(P, memo, ctr, fst, fr, t, i, side, cap, stopped):
    """Solve the child on ``side`` (1: true, 0: false) of split ``i`` of level ``t``
    against ``cap``: a leaf when it has one level, else a visit (:func:`_visit`).
    Returns ``(pushed, lb, ub, solved)``: pushed means level ``t + 1`` now holds its
    expansion (its result comes when that frame finishes); else its bounds now."""
    dcol, lcol = (K_DT, K_LEAFT) if side == 1 else (K_DF, K_LEAFF)
    if fr.ki[t, dcol, i] <= 1:
        leaf = fr.kf[t, lcol, i]
        return False, leaf, leaf, True
    if not stopped:
        ctr[C_STEPS] += 1
    _child(P, fr, t, i, side)
    ce, pushed = _visit(P, memo, ctr, fst, fr, t + 1, fr.ki[t, dcol, i], fr.kf[t, lcol, i],
                        fr.st[t, 1 - side, i, 3], cap, stopped)
    if pushed:
        return True, 0.0, 0.0, False
    return False, memo.f[ce, M_LB], memo.f[ce, M_UB], memo.i[ce, M_SOLVED] != 0


@_njit(**_NB)
def _offer(memo, e, total, feat):
    if _improves(total, memo.f[e, M_UB]):
        memo.f[e, M_UB] = total
        memo.i[e, M_FEAT] = feat
        memo.i[e, M_KLEV] = -1


@_njit(**_NB)
def _finish(memo, fr, t):
    e = fr.si[t, S_EID]
    m = np.inf
    for i in range(fr.si[t, S_NK]):
        m = min(m, fr.kf[t, K_LBSUM, i])
    lb = max(memo.f[e, M_LB], min(memo.f[e, M_UB], m))
    ub = memo.f[e, M_UB]
    if (fr.si[t, S_COMPLETED] != 0 and ub <= fr.sf[t, S_CAP]) or lb >= ub:
        memo.f[e, M_LB] = memo.f[e, M_UB]
        memo.i[e, M_SOLVED] = 1
    else:
        memo.f[e, M_LB] = lb
    return e


@_njit(**_NB)
def _limit(ctr, fst):
    if fst[F_DEADLINE] < np.inf:
        ctr[C_TICK] += 1
        if ctr[C_TICK] >= _TICKS:
            ctr[C_TICK] = 0
            fst[F_NOW] = _clock()
        if fst[F_NOW] > fst[F_DEADLINE]:
            return 2
    if ctr[C_MAXSTEPS] >= 0 and ctr[C_STEPS] >= ctr[C_MAXSTEPS]:
        return 3
    return 0


@_njit(**_NB)
def _best_first_split(fr, ub, tries_max):
    """The root split of least bound sum and the cap it is solved against (level 0).

    Its children are solved only against ``cap = min(ub, max(next least bound sum, its sum
    + half the gap))``: the split either proves its bound sum reaches the cap (and the next
    least split is taken) or is solved exactly, so the root's lower bound rises while the
    search goes. After ``tries_max`` capped attempts a split is solved against the
    incumbent (so the loop ends). Every cap only decides what is proven, never what is
    pruned: the optimum is unchanged. Returns ``(i, bound)``, ``i = -1`` when every split
    reaches the incumbent."""
    nk = fr.si[0, S_NK]
    i = -1
    best = np.inf
    for j in range(nk):
        v = fr.kf[0, K_LBSUM, j]
        live = v < ub * (1.0 - RTOL) if ub > 0 else v < ub
        if live and (i < 0 or v < best):
            i = j
            best = v
    if i < 0:
        return -1, ub
    second = np.inf
    for j in range(nk):
        if j != i:
            second = min(second, fr.kf[0, K_LBSUM, j])
    if fr.aux[0, i] >= tries_max:
        bound = ub
    else:
        bound = min(ub, max(second, best + 0.5 * (ub - best)))
    fr.aux[0, i] += 1
    return i, bound


@_njit(**_NB)
def run_chunk(P, memo, fr, ctr, fst, max_visits):
    """Run the search until it ends, ``max_visits`` more
    subproblem visits were made, or the arrays need room (``ctr[C_GROW]`` set: the caller
    grows them and calls again; the loop resumes where it stopped)."""
    hier = P.iprm[3] != 0
    M = P.X.shape[1]
    cap_entries = memo.f.shape[0]
    D = fr.si.shape[0]
    ctr[C_GROW] = 0
    if ctr[C_STARTED] == 0:
        if ctr[C_N] + 2 * M + 4 > cap_entries:
            ctr[C_GROW] = 1
            return
        ctr[C_STARTED] = 1
        r = ctr[C_ROOT]
        for j in range(fr.cwords.shape[0]):
            fr.cwords[j] = memo.words[r, j]
        fr.cmask[:] = True
        e, pushed = _visit(P, memo, ctr, fst, fr, _nl(0), memo.i[r, M_LEV], memo.f[r, M_UB],
                           0.0, np.inf, ctr[C_STOPPED] != 0)
        if not pushed:
            ctr[C_STATUS] = 1
            fst[F_ROOTLB] = memo.f[e, M_LB]
            ctr[C_TOP] = -1
            return
        ctr[C_TOP] = 0
        if ctr[C_DEVICE]:
            return
    t = ctr[C_TOP]
    start = ctr[C_STEPS]
    c_lb = 0.0
    c_ub = 0.0
    c_solved = False
    while True:
        ph = fr.si[t, S_PHASE]
        stopped = ctr[C_STOPPED] != 0
        if ph == NEXT:
            if stopped or fr.si[t, S_POS] >= fr.si[t, S_NK]:
                if stopped:
                    fr.si[t, S_COMPLETED] = 0
                e = _finish(memo, fr, t)
                c_lb, c_ub = memo.f[e, M_LB], memo.f[e, M_UB]
                c_solved = memo.i[e, M_SOLVED] != 0
                t -= 1
                if t < 0:
                    r = ctr[C_ROOT]
                    if memo.i[r, M_SOLVED] != 0:
                        ctr[C_STATUS] = 1
                    else:
                        ctr[C_STATUS] = ctr[C_STOPPED] if ctr[C_STOPPED] else 2
                    fst[F_ROOTLB] = memo.f[r, M_LB]
                    ctr[C_TOP] = -1
                    return
                continue
            # room: until the next check at most 2 visits here and 1 per frame popped
            room = ctr[C_N] + D + 4 <= cap_entries and t + 2 <= D
            if not room or ctr[C_STEPS] - start >= max_visits:
                ctr[C_TOP] = t
                if not room:
                    ctr[C_GROW] = 1
                return
            lim = _limit(ctr, fst)
            if lim:
                ctr[C_STOPPED] = lim
                continue
            e = fr.si[t, S_EID]
            i = 0
            bound = 0.0
            if (t == 0 and hier and fst[F_DEADLINE] < np.inf
                    and _clock() >= fst[F_T0] + fst[F_BF] * (fst[F_DEADLINE] - fst[F_T0])):
                i, bound = _best_first_split(fr, memo.f[e, M_UB], fst[F_BFTRIES])
                if i < 0:
                    fr.si[t, S_POS] = fr.si[t, S_NK]
                    continue
                fr.si[t, S_POS] = -1
            else:
                i = fr.ki[t, K_ORDER, fr.si[t, S_POS]]
                bound = min(memo.f[e, M_UB], fr.sf[t, S_CAP])
                if hier and _reaches(fr.kf[t, K_LBSUM, i], bound):
                    fr.si[t, S_POS] = fr.si[t, S_NK]
                    continue
                if hier and fr.ki[t, K_DF, i] > 1:
                    # the false child's bounds first (its memo entry, k-Means included):
                    # the split may fail on them, else the true child gets a tighter cap
                    dd = fr.ki[t, K_DF, i]
                    _child(P, fr, t, i, _nl(0))
                    s = _find_slot(memo, fr.cwords)
                    ce = _lookup(memo, s, dd)
                    if ce < 0:
                        ce = _entry(P, memo, ctr, s, fr.cwords, fr.cmask, dd)
                    if memo.f[ce, M_LB] > fr.kf[t, K_LBF, i]:
                        fr.kf[t, K_LBF, i] = memo.f[ce, M_LB]
                        fr.kf[t, K_LBSUM, i] = fr.kf[t, K_LBT, i] + fr.kf[t, K_LBF, i]
                        if _reaches(fr.kf[t, K_LBSUM, i], bound):
                            fr.si[t, S_POS] += 1  # this split only: the order is stale
                            continue
            fr.sf[t, S_BOUND] = bound
            fr.si[t, S_PHASE] = TRUE
            fr.si[t, S_CUR] = i
            capc = bound - fr.kf[t, K_LBF, i] if hier else np.inf
            pushed, c_lb, c_ub, c_solved = _solve_child(P, memo, ctr, fst, fr, t, i, _nl(1),
                                                        capc, stopped)
            if pushed:
                t += 1
                if ctr[C_DEVICE]:
                    ctr[C_TOP] = t
                    return
            continue
        i = fr.si[t, S_CUR]
        e = fr.si[t, S_EID]
        if ph == TRUE:
            fr.kf[t, K_LBT, i] = max(fr.kf[t, K_LBT, i], c_lb)
            fr.kf[t, K_LBSUM, i] = fr.kf[t, K_LBT, i] + fr.kf[t, K_LBF, i]
            if not c_solved:
                if stopped:
                    _offer(memo, e, c_ub + fr.kf[t, K_LEAFF, i], fr.ki[t, K_F, i])
                    fr.si[t, S_COMPLETED] = 0
                    fr.si[t, S_POS] = fr.si[t, S_NK]
                else:
                    fr.si[t, S_POS] += 1
                fr.si[t, S_PHASE] = NEXT
                continue
            fr.sf[t, S_TUB] = c_ub
            fr.si[t, S_PHASE] = FALSE
            capc = fr.sf[t, S_BOUND] - c_ub if hier else np.inf
            pushed, c_lb, c_ub, c_solved = _solve_child(P, memo, ctr, fst, fr, t, i, _nl(0),
                                                        capc, stopped)
            if pushed:
                t += 1
                if ctr[C_DEVICE]:
                    ctr[C_TOP] = t
                    return
            continue
        # phase FALSE: the false child's result is in
        fr.kf[t, K_LBF, i] = max(fr.kf[t, K_LBF, i], c_lb)
        fr.kf[t, K_LBSUM, i] = fr.kf[t, K_LBT, i] + fr.kf[t, K_LBF, i]
        if c_solved or stopped:
            _offer(memo, e, fr.sf[t, S_TUB] + c_ub, fr.ki[t, K_F, i])
        if t == 0:
            m = np.inf
            for j in range(fr.si[0, S_NK]):
                m = min(m, fr.kf[0, K_LBSUM, j])
            fst[F_ROOTLB] = max(memo.f[e, M_LB], min(memo.f[e, M_UB], m))
        if not c_solved and stopped:
            fr.si[t, S_COMPLETED] = 0
            fr.si[t, S_POS] = fr.si[t, S_NK]
        else:
            fr.si[t, S_POS] += 1
        fr.si[t, S_PHASE] = NEXT


# ----------------------------------------------------------------------------- Python layer
def _pack(mask_bool_2d):
    """``(k, U)`` bool -> ``(k, nw)`` uint64 (bit ``u % 64`` of word ``u // 64``)."""
    k, U = mask_bool_2d.shape
    nw = max(1, (U + 63) // 64)
    pad = np.zeros((k, nw * 64), dtype=np.uint8)
    pad[:, :U] = mask_bool_2d
    b = np.packbits(pad.reshape(k, nw, 64), axis=2, bitorder="little")  # (k, nw, 8)
    return np.ascontiguousarray(b).view(np.uint64).reshape(k, nw)


def _new_memo(cap, nw):
    tcap = 1
    while tcap < 4 * cap:
        tcap *= 2
    ints = np.zeros((cap, 5), dtype=np.int64)
    ints[:, M_NXT] = -1
    return Memo(words=np.zeros((cap, nw), dtype=np.uint64), i=ints, f=np.zeros((cap, 3)),
                table=np.full(tcap, -1, np.int64))


def _grow_memo(memo, n, cap, engine):
    new = _new_memo(cap, memo.words.shape[1])
    for a, b in zip(new[:3], memo[:3], strict=True):
        a[:n] = b[:n]
    engine.rebuild_table(new, n)
    return new


def _new_frames(D, U, M, nw):
    return Frames(words=np.zeros((D, nw), dtype=np.uint64),
                  mask=np.zeros((D, U), dtype=np.bool_), si=np.zeros((D, 6), np.int64),
                  sf=np.zeros((D, 3)), ki=np.zeros((D, 4, M), np.int64),
                  kf=np.zeros((D, 5, M)), st=np.zeros((D, 2, M, 6)),
                  aux=np.zeros((2, M), np.int64), cmask=np.zeros(U, dtype=np.bool_),
                  cwords=np.zeros(nw, dtype=np.uint64))


def _grow_frames(fr, D):
    U, M, nw = fr.cmask.shape[0], fr.aux.shape[1], fr.cwords.shape[0]
    new = _new_frames(D, U, M, nw)
    old_D = fr.si.shape[0]
    for a, b in zip(new[:7], fr[:7], strict=True):
        a[:old_D] = b
    new.aux[:] = fr.aux
    return new


_REVERSED_BITS = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


class CompiledMemo:
    """The engine's memo seen as a ``dict``: ``(packed support bytes, levels) -> Entry``
    (what the tree extraction, the device's batches and progress lines read)."""

    def __init__(self, state_ref):
        self._ref = state_ref  # a one-element list holding the current CompiledState

    def _words(self, key_bytes):
        """``np.packbits(mask)`` bytes (big-endian bits) -> the ``_pack`` words of ``mask``
        (bit ``u % 64`` of word ``u // 64``): each byte's bits reversed, which are the bytes
        ``_pack`` makes (``bitorder="little"``)."""
        b = _REVERSED_BITS[np.frombuffer(key_bytes, np.uint8)]
        nw = self._ref[0].problem.colw.shape[1]
        out = np.zeros(nw * 8, dtype=np.uint8)
        out[:b.size] = b
        return out.view(np.uint64)  # the bytes of _pack, viewed alike

    def _id(self, key):
        st = self._ref[0]
        return st.engine.lookup(st.memo, self._words(key[0]), int(key[1]))

    def get(self, key, default=None):
        e = self._id(key)
        if e < 0:
            return default
        m = self._ref[0].memo
        return Entry(float(m.f[e, M_LB]), float(m.f[e, M_UB]), int(m.i[e, M_FEAT]),
                     bool(m.i[e, M_SOLVED]), int(m.i[e, M_KLEV]), float(m.f[e, M_DEEP]))

    def __getitem__(self, key):
        e = self.get(key)
        if e is None:
            raise KeyError(key)
        return e

    def __contains__(self, key):
        return self._id(key) >= 0

    def __setitem__(self, key, entry):
        """Queue a new entry (the device's); :func:`step` inserts it into the memo."""
        self._ref[0].pending.append((self._words(key[0]), int(key[1]), entry))

    def __len__(self):
        return int(self._ref[0].ctr[C_N])


def problem_of(tp, engine, device=False) -> Problem:
    """The engine's arrays of a :class:`~jaxsr.trees.problem.TreeProblem` ``tp``
    (``device``: expansions with at least 3 levels return to Python for the device)."""
    X = tp.Xu8
    ones, nones = engine.feature_lists(X)
    if tp.l1:
        ys, ws, cls_s = tp.ys, tp.ws, tp.cls_s
    else:
        ys, ws, cls_s = np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    return Problem(X=X, ones=ones, nones=nones, colw=_pack(tp.XcT),
                   cls=np.stack([tp.Wc, tp.cls_mean, tp.Ec, tp.Nc]),
                   korder=tp.korder.astype(np.int64),
                   prm=np.array([tp.lam, tp.norm, float(tp.m1), float(tp.look),
                                 float(KMEDIANS_MAX_VALUES)]),
                   iprm=np.array([tp.kl, int(tp.equiv), int(tp.use_kmeans), int(tp.hier),
                                  int(tp.l1), int(device)], dtype=np.int64),
                   ys=np.ascontiguousarray(ys, dtype=np.float64),
                   ws=np.ascontiguousarray(ws, dtype=np.float64),
                   cls_s=np.ascontiguousarray(cls_s, dtype=np.int64))


def init(problem, root, incumbent=np.inf, time_limit=None, max_steps=None, t0=None,
         engine=None, device=None, kernel_rate=3e-8) -> CompiledState:
    """The engine's state for the :class:`~jaxsr.trees.problem.TreeProblem` ``problem``
    whose root is ``(key, mask, d)``: its memo entry (:func:`root_entry`, with the
    objective ``incumbent`` of the greedy tree; solved at once when its bounds meet; a
    deadline already past stops before anything is expanded), run by ``engine`` (default
    :data:`COMPILED`); ``device(state, level)`` evaluates the children of an expansion on
    the device (None: the host does); ``kernel_rate``: seconds per element operation of a
    shallow-kernel call, as seen so far (the time limit's predictions)."""
    key, mask, d = root
    engine = COMPILED if engine is None else engine
    t0 = time.perf_counter() if t0 is None else t0
    P = problem_of(problem, engine, device is not None)
    U, M = P.X.shape
    nw = P.colw.shape[1]
    memo = _new_memo(max(_MEMO_CAP, 4 * M + 8), nw)
    ctr = np.zeros(14, dtype=np.int64)
    ctr[C_MAXSTEPS] = -1 if max_steps is None else int(max_steps)
    fst = np.zeros(7)
    fst[F_RATE] = kernel_rate
    fst[F_DEADLINE] = np.inf if time_limit is None else t0 + float(time_limit)
    fst[F_T0] = fst[F_NOW] = t0
    fst[F_BF] = solver.BEST_FIRST_AFTER
    fst[F_BFTRIES] = solver._BEST_FIRST_TRIES
    w = _pack(mask[None, :])[0]
    r = ctr[C_ROOT] = engine.root_entry(P, memo, ctr, w, np.ascontiguousarray(mask),
                                        int(d), float(incumbent))
    fst[F_ROOTLB] = memo.f[r, M_LB]
    frames = _new_frames(int(min(max(d, 2), _MAX_FRAMES)) + 1, U, M, nw)
    status = None
    if memo.i[r, M_SOLVED]:
        status = Status.OPTIMAL
    elif time_limit is not None and (time_limit <= 0 or time.perf_counter() > t0 + time_limit):
        status = Status.TIME_LIMIT
    if status is not None:
        ctr[C_STATUS] = {Status.OPTIMAL: 1, Status.TIME_LIMIT: 2}[status]
    return CompiledState(engine, P, memo, frames, ctr, fst, key, float(memo.f[r, M_LB]),
                         status, 0, t0, device, [])


def step(state, chunk=None) -> CompiledState:
    """Up to ``chunk`` subproblem visits of the loop (default: the engine's), growing the
    arrays as asked."""
    P, memo, fr, ctr, fst = state.problem, state.memo, state.frames, state.ctr, state.fst
    engine = state.engine
    chunk = engine.chunk if chunk is None else chunk
    while True:
        engine.run_chunk(P, memo, fr, ctr, fst, chunk)
        if ctr[C_DEVICE]:
            ctr[C_DEVICE] = 0
            L = int(ctr[C_TOP])
            done = state.device(state._replace(memo=memo, frames=fr), L)
            n, new = int(ctr[C_N]), state.pending
            if n + len(new) + 2 * P.X.shape[1] + fr.si.shape[0] + 8 > memo.f.shape[0]:
                memo = _grow_memo(memo, n, 2 * (n + len(new)) + 4 * P.X.shape[1]
                                  + 2 * fr.si.shape[0] + 16, engine)
            for w, lev, en in new:
                engine.insert(memo, ctr, w, lev, en.lb, en.ub, en.feat, int(en.solved),
                              en.klev, en.deep)
            new.clear()
            engine.finish_expansion(P, memo, ctr, fst, fr, L, not done)
            continue
        if not ctr[C_GROW]:
            break
        n, M = int(ctr[C_N]), P.X.shape[1]
        if int(ctr[C_TOP]) + 2 > fr.si.shape[0]:
            fr = _grow_frames(fr, 2 * fr.si.shape[0])
        D = fr.si.shape[0]
        if n + 2 * M + D + 8 > memo.f.shape[0]:
            memo = _grow_memo(memo, n, max(2 * memo.f.shape[0], n + 4 * M + 2 * D + 16),
                              engine)
    st = int(ctr[C_STATUS])
    return state._replace(memo=memo, frames=fr, root_lb=float(fst[F_ROOTLB]),
                          status=_STATUS.get(st), steps=int(ctr[C_STEPS]))


def live_lower_bound(state) -> float:
    """The root's proven lower bound now, bottom up through the frontier (its arrays,
    read here in Python: for progress lines).

    Validity: every children's bound of a frame is a lower bound of every tree on that
    child (they only ever rise to the max of valid bounds, whatever cap a child was solved
    against), so the least bound sum over a subproblem's splits bounds every tree that
    splits, and with its best tree found (``ub``, at most its leaf) ``max(lb, min(ub,
    least bound sum))`` bounds every tree on it. The top frame's bound is valid for the
    child its parent awaits, so it replaces that child's bound in the parent's sum, and so
    on down to the root (the same arithmetic as the unwinding after a limit)."""
    fr, memo = state.frames, state.memo
    below = None
    for t in range(int(state.ctr[C_TOP]), -1, -1):
        e = int(fr.si[t, S_EID])
        nk = int(fr.si[t, S_NK])
        lbsum = fr.kf[t, K_LBSUM, :nk].copy()
        i, ph = int(fr.si[t, S_CUR]), int(fr.si[t, S_PHASE])
        if below is not None and 0 <= i < nk and ph in (TRUE, FALSE):
            if ph == TRUE:
                lbsum[i] = max(fr.kf[t, K_LBT, i], below) + fr.kf[t, K_LBF, i]
            else:
                lbsum[i] = fr.kf[t, K_LBT, i] + max(fr.kf[t, K_LBF, i], below)
        lb, ub = float(memo.f[e, M_LB]), float(memo.f[e, M_UB])
        below = max(lb, min(ub, float(lbsum.min()))) if nk else lb
    return float(state.root_lb) if below is None else max(float(state.root_lb), below)


def terminate(state) -> Status | None:
    """``None`` while the search goes on, else why it ended."""
    return state.status


COMPILED = Engine(run_chunk=run_chunk, insert=insert, lookup=lookup,
                  rebuild_table=rebuild_table, feature_lists=feature_lists,
                  finish_expansion=finish_expansion, root_entry=root_entry, chunk=2048)
"""The compiled engine (numba)."""
