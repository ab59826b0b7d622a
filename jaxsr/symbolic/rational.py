"""Rational starting structures: a linear-in-parameters fit of ``y = P(x) / Q(x)``.

Beyond the paper. The searches of section 2 grow one tree by single-node replacements, each
of which must lower the training MSE on its own. A quotient whose denominator is a sum
(``x1*x2/(x1 + x2 + x3)``, a saturating response ``a*x/(b + x)``, a harmonic combination
``1/(1/x1 + 1/x2)``, a divider ``x1*x3/(x1 + x2)``) is not reachable that way: each partial
denominator (``x1*x2/x1``, ``x1*x2/(x1 + x2)``) is a worse model than the polynomial or
rational approximation the greedy and beam paths build instead, and every node of a
denominator added later moves all of the tree's other terms. Both searches of the default
schedule then run to ``max_nodes`` with 40-node approximations.

The family has a structure the searches do not use: ``y = P/Q`` with ``P`` and ``Q`` sums of
monomials is **linear in the coefficients** once multiplied out,

    y * Q(x) - P(x) = sum_j c_j y t_j(x) - sum_i a_i s_i(x) = 0,

over monomials ``s_i`` (numerator) and ``t_j`` (denominator) of small degree. For a given
support the coefficients minimise the residual relative to the size of the denominator on
the data, ``||y Q - P|| / ||Q||`` (the numerator by least squares, the denominator by the
least right singular vector of the projected ``y t_j`` columns; an exact law makes it 0).
Normalising by ``||Q||`` rather than by ``||(c, a)||`` (plain total least squares) keeps
noisy data from rewarding a denominator that is small on the rows, and a denominator
without a constant term, ``x1 + x2 + x3``, is found as well as ``1 + 0.3*x2*x3``. Which
monomials take part is found by backward elimination: from the full library of a degree
pair ``(deg P, deg Q)``, the term whose removal leaves the smallest relative residual is
removed, one at a time, down to one term on each side (on the ``p x p`` triangular factor
of the column-scaled library, so no step touches the ``N`` rows); every support on the way
is a candidate. Each candidate's coefficients are then refitted on all rows, reweighted
twice by ``1/|Q|`` (Sanathanan and Koerner's iteration: the residual ``y Q - P = Q (y -
P/Q)`` weights each row by ``|Q|``; dividing by the previous ``|Q|`` makes it the residual
of the model), built as a tree (:func:`rational_tree`: the denominator normalised on its
highest-degree term, coefficients within ``1e-9`` of 1 dropped) and scored by its true MSE
and the Bayesian information criterion of the fit
(:func:`~jaxsr.symbolic.front.information_criterion`).

The degree pairs run from low to high (:data:`DEGREE_PAIRS`), until one holds a candidate
at the rounding floor (:func:`~jaxsr.symbolic.front.loss_floor`); a pair of more columns
than :data:`MAX_COLUMNS` is skipped. On noise-free data of a law in the family, the lowest
pair that holds it has a one-dimensional null space and the path passes through the law's
exact support; columns that are linear combinations of lower-degree ones on the data
(``x**2 = x`` for a 0/1 column, a duplicated feature) are left out of each library first,
so no spurious null vector appears. A candidate whose denominator changes sign on the rows
or comes within :data:`POLE_MARGIN` of zero (relative to its largest value) is refused.

The estimator (:class:`~jaxsr.symbolic.regressor.SymbolicRegressor`, ``rational_start``)
uses the best candidate that meets its ``domain`` rule as a starting structure: the first
search of its schedule runs from it (as from an ``initial_expression``), refining its
constants by the node equations, growing or pruning it; when it is not exact the searches
of the schedule then run from the mean as before, and the backward elimination and the
selection see every search's models.
Deterministic: fixed orders everywhere, ties broken by the lower index.
"""

from __future__ import annotations

import itertools
import math
import time
from typing import NamedTuple

import numpy as np

from .expression import Expression
from .front import information_criterion, loss_floor

__all__ = [
    "DEGREE_PAIRS",
    "MAX_COLUMNS",
    "POLE_MARGIN",
    "TRIES",
    "RationalCandidate",
    "monomials",
    "rational_candidates",
    "rational_tree",
]

DEGREE_PAIRS = ((1, 0), (1, 1), (2, 1), (1, 2), (2, 2), (3, 2))
"""``(deg P, deg Q)`` of the libraries tried, in order: linear, linear over linear (the
saturating response), quadratic over linear (harmonic means, dividers), linear over
quadratic, quadratic over quadratic, cubic over quadratic (the harmonic combination of
three). A monomial of degree ``d`` is a product of ``d`` features (powers included)."""

