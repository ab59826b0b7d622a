"""The four searches of the paper, each scoring all its candidates in one jitted call.

* :func:`constant_search` (section 2.1): the best constant at every node.
* :func:`variable_search` (section 2.2): every (node, variable).
* :func:`constant_variable_search` (section 2.3): every (node, variable, ``k+x, k-x, k*x,
  k/x``) with its optimal ``k``.
* :func:`constant_expression_search` (section 2.4): every non-terminal node ``p`` and
  ``k+p, k*p`` with its optimal ``k``.

Each returns ``(reduction, constant)`` arrays: ``reduction`` is the MSE reduction of
equation 26 measured on the node's own equation (its value at the node's current
semantic minus its value at the candidate), ``-inf`` for invalid or excluded candidates;
``constant`` is the optimal ``k`` (``nan`` where there is none). Validity includes the
forbidden sets ``S`` (no candidate that makes a division by zero anywhere above the node),
the paper's exclusions and the node / height limits of section 2.7.

All four run in one jitted call, :func:`search_all` (the four functions above call it with
only their own node mask switched on): the nodes are processed one at a time by
``lax.map`` (bounded memory: ``O(M*N)`` per node), nodes with nothing to search are skipped
by ``lax.cond``, and each node runs one ``lax.map`` over its candidate rows (the constant,
``k op x`` for every variable and operator, ``k+p, k*p``), so the constant solver of
section 2.1 is compiled once, not once per search and operator. Nodes whose equation has
``c == 0`` everywhere (not below a division's denominator) take the closed form of
equation 29 only. Every function is pure, jit- and vmap-able; under ``jax.vmap`` over
datasets pass the tree unbatched (``in_axes=None``).

Selection (:func:`best_candidate`) is a deterministic masked argmax over the flattened
scores in (node, variable, operator) order: ties go to the lowest node, then variable,
then operator.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .constant import _solve
from .equations import Equations, child_equation, child_forbidden, equation_mse, is_forbidden
from .expression import ADD, CONST, DIV, MUL, SUB, VAR, TreeArrays
from .semantics import _count

__all__ = [
    "CV_OPS",
    "CE_OPS",
    "NO_LIMIT",
    "node_base_mse",
    "constant_search",
    "variable_search",
    "constant_variable_search",
    "constant_expression_search",
    "best_candidate",
    "search_all",
    "SearchResults",
]

CV_OPS = (ADD, SUB, MUL, DIV)  # k+x, k-x, k*x, k/x (constant first, section 2.3)
CE_OPS = (ADD, MUL)  # k+p, k*p (section 2.4)
NO_LIMIT = 2**30  # max_nodes / max_height meaning "no limit"


def node_base_mse(eqs: Equations, sem: jax.Array) -> jax.Array:
    """Each node's equation at its own semantic, ``(capacity,)`` (all equal the MSE)."""
    return equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, sem)


# Row kinds of the candidate table of one node (see :func:`search_all`).
_K_CONST, _K_CV, _K_CE = 0, 1, 2


def _row_table(M: int):
    """Static ``(kind, op, var)`` of the ``1 + 4*M + 2`` candidate rows of a node: the
    constant ``k`` (as ``k + 0``), ``k op x_m`` variable-major, then ``k+p, k*p``."""
    kind = [_K_CONST] + [_K_CV] * (len(CV_OPS) * M) + [_K_CE] * len(CE_OPS)
    ops = [ADD] + list(CV_OPS) * M + list(CE_OPS)
    var = [0] + list(np.repeat(np.arange(M), len(CV_OPS))) + [0] * len(CE_OPS)
    return (np.asarray(kind, np.int32), np.asarray(ops, np.int32), np.asarray(var, np.int32))


_BINARY = (ADD, SUB, MUL, DIV)


def _switch_equation(op, a, b, c, d, w):
    branches = [lambda a, b, c, d, w, o=o: child_equation(o, True, a, b, c, d, w)
                for o in _BINARY]
    return lax.switch(op - ADD, branches, a, b, c, d, w)


def _switch_forbidden(op, S, w):
    branches = [lambda S, w, o=o: child_forbidden(o, True, S, w) for o in _BINARY]
    return lax.switch(op - ADD, branches, S, w)


