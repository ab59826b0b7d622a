"""Backward elimination by the information criterion (jaxsr/symbolic/elimination.py): the
deletions of a tree by hand, the criterion falling at every kept tree, the engine left as
it was, and the law recovered from a tree with noise terms attached."""

import numpy as np
import pytest

from jaxsr import SymbolicRegressor
from jaxsr.symbolic import Expression
from jaxsr.symbolic.elimination import deletions, eliminate
from jaxsr.symbolic.front import information_criterion
from jaxsr.symbolic.strategies import DomeSearch


def test_deletions_replace_each_operator_by_its_constant_or_a_child():
    e = Expression.parse("(x1 * x2) + 3.0")
    got = [t.to_string() for t in deletions(e, np.array([7.0, 5.0, np.nan, np.nan, np.nan]))]
    # the root: its constant 7, then each child; the product: its constant 5, x1, x2
    assert got == ["7.0", "(x1 * x2)", "3.0", "(5.0 + 3.0)", "(x1 + 3.0)", "(x2 + 3.0)"]
    # without constants only the children; a terminal tree has no deletion
    assert len(deletions(e)) == 4 and deletions(Expression.parse("x1")) == []


def _noisy_product(n=400, seed=0):
    """``y = 2*x1*x2`` with 1% noise, and the law with two terms fitted to the noise
    (``k1*x3 + k2/x3`` by least squares on the residual): a longer tree of lower MSE."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 3.0, (n, 3))
    y = 2.0 * X[:, 0] * X[:, 1]
    y = y + rng.normal(0.0, 0.01 * np.sqrt(np.mean(y**2)), n)
    k1, k2 = np.linalg.lstsq(
        np.column_stack([X[:, 2], 1.0 / X[:, 2]]), y - 2.0 * X[:, 0] * X[:, 1], rcond=None
    )[0]
    return X, y, f"((2.0 * x1) * x2) + (({float(k1)!r} * x3) + ({float(k2)!r} / x3))"


def test_elimination_lowers_the_criterion_and_leaves_the_engine_as_it_was():
    import jax.numpy as jnp

    X, y, start = _noisy_product()
    engine = DomeSearch(
        jnp.asarray(X.T),
        jnp.asarray(y),
        np.ones(3, bool),
        max_nodes=50,
        max_height=None,
        min_improvement=1e-6,
        feature_names=["x1", "x2", "x3"],
    )
    bloated = Expression.parse(start)
    mse, ok = engine._true_mse(bloated)
    assert ok
    engine.expr, engine.mse, engine._cache = bloated, mse, None
    kept = eliminate(engine, float(len(y)))
    assert engine.expr is bloated and engine.mse == mse  # left holding the same tree
    crit = [information_criterion(mse, bloated.n_nodes, len(y), engine.floor)]
    for m in kept:  # every kept tree: a lower criterion, its true MSE
        crit.append(information_criterion(m.loss, m.expression.n_nodes, len(y), engine.floor))
        assert m.loss == pytest.approx(np.mean((m.expression.evaluate(X) - y) ** 2), rel=1e-9)
    assert all(b < a for a, b in zip(crit, crit[1:], strict=False))
    assert kept[-1].expression.n_nodes == 5  # k * x1 * x2: the noise terms are gone
    assert kept[-1].loss < 1.01 * np.mean((2.0 * X[:, 0] * X[:, 1] - y) ** 2)


def test_the_estimator_selects_the_eliminated_law():
    X, y, start = _noisy_product()
    params = dict(initial_expression=start, max_iterations=0, progress=False)
    without = SymbolicRegressor(backward_elimination=False, **params).fit(X, y)
    # the search ran no iteration: the start is all it has
    assert without.n_nodes_ == Expression.parse(start).n_nodes > 5
    sr = SymbolicRegressor(backward_elimination=True, **params).fit(X, y)
    p = X[:, 0] * X[:, 1]
    law = np.mean((y - (p @ y / (p @ p)) * p) ** 2)  # k * x1 * x2, k by least squares
    assert sr.n_nodes_ == 5 and sr.mse_ <= law * (1 + 1e-9) and sr.mse_ < without.mse_ * 1.02
    assert "x3" not in sr.expression_
    with pytest.raises(ValueError, match="backward_elimination"):
        SymbolicRegressor(backward_elimination=1).fit(X, y)
