"""Semantics (outputs) of every node of a tree, bottom-up (paper, section 2 and Table 1).

The semantic of a node is the vector of its outputs on the ``N`` patterns: a point of the
N-dimensional semantic space. Constants evaluate to ``(k, ..., k)`` and variables to their
column. Nodes are visited from the last pre-order index to the first, so both children of
a node are known when it is reached.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from .expression import ADD, CONST, MUL, SUB, VAR, TreeArrays

__all__ = ["node_semantics", "combine", "tree_mse", "tree_output"]

def combine(op, x, y):
    """``x op y`` element-wise for an operator code ``op`` (scalar int, traced or not).

    IEEE rules: a zero denominator gives ``inf`` or ``nan`` (the searches never accept one).
    """
    return jnp.where(
        op == ADD, x + y, jnp.where(op == SUB, x - y, jnp.where(op == MUL, x * y, x / y))
    )


@jax.jit
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
    sem0 = jnp.zeros((cap, XT.shape[1]), XT.dtype)

    def body(k, sem):
        i = cap - 1 - k
        op = tree.op[i]
        x = sem[tree.left[i]]
        y = sem[tree.right[i]]
        inner = combine(op, x, y)
        leaf = jnp.where(op == CONST, tree.value[i].astype(XT.dtype), XT[tree.feature[i]])
        row = jnp.where(op >= ADD, inner, jnp.where((op == CONST) | (op == VAR), leaf, 0.0))
        return lax.dynamic_update_slice(sem, row[None, :], (i, 0))

    return lax.fori_loop(0, cap, body, sem0)


@jax.jit
def tree_output(tree: TreeArrays, XT: jax.Array) -> jax.Array:
    """The root's semantic (the tree's outputs), ``(N,)``: row 0 of :func:`node_semantics`."""
    return node_semantics(tree, XT)[0]


def tree_mse(sem: jax.Array, y: jax.Array, weights: jax.Array | None = None) -> jax.Array:
    """Mean squared error of the root, ``mean((sem[0] - y) ** 2)`` (equation 3); with
    ``weights`` ``(N,)`` normalised to mean 1, ``mean(weights * (sem[0] - y) ** 2)``."""
    r2 = (sem[0] - y) ** 2
    return jnp.mean(r2 if weights is None else weights * r2)
