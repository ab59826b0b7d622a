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
    eng = DomeSearch(
        jnp.asarray(X.T),
        jnp.asarray(y),
        np.ones(X.shape[1], bool),
        max_nodes=None,
        max_height=None,
        min_improvement=1e-6,
        feature_names=None,
        weights=jnp.ones(X.shape[0]),
    )
    eng.expr = tree
    eng.mse, ok = eng._true_mse(tree)
    assert ok
    return eng


@pytest.mark.parametrize(
    "start, coef",
    [("1.0 * ((0.5 * x1) + x2)", (6.0, 3.0)), ("(2.0 * x1) + (0.1 * (x2 * 4.0))", (2.5, 0.6))],
)
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


def test_polish_steps_re_use_the_normal_equations_bit_for_bit():
    """polish_steps carries J^T J, J^T r between a rejected step and the next (the same
    point): the same constants, MSE, damping and counts as recomputing them at every
    step (a host loop over _joint_constant_step and _check, the oracle), on a tree whose
    polish rejects steps."""
    from jaxsr.symbolic.strategies import (
        CONVERGED,
        RUNNING,
        Polish,
        _check,
        _joint_constant_step,
        polish_steps,
    )

    rng = np.random.default_rng(5)
    X = rng.uniform(1.0, 2.0, size=(40, 2))
    y = 2.5 * X[:, 0] / (0.7 + X[:, 1]) + 0.3
    tree = Expression.parse("(1.0 * (x1 / (1.5 + x2))) + 0.1", ["x1", "x2"])
    eng = _engine(X, y, tree)
    t = tree.padded(16)
    state = Polish.start(jnp.asarray(t.value), eng.mse)
    out = polish_steps(t, eng.XT, eng.y, eng.weights, state, 0.0, jnp.int32(30), jnp.int32(30))
    value, mse, lam = jnp.asarray(t.value), jnp.asarray(eng.mse), 1e-3
    kept = rejected = steps = 0
    status = RUNNING
    while status == RUNNING and steps < 30:
        cur = t._replace(value=value)
        v = _joint_constant_step(cur, eng.XT, eng.y, lam, eng.weights)
        m, ok = _check(cur._replace(value=v), eng.XT, eng.y, eng.weights)
        good = bool(ok) and float(m) < float(mse)
        steps += 1
        if good:
            value, mse, lam, kept = v, m, max(lam / 10, 1e-12), kept + 1
            status = CONVERGED if float(m) <= 0.0 else RUNNING
        else:
            lam, rejected = lam * 100, rejected + 1
            status = CONVERGED if lam > 1e6 else RUNNING
    assert kept >= 2 and rejected >= 1  # the case the re-use is for
    np.testing.assert_array_equal(np.asarray(out.value), np.asarray(value))
    assert float(out.mse) == float(mse)
    np.testing.assert_allclose(float(out.lam), lam, rtol=1e-12)  # XLA: x / 10 as x * 0.1
    assert (int(out.kept), int(out.steps), int(out.status)) == (kept, steps, status)