def _node_rows(a, b, c, d, S_j, n_used, W, row_w, row_op, row_active, general):
    """Optimal ``k`` of every candidate row ``k op w`` of one node.

    Args: the node's equation ``a, b, c, d`` ``(N,)``, its forbidden sets ``S_j``
    ``(K, N)`` with ``n_used`` slots in use, the candidate operands ``W`` ``(P, N)``, and
    per row ``r`` (``(R,)`` each) the operand index ``row_w``, the operator code ``row_op``
    and ``row_active`` (other rows return ``(nan, inf, False)``). One ``lax.map`` over the
    rows holds the only copy of the constant solver, so it is compiled once (per
    ``general`` flag) for all the searches, and a row's equation is only built when the
    row is searched. Returns ``k, f, ok`` each ``(R,)``.
    """
    dt = a.dtype
    empty = (jnp.array(jnp.nan, dt), jnp.array(jnp.inf, dt), jnp.array(False))

    def row(x):
        iw, op = x
        w = lax.dynamic_index_in_dim(W, iw, axis=0, keepdims=False)
        a2, b2, c2, d2 = _switch_equation(op, a, b, c, d, w)
        k, f, ok = _solve(a2, b2, c2, d2, general)

        def forbidden():
            S2 = _switch_forbidden(op, S_j, w[None, :])
            return is_forbidden(S2, n_used, k[None])

        # the forbidden sets are only looked at below a division (n_used > 0), and only
        # for a valid constant
        ok = ok & ~lax.cond(ok & (n_used > 0), forbidden, lambda: jnp.array(False))
        return k, jnp.where(ok, f, jnp.inf), ok

    return lax.map(lambda x: lax.cond(x[-1], row, lambda x: empty, x[:-1]),
                   (row_w, row_op, row_active))


def _finish(base, f, ok):
    red = base - f
    return jnp.where(ok & jnp.isfinite(red), red, -jnp.inf)


def _real(tree):
    return jnp.arange(tree.op.shape[0]) < tree.n_nodes


class SearchResults(NamedTuple):
    """All four searches of one tree (:func:`search_all`); ``-inf`` = not a candidate."""

    constant: jax.Array  # (capacity,) reduction of the best constant at each node
    constant_k: jax.Array  # (capacity,) that constant
    variable: jax.Array  # (capacity, M) reduction of each variable at each node
    constant_variable: jax.Array  # (capacity, M, 4) reduction of k+x, k-x, k*x, k/x
    constant_variable_k: jax.Array  # (capacity, M, 4) their constants
    constant_expression: jax.Array  # (capacity, 2) reduction of k+p, k*p
    constant_expression_k: jax.Array  # (capacity, 2) their constants


def _variable_scores(tree, sem, eqs, S, XT, active, var_mask, base):
    cap, M = tree.op.shape[0], XT.shape[0]

    def per_node(j):
        def run():
            f = equation_mse(eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], XT)
            f = jnp.where(jnp.isfinite(f), f, jnp.inf)
            bad = jax.vmap(lambda x: is_forbidden(S[j], tree.n_slots[j], x))(XT)
            same = (tree.op[j] == VAR) & (jnp.arange(M) == tree.feature[j])
            return _finish(base[j], f, ~bad & ~same & var_mask)

        return lax.cond(active[j], run, lambda: jnp.full((M,), -jnp.inf, sem.dtype))

    return lax.map(per_node, jnp.arange(cap))