MAX_COLUMNS = 48
"""Largest library (numerator plus denominator monomials) that is searched: the backward
elimination takes ``p**2`` small factorisations of at most ``2p x p`` for ``p`` columns."""

POLE_MARGIN = 1e-6
"""A candidate's ``|Q|`` must stay above this fraction of its largest value on every row."""

TRIES = 4
"""Candidates, best first, tried against the ``domain`` rule for a starting structure."""

SNAP = 1e-9
"""Relative distance from 1 under which a coefficient is dropped from the tree."""

UNIT = 0.05
"""Coefficients (``Q`` normalised on its longest term) within this relative distance of
+-1 are also tried fixed at +-1, the others refitted (:func:`_unit_snapped`): the
criterion then chooses between the two trees."""

REWEIGHTS = 2
"""Sanathanan-Koerner reweightings of each candidate's coefficients."""


class RationalCandidate(NamedTuple):
    """One rational model ``P/Q`` found by :func:`rational_candidates`.

    Attributes:
      expression: :class:`Expression` over the columns of ``X``.
      mse: float, its (weighted) training MSE (``inf`` beyond the float range).
      criterion: float, ``n log(max(mse, floor)) + nodes log(n)``.
      degrees: ``(deg P, deg Q)`` of the library it came from.
      numerator, denominator: ``(k, M)`` int exponents of its monomials.
    """

    expression: Expression
    mse: float
    criterion: float
    degrees: tuple[int, int]
    numerator: np.ndarray
    denominator: np.ndarray


def monomials(m: int, degree: int) -> np.ndarray:
    """Exponents ``(k, m)`` (int) of every monomial of ``m`` features of total degree at
    most ``degree``, by degree, then lexicographically on the features used (the constant
    first). ``k = C(m + degree, degree)``."""
    rows = [np.zeros(m, np.int64)]
    for d in range(1, degree + 1):
        for combo in itertools.combinations_with_replacement(range(m), d):
            e = np.zeros(m, np.int64)
            for j in combo:
                e[j] += 1
            rows.append(e)
    return np.array(rows, np.int64).reshape(-1, m)


def _columns(X: np.ndarray, exps: np.ndarray) -> np.ndarray:
    out = np.ones((X.shape[0], exps.shape[0]))
    for k, e in enumerate(exps):
        for j in np.flatnonzero(e):
            out[:, k] *= X[:, j] ** int(e[j])
    return out


