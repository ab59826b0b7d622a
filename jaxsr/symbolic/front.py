"""The Pareto front of a fit (``equations_``) and the choice of one model from it.

DoME grows one tree; every iteration accepts a new tree of known size and training MSE.
The models met on the way are points (complexity, loss); the **front** keeps the
non-dominated ones: sorted by complexity (number of nodes), each row has a strictly lower
loss than every simpler row. The surface follows PySR's, which users of the field know:

* ``score`` of a row is the negated derivative of the log-loss with respect to complexity,
  between the row and the previous (simpler) row of the front:
  ``score_i = -(log loss_i - log loss_{i-1}) / (complexity_i - complexity_{i-1})``
  (0 for the first row). A model that buys a large drop in loss with few nodes scores high.
* ``model_selection``: ``"accuracy"`` is the row of lowest loss; ``"score"`` the row of highest
  score; ``"best"`` the row of highest score among those whose loss is below 1.5 times the
  lowest loss (PySR's default since 0.10); ``"bic"`` the row of lowest Bayesian information
  criterion for Gaussian errors with one parameter per node,
  ``n log(loss) + complexity log(n)`` (``n`` training rows; Schwarz 1978): a node must lower
  the loss by a factor of about ``1 - log(n)/n`` to be worth it, so on noisy data the law is
  preferred to the law plus terms that fit the noise, while on a large real dataset a node
  that buys a real gain is kept.

One change from PySR, needed by a deterministic method that fits exact formulas: losses are
compared above a **rounding floor**. Once a tree is the formula, further iterations keep
lowering the MSE by rounding-level amounts (``1e-23 -> 1e-29`` for ``y = 3x + 2``); relative
to each other those differences are large, so without a floor "best" would prefer the
longest tree. :func:`loss_floor` is the search's own acceptance floor,
``(ROUNDING_ULPS * eps)**2 * mean(y**2)``: a model whose root-mean-square error is below
1024 units in the last place of the root-mean-square target (``2.3e-13`` of it in float64,
``1.2e-4`` in float32) is exact as far as a fit in this precision can tell (the exact
formulas this search finds reach ``1e-13 .. 1e-16``), and such models count as equally
accurate. It is the floor below which the search itself takes no change, so a model the
search found better by more than rounding is better for the selection too (a floor above
it, ``eps**1.5 * mean(y**2)``, as it once was, made a target like ``1e12 + x``, whose
variation is far above rounding but below ``eps**0.75`` of its magnitude, select the
constant although the search had found ``x``).
The ``loss`` column keeps the true values; only ``score`` and the 1.5x threshold of ``"best"``
use the floored loss (``"accuracy"`` is the true lowest loss).

With a validation split, the loss criteria (``"accuracy"``, and the 1.5x threshold of
``"best"``) use the validation loss; the score stays the training-front derivative.

**The extrapolation guard** (an addition to PySR's rules). A rational model can fit the
rows and still explode just outside them: a tree that divides by ``x7**3`` where ``x7``
spans ``0.8 .. 6000`` predicted ``16801`` for a true ``608`` at ``x7 = 0.53`` on a real
dataset (test R^2 -23 although it was 0.95 on the test rows inside the training range).
:func:`edge_excursion` measures each model at :func:`~jaxsr.symbolic.domain.edge_probes`
(training rows with one feature moved a twentieth of its range past the data, on a log
scale for positive features): how far the predictions leave the training target's range
``[min y, max y]``, in units of its width. Every criterion chooses among the rows whose
excursion is at most ``limit`` (:data:`EXTRAPOLATION_LIMIT`, 8 widths by default; the
first row, a constant, always qualifies). The limit was set on the project's panel: any
value from 4 to 12 gave the same median test R^2 on the real data and no split with a
negative test R^2 (without it: one, at -23); 3 or less gave up real accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .expression import Expression

__all__ = [
    "ROUNDING_ULPS",
    "MODEL_SELECTIONS",
    "FrontModel",
    "pareto_front",
    "front_scores",
    "loss_floor",
    "select_model",
    "edge_excursion",
    "information_criterion",
    "EXTRAPOLATION_LIMIT",
]

MODEL_SELECTIONS = ("best", "accuracy", "score", "bic", "cv")
BEST_LOSS_RATIO = 1.5  # PySR's "best": loss below 1.5x the lowest
EXTRAPOLATION_LIMIT = 8.0
"""Default largest :func:`edge_excursion` of a model the selection may choose (target
widths past the training target's range)."""


class FrontModel(NamedTuple):
    """One model met during a fit: its tree, training MSE and the iteration that made it."""

    expression: Expression
    loss: float
    iteration: int


def pareto_front(models: Sequence[FrontModel]) -> list[FrontModel]:
    """The non-dominated models, by increasing complexity (nodes) and decreasing loss.

    A model is kept when its loss is strictly lower than that of every model with fewer
    or as many nodes (ties in loss: the simpler one; then the earlier iteration). Models
    with a non-finite loss are left out.

    Returns:
      list of :class:`FrontModel`, ``complexity`` strictly increasing, ``loss`` strictly
      decreasing.
    """
    ok = [m for m in models if np.isfinite(m.loss)]
    ok.sort(key=lambda m: (m.expression.n_nodes, m.loss, m.iteration))
    front: list[FrontModel] = []
    for m in ok:
        if not front or (
            m.loss < front[-1].loss and m.expression.n_nodes > front[-1].expression.n_nodes
        ):
            front.append(m)
    return front


ROUNDING_ULPS = 1024
"""Errors of up to this many units in the last place of the target's scale are rounding:
the one rounding floor of the fit (:func:`loss_floor`), used by the acceptance rule of
the search (:class:`~jaxsr.symbolic.strategies.DomeSearch`) and by the model selection
here. The constants come from ratios of sums over the N patterns (equations 29-34),
whose rounding grows like N ulps, and a tree's evaluation adds a few ulps per node; 1024
ulps (relative MSE 5e-26 in float64) stays above that for the data sizes this engine
handles, while an improvement that is not rounding, even a small one, is still taken."""


def loss_floor(y, dtype=np.float64, weights=None) -> float:
    """Rounding floor of the MSE for targets ``y`` ``(n,)`` in ``dtype``:
    ``(ROUNDING_ULPS * eps)**2 * mean(y**2)`` (weighted by ``weights`` when given), the
    MSE of errors of :data:`ROUNDING_ULPS` units in the last place at the target's scale.

    Returns a positive float (the smallest normal float64 for an all-zero target).
    """
    y = np.asarray(y, dtype=np.float64)
    eps = float(np.finfo(np.dtype(dtype)).eps)
    if not y.size:
        ms = 0.0
    elif weights is None:
        ms = float(np.mean(y * y))
    else:
        w = np.asarray(weights, np.float64)
        ms = float(np.sum(w * y * y) / np.sum(w))
    return max((ROUNDING_ULPS * eps) ** 2 * ms, float(np.finfo(np.float64).tiny))


def front_scores(complexity, loss, floor: float = 0.0) -> np.ndarray:
    """PySR's score of each front row: ``-d log(loss) / d complexity`` against the previous row.

    Args:
      complexity: ``(n,)`` increasing ints; loss: ``(n,)`` floats.
      floor: losses below it count as ``floor`` (see :func:`loss_floor`); with ``floor = 0`` a
        zero loss gives ``inf`` as in PySR.

    Returns:
      ``(n,)`` float64, the first entry 0.
    """
    c = np.asarray(complexity, dtype=np.float64)
    lo = np.maximum(np.asarray(loss, dtype=np.float64), float(floor))
    out = np.zeros(c.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(1, c.shape[0]):
            if lo[i] == lo[i - 1]:
                out[i] = 0.0
            elif lo[i] <= 0.0:
                out[i] = np.inf
            else:
                out[i] = -(np.log(lo[i]) - np.log(lo[i - 1])) / (c[i] - c[i - 1])
    return out


def information_criterion(loss, complexity, n_samples: float, floor: float = 0.0):
    """Bayesian information criterion ``n log(max(loss, floor)) + complexity log(n)`` for
    Gaussian errors with one parameter per node (Schwarz 1978): the criterion of
    ``model_selection="bic"`` (:func:`select_model`), of the search's information-criterion
    stop (:mod:`jaxsr.symbolic.search`) and of the backward elimination
    (:mod:`jaxsr.symbolic.elimination`).

    Args:
      loss: MSE, a float or ``(n,)`` array; complexity: nodes, the same shape.
      n_samples: ``n``, the rows the loss was measured on.
      floor: losses below it count as ``floor`` (:func:`loss_floor`).

    Returns:
      float64, the shape of ``loss`` (``-inf`` for a zero loss with ``floor = 0``).
    """
    n = float(n_samples)
    with np.errstate(divide="ignore", invalid="ignore"):
        return n * np.log(np.maximum(np.asarray(loss, np.float64), float(floor))) + np.asarray(
            complexity, np.float64
        ) * np.log(n)


def edge_excursion(models: Sequence[Expression], probes, y, weights=None) -> np.ndarray:
    """How far each model's predictions at the edge probes leave the target's range.

    Args:
      models: the trees (features as in ``probes``).
      probes: ``(p, n_features)`` points, or the
        :class:`~jaxsr.symbolic.domain.EdgeProbes` of
        :func:`~jaxsr.symbolic.domain.edge_probes` (each model evaluated on the probes of
        the features it uses: the same values, without the full array).
      y: ``(n,)`` training targets; weights: ``(n,)`` or ``None`` (rows of weight 0 do
        not count in the range).

    Returns:
      ``(len(models),)`` float64: ``max(0, (max f - max y) / w, (min y - min f) / w)``
      over the probes, ``w = max y - min y``; ``inf`` where a prediction is not finite;
      all 0 for a constant target.
    """
    y = np.asarray(y, np.float64)
    if weights is not None:
        y = y[np.asarray(weights) > 0]
    ylo, yhi = float(np.min(y)), float(np.max(y))
    width = yhi - ylo
    out = np.zeros(len(models))
    if not width > 0 or not np.isfinite(width):
        return out
    with np.errstate(all="ignore"):
        for i, m in enumerate(models):
            f = probes.values_of(m) if hasattr(probes, "values_of") else m.evaluate(probes)
            if not np.all(np.isfinite(f)):
                out[i] = np.inf
            elif f.size:
                out[i] = max(
                    0.0, (float(np.max(f)) - yhi) / width, (ylo - float(np.min(f))) / width
                )
    return out


def select_model(
    model_selection: str,
    score,
    loss,
    floor: float = 0.0,
    validation_loss=None,
    *,
    complexity=None,
    n_samples=None,
    excursion=None,
    limit=None,
    cv_loss=None,
    cv_standard_error=None,
) -> int:
    """Row of the front chosen by ``model_selection`` (see the module doc).

    Args:
      model_selection: ``"best"``, ``"accuracy"``, ``"score"`` or ``"bic"``.
      score: ``(n,)`` scores (:func:`front_scores`); loss: ``(n,)`` training losses.
      floor: rounding floor applied to the losses compared by ``"best"`` and ``"bic"``
        (``"accuracy"`` compares the true losses).
      validation_loss: ``(n,)`` held-out losses, or ``None``; when given, it replaces the
        training loss in the loss criteria.
      complexity: ``(n,)`` nodes of each row (``"bic"`` only).
      n_samples: rows the losses were measured on (``"bic"`` only; the training rows).
      excursion: ``(n,)`` :func:`edge_excursion` of each row, or ``None``; with ``limit``
        (a number), only rows with ``excursion <= limit`` are chosen from (every row when
        none is).
      cv_loss: ``(n,)`` cross-validated losses (:mod:`jaxsr.symbolic.crossval`) for
        ``"cv"``; ``None`` (too few rows to cross-validate) makes ``"cv"`` choose as
        ``"bic"``.
      cv_standard_error: ``(n,)`` their standard errors (recorded; not used by the rule).

    Returns:
      int, a row index (ties: the simpler row).

    Raises:
      ValueError: for an unknown ``model_selection`` or an empty front.
    """
    if model_selection not in MODEL_SELECTIONS:
        raise ValueError(
            f"model_selection must be one of {MODEL_SELECTIONS}; got {model_selection!r}"
        )
    score = np.asarray(score, dtype=np.float64)
    if score.shape[0] == 0:
        raise ValueError("the front is empty")
    if score.shape[0] == 1:
        return 0
    crit = np.asarray(loss if validation_loss is None else validation_loss, dtype=np.float64)
    crit = np.where(np.isfinite(crit), crit, np.inf)
    if excursion is not None and limit is not None:
        tame = np.asarray(excursion, np.float64) <= float(limit)
        if tame.any() and not tame.all():  # the others are passed over by every criterion
            crit = np.where(tame, crit, np.inf)
            score = np.where(tame, score, -np.inf)
    if model_selection == "cv" and cv_loss is not None:
        cvl = np.asarray(cv_loss, np.float64)
        cvl = np.where(np.isfinite(crit) & np.isfinite(cvl), cvl, np.inf)
        if np.isfinite(cvl).any():
            # losses within rounding of each other are equal: the simplest of them
            return int(np.argmin(np.maximum(cvl, float(floor))))
        model_selection = "bic"
    elif model_selection == "cv":
        model_selection = "bic"
    if model_selection == "accuracy":  # the true lowest loss, no floor
        return int(np.argmin(crit))  # argmin: the first (simplest) of equal losses
    if model_selection == "score":
        return int(np.argmax(score))
    if model_selection == "bic":
        if complexity is None or not n_samples:
            raise ValueError(
                "model_selection='bic' needs the complexity of each row and the number of samples"
            )
        bic = information_criterion(crit, complexity, n_samples, floor)
        bic = np.where(np.isfinite(bic), bic, np.inf)
        return int(np.argmin(bic))  # the first (simplest) of equal values
    crit = np.maximum(crit, float(floor))
    eligible = crit <= BEST_LOSS_RATIO * np.min(crit)
    if not eligible.any():  # every loss infinite
        eligible[:] = True
    return int(np.argmax(np.where(eligible, score, -np.inf)))
