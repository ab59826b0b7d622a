"""Backward elimination of a fitted tree by the information criterion (beyond the paper).

The search only grows its tree: each iteration replaces a node by something that lowers
the training MSE. On noisy data it reaches the law early and then keeps adding terms that
fit the noise, and the changes it made on the way (a term ``0.09*x3`` that the noise made
worth a few nodes, a constant ``-5e-4`` beside a variable) stay in every later tree, so
the Pareto front may hold the law only with such terms attached: ``G*m1*m2*(1/r2 - 1/r1)``
at 1% noise came back as a 25-node tree around it. This pass walks the other way, from the
search's final tree, one deletion at a time:

* **deletions**: every non-terminal node ``p op q`` replaced by its optimal constant (the
  paper's constant search, section 2.1, exact from the node equations) or by one of its
  children ``p`` or ``q`` (the other branch dropped);
* the :data:`TRIES` deletions of lowest Bayesian information criterion
  ``n log(MSE) + nodes log(n)`` (:func:`~jaxsr.symbolic.front.information_criterion`, the
  criterion of ``model_selection="bic"``) by their true MSE, each with its constants
  optimised as in strategies 2 and 3 (section 2.6 and the joint polish); the best of them
  is kept if its criterion is lower than the tree's, and the pass goes on from it.

Every tree it keeps is a model of the fit's Pareto front (``equations_``), so the
selection chooses among them as among the search's. In the case above the pass ends at the
13-node law, test R^2 0.99999998. Deterministic; it obeys the fit's time limit and the
``domain`` rule (a deletion that is not proved pole-free is refused like any candidate).
"""

from __future__ import annotations

import numpy as np

from .expression import DIV, VAR, Expression
from .front import FrontModel, information_criterion

__all__ = ["TRIES", "deletions", "eliminate"]

TRIES = 4
"""Deletions per step whose constants are optimised (those of lowest criterion before)."""


def deletions(expr: Expression, constants=None) -> list[Expression]:
    """Every tree one deletion away from ``expr``: each non-terminal node replaced by its
    constant (``constants[j]``, when given and finite) and by each of its children.

    Args:
      expr: a tree over ``+ - * /`` (unary nodes are left alone: none of their nodes is
        deleted).
      constants: ``(>= n_nodes,)`` the optimal constant of each node, or ``None``.

    Returns:
      the trees, in node order (constant, first child, second child per node).
    """
    out = []
    below = expr.below_unary() if expr.has_unary else np.zeros(expr.n_nodes, bool)
    for j in range(expr.n_nodes):
        if expr.op[j] <= VAR or expr.op[j] > DIV or below[j]:  # terminals, unary nodes
            continue
        if constants is not None and np.isfinite(constants[j]):
            out.append(expr.replace(j, Expression.constant(float(constants[j]))))
        out.append(expr.replace(j, expr.subtree(int(expr.left[j]))))
        out.append(expr.replace(j, expr.subtree(int(expr.right[j]))))
    return out


def eliminate(engine, n_samples: float) -> list[FrontModel]:
    """Backward elimination (module docstring) from the engine's current tree.

    Args:
      engine: a :class:`~jaxsr.symbolic.strategies.DomeSearch` holding the tree; it is
        left holding the same tree.
      n_samples: the ``n`` of the criterion (the training rows; Kish's effective size with
        sample weights).

    Returns:
      the trees kept, in order, as ``FrontModel(tree, MSE in the engine's units, -1)``
      (empty when no deletion lowers the criterion).
    """
    start = (engine.expr, engine.mse, engine._cache)
    floor = engine.floor

    def crit(mse, nodes):
        return float(information_criterion(mse, nodes, n_samples, floor))

    kept: list[FrontModel] = []
    cur, cur_mse = engine.expr, float(engine.mse)
    try:
        while cur.n_nodes > 1 and not engine.timed_out():
            engine.expr, engine.mse, engine._cache = cur, cur_mse, None
            constants = None
            if engine.unary_search is None:  # the node equations' constant of every node
                res, _ = engine.results([("constant", "nonterminal")])
                constants = np.where(np.isfinite(res.constant), res.constant_k, np.nan)
            scored = []
            for tree in deletions(cur, constants):
                mse, ok = engine._true_mse(tree)
                if ok and np.isfinite(mse):
                    scored.append((crit(mse, tree.n_nodes), tree.n_nodes, len(scored), tree, mse))
            scored.sort(key=lambda t: t[:3])
            best = None
            for _, _, _, tree, mse in scored[:TRIES]:
                if engine.timed_out():
                    break
                engine.expr, engine.mse, engine._cache = tree, mse, None
                engine.optimise_and_polish()
                got = (crit(engine.mse, engine.expr.n_nodes), engine.expr, float(engine.mse))
                if best is None or got[0] < best[0]:
                    best = got
            if best is None or not best[0] < crit(cur_mse, cur.n_nodes):
                break
            _, cur, cur_mse = best
            kept.append(FrontModel(cur, cur_mse, -1))
    finally:
        engine.expr, engine.mse, engine._cache = start
    return kept
