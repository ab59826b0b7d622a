"""Node equations ``a, b, c, d`` and forbidden sets ``S``, top-down (paper, section 2).

Every node has an equation giving the tree's MSE from that node's outputs ``o``
(equation 6)::

    MSE = mean(((a * o - b) / (c * o - d)) ** 2)

with ``a = 1, b = t, c = 0, d = -1`` at the root. A node with operator ``op`` and children
semantics ``x`` (first) and ``y`` (second) passes to its children (equations 7-20):

====  ===========================================  ===========================================
op    first child ``a', b', c', d'``               second child ``a', b', c', d'``
====  ===========================================  ===========================================
``+`` ``a, b - a*y, c, d - c*y``                   ``a, b - a*x, c, d - c*x``
``-`` ``a, b + a*y, c, d + c*y``                   ``a, a*x - b, c, c*x - d``
``*`` ``a*y, b, c*y, d``                           ``a*x, b, c*x, d``
``/`` ``a, b*y, c, d*y``                           ``b, a*x, d, c*x``
====  ===========================================  ===========================================

The forbidden sets ``S`` (domain of division): each element is a vector of values that the
node's output must not take on that pattern. ``+inf`` means any value is allowed there,
``nan`` means no value is allowed (the paper's Inf/NaN rules, which are the IEEE results of
the inverse operations ``s - y, s + y, x - s, s / y, s * y, x / s``). The second child of a
division gets the new element ``0``. ``S`` is stored in ``n_slots`` fixed slots per node;
slot ``k`` of node ``j`` is used iff ``k < tree.n_slots[j]`` (unused slots are ``+inf``).

Note: the paper writes ``d = -1`` at the root in one place and ``d = 1`` in another and
prints some rows of Table 1 with the fraction's sign flipped; the squared terms are equal.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .._config import program
from .._sharding import constrain_samples
from .expression import ADD, DIV, MUL, SUB, TreeArrays

__all__ = [
    "Equations",
    "child_equation",
    "node_equations",
    "forbidden_sets",
    "child_forbidden",
    "equation_mse",
    "is_forbidden",
    "path_equation",
]


class Equations(NamedTuple):
    """Node equations of a tree; each field ``(capacity, N)`` (or ``(..., N)``)."""

    a: jax.Array
    b: jax.Array
    c: jax.Array
    d: jax.Array


def child_equation(op, first, a, b, c, d, other):
    """Equation of a child of an ``op`` node (equations 7-20).

    Args:
      op: operator code of the parent (scalar int).
      first: bool, True for the first child (then ``other`` is the second child's semantic
        ``y``), False for the second child (``other`` is the first child's semantic ``x``).
      a, b, c, d: the parent's equation, arrays broadcastable to ``(..., N)``.
      other: the sibling's semantic, broadcastable to ``(..., N)``.

    Returns:
      ``(a', b', c', d')`` of the child. With a Python ``int`` ``op`` and ``bool`` ``first``
      only that rule is computed (the searches' fast path).
    """
    w = other
    if isinstance(op, int) and isinstance(first, bool):
        return _static_child_equation(op, first, a, b, c, d, w)
    # first child
    fa = jnp.where(op == MUL, a * w, a)
    fb = jnp.where(
        op == ADD, b - a * w, jnp.where(op == SUB, b + a * w, jnp.where(op == MUL, b, b * w))
    )
    fc = jnp.where(op == MUL, c * w, c)
    fd = jnp.where(
        op == ADD, d - c * w, jnp.where(op == SUB, d + c * w, jnp.where(op == MUL, d, d * w))
    )
    # second child
    sa = jnp.where(op == MUL, a * w, jnp.where(op == DIV, b, a))
    sb = jnp.where(
        op == ADD, b - a * w, jnp.where(op == SUB, a * w - b, jnp.where(op == MUL, b, a * w))
    )
    sc = jnp.where(op == MUL, c * w, jnp.where(op == DIV, d, c))
    sd = jnp.where(
        op == ADD, d - c * w, jnp.where(op == SUB, c * w - d, jnp.where(op == MUL, d, c * w))
    )
    return (
        jnp.where(first, fa, sa),
        jnp.where(first, fb, sb),
        jnp.where(first, fc, sc),
        jnp.where(first, fd, sd),
    )


def child_forbidden(op, first, S, other):
    """Forbidden values of a child from its parent's ``S`` (section 2, rule 2).

    ``s' = s - y`` / ``s - x`` (``+``), ``s + y`` / ``x - s`` (``-``), ``s / y`` / ``s / x``
    (``*``), ``s * y`` / ``x / s`` (``/``); ``-inf`` is folded to ``+inf`` (any value is
    allowed). The new element ``0`` of a division's second child is added by the caller.

    Args:
      op, first: as in :func:`child_equation`.
      S: ``(..., K, N)`` forbidden values of the parent.
      other: the sibling's semantic, broadcastable to ``(..., 1, N)``.
    """
    w = other
    if isinstance(op, int) and isinstance(first, bool):
        out = _STATIC_S[(op, first)](S, w)
        return jnp.where(jnp.isinf(out), jnp.inf, out)
    f = jnp.where(op == ADD, S - w, jnp.where(op == SUB, S + w, jnp.where(op == MUL, S / w, S * w)))
    s = jnp.where(op == ADD, S - w, jnp.where(op == SUB, w - S, jnp.where(op == MUL, S / w, w / S)))
    out = jnp.where(first, f, s)
    return jnp.where(jnp.isinf(out), jnp.inf, out)


def _static_child_equation(op, first, a, b, c, d, w):
    if op == ADD:
        return a, b - a * w, c, d - c * w
    if op == SUB:
        return (a, b + a * w, c, d + c * w) if first else (a, a * w - b, c, c * w - d)
    if op == MUL:
        return a * w, b, c * w, d
    if op == DIV:
        return (a, b * w, c, d * w) if first else (b, a * w, d, c * w)
    raise ValueError(f"not a binary operator code: {op}")


_STATIC_S = {
    (ADD, True): lambda S, w: S - w,
    (ADD, False): lambda S, w: S - w,
    (SUB, True): lambda S, w: S + w,
    (SUB, False): lambda S, w: w - S,
    (MUL, True): lambda S, w: S / w,
    (MUL, False): lambda S, w: S / w,
    (DIV, True): lambda S, w: S * w,
    (DIV, False): lambda S, w: w / S,
}


@program
def node_equations(
    tree: TreeArrays, sem: jax.Array, y: jax.Array, weights: jax.Array | None = None
) -> Equations:
    """Equations ``a, b, c, d`` of every node, top-down from the root.

    Args:
      tree: :class:`TreeArrays` of ``capacity`` nodes.
      sem: ``(capacity, N)`` semantics from :func:`node_semantics`.
      y: ``(N,)`` target.
      weights: optional ``(N,)`` non-negative sample weights, normalised to mean 1 (then the
        equations give the weighted MSE ``mean(w * (o - t)**2)``). ``None``: all 1.

    Returns:
      :class:`Equations` with four ``(capacity, N)`` arrays; the root row is
      ``(sqrt(w), sqrt(w) * y, 0, -1)`` (``(1, y, 0, -1)`` without weights); padding rows
      are ``(0, 0, 0, -1)``.

    For every real node ``j``: ``mean(((a[j]*sem[j]-b[j])/(c[j]*sem[j]-d[j]))**2)`` equals the
    root MSE (up to rounding). The weighted MSE is ``mean((sqrt(w)*o - sqrt(w)*t)**2)``:
    the weights only scale the root's ``a, b``, and every rule of equations 7-20 is linear
    in ``(a, b)`` and in ``(c, d)``, so they carry through every node equation unchanged in
    form (a weight-0 pattern has ``a = b = 0`` everywhere: it never counts in a sum, and
    still counts for the domain of division). Paper: equations 6-22, Table 1 third column.
    """
    cap, n = sem.shape
    dt = sem.dtype
    sw = jnp.ones((n,), dt) if weights is None else jnp.sqrt(weights.astype(dt))
    # a broadcast, not a (4, N) literal that XLA would fold into the program
    pad_row = jnp.broadcast_to(jnp.asarray([[0.0], [0.0], [0.0], [-1.0]], dt), (4, n))
    root = jnp.stack([sw, sw * y.astype(dt), jnp.zeros((n,), dt), jnp.full((n,), -1.0, dt)])
    pad_row, root = constrain_samples(pad_row), constrain_samples(root)
    E = constrain_samples(jnp.broadcast_to(pad_row, (cap, 4, n)))
    E = lax.dynamic_update_slice(E, root[None], (0, 0, 0))

    def body(j, E):
        p = tree.parent[j]
        first = tree.left[p] == j
        other = jnp.where(first, sem[tree.right[p]], sem[tree.left[p]])
        ep = lax.dynamic_index_in_dim(E, p, axis=0, keepdims=False)
        row = jnp.stack(child_equation(tree.op[p], first, ep[0], ep[1], ep[2], ep[3], other))
        row = jnp.where(j < tree.n_nodes, row, pad_row)
        z = jnp.zeros_like(j)
        return lax.dynamic_update_slice(E, row[None], (j, z, z))

    # real nodes only (padding rows keep pad_row): the work follows the tree's size
    E = constrain_samples(lax.fori_loop(1, jnp.clip(tree.n_nodes, 1, cap), body, E))
    return Equations(E[:, 0], E[:, 1], E[:, 2], E[:, 3])


@program(static_argnames=("n_slots",))
def forbidden_sets(tree: TreeArrays, sem: jax.Array, n_slots: int) -> jax.Array:
    """Forbidden sets ``S`` of every node (domain of division, section 2, Tables 1 and 2).

    Args:
      tree: :class:`TreeArrays` of ``capacity`` nodes (``tree.n_slots[j]`` is the size of
        ``S`` at node ``j``).
      sem: ``(capacity, N)`` semantics.
      n_slots: static int ``K >= max(tree.n_slots)``, the number of slots per node.

    Returns:
      ``(capacity, K, N)`` array. Slot ``k < n_slots[j]`` of row ``j`` is an element of ``S``
      (``+inf``: any value allowed; ``nan``: no value allowed); other slots are ``+inf``.
    """
    cap, n = sem.shape
    K = n_slots
    S = constrain_samples(jnp.full((cap, K, n), jnp.inf, sem.dtype))
    slot = jnp.arange(K)[:, None]

    def body(j, S):
        p = tree.parent[j]
        first = tree.left[p] == j
        op = tree.op[p]
        other = jnp.where(first, sem[tree.right[p]], sem[tree.left[p]])
        new = child_forbidden(op, first, S[p], other[None, :])
        cp = tree.n_slots[p]
        new = jnp.where(slot < cp, new, jnp.inf)
        add_zero = (op == DIV) & ~first
        new = jnp.where(add_zero & (slot == cp), 0.0, new)
        new = jnp.where(j < tree.n_nodes, new, jnp.inf)
        z = jnp.zeros_like(j)
        return lax.dynamic_update_slice(S, new[None], (j, z, z))

    S = lax.fori_loop(1, jnp.clip(tree.n_nodes, 1, cap), body, S)  # real nodes only
    return constrain_samples(S)


def equation_mse(a, b, c, d, o):
    """``mean(((a*o - b)/(c*o - d))**2)`` over the last axis (equation 6)."""
    return jnp.mean(((a * o - b) / (c * o - d)) ** 2, axis=-1)


def is_forbidden(S, n_used, v):
    """True where the semantic ``v`` hits the forbidden set.

    Args:
      S: ``(..., K, N)`` forbidden values; n_used: number of used slots (broadcastable to
        ``(...)``); v: ``(..., N)`` candidate semantic (or a scalar constant, ``(...)`` with
        a trailing axis of 1).

    Returns:
      bool ``(...)``: some used slot has ``nan`` anywhere, or equals ``v`` somewhere.
    """
    K = S.shape[-2]
    used = jnp.arange(K) < jnp.asarray(n_used)[..., None]
    hit = jnp.isnan(S) | (S == v[..., None, :])
    return jnp.any(hit & used[..., None], axis=(-2, -1))


def path_equation(tree: TreeArrays, sem: jax.Array, y: jax.Array, weights, n_slots: int, j):
    """Equation ``a, b, c, d`` and forbidden set of ONE node, top-down along its path.

    The same numbers as row ``j`` of :func:`node_equations` and of :func:`forbidden_sets`
    (the same rules applied in the same order), in ``O(depth * N)`` time and ``O(K N)``
    memory: a search that needs the equations of a few nodes at a time (the general-case
    rows) need not hold all ``(capacity, N)`` of them.

    Args:
      tree: :class:`TreeArrays`; sem: ``(capacity, N)`` semantics; y: ``(N,)`` target;
      weights: optional ``(N,)`` sample weights (as :func:`node_equations`), or ``None``.
      n_slots: static int ``K``, the forbidden-set slots (as :func:`forbidden_sets`).
      j: int scalar (traced or not), the node.

    Returns:
      ``(a, b, c, d, S)``: four ``(N,)`` arrays and ``S`` ``(K, N)``. Paper: equations
      6-22, section 2 (forbidden sets).
    """
    cap, n = sem.shape
    dt = sem.dtype
    j = jnp.asarray(j, jnp.int32)
    depth = tree.depth[j]

    def up(_, carry):  # anc[t] = the ancestor of j at depth t (anc[depth] = j)
        anc, cur = carry
        return anc.at[tree.depth[cur]].set(cur), tree.parent[cur]

    anc, _ = lax.fori_loop(0, depth + 1, up, (jnp.zeros((cap,), jnp.int32), j))
    sw = jnp.ones((n,), dt) if weights is None else jnp.sqrt(weights.astype(dt))
    slot = jnp.arange(n_slots)[:, None]

    def down(t, carry):
        a, b, c, d, S = carry
        node, p = anc[t], anc[t - 1]
        first = tree.left[p] == node
        op = tree.op[p]
        other = jnp.where(first, sem[tree.right[p]], sem[tree.left[p]])
        a, b, c, d = child_equation(op, first, a, b, c, d, other)
        new = child_forbidden(op, first, S, other[None, :])
        cp = tree.n_slots[p]
        new = jnp.where(slot < cp, new, jnp.inf)
        new = jnp.where((op == DIV) & ~first & (slot == cp), 0.0, new)
        return a, b, c, d, new

    start = (
        sw,
        sw * y.astype(dt),
        jnp.zeros((n,), dt),
        jnp.full((n,), -1.0, dt),
        jnp.full((n_slots, n), jnp.inf, dt),
    )
    return lax.fori_loop(1, depth + 1, down, start)
