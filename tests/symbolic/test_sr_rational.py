"""Rational starting structures (jaxsr/symbolic/rational.py): the monomial libraries, the
tree of P/Q against plain numpy, the exact laws of the family found from noise-free data,
no spurious null vector from 0/1 columns, and the estimator starting at the law."""

from math import comb

import numpy as np
import pytest

from jaxsr import SymbolicRegressor
from jaxsr.symbolic.rational import monomials, rational_candidates, rational_tree


def _data(f, m=3, n=300, seed=0, lo=1.0, hi=5.0):
    X = np.random.default_rng(seed).uniform(lo, hi, (n, m))
    return X, f(X)


@pytest.mark.parametrize("m,d", [(1, 0), (1, 3), (3, 2), (4, 1)])
def test_monomials_are_every_product_of_at_most_d_features_once(m, d):
    e = monomials(m, d)
    assert e.shape == (comb(m + d, d), m)
    assert len({tuple(r) for r in e}) == e.shape[0]  # distinct
    assert np.all(e.sum(axis=1) <= d) and np.all(np.diff(e.sum(axis=1)) >= 0)  # by degree
    assert np.all(e[0] == 0)  # the constant first


def test_rational_tree_evaluates_p_over_q_with_q_normalised_on_its_longest_term():
    rng = np.random.default_rng(1)
    X = rng.uniform(1.0, 2.0, (50, 3))
    num_e = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 1]])
    den_e = np.array([[0, 0, 0], [1, 1, 0]])
    a, c = np.array([0.5, -2.0, 3.0]), np.array([4.0, 2.0])
    want = (a[0] - 2.0 * X[:, 0] + 3.0 * X[:, 1] * X[:, 2]) / (4.0 + 2.0 * X[:, 0] * X[:, 1])
    tree = rational_tree(a, num_e, c, den_e)
    np.testing.assert_allclose(tree.evaluate(X), want, rtol=1e-13)
    # Q divided by its x1*x2 coefficient: that product has no constant in front of it
    assert "(x1 * x2) + 2.0" in tree.to_string()
    # a constant Q divides P: a polynomial, no division node
    poly = rational_tree(a, num_e, np.array([2.0]), np.zeros((1, 3), int))
    assert "/" not in poly.to_string()
    np.testing.assert_allclose(poly.evaluate(X), (a[0] - 2 * X[:, 0] + 3 * X[:, 1] * X[:, 2]) / 2)


@pytest.mark.parametrize(
    "f,nodes",
    [
        (lambda x: x[:, 0] * x[:, 1] / (x[:, 0] + x[:, 1] + x[:, 2]), 9),  # divider
        (lambda x: 1.0 / (1.0 / x[:, 0] + 1.0 / x[:, 1]), 7),  # harmonic: x1*x2/(x1+x2)
        (lambda x: 2.5 * x[:, 0] / (1.0 + 0.3 * x[:, 1] * x[:, 2]), 9),  # saturating
        (lambda x: (x[:, 0] - x[:, 1]) / (x[:, 0] + x[:, 1] + x[:, 2]), 9),
    ],
)
def test_noise_free_laws_of_the_family_are_found_exactly_in_compact_form(f, nodes):
    X, y = _data(f)
    best = rational_candidates(X, y)[0]
    assert best.expression.n_nodes == nodes
    Xt, yt = _data(f, seed=1)
    rel = np.mean((best.expression.evaluate(Xt) - yt) ** 2) / np.mean(yt**2)
    assert rel < 1e-24


def test_candidates_report_their_true_mse_and_have_no_pole_on_the_rows():
    X, y = _data(lambda x: x[:, 0] / (x[:, 0] + x[:, 1] * x[:, 2]) + 0.01 * np.sin(7 * x[:, 0]))
    found = rational_candidates(X, y)
    assert found
    crit = [c.criterion for c in found]
    assert crit == sorted(crit)
    for c in found:
        pred = c.expression.evaluate(X)
        assert np.all(np.isfinite(pred))
        assert np.isclose(c.mse, np.mean((pred - y) ** 2), rtol=1e-9)


def test_binary_columns_give_no_spurious_exact_fit():
    # x**2 == x on a 0/1 column: without the independence check, P = x**2 - x is a null
    # vector of the library with Q = 0
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.integers(0, 2, 200), rng.uniform(1, 3, 200)]).astype(float)
    y = 3.0 * X[:, 0] + X[:, 1] + 0.1 * rng.standard_normal(200)
    for c in rational_candidates(X, y):
        assert np.all(np.isfinite(c.expression.evaluate(X)))
        assert c.mse > 1e-4  # the noise is not fitted away


def test_estimator_starts_at_the_law_and_the_paper_setting_stays_available():
    f = lambda x: x[:, 0] * x[:, 2] / (x[:, 0] + x[:, 1])  # noqa: E731
    X, y = _data(f, n=200)
    sr = SymbolicRegressor(progress=False).fit(X, y)  # no time limit: no clock in the result
    assert sr.searches_[0]["start"] == "rational"
    assert sr.n_nodes_ == 7 and sr.stop_reason_ in ("rounding level", "goal")
    Xt = np.clip(_data(f, seed=1)[0], X.min(axis=0), X.max(axis=0))  # inside the box
    yt = f(Xt)
    assert np.mean((sr.predict(Xt) - yt) ** 2) / np.mean(yt**2) < 1e-20
    # rational_start=False: the search from the mean, as before
    off = SymbolicRegressor(progress=False, rational_start=False, max_iterations=3).fit(X, y)
    assert off.searches_[0]["start"] == "mean"
    with pytest.raises(ValueError, match="rational_start"):
        SymbolicRegressor(rational_start="yes").fit(X, y)


def test_a_wide_table_skips_its_libraries_without_building_them():
    """Past MAX_COLUMNS monomials a library is skipped by its size, C(m + d, d), before
    any is built: 2,000 features at degree 2 would be 2e6 exponent rows of 2,000 int64
    (32 GB), at degree 3 1.3e9 rows."""
    from jaxsr.symbolic.rational import rational_candidates

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, size=(20, 2000))
    assert rational_candidates(X, X[:, 0] / (X[:, 1] + X[:, 2])) == []
