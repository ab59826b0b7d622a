"""A proof that a model has no pole in the box of the data (interval arithmetic, bisection).

The acceptance check of the search (:func:`~jaxsr.symbolic.strategies._check`) looks at
the training rows only: every node finite, no denominator zero, no denominator taking
both signs over the rows. In several dimensions a denominator can still vanish inside
the box spanned by the data where no training row lies (``1/(x1 - x2)`` on data with
``x1 - x2 >= 0.5`` but ``x1``, ``x2`` ranges that overlap), and the model, exact on the
rows, explodes just next to them. :func:`prove_box` proves the contrary:

* **Interval arithmetic.** Bottom-up over the pre-order arrays of an
  :class:`~jaxsr.symbolic.Expression`, each node gets an interval ``[l, h]`` that holds
  every value the node takes on the box: a variable its column's ``[lo, hi]``, a constant
  its value, ``+ - * /`` the usual rules (the extremes are among the four combinations of
  the ends), ``sqrt``, ``exp``, ``log`` by monotonicity, ``sin``, ``cos`` from the ends
  and the extrema ``±1`` of the periods that meet the interval. A division needs a
  denominator interval without 0 (``l > 0`` or ``h < 0``), ``sqrt`` an argument with
  ``l >= 0``, ``log`` one with ``l > 0``, and every interval must be finite (``exp`` that
  overflows float64 fails). If the root's interval is defined, every node is defined and
  finite at every point of the box: no denominator vanishes there.
* **Sound under floating point.** Every computed end is moved outward: one ulp
  (``np.nextafter``) after ``+ - * /`` and ``sqrt`` (correctly rounded in IEEE 754), a
  relative ``2**-48`` (16 ulps) after ``exp`` and ``log`` and an absolute ``4e-15``
  after ``sin`` and ``cos`` (libm and SIMD implementations are accurate to a few ulps).
  So the computed interval holds the exact real value, not only the rounded one.
* **Bisection (branch and bound).** Plain intervals forget that two occurrences of a
  variable are the same number (the dependency problem: ``x - 0.5*x`` on ``[1, 2]``
  gives ``[0, 1.5]``). A box that is not proved is split in two at the middle of its
  widest variable (relative to the data box) among those in the subtrees where the
  interval failed; the sub-boxes are evaluated together, vectorised over the boxes with
  numpy, one round per level. The proof succeeds when every sub-box is proved; it gives
  up after :data:`MAX_BOXES` boxes or :data:`MAX_ROUNDS` levels ("not proved": the
  search refuses the candidate).
* **Refutation.** The centre of every box of a round is evaluated too, as a degenerate
  box. If some denominator is certainly positive at one centre and certainly negative at
  another (intervals strictly on each side of 0), it vanishes on the segment between them
  (the box is convex and the denominator continuous where it is defined), or a deeper
  node is undefined there: the box holds a pole, and the search stops at once. Likewise
  a ``sqrt`` argument certainly negative, a ``log`` argument certainly ``<= 0`` or an
  ``exp`` certainly overflowing at a centre.

The proof is of the tree as a real function with its constants as float64 numbers; the
evaluation in floating point on the training rows stays checked by the search as
before. Cost: the whole box is tried first in Python floats (about a microsecond per
node; most trees of a fit are proved there: a median of ~50 us on trees of 20-50 nodes),
then the rounds of numpy (a few numpy calls per node and round, vectorised over the
boxes): about a millisecond where bisection proves or refutes, up to ~10 ms where it
ends at the caps.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .expression import ADD, CONST, COS, DIV, EXP, LOG, MUL, SIN, SQRT, SUB, VAR, Expression

__all__ = [
    "MAX_BOXES",
    "MAX_ROUNDS",
    "DOMAINS",
    "DomainProof",
    "data_box",
    "node_intervals",
    "prove_box",
    "EDGE_WIDENING",
    "EDGE_ROWS",
    "widened_box",
    "edge_probes",
    "EdgeProbes",
]

DOMAINS = ("box", "rows")
"""The values of the estimator's ``domain`` option: ``"box"`` (no pole anywhere in the
per-feature ``[min, max]`` box of the training data, proved by :func:`prove_box`) and
``"rows"`` (the paper's rule: the training rows only)."""

MAX_BOXES = 2048
"""Most boxes (the data box and its pieces) evaluated by one proof before it gives up."""

MAX_ROUNDS = 40
"""Most levels of bisection of one proof (a box is halved at most this many times)."""

_LIBM_REL = 2.0**-48  # outward widening after exp and log (relative; 16 float64 ulps)
_TRIG_ABS = 4e-15  # outward widening after sin and cos (absolute; their values are <= 1)
_TRIG_FULL = 1e12  # beyond this magnitude sin and cos of an interval are taken as [-1, 1]
_EXP_MAX = float(np.log(np.finfo(np.float64).max))  # exp overflows float64 above this
_TWO_PI = 2.0 * np.pi
# phases of the maximum and the minimum of sin and cos (``phase + 2*pi*k``)
_EXTREMA = {SIN: (0.5 * np.pi, -0.5 * np.pi), COS: (0.0, np.pi)}


class DomainProof(NamedTuple):
    """Outcome of :func:`prove_box`.

    Attributes:
      proved: True only if the tree is defined and finite at every point of the box (no
        denominator zero, ``sqrt``/``log`` arguments in their domain, no overflow).
      reason: ``"proved"``; ``"refuted"`` (a pole or an undefined point is certainly in
        the box); ``"cap"`` (not proved within :data:`MAX_BOXES` boxes or
        :data:`MAX_ROUNDS` levels, or a box too narrow to split in float64).
      boxes: boxes evaluated (the data box is 1).
    """

    proved: bool
    reason: str
    boxes: int


def data_box(X, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """Per-feature minimum and maximum of the rows of ``X`` with positive weight.

    Args:
      X: ``(n_samples, n_features)`` array of finite numbers.
      sample_weight: ``(n_samples,)`` non-negative weights or ``None`` (every row).

    Returns:
      ``(lo, hi)``, float64 arrays ``(n_features,)``.

    Raises:
      ValueError: ``X`` is not 2-D, no row has positive weight, or a value in the rows
        used is not finite.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (X.shape[0],):
            raise ValueError(f"sample_weight must have shape ({X.shape[0]},); got {w.shape}")
        X = X[w > 0]
    if X.shape[0] == 0:
        raise ValueError("the box of the data needs at least one row of positive weight")
    if not np.all(np.isfinite(X)):
        raise ValueError("the box of the data needs finite values")
    return X.min(axis=0), X.max(axis=0)


EDGE_WIDENING = 0.05
"""How far past the data the edge probes lie (:func:`widened_box`): a twentieth of each
feature's range, on a log scale for a positive feature."""

EDGE_ROWS = 256
"""Most training rows the edge probes start from (evenly spaced in the data's order)."""


def widened_box(lo, hi, fraction: float = EDGE_WIDENING) -> tuple[np.ndarray, np.ndarray]:
    """The box ``[lo, hi]`` widened by ``fraction`` of each feature's range on both sides,
    on a log scale for a feature whose minimum is positive (a feature spanning decades,
    ``0.8 .. 6000``, is widened to ``0.53 .. 9200``, not below 0; ``1 .. 3`` to
    ``0.95 .. 3.2``) and linearly otherwise.

    Args:
      lo, hi: ``(n_features,)`` per-feature minimum and maximum (:func:`data_box`).
      fraction: non-negative share of the range added on each side.

    Returns:
      ``(lo, hi)``, float64 arrays ``(n_features,)``.
    """
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    pos = lo > 0
    with np.errstate(all="ignore"):
        llo, lhi = np.log(np.where(pos, lo, 1.0)), np.log(np.where(pos, hi, 1.0))
        wlo = np.where(pos, np.exp(llo - fraction * (lhi - llo)), lo - fraction * (hi - lo))
        whi = np.where(pos, np.exp(lhi + fraction * (lhi - llo)), hi + fraction * (hi - lo))
    return wlo, whi


class EdgeProbes:
    """The edge probes of :func:`edge_probes`, kept as their parts: ``base``, the
    ``(rows, n_features)`` training rows they start from, and ``lo``, ``hi``, the
    ``(n_features,)`` edges of :func:`widened_box`. The full set, ``2 * n_features * rows``
    points of ``n_features`` values each, grows with the square of the number of features
    (80 rows and 3000 features: 5.8 GB); a model that uses ``k`` features is evaluated on
    the ``2 * k * rows`` probes of those features alone (:meth:`values_of`), with the same
    result. ``np.asarray(probes)`` builds the full array, row-major by feature, side
    (``lo`` first) and row."""

    def __init__(self, base, lo, hi):
        self.base = np.asarray(base, np.float64)
        self.lo = np.asarray(lo, np.float64)
        self.hi = np.asarray(hi, np.float64)

    @property
    def shape(self) -> tuple[int, int]:
        rows, m = self.base.shape
        return (2 * m * rows, m)

    def __len__(self) -> int:
        return self.shape[0]

    def _blocks(self, features) -> np.ndarray:
        """``(2 * len(features) * rows, n_features_of_base)`` probes that move each of
        ``features`` (column indices of ``self.base``) to each edge in turn."""
        base = self.base
        probes = np.repeat(base[None], 2 * len(features), axis=0)  # (2k, rows, m)
        for i, j in enumerate(features):
            probes[2 * i, :, j] = self.lo[j]
            probes[2 * i + 1, :, j] = self.hi[j]
        return probes.reshape(-1, base.shape[1])

    def __array__(self, dtype=None, copy=None):
        out = self._blocks(range(self.base.shape[1]))
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, key):
        return np.asarray(self)[key]

    def values_of(self, expr: Expression) -> np.ndarray:
        """``expr`` at every probe, as a 1-D array whose set of values is that of
        ``expr.evaluate(np.asarray(self))``: the probes that move a feature ``expr`` does
        not use give its values at the base rows, which are included once. Memory
        ``O(rows * k**2)`` for the ``k`` features ``expr`` uses, not ``O(rows * M**2)``."""
        m = self.base.shape[1]
        is_var = expr.op == VAR
        used = np.unique(expr.feature[is_var])
        local = Expression(
            expr.op, expr.value, np.where(is_var, np.searchsorted(used, expr.feature), 0)
        )
        part = EdgeProbes(self.base[:, used], self.lo[used], self.hi[used])
        values = [local.evaluate(part._blocks(range(len(used))))] if len(used) else []
        if len(used) < m:  # some probe moves an unused feature: the base rows' values
            values.append(local.evaluate(part.base))
        return np.concatenate(values) if values else np.zeros(0)


def edge_probes(
    X, sample_weight=None, fraction: float = EDGE_WIDENING, max_rows: int = EDGE_ROWS
) -> EdgeProbes:
    """Points just outside the data: up to ``max_rows`` training rows (of positive weight,
    evenly spaced), each copied once per feature and side with that feature moved to the
    edge of :func:`widened_box`. A model that is tame on the data but explodes at these
    points (a steep rational function of a feature near its minimum) will explode on the
    next row that lies slightly outside the training range.

    Args:
      X: ``(n_samples, n_features)`` finite training features.
      sample_weight: ``(n_samples,)`` or ``None``.

    Returns:
      :class:`EdgeProbes`: the ``(2 * n_features * rows, n_features)`` float64 points,
      deterministic, built per model from their parts (``np.asarray`` builds them all).

    Raises:
      ValueError: as :func:`data_box`.
    """
    X = np.asarray(X, dtype=np.float64)
    lo, hi = data_box(X, sample_weight)
    if sample_weight is not None:
        X = X[np.asarray(sample_weight) > 0]
    wlo, whi = widened_box(lo, hi, fraction)
    idx = np.unique(np.linspace(0, X.shape[0] - 1, min(max_rows, X.shape[0])).round().astype(int))
    return EdgeProbes(X[idx], wlo, whi)


# ------------------------------------------------------------------------- the kernel
def _down(x):
    return np.nextafter(x, -np.inf)


def _up(x):
    return np.nextafter(x, np.inf)


def _four(fn, al, ah, bl, bh):
    """Outward-rounded hull of ``fn`` at the four combinations of the ends."""
    p1, p2, p3, p4 = fn(al, bl), fn(al, bh), fn(ah, bl), fn(ah, bh)
    lo = np.minimum(np.minimum(p1, p2), np.minimum(p3, p4))
    hi = np.maximum(np.maximum(p1, p2), np.maximum(p3, p4))
    return _down(lo), _up(hi)


def _trig(code, al, ah):
    """Interval of ``sin`` or ``cos`` on ``[al, ah]`` (arrays): the values at the ends,
    and ``+1`` / ``-1`` wherever a maximum / minimum of the period lies in the interval
    widened by a margin far above the rounding of the test (so none is missed)."""
    fn = np.sin if code == SIN else np.cos
    va, vb = fn(al), fn(ah)
    lo, hi = np.minimum(va, vb), np.maximum(va, vb)
    mag = np.maximum(np.maximum(np.abs(al), np.abs(ah)), 1.0)
    margin = 1e-12 * mag
    for phase, is_max in zip(_EXTREMA[code], (True, False), strict=True):
        k = np.floor((ah + margin - phase) / _TWO_PI)
        hit = phase + _TWO_PI * k >= al - margin
        if is_max:
            hi = np.where(hit, 1.0, hi)
        else:
            lo = np.where(hit, -1.0, lo)
    full = (ah - al >= _TWO_PI) | (mag > _TRIG_FULL)
    lo = np.where(full, -1.0, np.maximum(lo - _TRIG_ABS, -1.0))
    hi = np.where(full, 1.0, np.minimum(hi + _TRIG_ABS, 1.0))
    return lo, hi


def _libm_widen(lo, hi):
    """Outward widening after ``exp``/``log`` (a few ulps of error in their libraries)."""
    return _down(lo - np.abs(lo) * _LIBM_REL), _up(hi + np.abs(hi) * _LIBM_REL)


def _intervals(op, value, feature, left, right, blo, bhi):
    """The kernel: node intervals on boxes ``blo, bhi`` ``(B, M)``; returns ``(L, H, OK)``,
    each ``(n_nodes, B)`` (float64, float64, bool). Where ``OK`` is False the node is not
    proved defined on the box and its ``[L, H]`` is ``[-inf, inf]``."""
    n = op.shape[0]
    B = blo.shape[0]
    L = np.empty((n, B))
    H = np.empty((n, B))
    OK = np.ones((n, B), bool)
    with np.errstate(all="ignore"):
        for i in range(n - 1, -1, -1):
            code = int(op[i])
            if code == CONST:
                L[i] = H[i] = value[i]
                continue
            if code == VAR:
                L[i], H[i] = blo[:, feature[i]], bhi[:, feature[i]]
                continue
            a = int(left[i])
            al, ah, ok = L[a], H[a], OK[a]
            if code in (ADD, SUB, MUL, DIV):
                b = int(right[i])
                bl, bh = L[b], H[b]
                ok = ok & OK[b]
                if code == ADD:
                    lo, hi = _down(al + bl), _up(ah + bh)
                elif code == SUB:
                    lo, hi = _down(al - bh), _up(ah - bl)
                elif code == MUL:
                    lo, hi = _four(np.multiply, al, ah, bl, bh)
                else:
                    nonzero = (bl > 0) | (bh < 0)
                    ok = ok & nonzero
                    lo, hi = _four(
                        np.divide, al, ah, np.where(nonzero, bl, 1.0), np.where(nonzero, bh, 1.0)
                    )
            elif code == SQRT:
                ok = ok & (al >= 0)
                lo = np.maximum(_down(np.sqrt(np.maximum(al, 0.0))), 0.0)
                hi = _up(np.sqrt(np.maximum(ah, 0.0)))
            elif code == EXP:
                lo, hi = _libm_widen(np.exp(al), np.exp(ah))
                lo = np.maximum(lo, 0.0)
            elif code == LOG:
                ok = ok & (al > 0)
                lo, hi = _libm_widen(
                    np.log(np.maximum(al, np.finfo(np.float64).tiny)),
                    np.log(np.maximum(ah, np.finfo(np.float64).tiny)),
                )
            else:  # SIN, COS
                lo, hi = _trig(code, al, ah)
            ok = ok & np.isfinite(lo) & np.isfinite(hi)
            OK[i] = ok
            L[i] = np.where(ok, lo, -np.inf)
            H[i] = np.where(ok, hi, np.inf)
    return L, H, OK


def _scalar_trig(code, al, ah):
    """:func:`_trig` on one interval (Python floats)."""
    fn = math.sin if code == SIN else math.cos
    mag = max(abs(al), abs(ah), 1.0)
    if ah - al >= _TWO_PI or mag > _TRIG_FULL:
        return -1.0, 1.0
    va, vb = fn(al), fn(ah)
    lo, hi = min(va, vb), max(va, vb)
    margin = 1e-12 * mag
    pmax, pmin = _EXTREMA[code]
    if pmax + _TWO_PI * math.floor((ah + margin - pmax) / _TWO_PI) >= al - margin:
        hi = 1.0
    if pmin + _TWO_PI * math.floor((ah + margin - pmin) / _TWO_PI) >= al - margin:
        lo = -1.0
    return max(lo - _TRIG_ABS, -1.0), min(hi + _TRIG_ABS, 1.0)


def _scalar_intervals(op, value, feature, left, right, lo, hi):
    """:func:`_intervals` on one box with Python floats (the fast first test of
    :func:`prove_box`, a tenth of the numpy kernel's cost on one box): ``(L, H)`` lists
    over the nodes, or ``None`` as soon as a node is not proved defined on the box. The
    same rules and the same outward rounding as :func:`_intervals`."""
    n = len(op)
    L = [0.0] * n
    H = [0.0] * n
    down, up, inf = math.nextafter, math.nextafter, math.inf
    for i in range(n - 1, -1, -1):
        code = op[i]
        if code == CONST:
            L[i] = H[i] = value[i]
            continue
        if code == VAR:
            L[i], H[i] = lo[feature[i]], hi[feature[i]]
            continue
        al, ah = L[left[i]], H[left[i]]
        if code <= DIV:
            bl, bh = L[right[i]], H[right[i]]
            if code == ADD:
                r0, r1 = al + bl, ah + bh
            elif code == SUB:
                r0, r1 = al - bh, ah - bl
            else:
                if code == MUL:
                    p1, p2, p3, p4 = al * bl, al * bh, ah * bl, ah * bh
                else:
                    if not (bl > 0 or bh < 0):
                        return None
                    p1, p2, p3, p4 = al / bl, al / bh, ah / bl, ah / bh
                r0, r1 = min(p1, p2, p3, p4), max(p1, p2, p3, p4)
                if r0 != r0 or r1 != r1:  # nan (inf * 0): min/max would drop it
                    return None
            r0, r1 = down(r0, -inf), up(r1, inf)
        elif code == SQRT:
            if not al >= 0:
                return None
            r0, r1 = max(down(math.sqrt(al), -inf), 0.0), up(math.sqrt(ah), inf)
        elif code == EXP:
            if ah > _EXP_MAX - 1e-6:  # math.exp would raise near the edge
                return None
            r0, r1 = math.exp(al), math.exp(ah)
            r0 = max(down(r0 - r0 * _LIBM_REL, -inf), 0.0)
            r1 = up(r1 + r1 * _LIBM_REL, inf)
        elif code == LOG:
            if not al > 0:
                return None
            r0, r1 = math.log(al), math.log(ah)
            r0, r1 = down(r0 - abs(r0) * _LIBM_REL, -inf), up(r1 + abs(r1) * _LIBM_REL, inf)
        else:
            r0, r1 = _scalar_trig(code, al, ah)
        if not (-inf < r0 and r1 < inf):
            return None
        L[i], H[i] = r0, r1
    return L, H


def _as_boxes(expr: Expression, lo, hi):
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    if lo.shape != hi.shape or lo.ndim not in (1, 2):
        raise ValueError(
            f"lo and hi must have one shape, (n_features,) or (n_boxes, "
            f"n_features); got {lo.shape} and {hi.shape}"
        )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)):
        raise ValueError("a box needs finite ends with lo <= hi")
    m = lo.shape[-1]
    vars_ = expr.feature[expr.op == VAR]
    if vars_.size and (vars_.min() < 0 or vars_.max() >= m):
        raise ValueError(f"the expression uses a variable index outside the box's {m} features")
    return lo, hi


