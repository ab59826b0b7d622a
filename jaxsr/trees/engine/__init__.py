"""The search's engine: one branch and bound over subproblems (OSRT section 4), compiled
ahead of time (C++17, nanobind; built with the package by scikit-build-core).

The C++ sources in this folder are laid out by idea, as STreeD's ``src/``:

==================  ========================================================================
``search``          the one branch and bound (depth first, GOSDT / MurTree style), the
                    frontier stack, ``init`` / ``step`` / terminate with a status
``cache``           the memo: bit-packed supports in an open-addressing table, one chain of
                    entries (levels) per support
``terminal``        exact best subtrees with 1-3 split levels (squared loss), the distinct
                    splits of a support
``kmeans``          the 1-D k-means / k-medians DP (Algorithm 1) with the early stop of
                    Theorem 3.7
``bounds``          equivalent points (Theorem 3.3), lookahead (3.2), k-Means (3.5), the
                    useful levels and the leaf budget of a support
``tasks/squared``,  the losses as tasks: a leaf's loss, the children's losses of every
``tasks/absolute``  split, a new subproblem's leaf and bounds
``stumps``          the best least-squares stump over presorted columns: one stage of the
                    boosted reference ensemble of the ``"gbdt"`` binarizer
==================  ========================================================================

This module is the Python side: :func:`problem_of` (the engine's copy of a
:class:`~jaxsr.trees.problem.TreeProblem`), :func:`init`, :func:`step`, :func:`terminate`,
:class:`MemoView` (the memo as a mapping for the extraction and the device path) and
the kernels as functions (:func:`subtree`, :func:`splits`, :func:`leaf_loss`,
:func:`absolute_split_losses`, :func:`kmeans_losses`, :func:`kmedians_losses`,
:func:`subtree_splits`, :func:`best_stump`). Arrays are checked and converted here before
they reach the extension.
"""

from __future__ import annotations

import time
from importlib import import_module
from typing import NamedTuple

import numpy as np

from .. import solver
from ..solver import Entry, Status

_core = import_module(f"{__name__}._core")  # the compiled extension (no stub)

__all__ = [
    "State",
    "problem_of",
    "init",
    "step",
    "terminate",
    "live_lower_bound",
    "MemoView",
    "subtree",
    "splits",
    "leaf_loss",
    "support_bounds",
    "absolute_split_losses",
    "kmeans_losses",
    "kmedians_losses",
    "subtree_splits",
    "best_stump",
    "pack",
    "CHUNK",
]

CHUNK = 2048  # subproblem visits per :func:`step` (progress lines between steps)
KMEDIANS_MAX_VALUES = 20000  # the most distinct targets of a k-medians bound
_STATUS = {1: Status.OPTIMAL, 2: Status.TIME_LIMIT, 3: Status.NODE_LIMIT}


