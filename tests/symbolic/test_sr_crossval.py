"""Cross-validation of the front's structures (jaxsr.symbolic.crossval) against oracles:
finite differences for the Jacobian, numpy least squares and scikit-learn's
cross-validation of a linear model for the refits and the fold losses."""

import numpy as np
import pytest

from jaxsr.symbolic import crossval as cv
from jaxsr.symbolic.expression import Expression

TREES = [
    "3.0 + 2.0 * x1",
    "(1.5 * x1) / (0.7 + x2)",
    "x1 * x2 - 4.0",
    "(2.0 * x1 + 0.5) * (x2 - 1.25) / (3.0 + x1 * x1)",
    "exp(0.3 * x1) + 2.0 * cos(1.1 * x2)",
    "sqrt(2.0 + x1) * log(1.5 + x2) - sin(0.5 * x1)",
]


def _rows(n=200, m=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, (n, m))


@pytest.mark.parametrize("text", TREES)
def test_jacobian_matches_central_differences_and_values_match_evaluate(text):
    expr = Expression.parse(text)
    X = _rows()
    f, J = cv.constant_jacobian(expr, X)
    assert np.array_equal(f, expr.evaluate(X))
    k = expr.value[expr.op == 1].astype(float)
    assert J.shape == (X.shape[0], k.shape[0])
    for j in range(k.shape[0]):
        h = 1e-6 * max(1.0, abs(k[j]))
        up, down = k.copy(), k.copy()
        up[j] += h
        down[j] -= h
        fd = (
            cv.constant_jacobian(expr, X, up, jacobian=False)[0]
            - cv.constant_jacobian(expr, X, down, jacobian=False)[0]
        ) / (2 * h)
        np.testing.assert_allclose(J[:, j], fd, rtol=1e-6, atol=1e-8)


def test_tree_without_constants_has_an_empty_jacobian():
    expr = Expression.parse("x1 * x2 - x1")
    X = _rows()
    f, J = cv.constant_jacobian(expr, X)
    assert J.shape == (X.shape[0], 0)
    assert np.array_equal(f, expr.evaluate(X))
    assert cv.refit_constants(expr, X, f).shape == (0,)


def test_refit_of_a_linear_structure_is_numpy_least_squares():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    y = 1.0 + X @ np.array([2.0, -3.0, 0.5]) + rng.normal(scale=0.3, size=150)
    expr = Expression.parse("((9.0 + 9.0 * x1) + 9.0 * x2) + 9.0 * x3")
    c = cv.refit_constants(expr, X, y)
    A = np.column_stack([np.ones(150), X])
    ref = np.linalg.lstsq(A, y, rcond=None)[0]
    np.testing.assert_allclose(c, ref, rtol=1e-9, atol=1e-12)
    # weights: the weighted least-squares solution
    w = rng.uniform(0.0, 3.0, 150)
    cw = cv.refit_constants(expr, X, y, w)
    refw = np.linalg.lstsq(A * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
    np.testing.assert_allclose(cw, refw, rtol=1e-9, atol=1e-12)


def test_refit_recovers_the_constants_of_a_rational_law():
    X = _rows(300, 1, seed=2)
    y = 2.5 * X[:, 0] / (0.8 + X[:, 0])
    expr = Expression.parse("(2.0 * x1) / (1.0 + x1)")
    c = cv.refit_constants(expr, X, y)
    np.testing.assert_allclose(c, [2.5, 0.8], rtol=1e-8)


def test_refit_never_raises_the_training_loss():
    rng = np.random.default_rng(3)
    X = _rows(120, 2, seed=3)
    y = rng.normal(size=120)
    for text in TREES:
        expr = Expression.parse(text)
        before = np.mean((expr.evaluate(X) - y) ** 2)
        c = cv.refit_constants(expr, X, y)
        after = np.mean((cv.constant_jacobian(expr, X, c, jacobian=False)[0] - y) ** 2)
        assert after <= before


def test_folds_partition_the_rows_and_refuse_too_few():
    folds = cv.fold_rows(23, 5)
    assert sorted(np.concatenate(folds).tolist()) == list(range(23))
    assert sorted(len(f) for f in folds) == [4, 4, 5, 5, 5]
    assert all(np.all(np.diff(f) > 0) for f in folds)
    with pytest.raises(ValueError, match="2 rows a fold"):
        cv.fold_rows(9, 5)


def test_loss_of_a_linear_structure_is_scikit_learns_cross_validation():
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import cross_val_predict

    rng = np.random.default_rng(4)
    X = rng.normal(size=(97, 2))
    y = 0.5 - 2.0 * X[:, 0] + X[:, 0] * X[:, 1] + rng.normal(scale=0.5, size=97)
    expr = Expression.parse("(1.0 + 1.0 * x1) + 1.0 * x2")
    folds = cv.fold_rows(97)
    splits = [(np.setdiff1d(np.arange(97), f), f) for f in folds]
    pred = cross_val_predict(LinearRegression(), X, y, cv=splits)
    res = cv.cross_validated_loss([expr], X, y)
    np.testing.assert_allclose(res.loss[0], np.mean((pred - y) ** 2), rtol=1e-10)
    per_fold = [np.mean((pred[f] - y[f]) ** 2) for f in folds]
    np.testing.assert_allclose(res.fold_loss[0], per_fold, rtol=1e-10)
    np.testing.assert_allclose(res.standard_error[0], np.std(per_fold) / np.sqrt(5), rtol=1e-9)


def test_the_law_beats_an_overfitted_structure_held_out():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (60, 1))
    y = 1.0 + 2.0 * X[:, 0] + rng.normal(scale=0.2, size=60)
    law = Expression.parse("1.0 + 2.0 * x1")
    # a degree-7 polynomial: lower training loss, higher held-out loss
    poly = "1.0" + "".join(f" + 1.0 * {'*'.join(['x1'] * d)}" for d in range(1, 8))
    big = Expression.parse(poly)
    res = cv.cross_validated_loss([law, big], X, y)
    assert res.loss[0] < res.loss[1]


