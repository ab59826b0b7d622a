"""Deterministic symbolic regression (DoME), batched in JAX.

Public estimator :class:`SymbolicRegressor` and the expression type :class:`Expression`;
the functional layer (pure, jit- and vmap-able kernels over ``[capacity, N]`` arrays):
:func:`node_semantics`, :func:`node_equations`, :func:`forbidden_sets`,
:func:`optimal_constant`, the four searches in one call :func:`search_all` and one by one
:func:`constant_search`,
:func:`variable_search`, :func:`constant_variable_search`,
:func:`constant_expression_search`.

Functional layer, e.g. the constant-variable search of one tree on 8 datasets at once::

    tree = Expression.parse("(0.5 * x2) / x3").padded()       # TreeArrays, capacity 16
    def scores(XT, y):                                          # XT: (M, N), y: (N,)
        sem = node_semantics(tree, XT)                          # (16, N)
        eqs = node_equations(tree, sem, y)                      # a, b, c, d: (16, N)
        S = forbidden_sets(tree, sem, 2)                        # (16, 2, N)
        nodes, pool = jnp.ones(16, bool), jnp.ones(XT.shape[0], bool)
        return constant_variable_search(tree, sem, eqs, S, XT, nodes, pool, 2**30, 2**30)
    red, k = jax.vmap(scores)(XT_batch, y_batch)                # (8, 16, M, 4) each

Paper: ``shared/papers/deterministic-symbolic-regression.md``.
"""

from .constant import optimal_constant as optimal_constant
from .equations import Equations as Equations
from .equations import child_equation as child_equation
from .equations import child_forbidden as child_forbidden
from .equations import equation_mse as equation_mse
from .equations import forbidden_sets as forbidden_sets
from .equations import node_equations as node_equations
from .expression import Expression as Expression
from .expression import TreeArrays as TreeArrays
from .regressor import ExtrapolationWarning as ExtrapolationWarning
from .regressor import SymbolicRegressor as SymbolicRegressor
from .searches import SearchResults as SearchResults
from .searches import best_candidate as best_candidate
from .searches import constant_expression_search as constant_expression_search
from .searches import constant_search as constant_search
from .searches import constant_variable_search as constant_variable_search
from .searches import search_all as search_all
from .searches import variable_search as variable_search
from .semantics import node_semantics as node_semantics

__all__ = [
    "ExtrapolationWarning",
    "SymbolicRegressor",
    "Expression",
    "TreeArrays",
    "Equations",
    "node_semantics",
    "node_equations",
    "forbidden_sets",
    "child_equation",
    "child_forbidden",
    "equation_mse",
    "optimal_constant",
    "constant_search",
    "search_all",
    "SearchResults",
    "variable_search",
    "constant_variable_search",
    "constant_expression_search",
    "best_candidate",
]