@jax.jit
def search_all(tree: TreeArrays, sem, eqs: Equations, S, XT, masks, var_mask, max_nodes,
               max_height) -> SearchResults:
    """The four searches (sections 2.1-2.4) of one tree in one jitted call.

    Args:
      tree: :class:`TreeArrays`, ``capacity`` nodes.
      sem: ``(capacity, N)`` semantics; eqs: :class:`Equations` ``(capacity, N)`` each;
      S: ``(capacity, K, N)`` forbidden sets (:func:`forbidden_sets`).
      XT: ``(M, N)`` variables.
      masks: bool ``(4, capacity)``: the nodes where the constant, variable,
        constant-variable and constant-expression searches run (an all-False row skips
        that search; its results are ``-inf``).
      var_mask: bool ``(M,)`` variables in the pool (constant columns excluded).
      max_nodes, max_height: int scalars, the limits of section 2.7 (``NO_LIMIT``: none):
        constant-variable search only where ``max_nodes - n_nodes + size >= 3`` and
        ``depth + 2 <= max_height``; constant-expression search only where
        ``max_nodes - n_nodes >= 2`` and ``depth + height + 1 <= max_height``.

    Returns:
      :class:`SearchResults`. The results of each search equal the separate functions
      :func:`constant_search`, :func:`variable_search`, :func:`constant_variable_search`
      and :func:`constant_expression_search` (which call this one).

    Every node runs one ``lax.map`` over its candidate rows (``k+0``, ``k op x`` for every
    variable and operator, ``k+p, k*p``), skipping the rows of searches not asked for there,
    so the constant solver of section 2.1 is compiled once for all the searches.
    """
    _count("search_all")
    cap = tree.op.shape[0]
    M, N = XT.shape
    dt = sem.dtype
    base = node_base_mse(eqs, sem)
    real = _real(tree)
    masks = jnp.asarray(masks, bool)
    c_act = masks[0] & real
    v_act = masks[1] & real
    room_cv = (max_nodes - tree.n_nodes + tree.size >= 3) & (tree.depth + 2 <= max_height)
    cv_act = masks[2] & real & room_cv
    room_ce = (max_nodes - tree.n_nodes >= 2) & (tree.depth + tree.height + 1 <= max_height)
    ce_act = masks[3] & real & (tree.op >= ADD) & room_ce

    kind_np, op_np, var_np = _row_table(M)
    R = kind_np.shape[0]
    kind, row_op, row_var = jnp.asarray(kind_np), jnp.asarray(op_np), jnp.asarray(var_np)
    x_zero = jnp.any(XT == 0, axis=-1)  # (M,): k/x excluded for these variables
    div_zero = (kind == _K_CV) & (row_op == DIV) & x_zero[row_var]
    zero = jnp.zeros((N,), dt)
    row_w = jnp.asarray(np.where(kind_np == _K_CV, 1 + var_np,
                                 np.where(kind_np == _K_CE, M + 1, 0)).astype(np.int32))

    def per_node(j):
        row_active = (((kind == _K_CONST) & c_act[j]) | ((kind == _K_CV) & cv_act[j])
                      | ((kind == _K_CE) & ce_act[j]))

        def run(general):
            W = jnp.concatenate([zero[None], XT, sem[j][None]])
            return _node_rows(eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], S[j], tree.n_slots[j],
                              W, row_w, row_op, row_active, general)

        empty = (jnp.full((R,), jnp.nan, dt), jnp.full((R,), jnp.inf, dt),
                 jnp.zeros((R,), bool))
        general = jnp.any(eqs.c[j] != 0)
        return lax.cond(
            jnp.any(row_active),
            lambda: lax.cond(general, lambda: run(True), lambda: run(False)),
            lambda: empty,
        )

    k, f, ok = lax.map(per_node, jnp.arange(cap))  # (cap, R) each
    ok = ok & ~div_zero

    # constant search: row 0
    c_red = _finish(base, f[:, 0], ok[:, 0])
    # constant-variable search: rows 1 .. 4M, variable-major
    n_cv = len(CV_OPS) * M
    cv_k = k[:, 1:1 + n_cv].reshape(cap, M, len(CV_OPS))
    cv_f = f[:, 1:1 + n_cv].reshape(cap, M, len(CV_OPS))
    cv_ok = ok[:, 1:1 + n_cv].reshape(cap, M, len(CV_OPS))
    l, r = tree.left, tree.right
    hides = ((tree.op[:, None, None] == jnp.asarray(CV_OPS, jnp.int32)[None, None, :])
             & (tree.op[l] == CONST)[:, None, None] & (tree.op[r] == VAR)[:, None, None]
             & (tree.feature[r][:, None, None] == jnp.arange(M)[None, :, None]))
    cv_ok = cv_ok & ~hides & var_mask[None, :, None]
    cv_red = _finish(base[:, None, None], cv_f, cv_ok)
    # constant-expression search: the last two rows
    ce_k, ce_f, ce_ok = k[:, 1 + n_cv:], f[:, 1 + n_cv:], ok[:, 1 + n_cv:]
    const_child = (tree.op[l] == CONST) | (tree.op[r] == CONST)
    hide_add = ((tree.op == ADD) | (tree.op == SUB)) & const_child
    hide_mul = ((tree.op == MUL) | (tree.op == DIV)) & const_child
    ce_ok = ce_ok & ~jnp.stack([hide_add, hide_mul], axis=1)
    ce_red = _finish(base[:, None], ce_f, ce_ok)
    # variable search
    v_red = _variable_scores(tree, sem, eqs, S, XT, v_act, var_mask, base)
    return SearchResults(c_red, k[:, 0], v_red, cv_red, cv_k, ce_red, ce_k)