def test_a_pole_on_held_out_rows_is_an_infinite_loss():
    X = np.linspace(-1.0, 1.0, 41)[:, None]  # 0 is a row
    y = np.ones(41)
    expr = Expression.parse("1.0 + 0.001 / x1")
    res = cv.cross_validated_loss([expr, Expression.parse("2.0")], X, y)
    assert res.loss[0] == np.inf and res.standard_error[0] == np.inf
    assert res.loss[1] == pytest.approx(0.0, abs=1e-20)


def test_rows_beyond_max_rows_use_a_fixed_subset():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(500, 1))
    y = 3.0 * X[:, 0] + rng.normal(size=500)
    expr = Expression.parse("1.0 * x1")
    a = cv.cross_validated_loss([expr], X, y, max_rows=100)
    b = cv.cross_validated_loss([expr], X, y, max_rows=100)
    c = cv.cross_validated_loss([expr], X, y, max_rows=None)
    assert a.loss[0] == b.loss[0]
    assert a.loss[0] != c.loss[0]


def test_model_selection_cv_records_the_losses_and_chooses_their_lowest():
    from jaxsr import SymbolicRegressor

    rng = np.random.default_rng(7)
    X = rng.uniform(1.0, 3.0, (120, 2))
    y = 2.0 * X[:, 0] + X[:, 1] ** 2 + rng.normal(scale=0.05, size=120)
    m = SymbolicRegressor(model_selection="cv", progress=False, max_iterations=12).fit(X, y)
    eq = m.equations_
    assert "cv_loss" in eq.columns
    ref = cv.cross_validated_loss(m._front_, X, y)
    tame = eq["edge_excursion"].to_numpy() <= m.extrapolation_limit
    expected = np.where(tame & np.isfinite(ref.loss), ref.loss, np.inf)
    np.testing.assert_allclose(eq["cv_loss"].to_numpy()[tame], ref.loss[tame], rtol=1e-12)
    assert m.selected_index_ == int(np.argmin(np.maximum(expected, m._loss_floor_)))
    assert eq["cv_loss"].iloc[m.selected_index_] < eq["cv_loss"].iloc[0]


def test_model_selection_cv_with_too_few_rows_chooses_as_bic():
    from jaxsr import SymbolicRegressor

    X = np.array([[1.0], [2.0], [3.0]])
    y = np.array([2.0, 4.5, 5.5])
    a = SymbolicRegressor(model_selection="cv", progress=False, max_iterations=3).fit(X, y)
    b = SymbolicRegressor(model_selection="bic", progress=False, max_iterations=3).fit(X, y)
    assert "cv_loss" not in a.equations_.columns
    assert a.selected_index_ == b.selected_index_
