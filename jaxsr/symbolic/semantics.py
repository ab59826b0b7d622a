"""Semantics (outputs) of every node of a tree, bottom-up (paper, section 2 and Table 1).

The semantic of a node is the vector of its outputs on the ``N`` patterns: a point of the
N-dimensional semantic space. Constants evaluate to ``(k, ..., k)`` and variables to their
column. Nodes are visited from the last pre-order index to the first, so both children of
a node are known when it is reached. A unary node (``sqrt, exp, log, sin, cos``,
beyond the paper) is the function of its first child's semantic.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from .._config import program
from .._sharding import constrain_samples
from .expression import ADD, CONST, EXP, LOG, MUL, SIN, SQRT, SUB, VAR, TreeArrays

__all__ = ["node_semantics", "combine", "unary", "tree_mse", "tree_output"]


def _binary(op, x, y):
    return jnp.where(
        op == ADD, x + y, jnp.where(op == SUB, x - y, jnp.where(op == MUL, x * y, x / y))
    )


def unary(op, x):
    """``u(x)`` element-wise for a unary operator code ``op`` (``SQRT, EXP, LOG, SIN,
    COS``; scalar int, traced or not). IEEE rules: ``sqrt``/``log`` of a negative value
    give ``nan``, ``log(0) = -inf``, ``exp`` overflows to ``inf`` (no tree with a
    non-finite semantic is ever accepted). Each function gets a safe argument where it is
    not the one chosen (no ``nan`` in a derivative through an unchosen branch)."""
    one = jnp.ones_like(x)
    return jnp.where(
        op == SQRT,
        jnp.sqrt(jnp.where(op == SQRT, x, one)),
        jnp.where(
            op == EXP,
            jnp.exp(jnp.where(op == EXP, x, 0.0 * one)),
            jnp.where(
                op == LOG,
                jnp.log(jnp.where(op == LOG, x, one)),
                jnp.where(op == SIN, jnp.sin(x), jnp.cos(x)),
            ),
        ),
    )


def combine(op, x, y):
    """``x op y`` element-wise for an operator code ``op`` (scalar int, traced or not);
    ``op(x)`` for a unary code (:func:`unary`, its one child ``x``; ``y`` is
    ignored), evaluated in a ``lax.cond`` branch, so a binary node computes exactly the
    four-way choice it always did and no transcendental function.

    IEEE rules: a zero denominator gives ``inf`` or ``nan`` (the searches never accept one).
    """
    op = jnp.asarray(op)
    return lax.cond(
        op >= SQRT, lambda: unary(op, x).astype(x.dtype), lambda: _binary(op, x, y).astype(x.dtype)
    )


@program
def node_semantics(tree: TreeArrays, XT: jax.Array) -> jax.Array:
    """Outputs of every node of ``tree`` on every pattern.

    Args:
      tree: :class:`TreeArrays` padded to ``capacity`` nodes.
      XT: ``(n_features, N)`` float array: the variables as points of the semantic space
        (the transpose of the usual ``X``).

    Returns:
      ``(capacity, N)`` array of ``XT.dtype``; row ``i`` is the semantic of pre-order node
      ``i`` (paper's node ``i + 1``); padding rows are 0.

    Jit- and vmap-able (e.g. ``jax.vmap(node_semantics, in_axes=(None, 0))`` over a batch
    of datasets). Paper: section 2, Table 1 second column.
    """
    cap = tree.op.shape[0]
    sem0 = constrain_samples(jnp.zeros((cap, XT.shape[1]), XT.dtype))

    def loop(with_unary):
        def body(k, sem):
            i = cap - 1 - k
            op = tree.op[i]
            x = sem[tree.left[i]]
            y = sem[tree.right[i]]
            inner = combine(op, x, y) if with_unary else _binary(op, x, y)
            leaf = jnp.where(op == CONST, tree.value[i].astype(XT.dtype), XT[tree.feature[i]])
            # op >= ADD: binary (or unary, u of the first child) node
            row = jnp.where(op >= ADD, inner, jnp.where((op == CONST) | (op == VAR), leaf, 0.0))
            return lax.dynamic_update_slice(sem, row[None, :], (i, jnp.zeros_like(i)))

        # only the real nodes (pre-order indices below n_nodes; padding rows stay 0): the
        # work follows the tree, not its capacity bucket
        first = cap - jnp.clip(tree.n_nodes, 0, cap)
        return lax.fori_loop(first, cap, body, sem0)

    # a tree of + - * / runs the paper's loop as it was (no branch per node); only a tree
    # with a unary node runs the loop that branches on each node's arity
    return constrain_samples(
        lax.cond(jnp.any(tree.op >= SQRT), lambda: loop(True), lambda: loop(False))
    )


@program
def tree_output(tree: TreeArrays, XT: jax.Array) -> jax.Array:
    """The root's semantic (the tree's outputs), ``(N,)``: row 0 of :func:`node_semantics`."""
    return node_semantics(tree, XT)[0]


def tree_mse(sem: jax.Array, y: jax.Array, weights: jax.Array | None = None) -> jax.Array:
    """Mean squared error of the root, ``mean((sem[0] - y) ** 2)`` (equation 3); with
    ``weights`` ``(N,)`` normalised to mean 1, ``mean(weights * (sem[0] - y) ** 2)``."""
    r2 = (sem[0] - y) ** 2
    return jnp.mean(r2 if weights is None else weights * r2)
