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

The nodes are processed one at a time by ``lax.map`` (bounded memory: ``O(M*K*N)`` per
node), nodes outside ``node_mask`` are skipped by ``lax.cond``, and nodes whose equation
has ``c == 0`` everywhere (not below a division's denominator) take the closed form of
equation 29 only. Every function is pure, jit- and vmap-able; under ``jax.vmap`` over
datasets pass the tree unbatched (``in_axes=None``).

Selection (:func:`best_candidate`) is a deterministic masked argmax over the flattened
scores in (node, variable, operator) order: ties go to the lowest node, then variable,
then operator.
"""

from __future__ import annotations

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
]

CV_OPS = (ADD, SUB, MUL, DIV)  # k+x, k-x, k*x, k/x (constant first, section 2.3)
CE_OPS = (ADD, MUL)  # k+p, k*p (section 2.4)
NO_LIMIT = 2**30  # max_nodes / max_height meaning "no limit"


def node_base_mse(eqs: Equations, sem: jax.Array) -> jax.Array:
    """Each node's equation at its own semantic, ``(capacity,)`` (all equal the MSE)."""
    return equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, sem)


def _constant_candidates(a, b, c, d, S, n_used, W, ops, general):
    """Optimal ``k`` of ``k op w`` at one node, for every ``w`` row and static ``op``.

    a, b, c, d: ``(N,)`` node equation; S: ``(K, N)``; W: ``(R, N)``; ops: tuple of Python
    operator codes. Returns ``k, mse, ok`` each ``(len(ops) * R,)``, row-major in
    ``(w, op)``.
    """
    ks, fs, oks = [], [], []
    for op in ops:
        a2, b2, c2, d2 = child_equation(op, True, a, b, c, d, W)
        a2, b2, c2, d2 = (jnp.broadcast_to(v, W.shape) for v in (a2, b2, c2, d2))
        # lax.map (not vmap): the per-equation lax.cond of the solver stays a real branch
        k, f, ok = lax.map(lambda e: _solve(*e, general), (a2, b2, c2, d2))

        def forbidden(k=k, op=op):
            S2 = child_forbidden(op, True, S[None], W[:, None, :])
            return is_forbidden(S2, n_used, k[:, None])

        # the forbidden sets are only looked at below a division (n_used > 0)
        ok = ok & ~lax.cond(n_used > 0, forbidden, lambda k=k: jnp.zeros(k.shape, bool))
        if op == DIV:
            ok = ok & ~jnp.any(W == 0, axis=-1)  # k/x with a zero in x
        ks.append(k)
        fs.append(jnp.where(ok, f, jnp.inf))
        oks.append(ok)
    k, f, ok = (jnp.stack(v, axis=1).reshape(-1) for v in (ks, fs, oks))
    return k, f, ok


def _map_nodes(tree, eqs, active, fn, empty):
    """``lax.map`` over nodes; inactive nodes return ``empty``; ``fn(j, general)``."""
    cap = tree.op.shape[0]

    def per_node(j):
        general = jnp.any(eqs.c[j] != 0)
        return lax.cond(
            active[j],
            lambda: lax.cond(general, lambda: fn(j, True), lambda: fn(j, False)),
            lambda: empty,
        )

    return lax.map(per_node, jnp.arange(cap))


def _finish(base, f, ok):
    red = base - f
    return jnp.where(ok & jnp.isfinite(red), red, -jnp.inf)


def _real(tree):
    return jnp.arange(tree.op.shape[0]) < tree.n_nodes


@jax.jit
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
    _count("constant_search")
    dt = sem.dtype
    base = node_base_mse(eqs, sem)
    active = node_mask & _real(tree)
    zero = jnp.zeros((1, sem.shape[1]), dt)

    def fn(j, general):  # k + 0 == k: the node's own equation
        k, f, ok = _constant_candidates(eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], S[j],
                                        tree.n_slots[j], zero, (ADD,), general)
        return k[0], f[0], ok[0]

    empty = (jnp.array(jnp.nan, dt), jnp.array(jnp.inf, dt), jnp.array(False))
    k, f, ok = _map_nodes(tree, eqs, active, fn, empty)
    return _finish(base, f, ok), k


