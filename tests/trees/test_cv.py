"""OptimalTreeRegressorCV: cross-validation over the exact regularization path of each fold,
checked against independent fits at the lambda of every interval."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from jaxsr import OptimalTreeRegressorCV
from jaxsr.trees import Binarizer, OptimalTreeRegressor


def _step(n=160, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = (
        np.where(X[:, 0] > 0.2, 2.0, 0.0)
        + np.where(X[:, 1] > 0.0, 1.0, 0.0)
        + noise * rng.normal(size=n)
    )
    return X, y


def _cv(**kw):
    base = {
        "depth_budgets": (2, 3),
        "cv": 3,
        "progress": False,
        "binarizer": Binarizer(n_thresholds=5),
    }
    return OptimalTreeRegressorCV(**{**base, **kw})


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_every_interval_equals_independent_fits_at_its_lambda(loss):
    """Each row of cv_results_ is exact: fitting the fold's training rows at the row's
    lambda (a fresh binarizer on those rows) gives the held-out loss of split{k}."""
    X, y = _step(90, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y))
    m = _cv(loss=loss).fit(X, y, sample_weight=w)
    r = m.cv_results_
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    rng = np.random.default_rng(0)
    rows = rng.choice(
        len(r["mean_test_loss"]), size=min(8, len(r["mean_test_loss"])), replace=False
    )
    for i in rows:
        for k, (tr, te) in enumerate(folds):
            est = OptimalTreeRegressor(
                regularization=r["regularization"][i],
                depth_budget=int(r["depth_budget"][i]),
                loss=loss,
                binarizer=Binarizer(n_thresholds=5),
                progress=False,
            )
            est.fit(X[tr], y[tr], sample_weight=w[tr])
            res = y[te] - est.predict(X[te])
            e = res**2 if loss == "squared_error" else np.abs(res)
            want = np.dot(w[te], e) / w[te].sum()
            assert r[f"split{k}_test_loss"][i] == pytest.approx(want, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(
        r["mean_test_loss"],
        np.mean([r[f"split{k}_test_loss"] for k in range(3)], axis=0),
        rtol=1e-12,
    )
    # the intervals tile [start, inf) for every depth budget, lambda inside its interval
    for d in (2, 3):
        sel = r["depth_budget"] == d
        lo, hi, lam = r["lambda_low"][sel], r["lambda_high"][sel], r["regularization"][sel]
        assert np.all(lo[1:] == hi[:-1]) and np.isinf(hi[-1])
        assert np.all((lo < lam) & (lam < hi))


def test_choice_is_the_least_mean_loss_and_refit_on_all_rows():
    X, y = _step()
    m = _cv().fit(X, y)
    r = m.cv_results_
    i = m.best_index_
    assert r["mean_test_loss"][i] == r["mean_test_loss"].min()
    assert r["rank_test_loss"][i] == 1
    assert m.regularization_ == r["regularization"][i]
    assert m.depth_budget_ == r["depth_budget"][i]
    ref = OptimalTreeRegressor(
        regularization=m.regularization_,
        depth_budget=m.depth_budget_,
        binarizer=Binarizer(n_thresholds=5),
        progress=False,
    ).fit(X, y)
    np.testing.assert_array_equal(m.predict(X), ref.predict(X))
    assert m.n_leaves_ == ref.n_leaves_ and m.optimal_
    assert m.n_leaves_ == 4 and m.depth_budget_ == 3  # the two steps
    assert m.score(X, y) > 0.7
    assert "x1 <=" in m.export_text()


def test_one_standard_error_rule_is_never_larger():
    X, y = _step(120, seed=3, noise=0.8)
    a = _cv(selection="min").fit(X, y)
    b = _cv(selection="1se").fit(X, y)
    r = b.cv_results_
    se = r["std_test_loss"][a.best_index_] / np.sqrt(3)
    assert r["mean_test_loss"][b.best_index_] <= r["mean_test_loss"].min() + se + 1e-12
    assert r["mean_n_leaves"][b.best_index_] <= r["mean_n_leaves"][a.best_index_]


def test_pipeline_and_cross_val_score():
    X, y = _step()
    pipe = make_pipeline(StandardScaler(), _cv(depth_budgets=3))
    scores = cross_val_score(pipe, X, y, cv=KFold(3))
    assert np.all(scores > 0.6)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"cv": 1}, "cv must be"),
        ({"cv": 500}, "need at least 500 samples"),
        ({"depth_budgets": ()}, "at least one depth budget"),
        ({"depth_budgets": (0, 3)}, "depth_budgets"),
        ({"lambda_min": 0.0}, "lambda_min"),
        ({"selection": "best"}, "selection"),
    ],
)
def test_bad_parameters_are_clear_errors(params, match):
    X, y = _step(60)
    with pytest.raises(ValueError, match=match):
        _cv(**params).fit(X, y)


_CHECKS = parametrize_with_checks([OptimalTreeRegressorCV(depth_budgets=(2, 3), cv=3)])
_CHECKS = pytest.mark.parametrize(_CHECKS.args[0], list(_CHECKS.args[1]), **_CHECKS.kwargs)


@_CHECKS
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(estimator)