def _masks(node_mask, which):
    node_mask = jnp.asarray(node_mask, bool)
    off = jnp.zeros_like(node_mask)
    return jnp.stack([node_mask if i == which else off for i in range(4)])


def _int(v):
    return jnp.asarray(v, jnp.int32)


def _no_vars(sem):
    """A one-variable placeholder for the searches that use no variable."""
    return jnp.zeros((1, sem.shape[-1]), sem.dtype), jnp.zeros((1,), bool)


def constant_search(tree: TreeArrays, sem, eqs: Equations, S, node_mask):
    """Constant search (section 2.1) at every node of ``node_mask``.

    Args:
      tree: :class:`TreeArrays`, ``capacity`` nodes.
      sem: ``(capacity, N)`` semantics; eqs: :class:`Equations` ``(capacity, N)`` each;
      S: ``(capacity, K, N)`` forbidden sets (:func:`forbidden_sets`).
      node_mask: bool ``(capacity,)``, the nodes to search.

    Returns:
      ``(reduction, constant)``, each ``(capacity,)``.
    """
    XT, pool = _no_vars(sem)
    res = search_all(tree, sem, eqs, S, XT, _masks(node_mask, 0), pool, _int(NO_LIMIT),
                     _int(NO_LIMIT))
    return res.constant, res.constant_k


def variable_search(tree: TreeArrays, sem, eqs: Equations, S, XT, node_mask, var_mask):
    """Variable search (section 2.2): every (node, variable).

    Args:
      XT: ``(M, N)`` variables; var_mask: bool ``(M,)`` variables in the pool (constant
        columns excluded); other arguments as :func:`constant_search`.

    Returns:
      ``(reduction,)`` of shape ``(capacity, M)``; a variable node is not replaced by
      itself.
    """
    res = search_all(tree, sem, eqs, S, XT, _masks(node_mask, 1), var_mask, _int(NO_LIMIT),
                     _int(NO_LIMIT))
    return (res.variable,)


def constant_variable_search(tree: TreeArrays, sem, eqs: Equations, S, XT, node_mask,
                             var_mask, max_nodes, max_height):
    """Constant-variable search (section 2.3): every (node, variable, ``k op x``).

    Args:
      max_nodes: int scalar ``n``; a node with subtree size ``s`` is searched only if
        ``n - r + s >= 3`` (``r`` = current nodes, section 2.7). ``NO_LIMIT`` for none.
      max_height: int scalar; the node is searched only if ``depth + 2 <= max_height``.
      other arguments as :func:`variable_search`.

    Returns:
      ``(reduction, constant)`` of shape ``(capacity, M, 4)``, operators in the order
      ``k+x, k-x, k*x, k/x``. Excluded (besides invalid ones): a node that already is
      ``k op x`` with a constant first child and the same variable and operator.
    """
    res = search_all(tree, sem, eqs, S, XT, _masks(node_mask, 2), var_mask,
                     _int(max_nodes), _int(max_height))
    return res.constant_variable, res.constant_variable_k


def constant_expression_search(tree: TreeArrays, sem, eqs: Equations, S, node_mask,
                               max_nodes, max_height):
    """Constant-expression search (section 2.4): ``k+p`` and ``k*p`` on non-terminals.

    Args:
      max_nodes: searched only if ``max_nodes - n_nodes >= 2`` (section 2.7);
      max_height: only if ``depth + height(p) + 1 <= max_height``;
      other arguments as :func:`constant_search`.

    Returns:
      ``(reduction, constant)`` of shape ``(capacity, 2)`` (``k+p, k*p``). Excluded:
      ``k+p`` on a ``+``/``-`` node with a constant child and ``k*p`` on a ``*``/``/`` node
      with a constant child (they would hide a constant search).
    """
    XT, pool = _no_vars(sem)
    res = search_all(tree, sem, eqs, S, XT, _masks(node_mask, 3), pool,
                     _int(max_nodes), _int(max_height))
    return res.constant_expression, res.constant_expression_k


def best_candidate(reduction) -> tuple[int, ...] | None:
    """Deterministic argmax of a score array (``-inf`` = invalid): the index tuple of the
    largest finite entry, ties to the lowest flat index (node, then variable, then
    operator), or ``None`` if every entry is ``-inf``."""
    r = np.asarray(reduction)
    if r.size == 0 or not np.any(np.isfinite(r)):
        return None
    flat = int(np.argmax(np.where(np.isfinite(r), r, -np.inf)))
    return tuple(int(i) for i in np.unravel_index(flat, r.shape))
