"""Unary operators ``sqrt, exp, log, sin, cos`` on the paper's node equations.

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
* **The scaled and shifted moves ``p -> u(k*p)`` and ``p -> u(k + p)``, ``u(k - p)``
  (implemented: :func:`scaled_unary_moves`).** The move ``p -> u(p)`` only helps once
  ``p`` already is the argument; physics laws mostly need a scaled one (``exp(-x/2)``,
  ``sin(theta/2)``) or a shifted one (``sqrt(1 - v**2/c**2)``). For ``exp``, ``sin``,
  ``cos`` the move is ``u(k*p)`` (a shift would be an outer constant factor or a phase
  that a further move gives); for ``sqrt`` and ``log`` it is ``u(k + p)`` and ``u(k - p)``
  (a scale would be an outer factor / summand). After the move node ``j`` outputs the
  vector ``v(k) = u(k op sem_j)``, so the tree's MSE is again node ``j``'s own equation at
  it, ``f(k) = mean(((a_j*v(k) - b_j)/(c_j*v(k) - d_j))**2)``: exact for every ``k``, but
  non-linear in ``k`` (no closed form as equation 28). ``k`` is chosen by a 1-D global
  search on ``f``: a grid of ``2 * GRID`` values (scale: ``k * max|sem_j|`` log-spaced
  over ``[1e-2, 1e2]`` of both signs; shift: ``k ± sem_j`` log-spaced over ``[1e-3, 1e1]``
  times the range of ``sem_j`` above its domain edge), then golden-section search between
  the best grid point's neighbours (``GOLDEN_STEPS``: to about ``1e-9`` of ``k``) and one
  parabolic step, both on at most ``SEARCH_ROWS`` evenly spaced rows (the reduction is
  then computed on all rows at the chosen ``k``; for a law the move expresses exactly, the
  subsample's minimiser is the same ``k``). The domain rules are those of the move ``p ->
  u(p)`` at the chosen ``k`` (a grid point outside them scores ``+inf``). The reduction
  returned is ``MSE - f(k)`` at the chosen ``k``, the exact MSE of the tree with that
  constant (tested against substitute-and-re-evaluate); the acceptance check then
  re-evaluates the new tree as for every change. The move runs on the nodes of the move
  ``p -> u(p)`` and on variable terminals (``u(k*x_m)``, ``sqrt(k - x_m)``), with room for
  three more nodes. The new ``k`` is below the unary node: the cyclic constant
  optimisation leaves it alone, the joint polish (strategies 2, 3) refines it with the
  other constants.

* **Pair terminals ``u(x_m * x_n)``, ``u(x_m / x_n)`` (implemented:
  :func:`transformed_terminals` with ``pairs``).** The greedy never builds the argument
  of a unary function for its own sake; a product or a quotient of two variables is the
  commonest argument in physics (``cos(omega*t)``, ``log(V2/V1)``, ``sqrt(I1*I2)``).
  Each is one more fixed terminal column under the same domain rules, scored exactly
  like ``u(x_m)``; only for ``exp, sin, cos`` (:data:`PAIR_OPERATORS`: ``sqrt`` and
  ``log`` split over a product or quotient, so ``u(x_m)`` terminals already build
  them), at most :data:`PAIR_TERMINALS_MAX`.
* **The square-target search (implemented in the estimator,
  :meth:`~jaxsr.symbolic.SymbolicRegressor._square_target_search`).** A law ``y =
  sqrt(p)`` with a rational ``p`` needs its argument grown inside the ``sqrt``, where no
  search runs; but ``y**2 = p`` is a law of ``+ - * /``, which the paper's exact searches
  can find. With ``sqrt`` among the operators and a target of one sign, the fit runs the
  paper's search on ``y**2`` and reads its models back as ``sign * sqrt(p)`` (only where
  ``p > 0`` on every training row), scored by their true MSE on ``y``.
* **The polish through unary nodes (implemented: :func:`chain_jacobian`).** The joint
  constant polish needs the residual's derivative with respect to every constant; below
  a unary node the node equations do not give it, and the chain rule through ``u'`` does
  (one top-down pass; the same numbers as forward-mode differentiation, tested).

A transformed terminal counts as one node in ``max_nodes`` (it is one leaf to the
search); in ``equations_`` (complexity) and ``n_nodes_`` it counts as its two nodes
(a pair terminal as its four).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._config import program, to_device
from .._sharding import device_get
from .equations import equation_mse, is_forbidden
from .expression import (
    ADD,
    CONST,
    COS,
    DIV,
    EXP,
    LOG,
    MUL,
    SIN,
    SQRT,
    SUB,
    UNARY_NAMES,
    VAR,
    Expression,
    _jax_unary,
)

__all__ = [
    "UNARY_OPERATORS",
    "Terminal",
    "transformed_terminals",
    "expand_terminals",
    "contract_terminals",
    "check_unary_operators",
    "unary_moves",
    "scaled_unary_moves",
    "scaled_forms",
    "move_subtree",
    "UnarySearch",
    "chain_jacobian",
    "pair_arguments",
    "PAIR_TERMINALS",
    "PAIR_TERMINALS_MAX",
    "PAIR_OPERATORS",
]

UNARY_OPERATORS = tuple(UNARY_NAMES.values())  # ("sqrt", "exp", "log", "sin", "cos")
_CODES = {v: k for k, v in UNARY_NAMES.items()}


class Terminal(NamedTuple):
    """An extra terminal column: ``op(x_feature)``, or with ``inner`` (``MUL``, ``DIV``)
    the pair terminal ``op(x_feature inner x_other)``."""

    op: int  # unary operator code (expression.SQRT, ...)
    feature: int  # column of X it transforms
    other: int = -1  # pair terminals: the second column
    inner: int = 0  # pair terminals: MUL or DIV (0: a one-variable terminal)

    def expression(self) -> Expression:
        """The terminal as a tree over the columns of ``X``."""
        arg = Expression.variable(self.feature)
        if self.inner:
            arg = Expression.binary(self.inner, arg, Expression.variable(self.other))
        return Expression.unary(self.op, arg)

    def name(self, names) -> str:
        """``sqrt(x1)``, ``cos(x1*x2)``, ``log(x1/x2)`` with the feature names."""
        if not self.inner:
            return f"{UNARY_NAMES[self.op]}({names[self.feature]})"
        sym = "*" if self.inner == MUL else "/"
        return f"{UNARY_NAMES[self.op]}({names[self.feature]}{sym}{names[self.other]})"


PAIR_TERMINALS = True
"""The estimator offers the pair terminals (:func:`transformed_terminals` ``pairs``)."""
PAIR_TERMINALS_MAX = 64
"""At most this many pair terminals ``u(x_m * x_n)``, ``u(x_m / x_n)`` are offered (in
the order of :func:`pair_arguments`, each pair under every operator, after the domain
rules): each is one more column of
every variable and constant-variable search."""


def check_unary_operators(ops) -> tuple[str, ...]:
    """``ops`` as a tuple of known names (empty for ``None`` / ``()``).

    Raises:
      ValueError: an unknown or repeated name, or not a sequence of strings.
    """
    if ops is None:
        return ()
    if isinstance(ops, str) or not all(isinstance(o, str) for o in ops):
        raise ValueError(
            f"unary_operators must be a sequence of names from "
            f"{UNARY_OPERATORS}, e.g. ('sqrt', 'exp'); got {ops!r}"
        )
    ops = tuple(ops)
    bad = [o for o in ops if o not in _CODES]
    if bad or len(set(ops)) != len(ops):
        raise ValueError(
            f"unary_operators must be distinct names from {UNARY_OPERATORS}; got {ops!r}"
        )
    return ops


def _allowed(code: int, x: np.ndarray) -> bool:
    if code in (_CODES["sqrt"], _CODES["log"]):
        return bool(np.all(x > 0))
    return True


PAIR_OPERATORS = (EXP, SIN, COS)
"""The operators of the pair terminals: those that do not split over a product or a
quotient (``sqrt(x*y) = sqrt(x)*sqrt(y)``, ``log(x/y) = log(x) - log(y)``: the terminals
``sqrt(x_m)``, ``log(x_m)`` already build them, and the shortcut only lured the greedy
into products of ``sqrt`` pairs)."""


def pair_arguments(code: int, n_features: int, skip=None):
    """The ``(m, inner, n)`` of the pair terminals ``u(x_m inner x_n)`` of operator
    ``code`` (none unless it is one of :data:`PAIR_OPERATORS`), in this order: products
    ``x_m * x_n`` (``m <= n``), then quotients ``x_m / x_n`` (``m != n``)."""
    if code not in PAIR_OPERATORS:
        return []
    return [
        (m, inner, n)
        for m, inner, n in _all_pairs(n_features)
        if skip is None or not (skip[m] or skip[n])
    ]


def _all_pairs(n_features: int):
    """Every ``(m, inner, n)`` of :func:`pair_arguments` (no columns skipped), in its
    order, generated one at a time: the pairs are ``O(n_features**2)`` and only the first
    :data:`PAIR_TERMINALS_MAX` admitted ones are used."""
    for m in range(n_features):
        for n in range(m, n_features):
            yield m, MUL, n
    for m in range(n_features):
        for n in range(n_features):
            if m != n:
                yield m, DIV, n


def transformed_terminals(X, ops, dtype=np.float64, skip=None, pairs=False):
    """The columns ``u(x_m)`` for every operator ``u`` of ``ops`` and column ``m`` of
    ``X`` that the domain rules admit (module docstring), and with ``pairs`` the pair
    terminals ``u(x_m * x_n)``, ``u(x_m / x_n)`` (:func:`pair_arguments`; at most
    :data:`PAIR_TERMINALS_MAX`, pair-major: each pair under every operator before the
    next pair) under the same rules.

    Args:
      X: ``(n_samples, n_features)`` float array (the training rows).
      ops: names of unary operators (:data:`UNARY_OPERATORS`).
      dtype: the fit's dtype (its range decides which columns are safe).
      skip: optional bool ``(n_features,)``: columns not transformed (e.g. constant ones).
      pairs: also the pair terminals.

    Returns:
      ``(columns, terminals)``: ``(n_samples, K)`` array of ``dtype`` and the ``K``
      :class:`Terminal` definitions, in the order operator-major then column (then the
      pair terminals, pair-major). A column equal to an earlier one is left out.
    """
    X = np.asarray(X, np.float64)
    fi = np.finfo(dtype)
    big, small = float(fi.max) ** 0.25, float(fi.tiny) ** 0.25
    cols, terms = [], []
    seen = {X[:, m].tobytes() for m in range(X.shape[1])}

    def offer(term):
        expr = term.expression()
        arg = expr.subtree(1).evaluate(X) if term.inner else X[:, term.feature]
        if not _allowed(term.op, arg):
            return
        with np.errstate(all="ignore"):
            v = expr.evaluate(X)
        a = np.abs(v)
        if (
            not np.all(np.isfinite(v))
            or np.any(a > big)
            or np.any((a > 0) & (a < small))
            or np.all(v == v[0])
        ):
            return
        v = v.astype(dtype)
        if v.tobytes() in seen:
            return
        seen.add(v.tobytes())
        cols.append(v)
        terms.append(term)

    names = check_unary_operators(ops)
    for name in names:
        for m in range(X.shape[1]):
            if skip is None or not skip[m]:
                offer(Terminal(_CODES[name], m))
    if pairs and names:  # pair-major (every operator gets the same first pairs), up to the cap
        n_single = len(terms)
        codes = [_CODES[name] for name in names]
        for m, inner, n in _all_pairs(X.shape[1]):  # pair_arguments' order, lazily
            if len(terms) - n_single >= PAIR_TERMINALS_MAX:
                break
            if skip is not None and (skip[m] or skip[n]):
                continue
            for code in codes:
                if code in PAIR_OPERATORS and len(terms) - n_single < PAIR_TERMINALS_MAX:
                    offer(Terminal(code, m, n, inner))
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
            t = terminals[int(expr.feature[i]) - n_features].expression()
            ops += [int(o) for o in t.op]
            vals += [0.0] * t.n_nodes
            feats += [int(f) for f in t.feature]
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
    index = {(t.op, t.feature, t.other, t.inner): n_features + k for k, t in enumerate(terminals)}
    ops, vals, feats = [], [], []
    i = 0
    while i < expr.n_nodes:
        code = int(expr.op[i])
        if code >= SQRT:
            j = i + 1
            key, size = None, 2
            if expr.op[j] == VAR:
                key = (code, int(expr.feature[j]), -1, 0)
            elif (
                i + 3 < expr.n_nodes
                and int(expr.op[j]) in (MUL, DIV)
                and expr.op[j + 1] == VAR
                and expr.op[j + 2] == VAR
            ):
                key, size = (
                    (code, int(expr.feature[j + 1]), int(expr.feature[j + 2]), int(expr.op[j])),
                    4,
                )
            if key in index:
                ops.append(VAR)
                vals.append(0.0)
                feats.append(index[key])
                i += size
                continue
        ops.append(code)
        vals.append(float(expr.value[i]))
        feats.append(int(expr.feature[i]))
        i += 1
    return Expression(ops, vals, feats)


@program(static_argnames=("codes",))
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


GRID = 16  # grid points per sign (scale) or in the decade range (shift) of the k search
GOLDEN_STEPS = 40  # the bracket shrinks to 0.618**40 ~ 4e-9 of two grid steps
SEARCH_ROWS = 64  # rows (evenly spaced) on which k is searched; scored on all rows
_INNER = {EXP: (MUL,), SIN: (MUL,), COS: (MUL,), SQRT: (ADD, SUB), LOG: (ADD, SUB)}


def scaled_forms(codes) -> tuple[tuple[int, int], ...]:
    """The ``(unary code, inner op)`` pairs of the scaled / shifted move for ``codes``:
    ``(u, MUL)`` is ``u(k*p)``, ``(u, ADD)`` ``u(k + p)``, ``(u, SUB)`` ``u(k - p)``."""
    return tuple((u, inner) for u in codes for inner in _INNER[u])


@program(static_argnames=("forms",))
def scaled_unary_moves(tree, sem, eqs, S, node_mask, forms):
    """MSE reductions of the moves ``p -> u(k op p)`` (module docstring: the scaled and
    shifted moves), each with its ``k`` from a 1-D search on ``p``'s own node equation.

    Args:
      tree, sem, eqs, S, node_mask: as :func:`unary_moves` (the mask may hold variable
        terminals too).
      forms: static tuple of ``(unary code, inner op)`` (:func:`scaled_forms`).

    Returns:
      ``(red, k)``, each ``(capacity, len(forms))`` float: ``red = MSE - f(k)``, the exact
      reduction at the chosen ``k`` (``-inf`` where no ``k`` is a candidate: masked, outside
      the domain rules, forbidden by ``S``, or not finite).
    """
    dt = sem.dtype
    big = jnp.asarray(float(jnp.finfo(dt).max) ** 0.25, dt)
    base = equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, sem)
    real = jnp.arange(sem.shape[0]) < tree.n_nodes
    absmax = jnp.max(jnp.abs(sem), axis=-1)
    absmax = jnp.where(absmax > 0, absmax, 1.0)
    lo, hi = jnp.min(sem, axis=-1), jnp.max(sem, axis=-1)
    span = jnp.where(hi > lo, hi - lo, absmax)
    # the 1-D search on k runs on at most SEARCH_ROWS evenly spaced rows (its cost is
    # ~80 evaluations of f); the reduction returned is of all rows at the chosen k
    stride = max(1, -(-sem.shape[1] // SEARCH_ROWS))
    sem_s = sem[:, ::stride]
    a, b, c, d = (e[:, None, ::stride] for e in (eqs.a, eqs.b, eqs.c, eqs.d))
    codes = tuple(dict.fromkeys(code for code, _ in forms))
    fns = [functools.partial(_jax_unary, code) for code in codes]
    # per form: which function, scale (k*sem) or shift (k + sign*sem), the domain rule
    which = jnp.asarray([codes.index(code) for code, _ in forms], jnp.int32)
    scale = jnp.asarray([inner == MUL for _, inner in forms])
    sign = jnp.asarray([-1.0 if inner == SUB else 1.0 for _, inner in forms], dt)
    positive = jnp.asarray([code in (SQRT, LOG) for code, _ in forms])
    r = jnp.asarray((np.sqrt(5.0) - 1.0) / 2.0, dt)
    g_scale = jnp.logspace(-2.0, 2.0, GRID, dtype=dt)
    g_scale = jnp.concatenate([-g_scale[::-1], g_scale])
    g_shift = jnp.logspace(-3.0, 1.0, 2 * GRID, dtype=dt)

    def one(form):
        """One form (a lax.map step: one compiled body for all forms)."""
        w, sc, sg, pos = form

        def values(k, sem=sem_s):
            """``(cap, K)`` k -> ``(cap, K, N)`` u(k op sem) (1 where invalid), validity."""
            kk = k[..., None]
            arg = jnp.where(sc, kk * sem[:, None, :], kk + sg * sem[:, None, :])
            v = jax.lax.switch(w, fns, arg)
            ok = jnp.all(jnp.isfinite(v) & (jnp.abs(v) <= big) & (~pos | (arg > 0)), axis=-1)
            return jnp.where(ok[..., None], v, 1.0), ok

        def f(k):
            v, ok = values(k)
            m = equation_mse(a, b, c, d, v)
            return jnp.where(ok & jnp.isfinite(m), m, jnp.inf)

        # scale: k*max|sem| over +-[1e-2, 1e2]; shift: k above the domain edge (k + sem > 0
        # needs k > -min(sem), k - sem > 0 needs k > max(sem)) by [1e-3, 1e1] of the range
        edge = jnp.where(sg > 0, -lo, hi)
        grid = jnp.where(
            sc, g_scale[None, :] / absmax[:, None], edge[:, None] + span[:, None] * g_shift[None, :]
        )
        fg = f(grid)
        i = jnp.argmin(fg, axis=-1)[:, None]
        n = grid.shape[-1]

        def at(x, idx):
            return jnp.take_along_axis(x, idx, -1)

        left, right = at(grid, jnp.maximum(i - 1, 0)), at(grid, jnp.minimum(i + 1, n - 1))
        # golden-section search on [left, right] around the best grid point (one new point
        # a step), keeping the best point ever evaluated
        x1, x2 = right - r * (right - left), left + r * (right - left)
        f1, f2 = f(x1), f(x2)
        kb, fb = at(grid, i), at(fg, i)
        better = jnp.minimum(f1, f2) < fb
        kb = jnp.where(better, jnp.where(f1 <= f2, x1, x2), kb)
        fb = jnp.where(better, jnp.minimum(f1, f2), fb)

        def golden(_, st):
            lft, rgt, x1, x2, f1, f2, kb, fb = st
            go_left = f1 <= f2  # the minimum is in [lft, x2]
            lft = jnp.where(go_left, lft, x1)
            rgt = jnp.where(go_left, x2, rgt)
            xn = jnp.where(go_left, rgt - r * (rgt - lft), lft + r * (rgt - lft))
            fn = f(xn)
            x1, x2 = jnp.where(go_left, xn, x2), jnp.where(go_left, x1, xn)
            f1, f2 = jnp.where(go_left, fn, f2), jnp.where(go_left, f1, fn)
            better = fn < fb
            return (lft, rgt, x1, x2, f1, f2, jnp.where(better, xn, kb), jnp.where(better, fn, fb))

        st = jax.lax.fori_loop(0, GOLDEN_STEPS, golden, (left, right, x1, x2, f1, f2, kb, fb))
        kb, fb = st[6], st[7]
        # one parabolic step through kb - h, kb, kb + h (h: the final bracket), kept only if
        # f drops: near an exact fit f is quadratic in k and this reaches rounding
        h = st[1] - st[0]
        f0, f2 = f(kb - h), f(kb + h)
        den = f2 - 2.0 * fb + f0
        kp = kb - 0.5 * h * (f2 - f0) / jnp.where(den > 0, den, 1.0)
        fp = jnp.where(den > 0, f(kp), jnp.inf)
        k = jnp.where(fp < fb, kp, kb)
        v, ok = values(k, sem)
        v, ok, k = v[:, 0], ok[:, 0], k[:, 0]
        red = base - equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, v)
        ok = (
            ok
            & ~is_forbidden(S, tree.n_slots, v)
            & jnp.isfinite(red)
            & jnp.isfinite(k)
            & node_mask
            & real
        )
        return jnp.where(ok, red, -jnp.inf), k

    red, k = jax.lax.map(one, (which, scale, sign, positive))
    return red.T, k.T


def move_subtree(expr: Expression, c) -> Expression:
    """The new subtree of a ``"unary"`` candidate ``c`` of :class:`UnarySearch` at node
    ``c.node`` of ``expr``: ``u(p)`` (``c.variable == -1``), or ``u(k op p)`` with ``op =
    c.variable`` (``MUL``, ``ADD``, ``SUB``) and ``k = c.constant``."""
    p = expr.subtree(c.node)
    if c.variable >= 0:
        p = Expression.binary(int(c.variable), Expression.constant(float(c.constant)), p)
    return Expression.unary(c.op, p)


class UnarySearch:
    """The move ``p -> u(p)`` as a search of :class:`~jaxsr.symbolic.strategies.DomeSearch`
    (its ``unary_search``; the estimator sets it when ``unary_operators`` is not empty).

    Args:
      names: unary operator names (:data:`UNARY_OPERATORS`).
    """

    #: also the scaled / shifted moves ``u(k op p)`` (:func:`scaled_unary_moves`)
    scaled = True

    def __init__(self, names):
        self.codes = tuple(_CODES[n] for n in check_unary_operators(names))
        self.forms = scaled_forms(self.codes)

    def mask(self, engine, masks) -> np.ndarray:
        """bool ``(capacity,)``: the nodes of the constant-expression search (row 3 of
        ``masks``, the ``(4, capacity)`` node masks of the stage) that are binary
        operators (no ``u(v(q))``: a unary function of a unary node only ever bent the
        curve a little, ``sin(sin(sin(p)))`` chains in the fits) and have room for one
        more node (``max_nodes``) and one more level (``max_height``)."""
        expr = engine.expr
        cap = masks.shape[1]
        out = np.zeros(cap, bool)
        n = expr.n_nodes
        if n + 1 > engine.max_nodes:
            return out
        room = (
            (expr.op >= ADD)
            & (expr.op < SQRT)
            & (expr.depths + expr.subtree_heights() + 1 <= engine.max_height)
        )
        out[:n] = np.asarray(masks[3], bool)[:n] & room
        return out

    def scaled_mask(self, engine, masks) -> np.ndarray:
        """bool ``(capacity,)``: the nodes of the scaled / shifted move: those of
        :meth:`mask` and the variables of the constant-variable search (row 2 of
        ``masks``), with room for three more nodes and two more levels."""
        expr = engine.expr
        out = np.zeros(masks.shape[1], bool)
        n = expr.n_nodes
        if n + 3 > engine.max_nodes:
            return out
        room = expr.depths + expr.subtree_heights() + 2 <= engine.max_height
        binary = (expr.op >= ADD) & (expr.op < SQRT)  # as in mask: no u(k op v(q))
        nodes = (binary & np.asarray(masks[3], bool)[:n]) | (
            (expr.op == VAR) & np.asarray(masks[2], bool)[:n]
        )
        out[:n] = nodes & room
        return out

    def candidates(self, engine, masks, analysis) -> list:
        """The moves of the current tree whose reduction exceeds the engine's threshold,
        best first (ties: lowest node, then ``u(p)`` in ``codes`` order before ``u(k op
        p)`` in ``forms`` order). A scaled / shifted move is a ``"unary"`` candidate with
        ``variable`` its inner op and ``constant`` its ``k`` (:func:`move_subtree`)."""
        from .strategies import Candidate

        if not self.codes:
            return []
        tree, sem, eqs, S = analysis
        thr = engine.threshold()
        out = []
        mask = self.mask(engine, masks)
        if mask.any():
            red = np.asarray(
                device_get(unary_moves(tree, sem, eqs, S, to_device(mask), self.codes))
            )
            js, us = np.nonzero(red > thr)
            out += [
                (
                    float(red[j, u]),
                    int(j),
                    u,
                    Candidate(float(red[j, u]), "unary", int(j), op=self.codes[u]),
                )
                for j, u in zip(js, us, strict=True)
            ]
        smask = self.scaled_mask(engine, masks) if self.scaled else None
        if smask is not None and smask.any():
            red, k = device_get(scaled_unary_moves(tree, sem, eqs, S, to_device(smask), self.forms))
            red, k = np.asarray(red), np.asarray(k)
            nu = len(self.codes)
            js, fs = np.nonzero(red > thr)
            out += [
                (
                    float(red[j, f]),
                    int(j),
                    nu + f,
                    Candidate(
                        float(red[j, f]),
                        "unary",
                        int(j),
                        variable=self.forms[f][1],
                        op=self.forms[f][0],
                        constant=float(k[j, f]),
                    ),
                )
                for j, f in zip(js, fs, strict=True)
            ]
        out.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [t[3] for t in out]

    def merge(self, engine, found, masks, analysis) -> list:
        """``found`` (the other searches' candidates, best first) with the moves merged in
        by reduction; on ties the other searches come first (the order of the searches of
        section 2.8, the unary move last)."""
        extra = self.candidates(engine, masks, analysis)
        if not extra:
            return found
        return sorted(list(found) + extra, key=lambda c: -c.reduction)


@program
def chain_jacobian(tree, sem, weights=None):
    """``(N, capacity)``: the derivative of the weighted residual ``sqrt(w) * (out - y)``
    with respect to the value of each node, by the chain rule top-down from the root,
    through unary nodes too (the joint constant polish of a tree with a unary node).

    Row ``j`` of the result's transpose is ``G_j = G_p * d(sem_p)/d(sem_j)`` for the parent
    ``p`` of ``j`` (``G_0 = sqrt(w)``), with the local derivatives ``1`` (``+``), ``+-1``
    (``-``), the sibling (``*``), ``1/y`` and ``-sem_p/y`` (``/``, first and second child)
    and ``u'(sem_j)`` at a unary node: ``0.5/sqrt``, ``exp``, ``1/x``, ``cos``, ``-sin``
    (from the parent's semantic where it is the same number: ``sqrt`` and ``exp``). Above
    every unary node this is the derivative the node equations give,
    ``(b c - a d) / (c v - d)**2`` (equations 6-22, the paper's trees' Jacobian
    :func:`~jaxsr.symbolic.strategies._equation_jacobian`); below one, where the node
    equations do not hold, it is the chain rule through ``u``. One top-down pass (no
    forward-mode tangents of the whole tree: a small program to compile).

    Args:
      tree: :class:`~jaxsr.symbolic.TreeArrays` (binary and unary nodes).
      sem: ``(capacity, N)`` semantics (:func:`~jaxsr.symbolic.node_semantics`), finite
        on the real rows (the tree of an accepted change).
      weights: optional ``(N,)`` sample weights of mean 1.

    Returns:
      ``(N, capacity)`` float, 0 in the padding columns.
    """
    cap, n = sem.shape
    dt = sem.dtype
    g0 = jnp.ones((n,), dt) if weights is None else jnp.sqrt(weights.astype(dt))
    G = jnp.zeros((cap, n), dt).at[0].set(g0)

    def body(j, G):
        p = tree.parent[j]
        op = tree.op[p]
        first = tree.left[p] == j
        x, yv, out, own = sem[tree.left[p]], sem[tree.right[p]], sem[p], sem[j]
        safe_y = jnp.where(yv == 0, 1.0, yv)
        safe_own = jnp.where(own == 0, 1.0, own)
        safe_out = jnp.where(out == 0, 1.0, out)
        local = jnp.select(
            [
                op == ADD,
                op == SUB,
                op == MUL,
                op == DIV,
                op == SQRT,
                op == EXP,
                op == LOG,
                op == SIN,
                op == COS,
            ],
            [
                jnp.ones_like(own),
                jnp.where(first, 1.0, -1.0) * jnp.ones_like(own),
                jnp.where(first, yv, x),
                jnp.where(first, 1.0 / safe_y, -out / safe_y),
                0.5 / safe_out,
                out,
                1.0 / safe_own,
                jnp.cos(own),
                -jnp.sin(own),
            ],
            jnp.zeros_like(own),
        )
        row = jnp.where(j < tree.n_nodes, G[p] * local, 0.0)
        return jax.lax.dynamic_update_index_in_dim(G, row.astype(dt), j, 0)

    G = jax.lax.fori_loop(1, cap, body, G)
    return G.T