@jax.jit
def variable_search(tree: TreeArrays, sem, eqs: Equations, S, XT, node_mask, var_mask):
    """Variable search (section 2.2): every (node, variable).

    Args:
      XT: ``(M, N)`` variables; var_mask: bool ``(M,)`` variables in the pool (constant
        columns excluded); other arguments as :func:`constant_search`.

    Returns:
      ``(reduction,)`` of shape ``(capacity, M)``; a variable node is not replaced by
      itself.
    """
    _count("variable_search")
    cap = tree.op.shape[0]
    M = XT.shape[0]
    base = node_base_mse(eqs, sem)
    active = node_mask & _real(tree)

    def per_node(j):
        def run():
            f = equation_mse(eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], XT)
            f = jnp.where(jnp.isfinite(f), f, jnp.inf)
            bad = jax.vmap(lambda x: is_forbidden(S[j], tree.n_slots[j], x))(XT)
            same = (tree.op[j] == VAR) & (jnp.arange(M) == tree.feature[j])
            return _finish(base[j], f, ~bad & ~same & var_mask)

        return lax.cond(active[j], run, lambda: jnp.full((M,), -jnp.inf, sem.dtype))

    return (lax.map(per_node, jnp.arange(cap)),)


@jax.jit
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
    _count("constant_variable_search")
    M, N = XT.shape
    dt = sem.dtype
    base = node_base_mse(eqs, sem)
    room = (max_nodes - tree.n_nodes + tree.size >= 3) & (tree.depth + 2 <= max_height)
    active = node_mask & _real(tree) & room
    ops = jnp.tile(jnp.array(CV_OPS, jnp.int32), M)  # (4M,) variable-major
    var_of = jnp.repeat(jnp.arange(M), len(CV_OPS))

    def fn(j, general):
        k, f, ok = _constant_candidates(eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], S[j],
                                        tree.n_slots[j], XT, CV_OPS, general)
        l, r = tree.left[j], tree.right[j]
        hides = ((tree.op[j] == ops) & (tree.op[l] == CONST) & (tree.op[r] == VAR)
                 & (tree.feature[r] == var_of))
        ok = ok & ~hides & var_mask[var_of]
        return k, f, ok

    R = len(CV_OPS) * M
    empty = (jnp.full((R,), jnp.nan, dt), jnp.full((R,), jnp.inf, dt), jnp.zeros((R,), bool))
    k, f, ok = _map_nodes(tree, eqs, active, fn, empty)
    red = _finish(base[:, None], f, ok)
    cap = tree.op.shape[0]
    return red.reshape(cap, M, len(CV_OPS)), k.reshape(cap, M, len(CV_OPS))


@jax.jit
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
    _count("constant_expression_search")
    dt = sem.dtype
    base = node_base_mse(eqs, sem)
    nonterminal = tree.op >= ADD
    room = (max_nodes - tree.n_nodes >= 2) & (tree.depth + tree.height + 1 <= max_height)
    active = node_mask & _real(tree) & nonterminal & room
    def fn(j, general):
        k, f, ok = _constant_candidates(eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], S[j],
                                        tree.n_slots[j], sem[j][None, :], CE_OPS, general)
        op = tree.op[j]
        const_child = (tree.op[tree.left[j]] == CONST) | (tree.op[tree.right[j]] == CONST)
        hide_add = ((op == ADD) | (op == SUB)) & const_child
        hide_mul = ((op == MUL) | (op == DIV)) & const_child
        ok = ok & ~jnp.array([hide_add, hide_mul])
        return k, f, ok

    R = len(CE_OPS)
    empty = (jnp.full((R,), jnp.nan, dt), jnp.full((R,), jnp.inf, dt), jnp.zeros((R,), bool))
    k, f, ok = _map_nodes(tree, eqs, active, fn, empty)
    return _finish(base[:, None], f, ok), k


def best_candidate(reduction) -> tuple[int, ...] | None:
    """Deterministic argmax of a score array (``-inf`` = invalid): the index tuple of the
    largest finite entry, ties to the lowest flat index (node, then variable, then
    operator), or ``None`` if every entry is ``-inf``."""
    r = np.asarray(reduction)
    if r.size == 0 or not np.any(np.isfinite(r)):
        return None
    flat = int(np.argmax(np.where(np.isfinite(r), r, -np.inf)))
    return tuple(int(i) for i in np.unravel_index(flat, r.shape))
