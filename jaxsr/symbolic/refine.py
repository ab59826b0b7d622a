"""Joint refinement of all constants of an expression with L-BFGS (optax), after DoME's search.

DoME's searches set one node at a time from the node equations (paper, sections 2.3-2.6):
every constant is optimal given the others, but the constants are never moved together. On
an expression whose structure is already right this can leave the training MSE above what
its constants allow (e.g. ``k1*x1 + k2*x1*x2`` grown in two steps). :func:`refine_constants`
minimises the MSE over all constants jointly with ``optax.lbfgs`` (zoom line search) and
**accepts the result only if the MSE, recomputed exactly as the estimator computes it, is
strictly lower**: refinement never raises the MSE, and a failed or diverging run (NaN, a
pole crossed, no progress) returns the expression unchanged. A pole can also move into
the box of the data between the training rows; the ``domain`` option keeps the proof of
:func:`~jaxsr.symbolic.domain.prove_box` that the search's trees have (by default,
whenever the input has it).

The constants are optimised in relative units, ``c_k = c0_k * (1 + u_k)`` (``c_k = u_k`` for
``c0_k = 0``), and the loss is ``MSE / MSE_0``, so the step sizes do not depend on the
magnitude of the constants or of ``y`` (Newton's ``G = 6.7e-11`` and ``y ~ 1e20`` alike).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._config import to_device
from .domain import data_box, prove_box
from .expression import CONST, Expression, jax_graph

__all__ = ["RefineResult", "refine_constants", "weighted_mse", "shortest_constants"]


class RefineResult(NamedTuple):
    """Outcome of :func:`refine_constants`.

    Attributes:
      expression: the refined expression if ``accepted``, else the input one.
      mse: its weighted MSE (float64, computed by :func:`weighted_mse`).
      mse_before: the input expression's weighted MSE, computed the same way.
      accepted: whether the refined constants lowered the MSE (strictly).
      n_iterations: L-BFGS iterations run.
    """

    expression: Expression
    mse: float
    mse_before: float
    accepted: bool
    n_iterations: int


def weighted_mse(expr: Expression, X, y, sample_weight=None, *, scale: float = 1.0) -> float:
    """``sum_i w_i (f(x_i) - y_i)^2 / sum_i w_i`` in float64 with :meth:`Expression.evaluate`
    (``inf`` when the expression is not finite on a row with positive weight); with
    ``scale``, of ``f / scale`` against ``y / scale`` (a target near the float limits,
    whose squares overflow)."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, np.float64)
    with np.errstate(all="ignore"):
        r = expr.evaluate(X) - y if scale == 1.0 else expr.evaluate(X) / scale - y / scale
        pos = w > 0
        if not np.all(np.isfinite(r[pos])):
            return float("inf")
        return float(np.sum(w[pos] * r[pos] * r[pos]) / np.sum(w[pos]))


def shortest_constants(
    expr: Expression, X, y, sample_weight=None, *, max_loss: float = 0.0, scale: float = 1.0
) -> Expression:
    """``expr`` with each constant written with as few significant digits as keep its fit.

    A fit in floating point leaves rounding in the last digits of an exact law's
    constants (least squares gives ``3.0000000000000004`` for a 3); a person reads the
    short form. Each constant in pre-order is replaced by the first of its roundings to
    1, 2, ..., 16 significant digits whose tree keeps the weighted MSE (of ``y / scale``,
    :func:`weighted_mse`) at most ``max(max_loss, MSE of expr)``; the constants already
    replaced stay replaced. With ``max_loss`` the rounding floor of the fit
    (:func:`~jaxsr.symbolic.front.loss_floor`) only a model exact to rounding can change,
    and only within rounding.

    Args:
      expr: the tree; X: ``(n, n_features)``; y: ``(n,)``; sample_weight: ``(n,)`` or
        ``None``.
      max_loss: the MSE the result may reach (in units of ``y / scale``).
      scale: targets and outputs are divided by it before the MSE (a target near the
        float limits).

    Returns:
      the tree with the same structure (``expr`` itself when nothing changes).
    """
    const_idx = np.flatnonzero(expr.op == CONST)
    if const_idx.size == 0:
        return expr
    X = np.asarray(X, np.float64)

    def loss(tree):
        return weighted_mse(tree, X, y, sample_weight, scale=scale)

    limit = max(float(max_loss), loss(expr))
    if not np.isfinite(limit):
        return expr
    value = expr.value.astype(np.float64).copy()
    changed = False
    for i in const_idx:
        k = float(value[i])
        if not np.isfinite(k) or k == 0.0:
            continue
        for digits in range(1, 17):
            short = float(f"{k:.{digits - 1}e}")
            if short == k:
                break
            trial = value.copy()
            trial[i] = short
            if loss(Expression(expr.op, trial, expr.feature)) <= limit:
                value, changed = trial, True
                break
    return Expression(expr.op, value, expr.feature) if changed else expr


def _evaluator(op, feature, left, right):
    """``g(c, X)``: the outputs of the tree of this structure with constants ``c`` (in the
    pre-order of its ``CONST`` nodes)."""
    slot = {int(i): k for k, i in enumerate(np.flatnonzero(op == CONST))}

    def g(c, X):
        return jax_graph(
            op,
            feature,
            left,
            right,
            X,
            lambda i: jnp.broadcast_to(c[slot[i]], X.shape[:-1]).astype(X.dtype),
        )

    return g