def pack(masks):
    """``(k, U)`` bool -> ``(k, nw)`` uint64 supports (bit ``u % 64`` of word ``u // 64``)."""
    masks = np.asarray(masks, dtype=bool)
    k, U = masks.shape
    nw = max(1, (U + 63) // 64)
    pad = np.zeros((k, nw * 64), dtype=np.uint8)
    pad[:, :U] = masks
    b = np.packbits(pad.reshape(k, nw, 64), axis=2, bitorder="little")
    return np.ascontiguousarray(b).view(np.uint64).reshape(k, nw)


def _u8(mask):
    return np.ascontiguousarray(mask, dtype=bool).view(np.uint8)


def _f8(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _i8(a):
    return np.ascontiguousarray(a, dtype=np.int64)


def problem_of(tp):
    """The engine's copy of the :class:`~jaxsr.trees.problem.TreeProblem` ``tp`` (class
    rows, packed columns, class statistics, sorted samples for absolute loss, parameters).

    Raises:
      ValueError: arrays of inconsistent shapes or parameters out of range.
    """
    X = np.ascontiguousarray(tp.Xc_bool, dtype=np.uint8)
    if tp.l1:
        ys, ws, cls_s = _f8(tp.ys), _f8(tp.ws), _i8(tp.cls_s)
    else:
        ys, ws, cls_s = np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    if not (tp.lam >= 0 and np.isfinite(tp.lam) and tp.norm > 0 and 0 <= tp.kl <= 3):
        raise ValueError(
            "the tree search needs lambda >= 0, a positive normaliser and 0-3 exact levels"
        )
    return _core.make_problem(
        X,
        pack(tp.XcT),
        _f8(tp.Wc),
        _f8(tp.cls_mean),
        _f8(tp.Ec),
        _f8(tp.Nc),
        _i8(tp.korder),
        ys,
        ws,
        cls_s,
        float(tp.lam),
        float(tp.norm),
        float(tp.m1),
        float(tp.look),
        float(KMEDIANS_MAX_VALUES),
        int(tp.kl),
        bool(tp.equiv),
        bool(tp.use_kmeans),
        bool(tp.hier),
        bool(tp.l1),
    )


class State(NamedTuple):
    """The search at the Python boundary. ``search`` the extension's search (its memo and
    frontier live there); ``root_key``, ``root_lb``, ``status``, ``steps``, ``t0`` as in
    :class:`~jaxsr.trees.search.SearchResult`; ``device``: None, or ``device(state, L)``
    evaluates the children of the expansion of level ``L`` on the device, writes their
    entries through :class:`MemoView` (queued in ``pending``) and returns whether it
    evaluated all of them."""

    search: object
    tree_problem: object
    root_key: tuple
    root_lb: float
    status: Status | None
    steps: int
    t0: float
    device: object = None
    pending: list | None = None

    @property
    def kernel_calls(self) -> int:
        return int(self.search.kernel_calls)

    @property
    def kmeans(self) -> int:
        return int(self.search.kmeans)


def init(
    problem,
    root,
    incumbent=np.inf,
    time_limit=None,
    max_steps=None,
    t0=None,
    device=None,
    kernel_rate=3e-8,
) -> State:
    """The search of the :class:`~jaxsr.trees.problem.TreeProblem` ``problem`` from the
    root ``(key, mask, d)`` (all classes, ``d`` levels): its memo entry (its leaf and
    bounds; its best tree the greedy incumbent, objective ``incumbent``, when that is
    better; solved at once when the bounds meet), the time limit counted from ``t0``
    (``time.perf_counter()``; a deadline already past stops before anything is expanded),
    ``max_steps`` subproblem visits at most, ``device`` as in :class:`State`."""
    key, mask, d = root
    if not np.all(mask):
        raise ValueError("the engine's root is the support of every class")
    t0 = time.perf_counter() if t0 is None else t0
    core = problem.core
    elapsed = time.perf_counter() - t0
    left = np.inf if time_limit is None else float(time_limit) - elapsed
    s = _core.Search(
        core,
        int(d),
        float(incumbent),
        left,
        elapsed,
        -1 if max_steps is None else int(max_steps),
        float(kernel_rate),
        solver.BEST_FIRST_AFTER,
        float(solver._BEST_FIRST_TRIES),
        device is not None,
    )
    return State(s, problem, key, float(s.root_lb), _STATUS.get(int(s.status)), 0, t0, device, [])


def step(state, chunk=CHUNK) -> State:
    """Up to ``chunk`` subproblem visits (the device's calls in between)."""
    s = state.search
    code = s.step(int(chunk))
    while s.device_call:
        L = int(s.top)
        done = state.device(state, L)
        for w, lev, en in state.pending:
            s.insert(w, lev, en.lb, en.ub, en.feat, bool(en.solved), en.klev, en.deep)
        state.pending.clear()
        s.resume(L, not done)
        code = s.step(int(chunk))
    return state._replace(
        root_lb=float(s.root_lb), status=_STATUS.get(int(code)), steps=int(s.steps)
    )


def terminate(state) -> Status | None:
    """``None`` while the search goes on, else why it ended."""
    return state.status


def live_lower_bound(state) -> float:
    """The root's proven lower bound now, bottom up through the frontier (every
    children's bound of a frame bounds every tree on that child, so the least bound sum
    over a subproblem's splits, with its best tree, bounds it; the top frame's bound
    replaces its parent's awaited child's, and so on down to the root)."""
    return float(state.search.live_lower_bound())


_REVERSED_BITS = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


class MemoView:
    """The engine's memo seen as a mapping ``(np.packbits(mask) bytes, levels) -> Entry``
    (what the tree extraction, the device's batches and progress lines read); setting an
    item queues a device's entry, which :func:`step` inserts."""

    def __init__(self, state_ref):
        self._ref = state_ref  # a one-element list holding the current State

    def _words(self, key_bytes):
        """``np.packbits(mask)`` bytes (big-endian bits) -> the :func:`pack` words."""
        b = _REVERSED_BITS[np.frombuffer(key_bytes, np.uint8)]
        nw = int(self._ref[0].search.n_words)
        out = np.zeros(nw * 8, dtype=np.uint8)
        out[: b.size] = b
        return out.view(np.uint64)

    def _id(self, key):
        return int(self._ref[0].search.lookup(self._words(key[0]), int(key[1])))

    def get(self, key, default=None):
        e = self._id(key)
        if e < 0:
            return default
        lb, ub, feat, solved, klev, deep = self._ref[0].search.entry(e)
        return Entry(float(lb), float(ub), int(feat), bool(solved), int(klev), float(deep))

    def __getitem__(self, key):
        e = self.get(key)
        if e is None:
            raise KeyError(key)
        return e

    def __contains__(self, key):
        return self._id(key) >= 0

    def __setitem__(self, key, entry):
        self._ref[0].pending.append((self._words(key[0]), int(key[1]), entry))

    def __len__(self):
        return int(self._ref[0].search.n_entries)


# ----------------------------------------------------------------------------- kernels
def subtree(core, mask, levels, lamn):
    """Exact best tree with at most ``levels`` (1-3) split levels on the support ``mask``
    ``(U,)`` bool, squared loss (the terminal solver; statistics re-centred on the
    support's mean; near-ties to the leaf, then the lowest feature). ``lamn``: lambda
    times the normaliser. Returns ``(cost in loss units, root feature or -1)``."""
    c, f = _core.subtree(core, _u8(mask), int(levels), float(lamn))
    return float(c), int(f)


def splits(core, mask):
    """``(k,)`` int64: the lowest feature of each distinct split of the support ``mask``
    that is not constant on it (equal or complementary columns split alike)."""
    return _core.splits(core, _u8(mask))


def leaf_loss(core, mask):
    """The loss of one leaf on the support ``mask`` (internal units; the problem's loss)."""
    return float(_core.leaf_loss(core, _u8(mask)))


def support_bounds(core, mask, d):
    """A new subproblem's ``(leaf loss, split bound, deep bound, k-means bounds
    computed)`` with ``d`` levels on the support ``mask`` (the problem's task: leaf in
    internal units, the bounds in objective units: equivalent points, Theorem 3.3, with
    the lookahead, 3.2, and the k-Means / k-medians bound, 3.5 and 3.7)."""
    leaf, b, deep, n = _core.support_bounds(core, _u8(mask), int(d))
    return float(leaf), float(b), float(deep), int(n)


def absolute_split_losses(core, mask, F):
    """Absolute losses ``(lossT (k,), lossF (k,))`` of the two children of the splits
    ``F`` ``(k,)`` of the support ``mask`` (internal units)."""
    return _core.absolute_split_losses(core, _u8(mask), _i8(F))


def kmeans_losses(W, S, Q, max_clusters, stop_gain=None):
    """Constrained 1-D k-means losses of ``1, 2, ...`` clusters of items sorted by mean
    (``W, S, Q`` ``(n,)`` float64), at most ``max_clusters``; with ``stop_gain`` the DP
    stops after the first ``k`` whose gain is at most it (Theorem 3.7)."""
    return _core.kmeans_losses(
        _f8(W),
        _f8(S),
        _f8(Q),
        int(max(1, max_clusters)),
        0.0 if stop_gain is None else float(stop_gain),
        stop_gain is not None,
    )


def kmedians_losses(values, weights, max_clusters, stop_gain=None):
    """Weighted 1-D k-medians losses of ``1, 2, ...`` clusters of ``values`` ``(n,)``
    sorted ascending (the DP of :func:`kmeans_losses`)."""
    return _core.kmedians_losses(
        _f8(values),
        _f8(weights),
        int(max(1, max_clusters)),
        0.0 if stop_gain is None else float(stop_gain),
        stop_gain is not None,
    )


def subtree_splits(X, st, levels, lamn, m1):
    """The terminal solver on classes ``X`` ``(U, M)`` 0/1 with statistics ``st``
    ``(U, 4)`` (``W, S, Q, N``): ``(leaf cost, (M,) cost of the best tree per root
    feature)``, loss units, inf where a side has fewer than ``m1`` samples."""
    leaf, split = _core.subtree_splits(
        np.ascontiguousarray(X, dtype=np.uint8), _f8(st), int(levels), float(lamn), float(m1)
    )
    return float(leaf), split


def best_stump(order, cand, g, w, S, Wt):
    """The best least-squares stump over presorted columns (one stage of the boosted
    reference ensemble of :class:`~jaxsr.trees.Binarizer`, ``strategy="gbdt"``).

    Args:
      order: ``(p, n)`` int64, each column's sample order. cand: ``(p, n - 1)`` bool, a
        split after sorted position ``q`` (the first ``q + 1`` samples left) is allowed.
      g: ``(n,)`` float64 weighted residuals. w: ``(n,)`` float64 weights. S, Wt: their sums.

    Returns:
      ``(score, feature, pos, S_L, W_L)``: the largest ``S_L^2 / W_L + S_R^2 / W_R``, the
      first in column order then position order; ``feature = -1`` where no split is allowed.

    Raises:
      ValueError: inconsistent shapes or sample indices out of range.
    """
    score, f, q, sl, wl = _core.best_stump(
        _i8(order), _u8(cand), _f8(g), _f8(w), float(S), float(Wt)
    )
    return float(score), int(f), int(q), float(sl), float(wl)
