"""Joint L-BFGS refinement of an expression's constants (jaxsr.symbolic.refine, optax):
it finds the least-squares constants of a right structure and never raises the MSE."""

import numpy as np
import pytest

from jaxsr.symbolic import Expression, SymbolicRegressor
from jaxsr.symbolic.expression import CONST
from jaxsr.symbolic.refine import refine_constants, weighted_mse

_STRUCTURE = "((k * x1) + ((k * x1) * x2)) + k"  # y = a*x1 + b*x1*x2 + c


def _data(seed=0, n=100):
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 3.0, size=(n, 2))
    return X, 2.5 * X[:, 0] + 0.7 * X[:, 0] * X[:, 1] + 1.0


def _with(constants) -> Expression:
    text = _STRUCTURE
    for c in constants:
        text = text.replace("k", repr(float(c)), 1)
    return Expression.parse(text)


def test_right_structure_gets_the_least_squares_constants():
    X, y = _data()
    start = _with([2.0, 0.5, 0.3])
    res = refine_constants(start, X, y)
    assert res.accepted and res.mse_before == pytest.approx(weighted_mse(start, X, y))
    consts = res.expression.value[res.expression.op == CONST]
    np.testing.assert_allclose(consts, [2.5, 0.7, 1.0], rtol=1e-9)
    assert res.mse < 1e-18 and res.mse == weighted_mse(res.expression, X, y)
    # the numpy oracle: least squares on the columns x1, x1*x2, 1
    A = np.column_stack([X[:, 0], X[:, 0] * X[:, 1], np.ones(len(y))])
    np.testing.assert_allclose(np.linalg.lstsq(A, y, rcond=None)[0], consts, rtol=1e-9)


def test_never_raises_the_mse():
    """Random starting constants (one structure: one compilation), noisy targets, weights."""
    rng = np.random.default_rng(1)
    X, y = _data(1)
    y = y + rng.normal(0.0, 0.3, y.shape)
    w = rng.uniform(0.0, 2.0, y.shape)
    accepted = 0
    for _ in range(6):
        start = _with(rng.normal(0.0, 3.0, 3))
        res = refine_constants(
            start, X, y, sample_weight=w, max_iterations=int(rng.integers(1, 30))
        )
        before = weighted_mse(start, X, y, w)
        assert res.mse_before == before
        if res.accepted:
            accepted += 1
            assert res.mse < before and res.mse == weighted_mse(res.expression, X, y, w)
        else:
            assert res.expression is start and res.mse == before
    assert accepted >= 4  # it does work, not only refuse


def test_refusals_leave_the_expression_alone():
    X, y = _data()
    exact = _with([2.5, 0.7, 1.0])
    res = refine_constants(exact, X, y)  # MSE 0 already (or one rounding away)
    assert res.mse <= weighted_mse(exact, X, y)
    no_constants = Expression.parse("x1 * x2")
    res = refine_constants(no_constants, X, y)
    assert not res.accepted and res.expression is no_constants and res.n_iterations == 0
    pole = Expression.parse("x1 / (x2 - 2.0)")  # a pole inside the data: MSE is huge or inf
    res = refine_constants(pole, X, y)
    assert res.mse <= weighted_mse(pole, X, y)
    assert np.isfinite(res.mse) or not res.accepted


def test_regressor_option_lowers_the_final_mse():
    X, y = _data()
    assert SymbolicRegressor().refine_constants is False  # off by default: the paper alone
    # the search from the mean (a rational start can be the final model, with no history)
    refined = SymbolicRegressor(
        max_nodes=9, progress=False, refine_constants=True, rational_start=False
    ).fit(X, y)
    r = refined.refinement_
    # the search's final tree (DoME's coordinate passes) is what gets refined
    assert r.mse_before == pytest.approx(refined.history_[-1]["mse"], rel=1e-9)
    # the search's own joint polish of the constants may leave nothing
    # to gain; never worse, and an accepted refinement is the front's last model
    assert r.mse <= r.mse_before
    if r.accepted:
        assert refined.equations_["loss"].min() == r.mse  # the refined tree is on the front
        np.testing.assert_allclose(
            refined.predict(X, index=len(refined.equations_) - 1),
            r.expression.evaluate(X),
            rtol=1e-12,
        )
    assert SymbolicRegressor(max_iterations=0).fit(X, y).refinement_ is None
    with pytest.raises(ValueError, match="refine_constants"):
        SymbolicRegressor(refine_constants="yes").fit(X, y)


# ------------------------------------------------------------------ shortest constants
def test_shortest_constants_drop_rounding_and_keep_the_fit():
    from jaxsr.symbolic.front import loss_floor
    from jaxsr.symbolic.refine import shortest_constants

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 3.0, (80, 3))
    y = 6.67392e-11 * X[:, 0] * X[:, 1] / X[:, 2] ** 2
    noisy = Expression.parse("(((6.673919999999998e-11 * x2) * x1) / x3) / x3")
    floor = loss_floor(y)
    short = shortest_constants(noisy, X, y, max_loss=floor)
    assert short.value[short.op == CONST].tolist() == [6.67392e-11]
    assert weighted_mse(short, X, y) <= max(floor, weighted_mse(noisy, X, y))
    # a constant with many true digits keeps them: only the digits below the rounding
    # floor (relative errors of about 2e-13) may go
    y2 = 2.718281828459045 * X[:, 0] + 1.0
    e = Expression.parse("(2.718281828459045 * x1) + 1.0000000000000002")
    s2 = shortest_constants(e, X, y2, max_loss=loss_floor(y2))
    k, one = s2.value[s2.op == CONST].tolist()
    assert one == 1.0
    assert abs(k - np.e) <= 1e-12 * np.e and abs(k - np.e) > 0  # shortened, only a little
    assert len(repr(k)) >= 13
    assert weighted_mse(s2, X, y2) <= loss_floor(y2)
    # nothing to shorten: the same object
    assert shortest_constants(s2, X, y2, max_loss=loss_floor(y2)) is s2


def test_an_exact_fit_prints_short_constants():
    X = np.arange(1.0, 21.0).reshape(-1, 1)
    sr = SymbolicRegressor(progress=False).fit(X, 3 * X[:, 0] + 2)
    tree = sr.expression_tree_
    assert sorted(tree.value[tree.op == CONST].tolist()) == [2.0, 3.0]
    assert sr.mse_ <= sr._loss_floor_
