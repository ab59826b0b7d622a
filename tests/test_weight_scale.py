"""Sample weights are relative: multiplying them all by one factor, from 1e-300 to 1e308,
gives the same model, objective and certificate on both estimators (the weights are
divided by their largest value before any sum: jaxsr._validation.check_sample_weight)."""

import numpy as np
import pytest

from jaxsr import OptimalTreeRegressor, SymbolicRegressor
from jaxsr._validation import check_sample_weight
from jaxsr.trees import Binarizer

SCALES = (1e-300, 5e-324, 1.0, 1e300, 1e308)


def test_check_sample_weight_divides_by_the_largest_weight():
    w = np.array([0.5, 2.0, 0.0, 1.0])
    np.testing.assert_array_equal(check_sample_weight(w, 4), [0.25, 1.0, 0.0, 0.5])
    for s in SCALES:
        np.testing.assert_array_equal(check_sample_weight(np.full(3, s), 3), np.ones(3))
        np.testing.assert_array_equal(check_sample_weight(s, 3), np.ones(3))  # a scalar
    with pytest.raises(ValueError, match="at least one sample needs a positive weight"):
        check_sample_weight(0.0, 3)  # a scalar zero is all weights zero
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_sample_weight(np.array([1.0, np.inf]), 2)


def _weights(n, seed=1):
    return np.random.default_rng(seed).uniform(0.25, 4.0, n)


def test_symbolic_model_is_the_same_at_any_weight_scale():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 3, (150, 3))
    y = 2 * X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(0, 0.05, 150)
    w0 = _weights(150)
    # the search from the mean gives the same tree to the last bit at any weight scale; the
    # rational start's least-squares constants agree to rounding (checked below)
    fits = [
        SymbolicRegressor(max_nodes=9, verbose=False, rational_start=False).fit(
            X, y, sample_weight=w0 * s
        )
        for s in (1e-300, 1.0, 1e300)
    ]
    started = [
        SymbolicRegressor(max_nodes=9, verbose=False).fit(X, y, sample_weight=w0 * s)
        for s in (1e-300, 1.0, 1e300)
    ]
    for m in started:
        np.testing.assert_allclose(m.predict(X), started[1].predict(X), rtol=1e-9)
    # uniform weights at the extremes of float64 give the unweighted fit exactly
    ref = SymbolicRegressor(max_nodes=9, verbose=False).fit(X, y)
    for s in (5e-324, 1e308):
        m = SymbolicRegressor(max_nodes=9, verbose=False).fit(X, y, sample_weight=np.full(150, s))
        assert m.expression_ == ref.expression_ and m.mse_ == ref.mse_
    assert {m.expression_ for m in fits} == {fits[1].expression_}
    assert "x1" in fits[1].expression_ and fits[1].n_nodes_ <= 9
    for m in fits:
        assert m.mse_ == pytest.approx(fits[1].mse_, rel=1e-9)
        np.testing.assert_allclose(m.predict(X), fits[1].predict(X), rtol=1e-9)


def test_tree_model_and_certificate_are_the_same_at_any_weight_scale():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    w0 = _weights(len(y))
    params = dict(
        regularization=0.01,
        depth_budget=3,
        binarizer=Binarizer(strategy="quantile", n_thresholds=3),
    )
    fits = [
        OptimalTreeRegressor(**params).fit(X, y, sample_weight=w0 * s)
        for s in (1e-300, 1.0, 1e300, 1e308 / 4)
    ]
    ref = fits[1]
    assert ref.optimal_
    for m in fits:
        assert m.optimal_
        assert m.objective_ == pytest.approx(ref.objective_, rel=1e-9)
        assert m.lower_bound_ == pytest.approx(ref.lower_bound_, rel=1e-9)
        np.testing.assert_allclose(m.predict(X), ref.predict(X), rtol=1e-9)
    # equal weights at the extremes of float64 are the unweighted problem, bit for bit
    plain = OptimalTreeRegressor(**params).fit(X, y)
    for s in (5e-324, 1e308):
        m = OptimalTreeRegressor(**params).fit(X, y, sample_weight=np.full(len(y), s))
        assert (m.optimal_, m.objective_, m.lower_bound_) == (
            True,
            plain.objective_,
            plain.lower_bound_,
        )
        np.testing.assert_array_equal(m.predict(X), plain.predict(X))
