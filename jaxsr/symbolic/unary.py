"""Unary operators ``sqrt, exp, log, sin, cos`` on the paper's node equations (issue 12).

Design note (beyond the paper, whose trees use ``+ - * /`` only)
-----------------------------------------------------------------
Every search of the paper is exact because the tree's MSE, as a function of one node's
output ``o``, has the form of equation 6, ``mean(((a*o - b) / (c*o - d))**2)``: each
binary operator passes to its children an equation of the same form (equations 7-20),
with the other child's semantic as a fixed vector. A unary node ``u(p)`` breaks this:
the MSE as a function of ``p``'s output is ``mean(((a*u(o) - b) / (c*u(o) - d))**2)``,
not a ratio of affine functions of ``o``. The consequences:

* **Transformed variables as terminals (implemented).** ``u(x_m)`` is a fixed semantic,
  like a variable. Offered as an extra terminal column, it is scored exactly by every
  search that scores a variable: the variable search (eq. 26 at the column), the
  constant-variable search (``k op u(x_m)``, the constant from the node equation of
  ``k``) and, in the trees that contain it, the constant and constant-expression
  searches of the nodes above it. Nothing below it is searched (it is a leaf to the
  search), so no search ever needs an equation below a unary node. :func:`transformed_terminals`
  builds these columns; the fit appends them to ``X`` and maps the chosen terminals back
  to unary nodes over the variable (:func:`expand_terminals`), so the returned tree,
  its printing, sympy / LaTeX / JAX export and JSON carry ``sqrt(x_m)`` etc.
* **Domain rules (the role of the forbidden sets).** A column is offered only if it is
  defined and safe on every training row: ``sqrt`` and ``log`` need ``x > 0`` on all
  rows (no value of a non-positive argument), ``exp`` must not overflow, and every
  column must lie in the magnitude range the searches need for any feature
  (``[finfo.tiny**0.25, finfo.max**0.25]``: squares and products of two features stay
  finite and normal) and must not be constant. So no non-finite value ever enters the
  training semantics: the search's own validity checks (finite semantics, no zero
  denominator, no pole) then apply unchanged to trees over these columns.
* **The move ``p -> u(p)`` on a non-terminal ``p`` (implemented: :class:`UnarySearch`).**
  Replacing the subtree ``p`` at node ``j`` by ``u(p)`` changes the output of node ``j``
  from ``o = sem_j`` to ``u(sem_j)``, a fixed vector: the tree's MSE after the move is
  node ``j``'s own equation at it, ``mean(((a_j*u(sem_j) - b_j) / (c_j*u(sem_j) -
  d_j))**2)``, exactly as the constant-expression search scores ``k + p`` and ``k * p``
  (:func:`unary_moves`; tested against substitute-and-re-evaluate). The domain rules
  play the role of the forbidden sets: ``sqrt`` and ``log`` only where ``sem_j > 0`` on
  every training row, ``u(sem_j)`` finite with ``|u(sem_j)| <= finfo.max**0.25`` (no
  ``exp`` overflow, squares stay finite), and not hitting ``S_j`` (no division by zero
  above). The move runs on the nodes (and under the size / height limits) where the
  constant-expression search runs, in the same stage of every strategy; it is the last
  search in the order of ties. The chosen change is then accepted only by the true MSE
  of the new tree, as every change (:meth:`~jaxsr.symbolic.strategies.DomeSearch.accepts`:
  every node finite, no zero denominator, no pole), so no non-finite value ever enters
  the training semantics.
* **Unary interior nodes in the search trees.** After the move the tree holds a unary
  node: :class:`~jaxsr.symbolic.TreeArrays` keeps its child as ``left`` (``right`` 0), and
  :func:`~jaxsr.symbolic.node_semantics` evaluates it (the only kernel change). The
  equation of the unary node itself and of every node above it is exact (the rules of
  equations 7-20 only need the semantics of siblings). **Below a unary node the node
  equations do not hold** (the MSE is ``mean(((a*u(o) - b) / (c*u(o) - d))**2)`` in the
  output ``o`` of the child, not a ratio of affine functions of ``o``), so every search
  is switched off there: the node masks of :meth:`DomeSearch.masks` leave out the nodes
  of :meth:`~jaxsr.symbolic.Expression.below_unary` (the kernels' rows there hold values
  that nothing reads), and the cyclic constant optimisation (section 2.6) skips their
  constants. Those constants still move: the joint Levenberg-Marquardt polish of
  strategies 2 and 3 and ``refine_constants`` differentiate the true MSE through the
  unary node (substitute-and-re-evaluate by construction: each step is kept only if the
  true MSE drops). Searches at the unary node itself (replacing ``u(p)`` by a constant,
  a variable, ``k op x``, or ``k + u(p)``, ``k * u(p)``) and above it are exact.
  Scoring the searches below a unary node exactly would need one tree evaluation per
  candidate (``O(candidates * depth * N)`` instead of one matrix product); that is not
  done.

A transformed terminal counts as one node in ``max_nodes`` (it is one leaf to the
search); in ``equations_`` (complexity) and ``n_nodes_`` it counts as its two nodes.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .equations import equation_mse, is_forbidden
from .expression import ADD, CONST, LOG, SQRT, UNARY_NAMES, VAR, Expression, _jax_unary

__all__ = ["UNARY_OPERATORS", "Terminal", "transformed_terminals", "expand_terminals",
           "contract_terminals", "check_unary_operators", "unary_moves", "UnarySearch"]

UNARY_OPERATORS = tuple(UNARY_NAMES.values())  # ("sqrt", "exp", "log", "sin", "cos")
_CODES = {v: k for k, v in UNARY_NAMES.items()}


class Terminal(NamedTuple):
    """An extra terminal column: ``op(x_feature)``."""

    op: int  # unary operator code (expression.SQRT, ...)
    feature: int  # column of X it transforms


def check_unary_operators(ops) -> tuple[str, ...]:
    """``ops`` as a tuple of known names (empty for ``None`` / ``()``).

    Raises:
      ValueError: an unknown or repeated name, or not a sequence of strings.
    """
    if ops is None:
        return ()
    if isinstance(ops, str) or not all(isinstance(o, str) for o in ops):
        raise ValueError(f"unary_operators must be a sequence of names from "
                         f"{UNARY_OPERATORS}, e.g. ('sqrt', 'exp'); got {ops!r}")
    ops = tuple(ops)
    bad = [o for o in ops if o not in _CODES]
    if bad or len(set(ops)) != len(ops):
        raise ValueError(f"unary_operators must be distinct names from {UNARY_OPERATORS}; "
                         f"got {ops!r}")
    return ops


def _allowed(code: int, x: np.ndarray) -> bool:
    if code in (_CODES["sqrt"], _CODES["log"]):
        return bool(np.all(x > 0))
    return True


def transformed_terminals(X, ops, dtype=np.float64, skip=None):
    """The columns ``u(x_m)`` for every operator ``u`` of ``ops`` and column ``m`` of
    ``X`` that the domain rules admit (module docstring).

    Args:
      X: ``(n_samples, n_features)`` float array (the training rows).
      ops: names of unary operators (:data:`UNARY_OPERATORS`).
      dtype: the fit's dtype (its range decides which columns are safe).
      skip: optional bool ``(n_features,)``: columns not transformed (e.g. constant ones).

    Returns:
      ``(columns, terminals)``: ``(n_samples, K)`` array of ``dtype`` and the ``K``
      :class:`Terminal` definitions, in the order operator-major then column.
    """
    X = np.asarray(X, np.float64)
    fi = np.finfo(dtype)
    big, small = float(fi.max) ** 0.25, float(fi.tiny) ** 0.25
    cols, terms = [], []
    for name in check_unary_operators(ops):
        code = _CODES[name]
        fn = Expression.unary(code, Expression.variable(0))
        for m in range(X.shape[1]):
            if skip is not None and skip[m]:
                continue
            x = X[:, m]
            if not _allowed(code, x):
                continue
            with np.errstate(all="ignore"):
                v = fn.evaluate(x[:, None])
            a = np.abs(v)
            if (not np.all(np.isfinite(v)) or np.any(a > big) or np.any((a > 0) & (a < small))
                    or np.all(v == v[0])):
                continue
            cols.append(v.astype(dtype))
            terms.append(Terminal(code, m))
    out = np.stack(cols, axis=1) if cols else np.zeros((X.shape[0], 0), dtype)
    return out, terms


def expand_terminals(expr: Expression, n_features: int, terminals) -> Expression:
    """``expr`` over the columns of ``X`` and the extra terminals (feature ``n_features +
    k`` is ``terminals[k]``) as a tree over ``X`` alone, each terminal a unary node over
    its variable."""
    extra = (expr.op == VAR) & (expr.feature >= n_features)
    if not np.any(extra):
        return expr
    ops, vals, feats = [], [], []
    for i in range(expr.n_nodes):
        if extra[i]:
            t = terminals[int(expr.feature[i]) - n_features]
            ops += [t.op, VAR]
            vals += [0.0, 0.0]
            feats += [0, t.feature]
        else:
            ops.append(int(expr.op[i]))
            vals.append(float(expr.value[i]) if expr.op[i] == CONST else 0.0)
            feats.append(int(expr.feature[i]))
    return Expression(ops, vals, feats)


def contract_terminals(expr: Expression, n_features: int, terminals) -> Expression:
    """The inverse of :func:`expand_terminals` (for a warm start): every ``u(x_m)`` node
    that is an offered terminal becomes the terminal column of ``(u, m)``; any other
    unary node stays a unary interior node of the search tree (module docstring)."""
    if not expr.has_unary:
        return expr
    index = {(t.op, t.feature): n_features + k for k, t in enumerate(terminals)}
    ops, vals, feats = [], [], []
    i = 0
    while i < expr.n_nodes:
        code = int(expr.op[i])
        if code >= SQRT:
            j = i + 1
            key = (code, int(expr.feature[j])) if expr.op[j] == VAR else None
            if key in index:
                ops.append(VAR)
                vals.append(0.0)
                feats.append(index[key])
                i += 2
                continue
        ops.append(code)
        vals.append(float(expr.value[i]))
        feats.append(int(expr.feature[i]))
        i += 1
    return Expression(ops, vals, feats)


@functools.partial(jax.jit, static_argnames=("codes",))
def unary_moves(tree, sem, eqs, S, node_mask, codes):
    """MSE reductions of every move ``p -> u(p)`` (module docstring), scored on ``p``'s
    own node equation.

    Args:
      tree: :class:`~jaxsr.symbolic.TreeArrays` of ``capacity`` nodes.
      sem: ``(capacity, N)`` semantics; eqs: :class:`~jaxsr.symbolic.Equations`;
      S: ``(capacity, K, N)`` forbidden sets (as :func:`~jaxsr.symbolic.search_all`).
      node_mask: bool ``(capacity,)``: the nodes ``p`` to try (the caller leaves out
        terminals, nodes below a unary node and nodes without room for one more node).
      codes: static tuple of unary operator codes (``expression.SQRT`` ...).

    Returns:
      ``(capacity, len(codes))`` float: ``MSE - mean(((a*u(sem) - b)/(c*u(sem) - d))**2)``
      at each node, ``-inf`` where the move is not a candidate (masked, outside the domain
      rules, forbidden by ``S``, or not finite).
    """
    dt = sem.dtype
    big = jnp.asarray(float(jnp.finfo(dt).max) ** 0.25, dt)
    base = equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, sem)
    real = jnp.arange(sem.shape[0]) < tree.n_nodes
    cols = []
    for code in codes:
        positive = jnp.all(sem > 0, axis=-1) if code in (SQRT, LOG) else True
        v = _jax_unary(code, sem)
        ok = positive & jnp.all(jnp.isfinite(v) & (jnp.abs(v) <= big), axis=-1)
        v = jnp.where(ok[:, None], v, 1.0)
        red = base - equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, v)
        ok = ok & ~is_forbidden(S, tree.n_slots, v) & jnp.isfinite(red) & node_mask & real
        cols.append(jnp.where(ok, red, -jnp.inf))
    return jnp.stack(cols, axis=1)


class UnarySearch:
    """The move ``p -> u(p)`` as a search of :class:`~jaxsr.symbolic.strategies.DomeSearch`
    (its ``unary_search``; the estimator sets it when ``unary_operators`` is not empty).

    Args:
      names: unary operator names (:data:`UNARY_OPERATORS`).
    """

    def __init__(self, names):
        self.codes = tuple(_CODES[n] for n in check_unary_operators(names))

    def mask(self, engine, masks) -> np.ndarray:
        """bool ``(capacity,)``: the nodes of the constant-expression search (row 3 of
        ``masks``, the ``(4, capacity)`` node masks of the stage) that are non-terminal
        and have room for one more node (``max_nodes``) and one more level
        (``max_height``)."""
        expr = engine.expr
        cap = masks.shape[1]
        out = np.zeros(cap, bool)
        n = expr.n_nodes
        if n + 1 > engine.max_nodes:
            return out
        room = (expr.op >= ADD) & (expr.depths + expr.subtree_heights() + 1
                                   <= engine.max_height)
        out[:n] = np.asarray(masks[3], bool)[:n] & room
        return out

    def candidates(self, engine, masks, analysis) -> list:
        """The moves of the current tree whose reduction exceeds the engine's threshold,
        best first (ties: lowest node, then operator in ``codes`` order)."""
        from .strategies import Candidate

        mask = self.mask(engine, masks)
        if not self.codes or not mask.any():
            return []
        tree, sem, eqs, S = analysis
        red = np.asarray(jax.device_get(unary_moves(tree, sem, eqs, S, jnp.asarray(mask),
                                                    self.codes)))
        thr = engine.threshold()
        js, us = np.nonzero(red > thr)
        out = [(float(red[j, u]), int(j), int(u)) for j, u in zip(js, us, strict=True)]
        out.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [Candidate(r, "unary", j, op=self.codes[u]) for r, j, u in out]

    def merge(self, engine, found, masks, analysis) -> list:
        """``found`` (the other searches' candidates, best first) with the moves merged in
        by reduction; on ties the other searches come first (the order of the searches of
        section 2.8, the unary move last)."""
        extra = self.candidates(engine, masks, analysis)
        if not extra:
            return found
        return sorted(list(found) + extra, key=lambda c: -c.reduction)