def refine_constants(
    expr: Expression,
    X,
    y,
    sample_weight=None,
    *,
    max_iterations: int = 100,
    tol: float = 1e-12,
    domain: str = "auto",
) -> RefineResult:
    """Refine all constants of ``expr`` jointly (L-BFGS on the MSE); never raises the MSE.

    Runs in float64 (scoped ``jax.enable_x64``), whatever the caller's JAX settings.

    Args:
      expr: the expression (its structure is kept; only ``CONST`` values move).
      X: ``(n_samples, n_features)`` float array the variables index.
      y: ``(n_samples,)`` float targets.
      sample_weight: ``(n_samples,)`` non-negative weights, or ``None`` (all 1).
      max_iterations: the most L-BFGS iterations (each with a zoom line search).
      tol: stop when the gradient norm of the relative loss ``MSE / MSE_0`` is below this.
      domain: where the refined expression must be free of poles, beyond finite values on
        the rows of positive weight: ``"auto"`` (default) when ``expr`` is proved to have
        no pole on the box of ``X`` (per-feature minimum and maximum over the rows of
        positive weight; :func:`~jaxsr.symbolic.domain.prove_box`), the refined one must
        be proved too, so refinement never loses that proof; ``"box"``: the refined one
        must be proved, whatever the input; ``"rows"``: the rows only.

    Returns:
      :class:`RefineResult`; ``expression`` is new only when its MSE (recomputed with
      :func:`weighted_mse`, as :meth:`Expression.evaluate` predicts) is strictly lower
      and it meets ``domain``.

    Raises:
      ValueError: an unknown ``domain``.
    """
    if domain not in ("auto", "box", "rows"):
        raise ValueError(f"Unknown domain {domain!r}; choose one of ['auto', 'box', 'rows']")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, np.float64)
    before = weighted_mse(expr, X, y, w)
    const_idx = np.flatnonzero(expr.op == CONST)
    if const_idx.size == 0 or not np.isfinite(before) or before == 0.0:
        return RefineResult(expr, before, before, False, 0)
    c0 = expr.value[const_idx].astype(np.float64)
    scale = np.where(c0 != 0.0, c0, 1.0)
    offset = np.where(c0 != 0.0, c0, 0.0)
    run = _compiled(
        expr.op.tobytes(), expr.feature.tobytes(), expr.left.tobytes(), expr.right.tobytes()
    )
    with jax.enable_x64(True):
        u, n_iter = run(
            to_device(np.zeros(c0.size)),
            to_device(scale),
            to_device(offset),
            to_device(X),
            to_device(y),
            to_device(w),
            before,
            int(max_iterations),
            float(tol),
        )
    u = np.asarray(u, dtype=np.float64)
    if not np.all(np.isfinite(u)):
        return RefineResult(expr, before, before, False, int(n_iter))
    c = np.where(c0 != 0.0, c0 * (1.0 + u), u)
    value = expr.value.copy()
    value[const_idx] = c
    candidate = Expression(expr.op, value, expr.feature)
    after = weighted_mse(candidate, X, y, w)
    if np.isfinite(after) and after < before and _keeps_domain(expr, candidate, X, w, domain):
        return RefineResult(candidate, after, before, True, int(n_iter))
    return RefineResult(expr, before, before, False, int(n_iter))


def _keeps_domain(expr, candidate, X, w, domain) -> bool:
    """Whether ``candidate`` (``expr`` with refined constants) meets ``domain`` (see
    :func:`refine_constants`) on the box of the rows of ``X`` with positive weight."""
    if domain == "rows":
        return True
    box = data_box(X, w)
    if domain == "auto" and not prove_box(expr, *box).proved:
        return True
    return prove_box(candidate, *box).proved


@functools.lru_cache(maxsize=64)
def _compiled(op: bytes, feature: bytes, left: bytes, right: bytes):
    """The jitted L-BFGS run for one tree structure (cached: refits of the same structure,
    e.g. across cross-validation folds, compile once)."""
    g = _evaluator(*(np.frombuffer(b, dtype=np.int32) for b in (op, feature, left, right)))
    opt = optax.lbfgs()

    @jax.jit
    def run(u0, scale, offset, X, y, w, mse0, max_iterations, tol):
        wsum = jnp.sum(w)

        def loss(u):  # MSE / MSE_0 over the constants offset + scale * u
            r = g(offset + scale * u, X) - y
            return jnp.sum(w * r * r) / wsum / mse0

        value_and_grad = optax.value_and_grad_from_state(loss)

        def step(carry):
            u, state = carry
            value, grad = value_and_grad(u, state=state)
            updates, state = opt.update(grad, state, u, value=value, grad=grad, value_fn=loss)
            return optax.apply_updates(u, updates), state

        def going(carry):
            _, state = carry
            count = optax.tree.get(state, "count")
            err = optax.tree.norm(optax.tree.get(state, "grad"))
            finite = jnp.isfinite(optax.tree.get(state, "value"))
            return (count == 0) | ((count < max_iterations) & (err >= tol) & finite)

        u, state = jax.lax.while_loop(going, step, (u0, opt.init(u0)))
        return u, optax.tree.get(state, "count")

    return run
