"""K-fold cross-validation of the front's structures, their constants refitted per fold.

The front of a fit (:mod:`jaxsr.symbolic.front`) holds models of growing size whose
training loss falls row by row. On noisy data the training loss cannot tell the law from
the law plus terms that fit the noise; an information criterion (``"bic"``) charges every
node ``log(n)``, which on real data with many rows and a real but small gain per node stops
too early (a 9-node model where a 20-node one predicts better on held-out rows). Held-out
error measures the trade directly.

Each structure of the front is kept fixed (its operators, variables and the positions of its
constants) and its constants are refitted on the training rows of each fold by
Gauss-Newton (:func:`refit_constants`) from the constants of the whole fit. The prediction
error on the fold's held-out rows, summed over the folds, is the structure's
cross-validated loss (:func:`cross_validated_loss`). This is cheap because no search runs:
one fold costs a few evaluations of the tree with its derivatives (forward mode over the
constants, :func:`constant_jacobian`), in numpy, with nothing compiled.

The structure itself was chosen on all rows, so the loss is an honest estimate of the
constants' error, not of the search's choices; it ranks the front's rows, which is all
``model_selection="cv"`` asks of it. Deterministic: the folds are a fixed shuffle
(:data:`SEED`) of the rows.

Beyond the paper (section 2 grows one tree; choosing among the trees met on the way is
left to the user).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .expression import ADD, CONST, COS, DIV, EXP, LOG, MUL, SIN, SQRT, SUB, VAR, Expression

__all__ = [
    "N_FOLDS",
    "SEED",
    "MAX_ROWS",
    "GAUSS_NEWTON_STEPS",
    "CrossValidation",
    "constant_jacobian",
    "refit_constants",
    "fold_rows",
    "cross_validated_loss",
]

N_FOLDS = 5
"""Folds of :func:`cross_validated_loss` (scikit-learn's default ``cv``)."""
SEED = 0
"""Seed of the shuffle that assigns rows to folds."""
MAX_ROWS = 10_000
"""Rows used for cross-validation at most: larger fits use a fixed random subset of this
many (held-out error of a few thousand rows already separates the front's rows)."""
GAUSS_NEWTON_STEPS = 8
"""Largest number of Gauss-Newton steps of one refit (each halved up to
:data:`_HALVINGS` times until the training loss falls; the refit stops at the first step
that gains less than a relative ``1e-12``)."""
_HALVINGS = 6


class CrossValidation(NamedTuple):
    """Cross-validated losses of a list of models.

    Attributes:
      loss: ``(n_models,)`` float64, the weighted MSE of the held-out predictions over all
        folds (``sum_f sum_{i in f} w_i (f_i - y_i)**2 / sum_i w_i``); ``inf`` for a model
        that is not finite on a held-out row.
      fold_loss: ``(n_models, n_folds)`` float64, each fold's weighted held-out MSE.
      standard_error: ``(n_models,)`` float64, the standard error of the mean of
        ``fold_loss`` (its standard deviation over the folds divided by
        ``sqrt(n_folds)``), for the one-standard-error rule.
    """

    loss: np.ndarray
    fold_loss: np.ndarray
    standard_error: np.ndarray


def _constant_nodes(expr: Expression) -> np.ndarray:
    return np.flatnonzero(np.asarray(expr.op) == CONST)


def constant_jacobian(expr: Expression, X, constants=None, *, jacobian: bool = True):
    """The tree's outputs and their derivatives with respect to its constants.

    Forward mode over the pre-order arrays: every node carries its value ``(n,)`` and, when
    its subtree holds a constant, its gradient ``(n, p)``; the values are those of
    :meth:`Expression.evaluate` (the same operations in the same order).

    Args:
      expr: the tree.
      X: ``(n, n_features)`` float64 rows.
      constants: ``(p,)`` values of the tree's constant nodes in pre-order, or ``None``
        for the tree's own.
      jacobian: ``False`` for the outputs alone.

    Returns:
      ``(f, J)``: ``f`` ``(n,)`` float64 outputs; ``J`` ``(n, p)`` float64, ``J[i, j] =
      d f_i / d k_j`` (``None`` when ``jacobian`` is False). IEEE arithmetic: a zero
      denominator gives ``inf``/``nan`` as in :meth:`Expression.evaluate`.
    """
    X = np.asarray(X, np.float64)
    op, feature = np.asarray(expr.op), np.asarray(expr.feature)
    where = _constant_nodes(expr)
    values = (
        np.asarray(expr.value, np.float64)[where]
        if constants is None
        else np.asarray(constants, np.float64)
    )
    slot = {int(node): j for j, node in enumerate(where)}
    n, p = X.shape[0], values.shape[0]
    left, right = expr.left, expr.right
    val: list = [None] * expr.n_nodes
    grad: list = [None] * expr.n_nodes
    with np.errstate(all="ignore"):
        for i in range(expr.n_nodes - 1, -1, -1):
            code = int(op[i])
            if code == CONST:
                val[i] = np.full(n, values[slot[i]])
                if jacobian:
                    g = np.zeros((n, p))
                    g[:, slot[i]] = 1.0
                    grad[i] = g
                continue
            if code == VAR:
                val[i] = X[:, feature[i]].copy()
                continue
            a, ga = val[left[i]], grad[left[i]]
            if code in (ADD, SUB, MUL, DIV):
                b, gb = val[right[i]], grad[right[i]]
                if code == ADD:
                    v = a + b
                    g = _combine(ga, gb, 1.0, 1.0)
                elif code == SUB:
                    v = a - b
                    g = _combine(ga, gb, 1.0, -1.0)
                elif code == MUL:
                    v = a * b
                    g = _combine(ga, gb, b[:, None], a[:, None])
                else:
                    v = a / b
                    g = _combine(ga, gb, 1.0 / b[:, None], -(v / b)[:, None])
            else:
                v, d = _unary(code, a)
                g = None if ga is None else ga * d[:, None]
            val[i] = v
            grad[i] = g if jacobian else None
    f = val[0]
    if not jacobian:
        return f, None
    J = grad[0] if grad[0] is not None else np.zeros((n, p))
    return f, J


def _combine(ga, gb, sa, sb):
    """``ga * sa + gb * sb`` where either gradient may be ``None`` (no constant below)."""
    if ga is None and gb is None:
        return None
    if gb is None:
        return ga * sa
    if ga is None:
        return gb * sb
    return ga * sa + gb * sb


def _unary(code, a):
    """``(u(a), u'(a))`` of a unary operator."""
    if code == SQRT:
        v = np.sqrt(a)
        return v, 0.5 / v
    if code == EXP:
        v = np.exp(a)
        return v, v
    if code == LOG:
        return np.log(a), 1.0 / a
    if code == SIN:
        return np.sin(a), np.cos(a)
    if code == COS:
        return np.cos(a), -np.sin(a)
    raise ValueError(f"unknown operator code {code}")


def _weighted_sse(f, y, w) -> float:
    r = f - y
    with np.errstate(all="ignore"):
        s = float(np.sum(r * r) if w is None else np.sum(w * r * r))
    return s if np.isfinite(s) else np.inf


def refit_constants(
    expr: Expression, X, y, w=None, constants=None, steps: int = GAUSS_NEWTON_STEPS
) -> np.ndarray:
    """Least-squares constants of a fixed structure on rows ``X, y`` by Gauss-Newton.

    Each step solves the linearised problem (columns of the Jacobian scaled to unit norm,
    ``numpy.linalg.lstsq``'s minimum-norm solution, so redundant constants such as
    ``k1*k2*x`` are harmless) and is halved until the weighted training loss falls; the
    refit ends at the first step that does not lower it by a relative ``1e-12``, or after
    ``steps`` steps. For a structure linear in its constants one step is the exact
    least-squares solution.

    Args:
      expr: the structure; its constants are the starting point unless ``constants``.
      X: ``(n, n_features)``; y: ``(n,)``; w: ``(n,)`` non-negative weights or ``None``.
      constants: ``(p,)`` starting values, or ``None``.
      steps: largest number of Gauss-Newton steps.

    Returns:
      ``(p,)`` float64 constants (the start when no step lowers the loss).
    """
    c = (
        np.asarray(expr.value, np.float64)[_constant_nodes(expr)]
        if constants is None
        else np.asarray(constants, np.float64).copy()
    )
    if c.shape[0] == 0:
        return c
    y = np.asarray(y, np.float64)
    sw = None if w is None else np.sqrt(np.asarray(w, np.float64))
    f, J = constant_jacobian(expr, X, c)
    loss = _weighted_sse(f, y, w)
    for _ in range(int(steps)):
        if not np.isfinite(loss) or not np.all(np.isfinite(J)):
            break
        r = f - y
        A = J if sw is None else J * sw[:, None]
        b = r if sw is None else r * sw
        norms = np.linalg.norm(A, axis=0)
        live = norms > 0
        if not live.any():
            break
        delta = np.zeros_like(c)
        sol = np.linalg.lstsq(A[:, live] / norms[live], -b, rcond=None)[0]
        delta[live] = sol / norms[live]
        t, accepted = 1.0, False
        for _ in range(_HALVINGS + 1):
            trial = c + t * delta
            f_t, _unused = constant_jacobian(expr, X, trial, jacobian=False)
            loss_t = _weighted_sse(f_t, y, w)
            if loss_t < loss:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break
        gain = (loss - loss_t) / loss if loss > 0 else 0.0
        c, loss = trial, loss_t
        if gain < 1e-12 or loss == 0:
            break
        f, J = constant_jacobian(expr, X, c)
    return c


def fold_rows(n_rows: int, n_folds: int = N_FOLDS, seed: int = SEED) -> list[np.ndarray]:
    """The held-out rows of each fold: a fixed shuffle of ``range(n_rows)`` cut into
    ``n_folds`` parts of sizes differing by at most one, each sorted.

    Raises:
      ValueError: fewer rows than ``2 * n_folds`` or fewer than 2 folds.
    """
    if n_folds < 2 or n_rows < 2 * n_folds:
        raise ValueError(
            f"cross-validation needs at least 2 folds and 2 rows a fold; got "
            f"{n_rows} rows for {n_folds} folds"
        )
    perm = np.random.default_rng(seed).permutation(n_rows)
    return [np.sort(part) for part in np.array_split(perm, n_folds)]


def cross_validated_loss(
    models: Sequence[Expression],
    X,
    y,
    w=None,
    n_folds: int = N_FOLDS,
    max_rows: int | None = MAX_ROWS,
    scale: float = 1.0,
) -> CrossValidation:
    """K-fold cross-validated MSE of each structure, constants refitted on each fold.

    Args:
      models: the trees (their constants start every refit).
      X: ``(n, n_features)`` rows; y: ``(n,)`` targets; w: ``(n,)`` non-negative weights
        or ``None``.
      n_folds: folds (:func:`fold_rows`).
      max_rows: cross-validate on a fixed random subset of this many rows when ``n`` is
        larger (``None``: every row).
      scale: the targets and predictions are divided by it (a target near the float
        limits, whose squares overflow; the losses are then those of ``y / scale``).

    Returns:
      :class:`CrossValidation`.

    Raises:
      ValueError: too few rows for ``n_folds`` (:func:`fold_rows`).
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    w = None if w is None else np.asarray(w, np.float64)
    n = y.shape[0]
    if max_rows is not None and n > max_rows:
        keep = np.sort(np.random.default_rng(SEED).permutation(n)[: int(max_rows)])
        X, y, w = X[keep], y[keep], None if w is None else w[keep]
        n = y.shape[0]
    ys = y / scale
    folds = fold_rows(n, n_folds)
    fold_loss = np.full((len(models), len(folds)), np.inf)
    total = np.full(len(models), np.inf)
    wsum = float(n) if w is None else float(np.sum(w))
    for m, expr in enumerate(models):
        sse = 0.0
        for k, held in enumerate(folds):
            train = np.ones(n, bool)
            train[held] = False
            wt = None if w is None else w[train]
            c = refit_constants(expr, X[train], y[train], wt)
            f, _unused = constant_jacobian(expr, X[held], c, jacobian=False)
            wh = None if w is None else w[held]
            s = _weighted_sse(f / scale, ys[held], wh)
            denom = held.shape[0] if wh is None else float(np.sum(wh))
            fold_loss[m, k] = s / denom if denom > 0 else 0.0
            sse += s
        total[m] = sse / wsum if np.isfinite(sse) else np.inf
    with np.errstate(invalid="ignore"):
        se = np.where(
            np.all(np.isfinite(fold_loss), axis=1),
            np.std(fold_loss, axis=1) / np.sqrt(len(folds)),
            np.inf,
        )
    return CrossValidation(total, fold_loss, se)
