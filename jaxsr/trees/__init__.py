"""Optimal sparse regression trees (OSRT): provably optimal trees by DP with bounds.

Estimator layer: :class:`OptimalTreeRegressor` (its regularization path: a list of
:class:`PathSegment`), :class:`OptimalTreeRegressorCV` (lambda and depth budget by
cross-validation over the exact path), :class:`Tree`, :class:`Binarizer`; pictures:
:func:`plot_tree` (matplotlib), :func:`export_graphviz` (dot source).
Functional layer (pure, jittable, vmappable JAX functions with documented shapes):
:func:`weighted_kmeans`, :func:`weighted_kmedians`, :func:`kmeans_lower_bound`,
:func:`leaf_statistics`, :func:`optimal_subtree_cost`.

Modules: ``kmeans`` (Algorithm 1's DP), ``bounds`` (leaf statistics, bounds), ``subtrees``
(exact depth-1..3 subtrees as matrix products, JAX), ``engine`` (the branch and bound, C++
compiled at install), ``search`` (the fit's search around it, certificate),
``device`` (batched evaluation of frontier subproblems, ``backend="jax"``), ``tree``
(:class:`Tree`), ``plot`` (:func:`plot_tree`, :func:`export_graphviz`), ``regressor``
(:class:`OptimalTreeRegressor`), ``binarize`` (:class:`Binarizer`).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# The public names load on first use (PEP 562): a saved tree loads and predicts with numpy
# alone, without importing JAX (``jaxsr.io.load_model``, ``jaxsr predict``).
_LAZY = {
    "Binarizer": "jaxsr.trees.binarize",
    "OptimalTreeRegressorCV": "jaxsr.trees.cv",
    "leaf_statistics": "jaxsr.trees.bounds",
    "kmeans_lower_bound": "jaxsr.trees.kmeans",
    "weighted_kmeans": "jaxsr.trees.kmeans",
    "weighted_kmedians": "jaxsr.trees.kmeans",
    "export_graphviz": "jaxsr.trees.plot",
    "plot_tree": "jaxsr.trees.plot",
    "OptimalTreeRegressor": "jaxsr.trees.regressor",
    "PathSegment": "jaxsr.trees.regressor",
    "optimal_subtree_cost": "jaxsr.trees.subtrees",
    "Tree": "jaxsr.trees.tree",
}

__all__ = [
    "Binarizer",
    "OptimalTreeRegressor",
    "OptimalTreeRegressorCV",
    "PathSegment",
    "Tree",
    "export_graphviz",
    "kmeans_lower_bound",
    "leaf_statistics",
    "optimal_subtree_cost",
    "plot_tree",
    "weighted_kmeans",
    "weighted_kmedians",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


if TYPE_CHECKING:  # for static analysers and IDEs only
    from .binarize import Binarizer as Binarizer
    from .bounds import leaf_statistics as leaf_statistics
    from .cv import OptimalTreeRegressorCV as OptimalTreeRegressorCV
    from .kmeans import kmeans_lower_bound as kmeans_lower_bound
    from .kmeans import weighted_kmeans as weighted_kmeans
    from .kmeans import weighted_kmedians as weighted_kmedians
    from .plot import export_graphviz as export_graphviz
    from .plot import plot_tree as plot_tree
    from .regressor import OptimalTreeRegressor as OptimalTreeRegressor
    from .regressor import PathSegment as PathSegment
    from .subtrees import optimal_subtree_cost as optimal_subtree_cost
    from .tree import Tree as Tree
