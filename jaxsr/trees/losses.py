"""The squared and absolute losses: the one leaf objective, re-centring, class statistics
and the internal target scale (OSRT sec. 2-3).

**The leaf objective.** A tree's objective is ``loss / normaliser + lambda * leaves``
(eq. 1, OSRT section 2); :func:`objective` is that formula, the one copy of it: the
search, the bounds, the shallow-subtree kernels, the k-means bounds and the compiled
engine all call it. It is plain arithmetic, so the same function works on Python floats,
numpy and JAX arrays (the engine's C++ copy: ``engine/common.hpp``).

**Squared loss.** Every equivalence class ``u`` (unique binary feature row) carries six
statistics, the columns of a ``(U, 6)`` float64 array:

====  =====================================================================
``W``  summed sample weight of the class
``S``  summed ``w * y`` (``y`` centred, see :class:`TargetScale`)
``Q``  summed ``w * y^2``
``E``  the class's own loss around its best constant (equivalence loss, eq. 4)
``N``  number of samples (unweighted; for ``min_samples_leaf``)
``C``  1 (so sums count classes)
====  =====================================================================

Sums over a support set are matrix products, and the squared loss of a set is the one
formula :func:`sse` ``Q - S^2 / W`` (clamped at 0, and at the set's equivalence loss ``E``
where that is known: no constant does better than the classes' own means).

**Absolute loss.** A leaf's loss is the weighted absolute deviation around a weighted
median of its samples (:func:`absolute_losses`); ``E`` of a class is that loss on the
class's own samples (:func:`absolute_class_losses`).

**Accuracy.** ``Q - S^2 / W`` cancels: its rounding error is about ``eps * Q``, with ``Q``
taken around whatever centre the sums use. Two things keep that small:

* the targets are centred and scaled once, by powers of two (exact), so that every
  internal target lies in ``[-1, 1]`` (:func:`scale_targets`): ``y = 1e10 + signal`` keeps
  its signal, ``|y|`` near ``1e200`` does not overflow, and a uniform rescaling of the
  sample weights (divided by their maximum) gives bit-identical sums;
* before a subproblem is expanded its class statistics are re-centred on its own mean
  (:func:`centre`, :func:`recentred`; :func:`recentre` for a ``(k, 6)`` array), from the
  classes' means and equivalence losses, so the cancellation is relative to the
  subproblem's own spread, not the root's (an outlier far from the other targets does not
  swamp the losses of the subproblems without it).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

__all__ = [
    "STAT_W",
    "STAT_S",
    "STAT_Q",
    "STAT_E",
    "STAT_N",
    "STAT_C",
    "N_STATS",
    "TargetScale",
    "scale_targets",
    "sse",
    "class_statistics",
    "recentre",
    "recentred",
    "centre",
    "objective",
    "absolute_losses",
    "absolute_class_losses",
]

STAT_W, STAT_S, STAT_Q, STAT_E, STAT_N, STAT_C = range(6)
N_STATS = 6
TINY = float(np.finfo(np.float64).tiny)


def objective(loss, norm, lam, leaves=1):
    """The objective of ``leaves`` leaves of summed loss ``loss``: ``loss / norm + lam *
    leaves`` (OSRT eq. 1; the one copy of the formula in the package).

    Plain arithmetic: Python floats, numpy or JAX arrays (broadcast).

    Args:
      loss: float or ``(...)`` float array, a summed loss (internal units) or a lower
        bound of one. norm: the loss normaliser (> 0). lam: ``lambda >= 0`` per leaf.
      leaves: number of leaves (int, float or an array broadcast with ``loss``).

    Returns:
      float or ``(...)`` float array, in objective units.
    """
    return loss / norm + lam * leaves


def centre(Wt, St):
    """Weighted mean ``St / Wt`` of a support (0 for an empty one); scalars only."""
    return St / Wt if Wt > 0.0 else 0.0


def recentred(W, mean, E, mu):
    """Squared-loss sums of classes around a centre ``mu``: ``(S, Q)`` with ``S = W (m -
    mu)`` and ``Q = E + W (m - mu)^2``.

    Args:
      W, mean, E: floats or arrays of one shape: class weight, mean target, equivalence
        loss (internal units). mu: the centre (float or broadcastable).

    Returns:
      ``(S, Q)`` of the shape of ``W``. Plain arithmetic: floats, numpy, JAX.
    """
    d = mean - mu
    return W * d, E + W * d * d


def sse(W, S, Q):
    """Weighted sum of squared errors around the weighted mean: ``max(Q - S^2 / W, 0)``.

    The one leaf-loss formula of the package (squared loss), used by the search, the
    bounds, the shallow-subtree kernels and the k-means costs. ``W = 0`` (an empty set)
    has ``S = 0`` up to rounding; dividing by ``max(W, tiny)`` instead of masking sends a
    rounding residue to a large ``S^2 / W`` and the loss to 0.

    Args:
      W, S, Q: float arrays of one shape (numpy or JAX): summed weight, ``w*y``, ``w*y^2``.

    Returns:
      float array of that shape, ``>= 0``. Numpy in, numpy out; JAX in, JAX out (jittable).
    """
    if isinstance(W, np.ndarray | np.floating | float):
        tiny = np.finfo(np.result_type(W)).tiny
        with np.errstate(over="ignore", invalid="ignore"):
            return np.maximum(Q - S * S / np.maximum(W, tiny), 0.0)
    tiny = jnp.finfo(jnp.result_type(W)).tiny
    return jnp.maximum(Q - S * S / jnp.maximum(W, tiny), 0.0)


def stats_loss(st):
    """:func:`sse` of ``(..., 6)`` statistics, at least their equivalence loss ``E``."""
    return np.maximum(sse(st[..., STAT_W], st[..., STAT_S], st[..., STAT_Q]), st[..., STAT_E])


class TargetScale(NamedTuple):
    """The internal targets ``t = 2^-e2 (2^-e y - c)`` and weights ``w / w_max``.

    Attributes:
      e: int, first power-of-two scale (``|2^-e y| <= 1``).
      c: float, the centre (weighted mean of ``2^-e y``).
      e2: int, second scale (``|t| <= 1``).
      w_max: float, the largest sample weight (internal weights are ``w / w_max``).
      constant: bool, every target with positive weight is the same number.
    """

    e: int
    c: float
    e2: int
    w_max: float
    constant: bool

    @property
    def exponent(self) -> int:
        """``E = e + e2``: ``y - centre = 2^E t``."""
        return self.e + self.e2

    def to_internal(self, y):
        """``(n,)`` targets or predictions in ``y`` units -> internal units."""
        y = np.asarray(y, dtype=np.float64)
        return np.ldexp(np.ldexp(y, -self.e) - self.c, -self.e2)

    def to_y(self, t):
        """Internal values (means, medians) -> ``y`` units."""
        t = np.asarray(t, dtype=np.float64)
        return np.ldexp(np.ldexp(t, self.e2) + self.c, self.e)

    def loss_to_y(self, loss, power: int):
        """An internal summed loss -> ``y`` units (``power`` 2: squared, 1: absolute).

        ``inf`` where the value exceeds the float64 range (``|y|`` near ``1e200``).
        """
        with np.errstate(over="ignore"):
            return np.ldexp(np.asarray(loss, dtype=np.float64) * self.w_max, power * self.exponent)


def scale_targets(y, w):
    """Centre and scale the targets, normalise the weights (exact powers of two).

    Args:
      y: ``(n,)`` float64 finite targets. w: ``(n,)`` float64 weights ``>= 0``, not all 0.

    Returns:
      ``(t, w_int, scale)``: ``t`` ``(n,)`` internal targets in ``[-1, 1]`` (0 for a
      constant target), ``w_int = w / max(w)`` ``(n,)``, and the :class:`TargetScale`.
    """
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    w_max = float(w.max()) if w.size else 1.0
    if not w_max > 0:
        w_max = 1.0
    wi = w / w_max
    if y.size == 0:
        return y.copy(), wi, TargetScale(0, 0.0, 0, w_max, True)
    amax = float(np.max(np.abs(y)))
    e = math.frexp(amax)[1] if amax > 0 else 0
    y1 = np.ldexp(y, -e)
    pos = wi > 0
    yp = y1[pos] if np.any(pos) else y1
    constant = bool(np.all(yp == yp[0]))
    if constant:
        c = float(yp[0])
    else:
        c = float(np.dot(wi, y1) / wi.sum())
    d = y1 - c
    dmax = float(np.max(np.abs(d)))
    e2 = math.frexp(dmax)[1] if dmax > 0 else 0
    return np.ldexp(d, -e2), wi, TargetScale(e, c, e2, w_max, constant)


def class_statistics(inv, t, w, U):
    """Per-class statistics ``(U, 6)`` from sample class ids, internal targets, weights.

    ``E`` is the squared equivalence loss (absolute loss: the caller overwrites it).
    ``S`` and ``Q`` are around 0 (the global centre of :func:`scale_targets`).
    """
    st = np.zeros((U, N_STATS))
    st[:, STAT_W] = np.bincount(inv, w, U)
    st[:, STAT_S] = np.bincount(inv, w * t, U)
    st[:, STAT_N] = np.bincount(inv, None, U)
    st[:, STAT_C] = 1.0
    Wc = st[:, STAT_W]
    mean = np.where(Wc > 0, st[:, STAT_S] / np.where(Wc > 0, Wc, 1.0), 0.0)
    # the class's own spread around its mean, summed sample by sample (no cancellation)
    st[:, STAT_E] = np.bincount(inv, w * (t - mean[inv]) ** 2, U)
    st[:, STAT_Q] = st[:, STAT_E] + Wc * mean * mean
    return st, mean


def recentre(st, mean):
    """Statistics of some classes re-centred on their own weighted mean.

    Args:
      st: ``(k, 6)`` class statistics (a subproblem's classes). mean: ``(k,)`` the
        classes' mean targets (internal units).

    Returns:
      ``(k, 6)`` a copy with ``S = W (m - mu)`` and ``Q = E + W (m - mu)^2`` for the
      subproblem's mean ``mu``: the same losses for every subset, with a rounding error
      relative to the subproblem's own spread.
    """
    W = st[:, STAT_W]
    mu = centre(float(W.sum()), float(np.dot(W, mean)))
    out = st.copy()
    out[:, STAT_S], out[:, STAT_Q] = recentred(W, mean, st[:, STAT_E], mu)
    return out


def absolute_losses(ys, Wm):
    """Weighted absolute deviation around the weighted median, per column.

    The median is the first sorted target at which the cumulative weight reaches half
    of the column's total.

    Args:
      ys: ``(n,)`` float64 targets sorted ascending. Wm: ``(n, B)`` float64 weights of
        ``B`` sets (0 = not in the set).

    Returns:
      ``(loss (B,), median (B,))`` float64.
    """
    if ys.shape[0] == 0:
        return np.zeros(Wm.shape[1]), np.zeros(Wm.shape[1])
    cw = np.cumsum(Wm, axis=0)
    k = np.argmax(cw >= 0.5 * cw[-1], axis=0)
    med = ys[k]
    return _deviations(ys, k, Wm), med


def _deviations(ys, k, Wm):
    """``sum_i Wm[i, b] |ys[i] - ys[k[b]]|`` per column ``b`` of ``(n, B)`` weights, summed
    in sample order (a reduction over the rows of a C-ordered ``(n, B)`` array adds one
    row at a time, as the compiled kernels' loops do; pairwise summation only applies when
    ``B == 1``)."""
    d = np.subtract.outer(ys, ys[k])
    np.abs(d, out=d)
    d *= Wm
    return d.sum(axis=0)


def absolute_class_losses(ys, ws, cls_s, U):
    """Each class's absolute loss around its own weighted median (``E``, absolute loss).

    Args:
      ys, ws: ``(n,)`` float64 internal targets sorted ascending and their weights.
      cls_s: ``(n,)`` int class of each sorted sample. U: number of classes.

    Returns:
      ``(U,)`` float64.
    """
    E = np.zeros(U)
    grp = np.argsort(cls_s, kind="stable")  # by class, y-sorted inside
    bounds = np.searchsorted(cls_s[grp], np.arange(U + 1))
    for u in range(U):
        sl = grp[bounds[u] : bounds[u + 1]]
        E[u] = absolute_losses(ys[sl], ws[sl][:, None])[0][0]
    return E