def _independent(cols: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Indices of the columns (in order) that are not linear combinations of the earlier
    kept ones: modified Gram-Schmidt with a relative tolerance."""
    keep, basis = [], []
    for k in range(cols.shape[1]):
        c = cols[:, k].copy()
        norm0 = float(np.linalg.norm(c))
        if not np.isfinite(norm0) or norm0 == 0.0:
            continue
        for q in basis:
            c -= q * float(q @ c)
        for q in basis:  # twice is enough (Kahan)
            c -= q * float(q @ c)
        norm = float(np.linalg.norm(c))
        if norm > tol * norm0:
            keep.append(k)
            basis.append(c / norm)
    return np.array(keep, np.int64)


def _relative_residual(R, jy, jp, jt):
    """``min_c ||y Q - P||**2 / ||Q||**2`` over the support (``Q = T c`` on the
    denominator columns, ``P`` the least-squares numerator on the numerator columns), from
    the triangular factor ``R`` of the weighted, column-scaled ``[y T, S, T]``: the columns
    ``jy`` (``y t_j``), ``jp`` (``s_i``), ``jt`` (``t_j``, the same ``j`` as ``jy``).
    Returns ``(value, u)``, ``c = solve(R_t, u)`` left to the caller; ``(inf, None)``
    when the support's denominator columns are dependent."""
    Y, S, T = R[:, jy], R[:, jp], R[:, jt]
    qt, rt = np.linalg.qr(T)
    d = np.abs(np.diag(rt))
    if not d.size or d.min() <= 1e-12 * d.max():
        return np.inf, None, None
    Yt = np.linalg.solve(rt.T, Y.T).T  # Y @ inv(rt)
    if S.shape[1]:
        qs, _ = np.linalg.qr(S)
        Yt = Yt - qs @ (qs.T @ Yt)
    _, sv, vt = np.linalg.svd(Yt, full_matrices=False)
    return float(sv[-1] ** 2), vt[-1], rt


def _backward_path(
    R: np.ndarray, n_den: int, n_num: int, degree: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Supports ``(denominator terms, numerator terms)`` from the full library down to one
    term on each side: each step removes the term whose removal leaves the smallest
    relative residual (:func:`_relative_residual`; ties: the higher degree, then the later
    term). ``degree``: ``(n_den + n_num,)`` the degree of each term, denominator first."""
    support = list(range(n_den + n_num))
    path = []

    def split(sup):
        q = np.array([j for j in sup if j < n_den], np.int64)
        p = np.array([j - n_den for j in sup if j >= n_den], np.int64)
        return q, p

    def value(sup):
        q, p = split(sup)
        return _relative_residual(R, q, n_den + p, n_den + n_num + q)[0]

    path.append(split(support))
    while len(support) > 2:
        best = None
        for pos, j in enumerate(support):
            rest = support[:pos] + support[pos + 1 :]
            if not any(r < n_den for r in rest) or not any(r >= n_den for r in rest):
                continue
            key = (value(rest), -int(degree[j]), -j)
            if best is None or key < best[0]:
                best = (key, pos)
        if best is None:
            break
        support.pop(best[1])
        path.append(split(support))
    return path


def _monomial_tree(e: np.ndarray) -> Expression | None:
    tree = None
    for j in np.flatnonzero(e):
        for _ in range(int(e[j])):
            v = Expression.variable(int(j))
            tree = v if tree is None else Expression.binary("*", tree, v)
    return tree


def _sum_tree(coefs: np.ndarray, exps: np.ndarray) -> Expression:
    """``sum_k coefs[k] * monomial_k`` as a tree: coefficients within :data:`SNAP` of
    1 are dropped, a negative term after the first is subtracted, the constant term
    comes last."""
    terms = []
    for c, e in zip(coefs, exps, strict=True):
        if c == 0.0:
            continue
        terms.append((float(c), _monomial_tree(e)))
    terms.sort(key=lambda t: (t[1] is None, t[0] < 0))  # positive terms first, constant last
    tree = None
    for c, mono in terms:
        mag = abs(c) if tree is not None else c
        if mono is None:
            term = Expression.constant(mag)
        elif abs(mag - 1.0) <= SNAP:
            term = mono
        else:
            term = Expression.binary("*", Expression.constant(mag), mono)
        if tree is None:
            tree = term
        else:
            tree = Expression.binary("-" if c < 0 else "+", tree, term)
    return Expression.constant(0.0) if tree is None else tree


def rational_tree(num_coefs, num_exps, den_coefs, den_exps) -> Expression:
    """The tree of ``P/Q`` with ``P = sum num_coefs[i] * x**num_exps[i]`` and ``Q`` alike:
    ``Q`` normalised so that its term of highest degree (the last of them) has coefficient
    1 (no constant node in front of the longest product); a ``Q`` that is a constant divides
    ``P``'s coefficients instead (a polynomial).

    Args:
      num_coefs: ``(k,)`` float; num_exps: ``(k, M)`` int; den_coefs, den_exps: the same
        for ``Q`` (at least one nonzero coefficient).
    """
    num_coefs = np.asarray(num_coefs, np.float64)
    den_coefs = np.asarray(den_coefs, np.float64)
    num_exps = np.asarray(num_exps, np.int64)
    den_exps = np.asarray(den_exps, np.int64)
    deg = den_exps.sum(axis=1)
    nz = np.flatnonzero(den_coefs != 0.0)
    pivot = nz[np.lexsort((nz, deg[nz]))[-1]]
    scale = den_coefs[pivot]
    num_coefs, den_coefs = num_coefs / scale, den_coefs / scale
    if np.all(deg[nz] == 0):  # Q is a constant: a polynomial
        return _sum_tree(num_coefs, num_exps)
    return Expression.binary("/", _sum_tree(num_coefs, num_exps), _sum_tree(den_coefs, den_exps))


def _scaled(y, S, T, rw):
    """``[y T, S, T]`` with rows weighted by ``rw``, each ``y t_j`` and ``t_j`` column
    divided by the norm of the weighted ``t_j`` and each ``s_i`` by its own; returns the
    matrix and the scales ``(st, ss)``."""
    Tw = T * rw[:, None]
    Sw = S * rw[:, None]
    st = np.linalg.norm(Tw, axis=0)
    ss = np.linalg.norm(Sw, axis=0)
    st[st == 0] = 1.0
    ss[ss == 0] = 1.0
    return np.column_stack([y[:, None] * Tw / st, Sw / ss, Tw / st]), st, ss


def _fit_support(y, S, T, sw):
    """Coefficients ``(a, c)`` of ``P = S a``, ``Q = T c`` minimising ``||y Q - P|| /
    ||Q||`` (weighted by ``sw``), then :data:`REWEIGHTS` times again with the rows divided
    by the previous ``|Q|``; ``None`` when ``Q`` comes near zero or changes sign."""
    nq, npp = T.shape[1], S.shape[1]
    jy, jp, jt = np.arange(nq), nq + np.arange(npp), nq + npp + np.arange(nq)
    rw = sw
    out = None
    for _ in range(REWEIGHTS + 1):
        B, st, ss = _scaled(y, S, T, rw)
        _, u, rt = _relative_residual(B, jy, jp, jt)
        if u is None:
            return out
        c = np.linalg.solve(rt, u) / st
        q = T @ c
        top = float(np.max(np.abs(q)))
        if (
            not top > 0
            or not np.all(np.isfinite(q))
            or np.any(np.abs(q) <= POLE_MARGIN * top)
            or np.min(q) < 0 < np.max(q)
        ):
            return out
        a = np.linalg.lstsq(S * rw[:, None], y * q * rw, rcond=None)[0]
        out = (a, c)
        rw = sw / np.abs(q) * np.median(np.abs(q))
    return out


def _unit_snapped(y, S, T, sw, a, c, deg_q, scale=1.0):
    """The fit with every coefficient within :data:`UNIT` of +-1 (after normalising ``Q`` on
    its term of highest degree) fixed at +-1 and the others refitted (least squares of ``y Q
    - P`` with :data:`REWEIGHTS` reweightings by ``1/|Q|``): a tree with fewer constants,
    which the criterion may prefer on noisy data. ``None`` when no coefficient is that close
    or the refit has a pole."""
    nz = np.flatnonzero(c != 0.0)
    pivot = nz[np.lexsort((nz, deg_q[nz]))[-1]]
    a, c = a / c[pivot], c / c[pivot]
    fix_q = np.abs(np.abs(c) - 1.0) < UNIT
    fix_p = np.abs(np.abs(a * scale) - 1.0) < UNIT  # P in the target's units (y / scale)
    fix_q[pivot] = True
    if (
        np.sum(fix_q) + np.sum(fix_p) <= 1
        or np.all(np.abs(c[fix_q]) == 1.0)
        and np.all(np.abs(a[fix_p] * scale) == 1.0)
        and fix_q.all()
        and fix_p.all()
    ):
        return None
    cf, af = np.sign(c) * fix_q, np.sign(a) * fix_p / scale
    free = np.column_stack([y[:, None] * T[:, ~fix_q], -S[:, ~fix_p]])
    rhs = -(y * (T @ cf) - S @ af)
    rw = sw
    out = None
    for _ in range(REWEIGHTS + 1):
        v = (
            np.linalg.lstsq(free * rw[:, None], rhs * rw, rcond=None)[0]
            if free.shape[1]
            else np.zeros(0)
        )
        cc, aa = cf.astype(np.float64).copy(), af.astype(np.float64).copy()
        cc[~fix_q] = v[: int(np.sum(~fix_q))]
        aa[~fix_p] = v[int(np.sum(~fix_q)) :]
        q = T @ cc
        top = float(np.max(np.abs(q)))
        if (
            not top > 0
            or not np.all(np.isfinite(q))
            or np.any(np.abs(q) <= POLE_MARGIN * top)
            or np.min(q) < 0 < np.max(q)
        ):
            return out
        out = (aa, cc)
        rw = sw / np.abs(q) * np.median(np.abs(q))
    return out


def rational_candidates(
    X,
    y,
    weights=None,
    *,
    const_cols=None,
    max_columns=MAX_COLUMNS,
    degree_pairs=DEGREE_PAIRS,
    max_nodes=None,
    floor=None,
    deadline=None,
) -> list[RationalCandidate]:
    """Rational models ``P/Q`` of ``y`` (module docstring), by increasing criterion.

    Args:
      X: ``(n, M)`` float64 features; y: ``(n,)`` float64 target.
      weights: ``(n,)`` non-negative row weights, or ``None``.
      const_cols: ``(M,)`` bool, columns left out (constant on the rows), or ``None``.
      max_columns: libraries with more monomials than this are skipped.
      degree_pairs: the ``(deg P, deg Q)`` tried, in order.
      max_nodes: candidates with more nodes are dropped (``None``: none).
      floor: losses below it count as equal (default :func:`loss_floor` of ``y``).
      deadline: a ``time.perf_counter()`` value (``None``: no limit); once it has passed,
        no further support is fitted and the candidates found so far are returned (the
        estimator's ``max_time``).

    Returns:
      the distinct candidates (by their tree's text), best criterion first (ties: the
      fewer nodes, then the order found); empty when no library fits or every candidate
      has a pole on the rows.
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    n, m = X.shape
    w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
    keep_rows = w > 0
    X, y, w = X[keep_rows], y[keep_rows], w[keep_rows]
    n = X.shape[0]
    if n < 3:
        return []
    # relative weights, rounded to 40 bits: weights given at another scale (w * 1e300,
    # whose ratios differ in the last bits) give the same fit to the last bit
    w = np.round(w / np.max(w) * 2.0**40) / 2.0**40
    w = w / np.mean(w)
    sw = np.sqrt(w)
    # the fit in units of the target's RMS (a target near 1e300 or 1e-300 neither overflows
    # nor underflows in the products y * t_j); the numerator is scaled back in the trees
    scale = (
        float(np.sqrt(np.mean(w * (y / np.max(np.abs(y))) ** 2))) * float(np.max(np.abs(y)))
        if np.any(y != 0)
        else 0.0
    )
    if not (np.isfinite(scale) and scale > 0):
        return []
    y = y / scale
    use = np.ones(m, bool) if const_cols is None else ~np.asarray(const_cols, bool)
    feats = np.flatnonzero(use)
    floor = (
        loss_floor(y, np.float64, w) if floor is None else float(floor) / scale / scale
    )  # in the scaled units
    n_eff = float(np.sum(w) ** 2 / np.sum(w * w))
    found: dict[str, RationalCandidate] = {}
    order: list[str] = []

    def late() -> bool:
        return deadline is not None and time.perf_counter() >= deadline

    for dp, dq in degree_pairs:
        if late():
            break
        # the library's size before building it: C(m + d, d) monomials (at 1,500 features
        # and degree 3 that is 5.6e8 rows of exponents, never to be built)
        if math.comb(len(feats) + dp, dp) + math.comb(len(feats) + dq, dq) > max_columns:
            continue
        lib_p = monomials(len(feats), dp)
        lib_q = monomials(len(feats), dq)
        full_p = np.zeros((lib_p.shape[0], m), np.int64)
        full_p[:, feats] = lib_p
        full_q = np.zeros((lib_q.shape[0], m), np.int64)
        full_q[:, feats] = lib_q
        with np.errstate(all="ignore"):
            S = _columns(X, full_p)
            T = _columns(X, full_q)
        if not (np.all(np.isfinite(S)) and np.all(np.isfinite(T * y[:, None]))):
            continue
        kp = _independent(S * sw[:, None])
        kq = _independent(T * sw[:, None])
        if not kp.size or not kq.size:
            continue
        full_p, S = full_p[kp], S[:, kp]
        full_q, T = full_q[kq], T[:, kq]
        B, _, _ = _scaled(y, S, T, sw)
        R = np.linalg.qr(B, mode="r")
        n_den, n_num = T.shape[1], S.shape[1]
        degree = np.concatenate([full_q.sum(axis=1), full_p.sum(axis=1)])
        for jq, jp in _backward_path(R, n_den, n_num, degree):
            if late():
                break
            fit = _fit_support(y, S[:, jp], T[:, jq], sw)
            if fit is None:
                continue
            snapped = _unit_snapped(y, S[:, jp], T[:, jq], sw, *fit, full_q[jq].sum(axis=1), scale)
            for a, c in (fit,) if snapped is None else (fit, snapped):
                tree = rational_tree(a * scale, full_p[jp], c, full_q[jq])
                if max_nodes is not None and tree.n_nodes > max_nodes:
                    continue
                with np.errstate(all="ignore"):
                    pred = tree.evaluate(X) / scale
                if not np.all(np.isfinite(pred)):
                    continue
                mse = float(np.sum(w * (pred - y) ** 2) / np.sum(w))  # scaled units
                key = tree.to_string()
                if key in found:
                    continue
                crit = float(information_criterion(mse, tree.n_nodes, n_eff, floor))
                with np.errstate(over="ignore"):
                    mse_units = float(np.float64(mse) * scale * scale)
                found[key] = RationalCandidate(
                    tree, mse_units, crit, (dp, dq), full_p[jp], full_q[jq]
                )
                order.append(key)
        if any(
            found[k].criterion
            <= information_criterion(floor, found[k].expression.n_nodes, n_eff, floor)
            for k in order
        ):
            break  # an exact law at this pair: higher pairs only add longer forms of it
    rank = {k: i for i, k in enumerate(order)}
    return sorted(
        found.values(),
        key=lambda c: (c.criterion, c.expression.n_nodes, rank[c.expression.to_string()]),
    )
