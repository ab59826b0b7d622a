"""The problem record of one tree fit, and what the host computes of one support of it.

:func:`build_problem` turns the binary features, the targets and the weights into a
:class:`TreeProblem`, once per fit: the equivalence classes (unique binary rows, OSRT
section 3.3), their statistics (:mod:`jaxsr.trees.losses`), the normaliser of the
objective and the parameters of the search. Nothing in it changes during the search; the
engine (:mod:`jaxsr.trees.engine`), the greedy incumbent (:mod:`jaxsr.trees.incumbent`),
the tree extraction (:mod:`jaxsr.trees.extraction`) and the device batches
(:mod:`jaxsr.trees.device`) read it.

The functions below compute, on the host, one support's leaf cost, the statistics and leaf
costs of the children of all its splits, its useful levels and its exact shallow subtree,
with the engine's compiled kernels (:mod:`jaxsr.trees.engine`, the record's ``core``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .bounds import equivalent_points_bound, useful_levels
from .losses import (
    STAT_E,
    STAT_N,
    STAT_Q,
    STAT_S,
    STAT_W,
    TargetScale,
    absolute_class_losses,
    absolute_losses,
    class_statistics,
    objective,
    recentre,
    scale_targets,
    stats_loss,
)
from .solver import ALL_BOUNDS

__all__ = [
    "TreeProblem",
    "build_problem",
    "auto_exact_levels",
    "host_exact_levels",
    "host_kernel_bytes",
    "unique_rows",
    "ALL_BOUNDS",
    "sub_stats",
    "leaf_cost",
    "levels",
    "cheap_split_bound",
    "deep_bound",
    "exact_subtree",
    "children",
]

BIG_DEPTH = 1 << 30  # depth_budget=None: the leaf budget caps the levels
ST4 = [STAT_W, STAT_S, STAT_Q, STAT_N]  # the columns the shallow-subtree kernel reads


class TreeProblem(NamedTuple):
    """One fit's data and parameters, in the search's internal units (see
    :mod:`jaxsr.trees.losses`: targets scaled into ``[-1, 1]``, weights divided by their
    maximum, both by powers of two).

    Parameters: ``l1`` (absolute loss), ``lam`` (lambda per leaf), ``m1`` (least samples
    per leaf), ``depth`` (levels; :data:`BIG_DEPTH` without a budget), ``kl`` (split
    levels solved by the shallow-subtree kernel), ``look`` (leaves of a tree that splits
    in the cheap bounds: 2 with the lookahead bound, Theorem 3.2, else 1), ``equiv``,
    ``use_kmeans``, ``hier`` (the bounds used).

    Samples (``n``): ``y``, ``w`` internal targets and weights, ``y_raw`` the targets as
    given, ``scale`` the :class:`~jaxsr.trees.losses.TargetScale`, ``inv`` ``(n,)`` int64
    each sample's class. Absolute loss only (else None): ``ys``, ``ws`` ``(n,)`` the
    targets sorted ascending and their weights, ``cls_s`` their classes, ``Xsamp``
    ``(n, M)`` bool their feature rows.

    Classes (``U`` of them, ``M`` binary features): ``Xc_bool`` ``(U, M)`` bool, ``Xc``
    the same as float64, ``Xu8`` as uint8, ``XcT`` ``(M, U)`` bool; ``stats`` ``(U, 6)``
    float64 (columns of :mod:`jaxsr.trees.losses`), ``cls_mean`` ``(U,)`` their mean
    targets, ``Wc``, ``Ec``, ``Nc`` contiguous copies of the weight, equivalence loss and
    sample count columns, ``st4`` ``(U, 4)`` the columns ``W, S, Q, N``; ``korder``
    ``(U,)`` int64 the classes by increasing mean (the k-means order).

    Normaliser: ``total_loss`` the one-leaf loss (internal units), ``norm`` the divisor of
    the loss in the objective, ``root_leaf_loss = total_loss / norm``.

    ``core``: the engine's copy of the record (:func:`jaxsr.trees.engine.problem_of`).
    """

    l1: bool
    lam: float
    m1: int
    depth: int
    kl: int
    look: int
    equiv: bool
    use_kmeans: bool
    hier: bool
    n: int
    M: int
    U: int
    y: np.ndarray
    w: np.ndarray
    y_raw: np.ndarray
    scale: TargetScale
    inv: np.ndarray
    ys: np.ndarray | None
    ws: np.ndarray | None
    cls_s: np.ndarray | None
    Xsamp: np.ndarray | None
    Xc_bool: np.ndarray
    Xc: np.ndarray
    Xu8: np.ndarray
    XcT: np.ndarray
    stats: np.ndarray
    cls_mean: np.ndarray
    Wc: np.ndarray
    Ec: np.ndarray
    Nc: np.ndarray
    st4: np.ndarray
    korder: np.ndarray
    total_loss: float
    norm: float
    root_leaf_loss: float
    core: object = None


HOST_KERNEL_WORK = 2e9  # additions of one host kernel call on every class (~2 s)


def host_kernel_bytes(U: int, M: int) -> float:
    """Bytes of one call of the engine's terminal solver (C++, :mod:`jaxsr.trees.engine`)
    on ``U`` classes and ``M`` binary features: the classes' rows, their lists of set
    columns and their statistics (``U (9 M + 56)``), and the single, pair and triple sums
    (``96 M^2``)."""
    return float(U) * (9.0 * M + 56.0) + 96.0 * float(M) ** 2


def host_exact_levels(U: int, M: int, budget_bytes: float = 6e8) -> int:
    """The shallow-kernel depth (1-3 split levels) of the host engine for ``U`` classes and
    ``M`` binary features.

    The engine's terminal solver takes each column of a support the way round with fewer
    ones, so a class adds at most ``C(h, 3)`` triple (``C(h, 2)`` pair) sums, ``h =
    ceil(M / 2)``: 3 levels while ``U C(h, 3)`` and the octants of every triple of
    features (``50 C(M, 3)``) stay within :data:`HOST_KERNEL_WORK` and ``480 M^3`` within
    ``budget_bytes``; 2 while ``U C(h, 2) + 50 M^2`` does; each while
    :func:`host_kernel_bytes` fits in ``budget_bytes``; else 1. (The device's kernels hold
    ``U x M x M`` arrays: :func:`auto_exact_levels`.)"""
    if host_kernel_bytes(U, M) > budget_bytes:
        return 1
    h = (M + 1) // 2
    if (
        U * math.comb(h, 3) + 50.0 * math.comb(M, 3) <= HOST_KERNEL_WORK
        and 480.0 * float(M) ** 3 <= budget_bytes
    ):
        return 3
    if U * math.comb(h, 2) + 50.0 * M * M <= HOST_KERNEL_WORK:
        return 2
    return 1


def auto_exact_levels(U: int, M: int, budget_bytes: float = 6e8) -> int:
    """The largest shallow-kernel depth (1-3 split levels) whose work arrays for ``U``
    classes and ``M`` binary features fit in ``budget_bytes`` as the device's kernels
    hold them (:mod:`jaxsr.trees.device`: ``U x M x M`` for 3 levels); the host engine's
    choice is :func:`host_exact_levels`."""
    if 8.0 * (U * M * M + 60.0 * M**3) <= budget_bytes:
        return 3
    if 8.0 * (U * M * 4 + 60.0 * M**2) <= budget_bytes:
        return 2
    return 1


def unique_rows(packed):
    """``np.unique(packed, axis=0, return_inverse=True)`` of ``(n, b)`` uint8 rows, the
    same order (lexicographic in the bytes), 5-30x faster: the rows are compared as one
    big-endian uint64 each when ``b <= 8`` (at most 64 binary features), else as ``b``-byte
    void scalars (``axis=0`` builds a structured dtype of ``b`` fields, ~0.7 ms at 557 x
    2 bytes, which dominated a depth-3 fit). Returns ``(uniq (U, b), inverse (n,))``."""
    packed = np.ascontiguousarray(packed, dtype=np.uint8)
    n, b = packed.shape
    if b <= 8:
        key = np.zeros(n, dtype=np.uint64)
        for j in range(b):
            key = (key << np.uint64(8)) | packed[:, j].astype(np.uint64)
    else:
        key = packed.view(np.dtype((np.void, b))).reshape(n)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return packed[first], np.asarray(inv).reshape(-1)


def build_problem(
    X,
    y,
    w,
    *,
    loss="squared_error",
    regularization=0.01,
    normalize=True,
    depth_budget=5,
    min_samples_leaf=1,
    bounds=ALL_BOUNDS,
    exact_levels=None,
    host=True,
) -> TreeProblem:
    """The :class:`TreeProblem` of a fit (arguments as
    :class:`~jaxsr.trees.search.OptimalTreeSearch`; ``host``: ``exact_levels=None`` picks
    the levels for the host engine, :func:`host_exact_levels`, else for the device's
    kernels, :func:`auto_exact_levels`).

    Raises:
      ValueError: ``normalize=False`` and the spread of ``y`` puts the mean loss outside
        the float64 range.
    """
    l1 = loss == "absolute_error"
    bounds = frozenset(bounds)
    X = np.asarray(X, dtype=bool)
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    n, M = X.shape
    # internal targets in [-1, 1], weights / max weight (exact powers of two)
    t, wi, scale = scale_targets(y, w)

    # equivalence classes = unique binary rows
    packed = np.packbits(X, axis=1)
    uniq, inv = unique_rows(packed)
    U = uniq.shape[0]
    Xc_bool = np.unpackbits(uniq, axis=1, count=M).astype(bool)  # (U, M)
    st, cls_mean = class_statistics(inv, t, wi, U)

    ys = ws = cls_s = Xsamp = None
    if l1:  # samples sorted by y (the sort is ~0.2 s at 2e6 samples: absolute loss only)
        order = np.argsort(t, kind="stable")
        ys, ws, cls_s = t[order], wi[order], np.ascontiguousarray(inv[order], dtype=np.int64)
        st[:, STAT_E] = absolute_class_losses(ys, ws, cls_s, U)
        Xsamp = Xc_bool[cls_s]  # (n, M) in y order

    # normaliser (internal units); a constant target has no loss: one leaf is optimal
    if scale.constant:
        total_loss = 0.0
    elif l1:
        total_loss = float(absolute_losses(ys, ws[:, None])[0][0])
    else:
        total_loss = float(stats_loss(st.sum(0)))
    if normalize:
        norm = total_loss if total_loss > 0 else 1.0
    else:
        # the mean loss in y units: loss_y / sum(w) = loss_int / (wsum_int 2^(-p E))
        p = 1 if l1 else 2
        with np.errstate(over="ignore", under="ignore"):
            norm = float(np.ldexp(float(wi.sum()), -p * scale.exponent))
        if not (np.isfinite(norm) and norm >= np.finfo(np.float64).tiny):
            what = "overflows" if norm < 1.0 else "underflows"
            raise ValueError(
                f"normalize=False measures the loss in units of y{'^2' if p == 2 else ''}"
                f", and the spread of y (about 2^{scale.exponent}) {what} the "
                "float64 range there. Use normalize=True (a scale-free objective) or "
                "rescale y."
            )

    if l1:
        kl = 0
    elif exact_levels is None:
        kl = host_exact_levels(U, M) if host else auto_exact_levels(U, M)
    else:
        kl = int(exact_levels)
    tp = TreeProblem(
        l1=l1,
        lam=float(regularization),
        m1=max(1, int(min_samples_leaf)),
        depth=BIG_DEPTH if depth_budget is None else int(depth_budget),
        kl=kl,
        look=2 if "lookahead" in bounds else 1,
        equiv="equivalent" in bounds,
        use_kmeans="kmeans" in bounds,
        hier="hierarchical" in bounds,
        n=n,
        M=M,
        U=U,
        y=t,
        w=wi,
        y_raw=y,
        scale=scale,
        inv=inv,
        ys=ys,
        ws=ws,
        cls_s=cls_s,
        Xsamp=Xsamp,
        Xc_bool=Xc_bool,
        Xc=Xc_bool.astype(np.float64),
        Xu8=np.ascontiguousarray(Xc_bool, dtype=np.uint8),
        XcT=np.ascontiguousarray(Xc_bool.T),
        stats=st,
        cls_mean=cls_mean,
        Wc=np.ascontiguousarray(st[:, STAT_W]),
        Ec=np.ascontiguousarray(st[:, STAT_E]),
        Nc=np.ascontiguousarray(st[:, STAT_N]),
        st4=np.ascontiguousarray(st[:, ST4]),
        korder=np.argsort(cls_mean, kind="stable").astype(np.int64),
        total_loss=total_loss,
        norm=norm,
        root_leaf_loss=total_loss / norm,
    )
    from . import engine

    return tp._replace(core=engine.problem_of(tp))


# ---------------------------------------------------------------------- one support
def sub_stats(P: TreeProblem, idx):
    """Class statistics ``(k, 6)`` of a support's classes ``idx``; for squared loss
    re-centred on the support's own mean (:func:`~jaxsr.trees.losses.recentre`: the losses
    of its subsets then round relative to its own spread)."""
    st = P.stats[idx]
    return st if P.l1 else recentre(st, P.cls_mean[idx])


def leaf_cost(P: TreeProblem, mask) -> float:
    """Objective of one leaf on the support ``mask`` ``(U,)`` bool (the engine's task)."""
    from . import engine

    return objective(engine.leaf_loss(P.core, mask), P.norm, P.lam)


def levels(P: TreeProblem, d, st, leaf) -> int:
    """The levels a subtree on a support of statistics ``st`` ``(6,)`` and leaf cost
    ``leaf`` can use, at most ``d`` (:func:`~jaxsr.trees.bounds.useful_levels`)."""
    return int(useful_levels(d, st, leaf, P.lam, P.norm, P.m1, P.equiv))


def cheap_split_bound(P: TreeProblem, st):
    """Equivalent points bound of the trees that split (Theorem 3.3, with the lookahead
    of Theorem 3.2 when used), of statistics ``st`` ``(..., 6)``."""
    if P.equiv:
        return equivalent_points_bound(st, P.lam, P.norm, leaves=P.look)
    return np.full(st.shape[:-1], P.look * P.lam)


def deep_bound(P: TreeProblem, st):
    """Equivalent points bound of the trees with at least ``kl + 2`` leaves (those the
    shallow kernel with ``kl`` split levels does not cover)."""
    if P.equiv:
        return equivalent_points_bound(st, P.lam, P.norm, leaves=P.kl + 2)
    return np.full(st.shape[:-1], P.lam * (P.kl + 2))


def exact_subtree(P: TreeProblem, mask, split_levels):
    """Exact best tree with at most ``split_levels`` (1-3) split levels on ``mask``
    (squared loss): ``(objective, root feature)`` (the engine's terminal solver,
    :func:`jaxsr.trees.engine.subtree`)."""
    from . import engine

    c, f = engine.subtree(P.core, mask, int(split_levels), P.lam * P.norm)
    return float(c / P.norm), int(f)


def children(P: TreeProblem, mask):
    """The children of every distinct admissible split of the support ``mask``.

    Returns ``(F, a, comp, leafT, leafF)``: ``F`` ``(k,)`` int the split features (one per
    distinct split: equal or complementary columns make the same two children,
    :func:`jaxsr.trees.engine.splits`; both children with at least
    ``min_samples_leaf`` samples), ``a``, ``comp`` ``(k, 6)`` the statistics of the
    "true" and "false" children, ``leafT``, ``leafF`` ``(k,)`` their leaf costs.
    """
    idx = np.flatnonzero(mask)
    st = sub_stats(P, idx)
    tot = st.sum(0)
    a = P.Xc[idx].T @ st  # (M, s): the "true" children
    comp = tot[None, :] - a
    ok = (a[:, STAT_N] >= P.m1) & (comp[:, STAT_N] >= P.m1)
    from . import engine

    keep = engine.splits(P.core, mask)
    F = keep[ok[keep]]
    a, comp = a[F], comp[F]
    if P.l1:
        lt, lf = engine.absolute_split_losses(P.core, mask, F)
    else:
        lt, lf = stats_loss(a), stats_loss(comp)
    return F, a, comp, objective(lt, P.norm, P.lam), objective(lf, P.norm, P.lam)
