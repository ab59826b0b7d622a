"""The search: one branch and bound over subproblems (OSRT section 4), squared and absolute
loss, compiled by numba (or run as Python on the numpy kernels, :mod:`jaxsr.trees.interpreted`).

A subproblem is a support over the equivalence classes and the levels a subtree on it may
use (:mod:`jaxsr.trees.search` describes the bounds and reformulations); the search is
depth first in the style of GOSDT / MurTree, with the state in named arrays:

* the memo is an open-addressing hash table over the bit-packed supports (``uint64``
  words), each slot the head of a chain of the entries of that support with different
  levels (so the lower bounds of a support with more levels are found at once); an entry
  is one index into arrays named after the fields of :class:`~jaxsr.trees.solver.Entry`
  (:class:`Memo`: ``memo.lb[e]``, ``memo.feat[e]``);
* the frontier stack is preallocated per level (:class:`Frames`: per frame the children
  of every split, their bounds, the order in which the splits are tried and the split
  being worked on, each a named array); a child's support is its parent's words and'ed
  with the column of its split, not a stored mask;
* the loop's scalar state is two one-element records (:data:`COUNTERS`, :data:`CLOCK`:
  ``ctr[0].steps``, ``fst[0].deadline``), numpy record arrays for the compiled engine
  and objects of plain attributes for the interpreted one (:func:`with_engine` converts);
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
_UNTRIED = solver.UNTRIED
GREEDY = solver.GREEDY
# the loop's scalar state, each a one-element record array (``ctr[0].steps``):
COUNTERS = np.dtype([
    ("n", np.int64),  # memo entries in use
    ("steps", np.int64),  # subproblem visits
    ("kernel", np.int64),  # shallow-kernel calls
    ("kmeans", np.int64),  # k-means / k-medians bounds
    ("status", np.int64),  # 0 running, else a key of _STATUS
    ("stopped", np.int64),  # a limit stopped the search (its status): unwinding
    ("top", np.int64),  # the top frame (-1: none)
    ("grow", np.int64),  # the loop returned for more memo or frames
    ("started", np.int64),  # the root has been visited
    ("maxsteps", np.int64),  # the node limit (-1: none)
    ("root", np.int64),  # the root's memo entry
    ("tick", np.int64),  # limit checks since the clock was last read
    ("device_call", np.int64),  # the loop returned for the device to evaluate children
])
CLOCK = np.dtype([
    ("rootlb", np.float64),  # the root's lower bound when the loop ended
    ("rate", np.float64),  # seconds per element operation of a shallow-kernel call
    ("deadline", np.float64),  # time.perf_counter() of the time limit (inf: none)
    ("t0", np.float64),  # when the search started
    ("bf", np.float64),  # fraction of the time limit after which the root goes best first
    ("bftries", np.float64),  # capped attempts per root split when best first
    ("now", np.float64),  # the last clock read
])
_TICKS = 16  # the limit check reads the clock (object mode, ~2-5 us) every 16th time
_SLOW_KERNEL = 0.01  # kernel calls predicted to take this fraction of the time left are timed
_MEMO_CAP = 1024  # first memo capacity (entries; doubled when the loop asks)
_MAX_FRAMES = 64  # first frontier depth (doubled when the loop asks)
_STATUS = {1: Status.OPTIMAL, 2: Status.TIME_LIMIT, 3: Status.NODE_LIMIT}


class Problem(NamedTuple):
    """Constant data of one fit (the search's class statistics and parameters).

    X: ``(U, M)`` uint8 class rows. ones: ``(U, M)`` int64, the features set per class
    (first ``nones[u]``). colw: ``(M, nw)`` uint64 packed feature columns. cls: ``(4, U)``
    float64 class weight, mean target, internal loss, sample count. korder: ``(U,)``
    int64 classes by mean. ys, ws: ``(n,)`` float64 the internal targets sorted ascending
    and their weights, cls_s: ``(n,)`` int64 their classes (absolute loss; empty for
    squared loss). lam: lambda. norm: the normaliser. m1: least samples per leaf. look:
    leaves of a tree that splits in the cheap bounds. kmedians_max: the most distinct
    targets of a k-medians bound. kl: the shallow kernel's split levels. equiv, kmeans,
    hier, l1: 0/1, the bounds used and absolute loss. device: 0/1, an expansion with at
    least 3 levels returns to Python for the device to evaluate its children.
    """

    X: np.ndarray
    ones: np.ndarray
    nones: np.ndarray
    colw: np.ndarray
    cls: np.ndarray
    korder: np.ndarray
    ys: np.ndarray
    ws: np.ndarray
    cls_s: np.ndarray
    lam: float
    norm: float
    m1: float
    look: float
    kmedians_max: float
    kl: int
    equiv: int
    kmeans: int
    hier: int
    l1: int
    device: int


class Memo(NamedTuple):
    """Memo entries (``cap`` of them; the first ``ctr[0].n`` in use) and the hash table
    (``-1``: empty; else the newest entry of one support, whose entries with other levels
    follow through ``nxt``).

    words: ``(cap, nw)`` uint64 packed supports. lev, feat, solved, klev: ``(cap,)`` int64
    and lb, ub, deep: ``(cap,)`` float64, the fields of :class:`~jaxsr.trees.solver.Entry`
    (``lev`` the subproblem's levels). nxt: ``(cap,)`` int64 the next entry of the same
    support (-1: none). table: ``(T,)`` int64, ``T`` a power of two at least 4 ``cap``.
    """

    words: np.ndarray
    lev: np.ndarray
    feat: np.ndarray
    solved: np.ndarray
    klev: np.ndarray
    nxt: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    deep: np.ndarray
    table: np.ndarray


_MEMO_ROWS = ("words", "lev", "feat", "solved", "klev", "nxt", "lb", "ub", "deep")


class Frames(NamedTuple):
    """The frontier stack, one row per level (``D`` rows; the top is ``ctr[0].top``): the
    fields of a frontier frame.

    words, mask: ``(D, nw)`` uint64 / ``(D, U)`` bool the support. Per frame, ``(D,)``:
    eid its memo entry, nk its number of splits ``k``, pos the place in ``order`` of the
    split being tried, phase (``NEXT``, ``TRUE``, ``FALSE``: what the frame awaits), cur
    the split being worked on, completed (0 when a limit cut its expansion short), all
    int64; cap (the cap it is solved against), bound (the cap of the split being tried),
    tub (that split's true child's best objective), float64. Per split, ``(D, M)`` (the
    first ``k``): feat its feature, dT, dF its children's levels, order the order in which
    the splits are tried (int64); leafT, leafF its children's leaf costs, lbT, lbF their
    lower bounds, lbsum the sum (float64). st: ``(D, 2, M, 6)`` the children's statistics
    (true, false). tries: ``(M,)`` int64 the root's best-first attempts per split.
    scratch: ``(M,)`` int64. cmask, cwords: the child being visited (scratch).
    """

    words: np.ndarray
    mask: np.ndarray
    eid: np.ndarray
    nk: np.ndarray
    pos: np.ndarray
    phase: np.ndarray
    cur: np.ndarray
    completed: np.ndarray
    cap: np.ndarray
    bound: np.ndarray
    tub: np.ndarray
    feat: np.ndarray
    dT: np.ndarray
    dF: np.ndarray
    order: np.ndarray
    leafT: np.ndarray
    leafF: np.ndarray
    lbT: np.ndarray
    lbF: np.ndarray
    lbsum: np.ndarray
    st: np.ndarray
    tries: np.ndarray
    scratch: np.ndarray
    cmask: np.ndarray
    cwords: np.ndarray


_FRAME_LEVELS = Frames._fields[:Frames._fields.index("st") + 1]  # the fields per level


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
    records: object  # records(dtype, source=None): the loop's scalar state for this engine
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
        if memo.lev[e] == lev:
            return e
        e = memo.nxt[e]
    return -1


@_njit(**_NB)
def _insert(memo, ctr, slot, w, lev, lb, ub, feat, solved, klev, deep):
    i = ctr[0].n
    ctr[0].n = i + 1
    for j in range(w.shape[0]):
        memo.words[i, j] = w[j]
    memo.lev[i] = lev
    memo.lb[i] = lb
    memo.ub[i] = ub
    memo.feat[i] = feat
    memo.solved[i] = solved
    memo.klev[i] = klev
    memo.deep[i] = deep
    memo.nxt[i] = memo.table[slot]
    memo.table[slot] = i
    return i


@_njit(**_NB)
def rebuild_table(memo, n):
    """Fill an empty ``memo.table`` with the chains of the first ``n`` entries (in the
    order of their creation, as :func:`_insert` chains them)."""
    memo.table[:] = -1
    for i in range(n):
        s = _find_slot(memo, memo.words[i])
        memo.nxt[i] = memo.table[s]
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
        memo.lb[e] = lb
        memo.ub[e] = ub
        memo.deep[e] = deep
        memo.feat[e] = feat
        memo.solved[e] = solved
        memo.klev[e] = klev
        return e
    return _insert(memo, ctr, s, w, lev, lb, ub, feat, solved, klev, deep)


_useful_levels = compile_plain(bounds.useful_levels_of, inline="always")


@_njit(**_NB)
def _deff(P, d, C, Nn, E, leaf):
    """The levels that can matter to one set (:func:`jaxsr.trees.bounds.useful_levels`)."""
    return np.int64(_useful_levels(float(d), C, Nn, E, leaf, P.lam, P.norm, P.m1,
                                   P.equiv != 0))


@_njit(**_NB)
def _cheap(P, E):
    """Equivalent points bound of the trees that split
    (:func:`jaxsr.trees.problem.cheap_split_bound`)."""
    return _objective(E if P.equiv else 0.0, P.norm, P.lam, P.look)


@_njit(**_NB)
def _eq(P, E):
    """Equivalent points loss of a support (objective units; 0 without that bound)."""
    return E / P.norm if P.equiv else 0.0


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
    lam = P.lam
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
    if not fst[0].deadline < np.inf:
        return True
    work = _kernel_work(P.X.shape[1], _count(mask), levels)
    return fst[0].rate * work < fst[0].deadline - fst[0].now


@_njit(**_NB)
def _kernel(P, mask, levels):
    c, f = support_subtree(mask, P.X, P.cls[0], P.cls[1], P.cls[2], P.cls[3], levels,
                           P.lam * P.norm, P.m1)
    return c / P.norm, f


@_njit(**_NB)
def _child(P, fr, t, i, side):
    """The child's support of split ``i`` of level ``t`` into ``fr.cmask``/``cwords``."""
    f = fr.feat[t, i]
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
    lam, norm = P.lam, P.norm
    kl = P.kl
    if P.l1:
        loss, sb, deep, nkm = absolute_support_bounds(
            mask, P.ys, P.ws, P.cls_s, P.cls[2], P.cls[3], d, lam, norm, P.m1, P.look,
            P.equiv != 0, P.kmeans != 0, P.kmedians_max)
        ctr[0].kmeans += nkm
    else:
        loss, sb, deep = support_bounds(mask, P.korder, P.cls[0], P.cls[1], P.cls[2],
                                        P.cls[3], d, lam, norm, P.m1, P.look, kl,
                                        P.equiv != 0, P.kmeans != 0)
        if P.kmeans and d > max(kl, 1):
            ctr[0].kmeans += 1
    leaf = _objective(loss, norm, lam)
    if d <= 1 or _reaches(sb, leaf):
        return _insert(memo, ctr, slot, w, d, leaf, leaf, _nl(-1), _nl(1), _nl(-1),
                       np.inf)
    klev = _nl(_UNTRIED) if (kl > 0 and d > kl + 1) else _nl(-1)
    lb = min(leaf, sb)
    # the same support with more levels: its lower bound holds here
    e2 = memo.table[slot]
    while e2 >= 0:
        if memo.lev[e2] > d and memo.lb[e2] > lb:
            lb = min(memo.lb[e2], leaf)
        e2 = memo.nxt[e2]
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
    if memo.solved[e] == 0 and _improves(incumbent, memo.ub[e]):
        memo.ub[e] = incumbent
        memo.feat[e] = GREEDY
        memo.lb[e] = min(memo.lb[e], incumbent)
        if _reaches(memo.lb[e], incumbent):
            memo.lb[e] = incumbent
            memo.solved[e] = 1
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
    keep = fr.scratch
    k = support_splits(mask, P.X, keep)
    nk = admissible_splits(fr, L, tot, keep, k, P.m1)
    if nk == 0:
        memo.lb[e] = memo.ub[e]
        memo.feat[e] = -1
        memo.solved[e] = 1
        memo.klev[e] = -1
        memo.deep[e] = np.inf
        return False
    if P.l1:  # the children's losses, written into the leaf rows first
        absolute_split_losses(mask, P.ys, P.ws, P.cls_s, P.X, fr.feat[L], nk,
                              fr.leafT[L], fr.leafF[L])
    split_leaves(P, fr, L, nk, memo.lev[e])
    fr.nk[L] = nk
    fr.eid[L] = e
    fr.cap[L] = cap
    fr.pos[L] = 0
    fr.phase[L] = NEXT
    fr.bound[L] = np.inf
    fr.tub[L] = np.inf
    fr.completed[L] = 1
    fr.cur[L] = -1
    if L == 0:
        for i in range(nk):
            fr.tries[i] = 0
    if P.device and memo.lev[e] >= 3:
        # the children's bounds or exact subtrees on the device: the loop returns to
        # Python (ctr.device_call), which calls finish_expansion once they are in the memo
        ctr[0].device_call = 1
        return True
    finish_expansion(P, memo, ctr, fst, fr, L, True)
    return True


@_njit(**_NB)
def finish_expansion(P, memo, ctr, fst, fr, L, root_bounds):
    """The end of an expansion of level ``L``: with ``root_bounds`` at the root, the memo
    entries (bounds, k-Means included) of every child at once (anytime: the root's lower
    bound is the least bound sum over all its splits from the start); then the children's
    lower bounds from the memo and the order of the splits."""
    nk = fr.nk[L]
    e = fr.eid[L]
    deadline = fst[0].deadline
    if L == 0 and root_bounds:
        for i in range(nk):
            if deadline < np.inf and _clock() > deadline:
                break
            for side in (1, 0):
                dd = fr.dT[L, i] if side == 1 else fr.dF[L, i]
                if dd <= 1:
                    continue
                _child(P, fr, L, i, side)
                s = _find_slot(memo, fr.cwords)
                if _lookup(memo, s, dd) < 0:
                    _entry(P, memo, ctr, s, fr.cwords, fr.cmask, dd)
    memo_bounds(P, memo, fr, L, nk)
    order_splits(fr, L, nk, memo.ub[e])


@_njit(**_NB)
def admissible_splits(fr, L, tot, keep, k, m1):
    """Keep, of the splits ``keep[:k]`` of level ``L``, those whose children both hold at
    least ``m1`` samples: their features into ``feat[L]`` and their children's
    statistics into the first rows of ``st[L, 0]`` (from the per-feature sums there) and
    ``st[L, 1]`` (``tot`` minus them). Returns their number."""
    a = fr.st[L, 0]
    comp = fr.st[L, 1]
    nk = 0
    for q in range(k):
        f = keep[q]
        if a[f, 4] >= m1 and tot[4] - a[f, 4] >= m1:
            fr.feat[L, nk] = f
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
            dd = fr.dT[L, i] if side == 1 else fr.dF[L, i]
            if dd <= 1:
                continue
            f = fr.feat[L, i]
            for j in range(nw):
                if side == 1:
                    fr.cwords[j] = fr.words[L, j] & P.colw[f, j]
                else:
                    fr.cwords[j] = fr.words[L, j] & ~P.colw[f, j]
            ce = _lookup(memo, _find_slot(memo, fr.cwords), dd)
            if ce >= 0:
                if side == 1:
                    fr.lbT[L, i] = max(fr.lbT[L, i], memo.lb[ce])
                else:
                    fr.lbF[L, i] = max(fr.lbF[L, i], memo.lb[ce])


@_njit(**_NB)
def order_splits(fr, L, nk, ub):
    """The bound sums of the ``nk`` splits of level ``L`` and the order in which they are
    tried: by bound sum, sums equal up to rounding (``1e-10`` of the leaf ``ub``) in feature
    order, so near-ties do not depend on the rounding."""
    key = np.empty(nk)
    qq = max(1e-10 * ub, 1e-300)
    for i in range(nk):
        fr.lbsum[L, i] = fr.lbT[L, i] + fr.lbF[L, i]
        key[i] = np.floor(fr.lbsum[L, i] / qq)
    _argsort_stable(key, fr.order[L], fr.scratch)


@_njit(**_NB)
def split_leaves(P, fr, L, nk, d):
    """For the ``nk`` splits of the subproblem of level ``L`` (``d`` levels), from their
    children's statistics (absolute loss: the children's losses already in the leaf rows):
    the children's leaf costs, the levels that can matter to them (:func:`_deff`) and
    their cheap lower bounds (the leaf, or at most the equivalent points bound of the trees
    that split)."""
    lam, norm = P.lam, P.norm
    a = fr.st[L, 0]
    comp = fr.st[L, 1]
    for i in range(nk):
        if P.l1:
            lt = _objective(fr.leafT[L, i], norm, lam)
            lf = _objective(fr.leafF[L, i], norm, lam)
        else:
            lt = _objective(max(_sse(a[i, 0], a[i, 1], a[i, 2]), a[i, 3]), norm, lam)
            lf = _objective(max(_sse(comp[i, 0], comp[i, 1], comp[i, 2]), comp[i, 3]), norm,
                            lam)
        fr.leafT[L, i] = lt
        fr.leafF[L, i] = lf
        dt = _deff(P, d - 1, a[i, 5], a[i, 4], a[i, 3], lt)
        df = _deff(P, d - 1, comp[i, 5], comp[i, 4], comp[i, 3], lf)
        fr.dT[L, i] = dt
        fr.dF[L, i] = df
        fr.lbT[L, i] = min(lt, _cheap(P, a[i, 3])) if dt > 1 else lt
        fr.lbF[L, i] = min(lf, _cheap(P, comp[i, 3])) if df > 1 else lf


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
    kl = P.kl
    slot = _find_slot(memo, fr.cwords)
    e = _lookup(memo, slot, d)
    if e < 0 and stopped:
        # unwinding after a limit: the leaf and the cheap bound, no k-means
        e = _insert(memo, ctr, slot, fr.cwords, d, min(leaf, _cheap(P, E)), leaf, _nl(-1),
                    _nl(0), _nl(-1), np.inf)
        return e, False
    if e < 0:
        e = _entry(P, memo, ctr, slot, fr.cwords, fr.cmask, d)
    if memo.solved[e] != 0 or _reaches(memo.lb[e], cap) or stopped:
        return e, False
    if kl > 0 and cap < np.inf and P.lam > 0:
        # only trees with at most lmax leaves, so at most lmax - 1 split levels, can beat
        # the cap (_leaf_budget): when that is fewer levels than the subproblem has and
        # the kernel covers them, the kernel decides at once
        lmax = _leaf_budget(P, E, cap)
        lev = lmax - 1
        if lev < d - 1 and lev <= kl and (lev < 1 or _affordable(P, fst, fr.cmask, lev)):
            if lev >= 1:
                c, f = _kernel(P, fr.cmask, lev)
                ctr[0].kernel += 1
            else:
                c = _objective(support_leaf_loss(fr.cmask, P.cls[0], P.cls[1], P.cls[2]),
                               P.norm, P.lam)
                f = _nl(-1)
            if not _reaches(c, cap):  # the optimum: every deeper tree reaches the cap
                memo.lb[e] = c
                memo.ub[e] = c
                memo.deep[e] = np.inf
                memo.feat[e] = f
                memo.solved[e] = 1
                memo.klev[e] = lev if lev >= 1 else -1  # rebuilt with lev levels
                return e, False
            lbk = min(c, _eq(P, E) + P.lam * (lmax + 1))  # reaches the cap
            memo.lb[e] = max(memo.lb[e], min(lbk, memo.ub[e]))
            return e, False
    if kl > 0 and d <= kl + 1:
        c, f = _kernel(P, fr.cmask, d - 1)
        ctr[0].kernel += 1
        memo.lb[e] = c
        memo.ub[e] = c
        memo.deep[e] = np.inf
        memo.feat[e] = f
        memo.solved[e] = 1
        memo.klev[e] = -1
        return e, False
    if (memo.klev[e] == _UNTRIED and d > kl + 1
            and not _reaches(memo.lb[e], memo.deep[e])):
        n = _count(fr.cmask)
        M = P.X.shape[1]
        deadline = fst[0].deadline
        t_k = 0.0
        work = _kernel_work(M, n, kl)
        # a call predicted to take more than 1% of the time left (as of the last clock
        # read) is timed, and skipped when it would not fit
        timed = deadline < np.inf and fst[0].rate * work > _SLOW_KERNEL * (deadline
                                                                          - fst[0].now)
        if timed:
            t_k = _clock()
            if fst[0].rate * work >= deadline - t_k:
                memo.klev[e] = -1
                return e, _expansion(P, memo, ctr, fst, fr, L, e, cap)
        c, f = _kernel(P, fr.cmask, kl)
        if timed:
            fst[0].rate = max(fst[0].rate, (_clock() - t_k) / work)
        ctr[0].kernel += 1
        memo.klev[e] = -1
        if c < memo.ub[e]:
            memo.ub[e] = c
            memo.feat[e] = f
            memo.klev[e] = kl
        memo.lb[e] = max(memo.lb[e], min(c, memo.deep[e]))
        if _reaches(memo.lb[e], memo.ub[e]):
            memo.lb[e] = memo.ub[e]
            memo.solved[e] = 1
        if memo.solved[e] != 0 or _reaches(memo.lb[e], cap):
            return e, False
    return e, _expansion(P, memo, ctr, fst, fr, L, e, cap)


@_njit(**_NB)
def _solve_child(P, memo, ctr, fst, fr, t, i, side, cap, stopped):
    """Solve the child on ``side`` (1: true, 0: false) of split ``i`` of level ``t``
    against ``cap``: a leaf when it has one level, else a visit (:func:`_visit`).
    Returns ``(pushed, lb, ub, solved)``: pushed means level ``t + 1`` now holds its
    expansion (its result comes when that frame finishes); else its bounds now."""
    d = fr.dT[t, i] if side == 1 else fr.dF[t, i]
    leaf = fr.leafT[t, i] if side == 1 else fr.leafF[t, i]
    if d <= 1:
        return False, leaf, leaf, True
    if not stopped:
        ctr[0].steps += 1
    _child(P, fr, t, i, side)
    ce, pushed = _visit(P, memo, ctr, fst, fr, t + 1, d, leaf, fr.st[t, 1 - side, i, 3], cap,
                        stopped)
    if pushed:
        return True, 0.0, 0.0, False
    return False, memo.lb[ce], memo.ub[ce], memo.solved[ce] != 0


@_njit(**_NB)
def _offer(memo, e, total, feat):
    if _improves(total, memo.ub[e]):
        memo.ub[e] = total
        memo.feat[e] = feat
        memo.klev[e] = -1


@_njit(**_NB)
def _finish(memo, fr, t):
    e = fr.eid[t]
    m = np.inf
    for i in range(fr.nk[t]):
        m = min(m, fr.lbsum[t, i])
    lb = max(memo.lb[e], min(memo.ub[e], m))
    ub = memo.ub[e]
    if (fr.completed[t] != 0 and ub <= fr.cap[t]) or lb >= ub:
        memo.lb[e] = memo.ub[e]
        memo.solved[e] = 1
    else:
        memo.lb[e] = lb
    return e


@_njit(**_NB)
def _limit(ctr, fst):
    if fst[0].deadline < np.inf:
        ctr[0].tick += 1
        if ctr[0].tick >= _TICKS:
            ctr[0].tick = 0
            fst[0].now = _clock()
        if fst[0].now > fst[0].deadline:
            return 2
    if ctr[0].maxsteps >= 0 and ctr[0].steps >= ctr[0].maxsteps:
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
    nk = fr.nk[0]
    i = -1
    best = np.inf
    for j in range(nk):
        v = fr.lbsum[0, j]
        live = v < ub * (1.0 - RTOL) if ub > 0 else v < ub
        if live and (i < 0 or v < best):
            i = j
            best = v
    if i < 0:
        return -1, ub
    second = np.inf
    for j in range(nk):
        if j != i:
            second = min(second, fr.lbsum[0, j])
    if fr.tries[i] >= tries_max:
        bound = ub
    else:
        bound = min(ub, max(second, best + 0.5 * (ub - best)))
    fr.tries[i] += 1
    return i, bound


@_njit(**_NB)
def run_chunk(P, memo, fr, ctr, fst, max_visits):
    """Run the search until it ends, ``max_visits`` more
    subproblem visits were made, or the arrays need room (``ctr[0].grow`` set: the caller
    grows them and calls again; the loop resumes where it stopped)."""
    hier = P.hier != 0
    M = P.X.shape[1]
    cap_entries = memo.lb.shape[0]
    D = fr.eid.shape[0]
    ctr[0].grow = 0
    if ctr[0].started == 0:
        if ctr[0].n + 2 * M + 4 > cap_entries:
            ctr[0].grow = 1
            return
        ctr[0].started = 1
        r = ctr[0].root
        for j in range(fr.cwords.shape[0]):
            fr.cwords[j] = memo.words[r, j]
        fr.cmask[:] = True
        e, pushed = _visit(P, memo, ctr, fst, fr, _nl(0), memo.lev[r], memo.ub[r],
                           0.0, np.inf, ctr[0].stopped != 0)
        if not pushed:
            ctr[0].status = 1
            fst[0].rootlb = memo.lb[e]
            ctr[0].top = -1
            return
        ctr[0].top = 0
        if ctr[0].device_call:
            return
    t = ctr[0].top
    start = ctr[0].steps
    c_lb = 0.0
    c_ub = 0.0
    c_solved = False
    while True:
        ph = fr.phase[t]
        stopped = ctr[0].stopped != 0
        if ph == NEXT:
            if stopped or fr.pos[t] >= fr.nk[t]:
                if stopped:
                    fr.completed[t] = 0
                e = _finish(memo, fr, t)
                c_lb, c_ub = memo.lb[e], memo.ub[e]
                c_solved = memo.solved[e] != 0
                t -= 1
                if t < 0:
                    r = ctr[0].root
                    if memo.solved[r] != 0:
                        ctr[0].status = 1
                    else:
                        ctr[0].status = ctr[0].stopped if ctr[0].stopped else 2
                    fst[0].rootlb = memo.lb[r]
                    ctr[0].top = -1
                    return
                continue
            # room: until the next check at most 2 visits here and 1 per frame popped
            room = ctr[0].n + D + 4 <= cap_entries and t + 2 <= D
            if not room or ctr[0].steps - start >= max_visits:
                ctr[0].top = t
                if not room:
                    ctr[0].grow = 1
                return
            lim = _limit(ctr, fst)
            if lim:
                ctr[0].stopped = lim
                continue
            e = fr.eid[t]
            i = 0
            bound = 0.0
            if (t == 0 and hier and fst[0].deadline < np.inf
                    and _clock() >= fst[0].t0 + fst[0].bf * (fst[0].deadline - fst[0].t0)):
                i, bound = _best_first_split(fr, memo.ub[e], fst[0].bftries)
                if i < 0:
                    fr.pos[t] = fr.nk[t]
                    continue
                fr.pos[t] = -1
            else:
                i = fr.order[t, fr.pos[t]]
                bound = min(memo.ub[e], fr.cap[t])
                if hier and _reaches(fr.lbsum[t, i], bound):
                    fr.pos[t] = fr.nk[t]
                    continue
                if hier and fr.dF[t, i] > 1:
                    # the false child's bounds first (its memo entry, k-Means included):
                    # the split may fail on them, else the true child gets a tighter cap
                    dd = fr.dF[t, i]
                    _child(P, fr, t, i, _nl(0))
                    s = _find_slot(memo, fr.cwords)
                    ce = _lookup(memo, s, dd)
                    if ce < 0:
                        ce = _entry(P, memo, ctr, s, fr.cwords, fr.cmask, dd)
                    if memo.lb[ce] > fr.lbF[t, i]:
                        fr.lbF[t, i] = memo.lb[ce]
                        fr.lbsum[t, i] = fr.lbT[t, i] + fr.lbF[t, i]
                        if _reaches(fr.lbsum[t, i], bound):
                            fr.pos[t] += 1  # this split only: the order is stale
                            continue
            fr.bound[t] = bound
            fr.phase[t] = TRUE
            fr.cur[t] = i
            side = 1  # the true child first, against the cap its sibling's bound leaves
            capc = bound - fr.lbF[t, i] if hier else np.inf
        else:
            i = fr.cur[t]
            e = fr.eid[t]
            if ph == TRUE:
                fr.lbT[t, i] = max(fr.lbT[t, i], c_lb)
                fr.lbsum[t, i] = fr.lbT[t, i] + fr.lbF[t, i]
                if not c_solved:
                    if stopped:
                        _offer(memo, e, c_ub + fr.leafF[t, i], fr.feat[t, i])
                        fr.completed[t] = 0
                        fr.pos[t] = fr.nk[t]
                    else:
                        fr.pos[t] += 1
                    fr.phase[t] = NEXT
                    continue
                fr.tub[t] = c_ub
                fr.phase[t] = FALSE
                side = 0  # then the false child, against what the true child's tree leaves
                capc = fr.bound[t] - c_ub if hier else np.inf
            else:
                # phase FALSE: the false child's result is in
                fr.lbF[t, i] = max(fr.lbF[t, i], c_lb)
                fr.lbsum[t, i] = fr.lbT[t, i] + fr.lbF[t, i]
                if c_solved or stopped:
                    _offer(memo, e, fr.tub[t] + c_ub, fr.feat[t, i])
                if t == 0:
                    m = np.inf
                    for j in range(fr.nk[0]):
                        m = min(m, fr.lbsum[0, j])
                    fst[0].rootlb = max(memo.lb[e], min(memo.ub[e], m))
                if not c_solved and stopped:
                    fr.completed[t] = 0
                    fr.pos[t] = fr.nk[t]
                else:
                    fr.pos[t] += 1
                fr.phase[t] = NEXT
                continue
        pushed, c_lb, c_ub, c_solved = _solve_child(P, memo, ctr, fst, fr, t, i, _nl(side),
                                                    capc, stopped)
        if pushed:
            t += 1
            if ctr[0].device_call:
                ctr[0].top = t
                return


# ----------------------------------------------------------------------------- Python layer
def _pack(mask_bool_2d):
    """``(k, U)`` bool -> ``(k, nw)`` uint64 (bit ``u % 64`` of word ``u // 64``)."""
    k, U = mask_bool_2d.shape
    nw = max(1, (U + 63) // 64)
    pad = np.zeros((k, nw * 64), dtype=np.uint8)
    pad[:, :U] = mask_bool_2d
    b = np.packbits(pad.reshape(k, nw, 64), axis=2, bitorder="little")  # (k, nw, 8)
    return np.ascontiguousarray(b).view(np.uint64).reshape(k, nw)


def records(dtype, source=None):
    """A one-element record array of ``dtype`` (:data:`COUNTERS`, :data:`CLOCK`), zero or
    with the fields of ``source`` (any record read as ``source[0].name``): the loop's
    scalar state as the compiled engine takes it."""
    rec = np.zeros(1, dtype=dtype).view(np.recarray)
    if source is not None:
        for name in dtype.names:
            rec[0][name] = getattr(source[0], name)
    return rec


def _new_counters():
    """The loop's counters (:data:`COUNTERS`), zero."""
    return records(COUNTERS)


def with_engine(state, engine):
    """``state`` run by ``engine`` from its next step (the arrays are shared; the scalar
    records are converted to the engine's kind)."""
    return state._replace(engine=engine, ctr=engine.records(COUNTERS, state.ctr),
                          fst=engine.records(CLOCK, state.fst))


def _new_memo(cap, nw):
    tcap = 1
    while tcap < 4 * cap:
        tcap *= 2
    i8 = lambda: np.zeros(cap, dtype=np.int64)  # noqa: E731
    return Memo(words=np.zeros((cap, nw), dtype=np.uint64), lev=i8(), feat=i8(),
                solved=i8(), klev=i8(), nxt=np.full(cap, -1, np.int64), lb=np.zeros(cap),
                ub=np.zeros(cap), deep=np.zeros(cap), table=np.full(tcap, -1, np.int64))


def _grow_memo(memo, n, cap, engine):
    new = _new_memo(cap, memo.words.shape[1])
    for name in _MEMO_ROWS:
        getattr(new, name)[:n] = getattr(memo, name)[:n]
    engine.rebuild_table(new, n)
    return new


def _new_frames(D, U, M, nw):
    i8 = lambda *shape: np.zeros(shape, dtype=np.int64)  # noqa: E731
    f8 = np.zeros
    return Frames(words=np.zeros((D, nw), dtype=np.uint64),
                  mask=np.zeros((D, U), dtype=np.bool_), eid=i8(D), nk=i8(D), pos=i8(D),
                  phase=i8(D), cur=i8(D), completed=i8(D), cap=f8(D), bound=f8(D),
                  tub=f8(D), feat=i8(D, M), dT=i8(D, M), dF=i8(D, M), order=i8(D, M),
                  leafT=f8((D, M)), leafF=f8((D, M)), lbT=f8((D, M)), lbF=f8((D, M)),
                  lbsum=f8((D, M)), st=f8((D, 2, M, 6)), tries=i8(M), scratch=i8(M),
                  cmask=np.zeros(U, dtype=np.bool_), cwords=np.zeros(nw, dtype=np.uint64))


def _grow_frames(fr, D):
    U, M, nw = fr.cmask.shape[0], fr.tries.shape[0], fr.cwords.shape[0]
    new = _new_frames(D, U, M, nw)
    old_D = fr.eid.shape[0]
    for name in _FRAME_LEVELS:
        getattr(new, name)[:old_D] = getattr(fr, name)
    new.tries[:] = fr.tries
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
        return Entry(float(m.lb[e]), float(m.ub[e]), int(m.feat[e]),
                     bool(m.solved[e]), int(m.klev[e]), float(m.deep[e]))

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
        return int(self._ref[0].ctr[0].n)


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
                   ys=np.ascontiguousarray(ys, dtype=np.float64),
                   ws=np.ascontiguousarray(ws, dtype=np.float64),
                   cls_s=np.ascontiguousarray(cls_s, dtype=np.int64),
                   lam=float(tp.lam), norm=float(tp.norm), m1=float(tp.m1),
                   look=float(tp.look), kmedians_max=float(KMEDIANS_MAX_VALUES),
                   kl=int(tp.kl), equiv=int(tp.equiv), kmeans=int(tp.use_kmeans),
                   hier=int(tp.hier), l1=int(tp.l1), device=int(device))


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
    ctr = engine.records(COUNTERS)
    ctr[0].maxsteps = -1 if max_steps is None else int(max_steps)
    fst = engine.records(CLOCK)
    fst[0].rate = kernel_rate
    fst[0].deadline = np.inf if time_limit is None else t0 + float(time_limit)
    fst[0].t0 = fst[0].now = t0
    fst[0].bf = solver.BEST_FIRST_AFTER
    fst[0].bftries = solver._BEST_FIRST_TRIES
    w = _pack(mask[None, :])[0]
    r = ctr[0].root = engine.root_entry(P, memo, ctr, w, np.ascontiguousarray(mask),
                                        int(d), float(incumbent))
    fst[0].rootlb = memo.lb[r]
    frames = _new_frames(int(min(max(d, 2), _MAX_FRAMES)) + 1, U, M, nw)
    status = None
    if memo.solved[r]:
        status = Status.OPTIMAL
    elif time_limit is not None and (time_limit <= 0 or time.perf_counter() > t0 + time_limit):
        status = Status.TIME_LIMIT
    if status is not None:
        ctr[0].status = {Status.OPTIMAL: 1, Status.TIME_LIMIT: 2}[status]
    return CompiledState(engine, P, memo, frames, ctr, fst, key, float(memo.lb[r]),
                         status, 0, t0, device, [])


def step(state, chunk=None) -> CompiledState:
    """Up to ``chunk`` subproblem visits of the loop (default: the engine's), growing the
    arrays as asked."""
    P, memo, fr, ctr, fst = state.problem, state.memo, state.frames, state.ctr, state.fst
    engine = state.engine
    chunk = engine.chunk if chunk is None else chunk
    while True:
        engine.run_chunk(P, memo, fr, ctr, fst, chunk)
        if ctr[0].device_call:
            ctr[0].device_call = 0
            L = int(ctr[0].top)
            done = state.device(state._replace(memo=memo, frames=fr), L)
            n, new = int(ctr[0].n), state.pending
            if n + len(new) + 2 * P.X.shape[1] + fr.eid.shape[0] + 8 > memo.lb.shape[0]:
                memo = _grow_memo(memo, n, 2 * (n + len(new)) + 4 * P.X.shape[1]
                                  + 2 * fr.eid.shape[0] + 16, engine)
            for w, lev, en in new:
                engine.insert(memo, ctr, w, lev, en.lb, en.ub, en.feat, int(en.solved),
                              en.klev, en.deep)
            new.clear()
            engine.finish_expansion(P, memo, ctr, fst, fr, L, not done)
            continue
        if not ctr[0].grow:
            break
        n, M = int(ctr[0].n), P.X.shape[1]
        if int(ctr[0].top) + 2 > fr.eid.shape[0]:
            fr = _grow_frames(fr, 2 * fr.eid.shape[0])
        D = fr.eid.shape[0]
        if n + 2 * M + D + 8 > memo.lb.shape[0]:
            memo = _grow_memo(memo, n, max(2 * memo.lb.shape[0], n + 4 * M + 2 * D + 16),
                              engine)
    st = int(ctr[0].status)
    return state._replace(memo=memo, frames=fr, root_lb=float(fst[0].rootlb),
                          status=_STATUS.get(st), steps=int(ctr[0].steps))


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
    for t in range(int(state.ctr[0].top), -1, -1):
        e = int(fr.eid[t])
        nk = int(fr.nk[t])
        lbsum = fr.lbsum[t, :nk].copy()
        i, ph = int(fr.cur[t]), int(fr.phase[t])
        if below is not None and 0 <= i < nk and ph in (TRUE, FALSE):
            if ph == TRUE:
                lbsum[i] = max(fr.lbT[t, i], below) + fr.lbF[t, i]
            else:
                lbsum[i] = fr.lbT[t, i] + max(fr.lbF[t, i], below)
        lb, ub = float(memo.lb[e]), float(memo.ub[e])
        below = max(lb, min(ub, float(lbsum.min()))) if nk else lb
    return float(state.root_lb) if below is None else max(float(state.root_lb), below)


def terminate(state) -> Status | None:
    """``None`` while the search goes on, else why it ended."""
    return state.status


COMPILED = Engine(run_chunk=run_chunk, insert=insert, lookup=lookup,
                  rebuild_table=rebuild_table, feature_lists=feature_lists,
                  finish_expansion=finish_expansion, root_entry=root_entry, records=records,
                  chunk=2048)
"""The compiled engine (numba)."""
