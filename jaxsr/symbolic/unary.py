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
* **The move ``p -> u(p)`` on a non-terminal ``p`` (NOT implemented).** It could be
  scored exactly through ``p``'s own equation (the candidate semantic ``u(sem_p)`` put
  into eq. 26, with the domain rules above as the forbidden set), like the
  constant-expression search. But once accepted, every node inside ``p`` would sit
  below a unary node, where the node equations above no longer hold; the searches
  there would have to be disabled (or scored by substitute-and-re-evaluate, one full
  tree evaluation per candidate). That needs the kernels (semantics, equations,
  forbidden sets) to know unary nodes; it was left for a later change.

A transformed terminal counts as one node in ``max_nodes`` (it is one leaf to the
search); in ``equations_`` (complexity) and ``n_nodes_`` it counts as its two nodes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .expression import CONST, SQRT, UNARY_NAMES, VAR, Expression

__all__ = ["UNARY_OPERATORS", "Terminal", "transformed_terminals", "expand_terminals",
           "contract_terminals", "check_unary_operators"]

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
    becomes the terminal column of ``(u, m)``.

    Raises:
      ValueError: a unary node that is not an offered terminal (another operator, an
        argument that is not a variable, or a column the domain rules exclude).
    """
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
            if key not in index:
                raise ValueError(
                    f"{expr.subtree(i).to_string()} is not an offered terminal: the fit "
                    "searches unary operators only on single variables, from "
                    "unary_operators, where the domain rules admit them on the training data")
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