def node_intervals(expr: Expression, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals of every node of ``expr`` on one box or on a batch of boxes.

    Args:
      expr: the tree (binary and unary nodes).
      lo, hi: float arrays ``(n_features,)`` (one box) or ``(n_boxes, n_features)``, finite,
        ``lo <= hi``.

    Returns:
      ``(L, H, ok)``, each ``(n_nodes, n_boxes)`` (``n_boxes = 1`` for one box), float64,
      float64, bool. Where ``ok[i, b]`` is True, node ``i`` is defined and finite at every
      point of box ``b`` and ``L[i, b] <= value <= H[i, b]`` there (exact real values, for
      the tree's float64 constants). Where it is False (a denominator interval holding 0,
      a ``sqrt``/``log`` argument outside its domain, an infinite interval, here or
      below) ``L, H`` are ``-inf, inf``.

    Raises:
      ValueError: mismatched or non-finite box ends, ``lo > hi``, or a variable index
        outside the box.
    """
    lo, hi = _as_boxes(expr, lo, hi)
    return _intervals(
        expr.op,
        expr.value,
        expr.feature,
        expr.left,
        expr.right,
        np.atleast_2d(lo),
        np.atleast_2d(hi),
    )


def _refuted(op, left, right, L, H, OK) -> bool:
    """Whether point evaluations (degenerate boxes: the columns of ``L, H, OK``) show a
    pole or an undefined point in the box (module docstring, "Refutation")."""
    for i in np.flatnonzero(op == DIV):
        d = int(right[i])
        if np.any(OK[d] & (L[d] > 0)) and np.any(OK[d] & (H[d] < 0)):
            return True
    for i in np.flatnonzero((op == SQRT) | (op == LOG) | (op == EXP)):
        c = int(left[i])
        code = int(op[i])
        if code == SQRT:
            bad = H[c] < 0
        elif code == LOG:
            bad = H[c] <= 0
        else:  # e * finfo.max and beyond: certainly overflows
            bad = L[c] > _EXP_MAX + 1.0
        if np.any(OK[c] & bad):
            return True
    return False


def _subtree_vars(expr: Expression, m: int) -> np.ndarray:
    """bool ``(n_nodes, m)``: the variables in each node's subtree, except that a
    division's row holds its denominator's (where its own test fails)."""
    n = expr.n_nodes
    V = np.zeros((n, m), bool)
    for i in range(n - 1, -1, -1):
        code = int(expr.op[i])
        if code == VAR:
            V[i, expr.feature[i]] = True
        elif code != CONST:
            V[i] = V[expr.left[i]]
            if code in (ADD, SUB, MUL, DIV):
                V[i] |= V[expr.right[i]]
    own = V.copy()
    div = np.flatnonzero(expr.op == DIV)
    own[div] = V[expr.right[div]]
    return own


def prove_box(
    expr: Expression, lo, hi, *, max_boxes: int = MAX_BOXES, max_rounds: int = MAX_ROUNDS
) -> DomainProof:
    """Prove that no denominator of ``expr`` vanishes anywhere on the box ``[lo, hi]``.

    Interval arithmetic over the tree, rounded outward, with bisection of the box where
    the intervals are too wide, and refutation by point evaluations (module docstring).
    Deterministic.

    Args:
      expr: the tree (binary and unary nodes; constants as float64).
      lo, hi: float arrays ``(n_features,)``: the box (e.g. :func:`data_box`), finite,
        ``lo <= hi``.
      max_boxes: most boxes evaluated before giving up (``>= 1``).
      max_rounds: most levels of bisection (``>= 0``; 0: the data box alone).

    Returns:
      :class:`DomainProof`. ``proved`` is True only if at every real point of the box
      every node of the tree is defined and finite: every denominator nonzero, every
      ``sqrt`` argument ``>= 0``, every ``log`` argument ``> 0``, no value beyond the
      float64 range. False is no proof of a pole (``reason`` says whether one was found).

    Raises:
      ValueError: as :func:`node_intervals`, ``lo``, ``hi`` not 1-D, or ``max_boxes < 1``
        or ``max_rounds < 0``.

    Example:
      >>> import numpy as np
      >>> e = Expression.parse("1 / (x1 - x2)")
      >>> prove_box(e, np.array([1.5, 0.0]), np.array([2.5, 1.0])).proved
      True
      >>> prove_box(e, np.array([0.5, 0.0]), np.array([2.5, 1.0])).reason
      'refuted'
    """
    lo, hi = _as_boxes(expr, lo, hi)
    if lo.ndim != 1:
        raise ValueError(
            f"prove_box takes one box, lo and hi of shape (n_features,); got {lo.shape}"
        )
    if int(max_boxes) < 1 or int(max_rounds) < 0:
        raise ValueError(
            f"max_boxes must be >= 1 and max_rounds >= 0; got {max_boxes!r}, {max_rounds!r}"
        )
    op, value, feature = expr.op, expr.value, expr.feature
    left, right = expr.left, expr.right
    # the whole box in Python floats first: most trees are proved in this one pass
    if (
        _scalar_intervals(
            op.tolist(),
            value.tolist(),
            feature.tolist(),
            left.tolist(),
            right.tolist(),
            lo.tolist(),
            hi.tolist(),
        )
        is not None
    ):
        return DomainProof(True, "proved", 1)
    span = hi - lo
    scale = np.where(span > 0, span, 1.0)
    V = None  # variables of each node's subtree, built only when bisection is needed
    is_bin = (op >= ADD) & (op <= DIV)
    has_kid = op >= ADD
    blo, bhi = lo[None], hi[None]
    count = 0
    for level in range(int(max_rounds) + 1):
        nb = blo.shape[0]
        if count + nb > max_boxes:
            return DomainProof(False, "cap", count)
        count += nb
        # the boxes and their centres (degenerate boxes, for the refutation) in one call
        centre = np.clip(blo + 0.5 * (bhi - blo), blo, bhi)
        L, H, OK = _intervals(
            op,
            value,
            feature,
            left,
            right,
            np.concatenate([blo, centre]),
            np.concatenate([bhi, centre]),
        )
        if _refuted(op, left, right, L[:, nb:], H[:, nb:], OK[:, nb:]):
            return DomainProof(False, "refuted", count)
        todo = ~OK[0, :nb]
        if not todo.any():
            return DomainProof(True, "proved", count)
        if level == max_rounds:
            break
        if V is None:
            V = _subtree_vars(expr, lo.shape[0]) & (span > 0)[None, :]
            tree_vars = V.any(axis=0)
        # split each undecided box at the middle of its widest relevant variable (relative
        # to the data box): one in the subtree of a node whose own test failed while its
        # children passed, else any variable of the tree
        blo, bhi, OKb = blo[todo], bhi[todo], OK[:, :nb][:, todo]
        kids_ok = np.ones_like(OKb)
        kids_ok[has_kid] &= OKb[left[has_kid]]
        kids_ok[is_bin] &= OKb[right[is_bin]]
        culprit = ~OKb & kids_ok  # (n_nodes, B)
        rel = (culprit.T.astype(np.int32) @ V.astype(np.int32)) > 0  # (B, n_features)
        rel = np.where(rel.any(axis=1, keepdims=True), rel, tree_vars[None, :])
        width = np.where(rel, (bhi - blo) / scale, -1.0)
        j = np.argmax(width, axis=1)
        rows = np.arange(blo.shape[0])
        a, b = blo[rows, j], bhi[rows, j]
        mid = a + 0.5 * (b - a)
        if np.any(width[rows, j] <= 0) or np.any((mid <= a) | (mid >= b)):
            return DomainProof(False, "cap", count)  # nothing left to split in float64
        lo1, hi1 = blo.copy(), bhi.copy()
        hi1[rows, j] = mid
        lo2 = blo.copy()
        lo2[rows, j] = mid
        blo, bhi = np.concatenate([lo1, lo2]), np.concatenate([hi1, bhi])
    return DomainProof(False, "cap", count)
