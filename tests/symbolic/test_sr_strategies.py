"""The constant optimisation of strategies 2 and 3 (DomeSearch.optimise_and_polish): the
cyclic passes of section 2.6 with the joint polish between passes."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr.symbolic import Expression
from jaxsr.symbolic.expression import CONST
from jaxsr.symbolic.strategies import DomeSearch


def _engine(X, y, tree):
    # weights of ones, as test_sr_kernels' device test: the same compiled kernels
    eng = DomeSearch(jnp.asarray(X.T), jnp.asarray(y), np.ones(X.shape[1], bool),
                     max_nodes=None, max_height=None, min_improvement=1e-6,
                     feature_names=None, weights=jnp.ones(X.shape[0]))
    eng.expr = tree
    eng.mse, ok = eng._true_mse(tree)
    assert ok
    return eng


@pytest.mark.parametrize("start, coef", [("1.0 * ((0.5 * x1) + x2)", (6.0, 3.0)),
                                         ("(2.0 * x1) + (0.1 * (x2 * 4.0))", (2.5, 0.6))])
def test_polish_between_passes_ends_at_a_fixed_point_of_the_passes(start, coef):
    """On a valley (the product of two constants is what matters) the passes alone crawl:
    many accepted single-constant changes. With the polish between passes: far fewer,
    an MSE at least as low, and the end state is one that a further pass leaves
    unchanged (the paper's stopping rule)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(1.0, 2.0, size=(40, 2))  # the shape of test_sr_kernels' constant tests
    y = coef[0] * X[:, 0] + coef[1] * X[:, 1]
    tree = Expression.parse(start, ["x1", "x2"])
    passes_only = _engine(X, y, tree)
    n_passes, _ = passes_only.optimise_constants()
    both = _engine(X, y, tree)
    n_both, kept, capped = both.optimise_and_polish()
    assert not capped and kept >= 1
    assert n_both < n_passes
    assert both.mse <= passes_only.mse * (1 + 1e-9) + 1e-28
    # a fixed point: a whole pass more changes no constant
    before = both.expr.value[both.expr.op == CONST].copy()
    assert both.optimise_constants() == (0, False)
    np.testing.assert_array_equal(both.expr.value[both.expr.op == CONST], before)
