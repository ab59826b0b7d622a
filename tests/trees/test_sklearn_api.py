"""What a scikit-learn user expects of a tree: ``feature_importances_``, ``apply``,
``decision_path`` and the regularization path."""

import numpy as np
import pytest
import scipy.sparse as sp

from jaxsr.trees import Binarizer, OptimalTreeRegressor
from jaxsr.trees.regressor import PathSegment


def _small():
    """x1 decides (1 vs 5/9); x2 matters only where x1 = 1: the optimal tree at a small
    lambda is unique: root x1, its true side split on x2 (3 leaves)."""
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5)
    y = np.array([1.0, 1.0, 5.0, 9.0] * 5)
    return X, y


def _random(seed, n=80, M=6):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, M))
    y = X @ rng.normal(size=M) + 2.0 * X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n)
    return X, y


def test_feature_importances_by_hand():
    X, y = _small()
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=3, progress=False).fit(X, y)
    assert m.optimal_ and m.n_leaves_ == 3 and m.tree_.feature[0] == 0
    # SST = 5 (9 + 9 + 1 + 25) = 220; the root split on x1 leaves 0 + 5 (4 + 4) = 40
    # (gain 180), the split of x1 = 1 on x2 leaves 0 (gain 40)
    np.testing.assert_allclose(m.feature_importances_, [180 / 220, 40 / 220], rtol=1e-12)
    one = OptimalTreeRegressor(regularization=2.0, depth_budget=3, progress=False).fit(X, y)
    assert one.n_leaves_ == 1 and np.all(one.feature_importances_ == 0.0)


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_feature_importances_sum_to_one_over_input_columns(loss):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 3))
    y = np.sin(2 * X[:, 0]) + (X[:, 2] > 0.3) + 0.1 * rng.normal(size=120)
    m = OptimalTreeRegressor(
        regularization=0.005,
        depth_budget=4,
        loss=loss,
        progress=False,
        binarizer=Binarizer(n_thresholds=4),
    ).fit(X, y)
    imp = m.feature_importances_
    assert imp.shape == (3,) and imp.dtype == np.float64
    assert imp.sum() == pytest.approx(1.0, abs=1e-12) and np.all(imp >= 0)
    # the binary columns of one input column add up (binarizer_.features_ names it)
    t = m.tree_
    by_col = np.zeros(3)
    for i in np.flatnonzero(t.feature >= 0):
        j = m.binarizer_.features_[t.feature[i]][0]
        by_col[j] += t.loss[i] - t.loss[t.true_child[i]] - t.loss[t.false_child[i]]
    np.testing.assert_allclose(imp, by_col / by_col.sum(), rtol=1e-9, atol=1e-15)
    assert imp[1] < imp[0]  # x2 is noise


def test_apply_and_decision_path_agree_with_predict():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 4))
    y = X[:, 0] ** 2 + np.where(X[:, 1] > 0, 2.0, 0.0) + 0.1 * rng.normal(size=150)
    m = OptimalTreeRegressor(regularization=0.003, depth_budget=4, progress=False).fit(X, y)
    Xt = rng.normal(size=(40, 4))
    leaves = m.apply(Xt)
    assert leaves.shape == (40,) and leaves.dtype == np.int64
    assert np.all(m.tree_.feature[leaves] == -1)
    np.testing.assert_array_equal(m.tree_.value[leaves].astype(m.predict(Xt).dtype), m.predict(Xt))
    P = m.decision_path(Xt)
    assert sp.issparse(P) and P.format == "csr" and P.shape == (40, m.tree_.n_nodes)
    assert P.dtype == np.int64 and np.all(P.data == 1)
    t = m.tree_
    for i in range(40):
        path = P.indices[P.indptr[i] : P.indptr[i + 1]]
        assert path[0] == 0 and path[-1] == leaves[i]  # root first, the leaf last
        for a, b in zip(path[:-1], path[1:], strict=True):  # each the child of the last
            assert b in (t.true_child[a], t.false_child[a])
    # a column sum is the number of samples through that node
    counts = np.asarray(P.sum(axis=0)).ravel()
    assert counts[0] == 40
    inner = np.flatnonzero(t.feature >= 0)
    np.testing.assert_array_equal(
        counts[inner], counts[t.true_child[inner]] + counts[t.false_child[inner]]
    )


def test_apply_checks_input():
    X, y = _small()
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=3, progress=False)
    with pytest.raises(ValueError, match="fitted|fit"):
        m.apply(X)
    m.fit(X, y)
    with pytest.raises(ValueError):
        m.decision_path(X[:, :1])


def _check_path(path, lo, hi_inf):
    assert all(isinstance(p, PathSegment) for p in path)
    assert path[0].lambda_min == lo
    if hi_inf:
        assert path[-1].lambda_max == np.inf and path[-1].n_leaves == 1
    for a, b in zip(path[:-1], path[1:], strict=True):
        assert a.lambda_max == b.lambda_min  # contiguous
        assert a.n_leaves > b.n_leaves and a.loss < b.loss  # fewer leaves, more loss
        # the two trees tie at the breakpoint
        lam = a.lambda_max
        assert a.loss + lam * a.n_leaves == pytest.approx(
            b.loss + lam * b.n_leaves, rel=1e-9, abs=1e-12
        )
    for p in path:
        assert p.optimal and p.lambda_min <= p.model.regularization <= p.lambda_max
        assert (p.n_leaves, p.loss) == (p.model.n_leaves_, p.model.loss_)


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_regularization_path_matches_fits_at_single_lambdas(loss):
    X, y = _random(11)
    est = OptimalTreeRegressor(depth_budget=4, loss=loss, progress=False)
    path = est.regularization_path(X, y)
    assert not hasattr(est, "tree_")  # the path fits clones
    _check_path(path, 0.0, True)
    assert len(path) >= 4
    # inside each piece (and past the last breakpoint) a direct fit gives that optimum
    probes = []
    for p in path:
        hi = p.lambda_max if np.isfinite(p.lambda_max) else 2 * p.lambda_min + 1.0
        probes += [(p, p.lambda_min + f * (hi - p.lambda_min)) for f in (0.3, 0.8)]
    for p, lam in probes:
        m = OptimalTreeRegressor(regularization=lam, depth_budget=4, loss=loss, progress=False).fit(
            X, y
        )
        assert m.optimal_
        assert m.objective_ == pytest.approx(p.loss + lam * p.n_leaves, rel=1e-9, abs=1e-12)
        assert m.n_leaves_ == p.n_leaves
        np.testing.assert_allclose(m.predict(X), p.model.predict(X), rtol=1e-12)


def test_regularization_path_over_a_range_and_weights():
    X, y = _random(12)
    w = np.random.default_rng(0).uniform(0.5, 2.0, y.size)
    est = OptimalTreeRegressor(depth_budget=None, normalize=False, progress=False)
    path = est.regularization_path(X, y, sample_weight=w, lambdas=[0.02, 0.005, 0.3])
    _check_path(path, 0.005, False)
    assert path[-1].lambda_max == 0.3
    for lam in (0.005, 0.011, 0.07, 0.3):
        m = OptimalTreeRegressor(
            regularization=lam, depth_budget=None, normalize=False, progress=False
        ).fit(X, y, sample_weight=w)
        best = min(p.loss + lam * p.n_leaves for p in path)  # the lower envelope
        assert m.objective_ == pytest.approx(best, rel=1e-9)


def test_regularization_path_errors():
    X, y = _small()
    with pytest.raises(ValueError, match="depth_budget"):
        OptimalTreeRegressor(depth_budget=None).regularization_path(X, y)
    with pytest.raises(ValueError, match="lambdas"):
        OptimalTreeRegressor().regularization_path(X, y, lambdas=[-1.0, 0.1])
    with pytest.raises(ValueError, match="lambdas"):
        OptimalTreeRegressor().regularization_path(X, y, lambdas=[])


# ------------------------------------------------------------------ scikit-learn habits
def test_max_depth_is_scikit_learns_depth():
    """max_depth=d gives what DecisionTreeRegressor(max_depth=d) would: at most d splits
    from the root to a leaf, i.e. depth_budget d + 1 (the same optimal tree)."""
    X, y = _random(7, n=120)
    for d in (0, 1, 2, 3):
        a = OptimalTreeRegressor(max_depth=d, regularization=0.001, progress=False).fit(X, y)
        b = OptimalTreeRegressor(depth_budget=d + 1, regularization=0.001, progress=False).fit(X, y)
        assert a.depth_ - 1 <= d and a.depth_ == b.depth_
        assert a.objective_ == b.objective_ and a.n_leaves_ == b.n_leaves_
    assert OptimalTreeRegressor(max_depth=2, depth_budget=3, progress=False).fit(X, y).depth_ <= 3
    with pytest.raises(ValueError, match="max_depth=2 and depth_budget=4 disagree"):
        OptimalTreeRegressor(max_depth=2, depth_budget=4).fit(X, y)
    with pytest.raises(ValueError, match="max_depth"):
        OptimalTreeRegressor(max_depth=-1).fit(X, y)


def test_to_sklearn_is_the_same_tree_for_scikit_learns_tools():
    from sklearn.tree import DecisionTreeRegressor, export_text

    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 3))
    y = np.sin(2 * X[:, 0]) + (X[:, 2] > 0.3) + 0.1 * rng.normal(size=200)
    for loss in ("squared_error", "absolute_error"):
        m = OptimalTreeRegressor(
            depth_budget=4,
            regularization=0.002,
            loss=loss,
            binarizer=Binarizer(n_thresholds=6),
            progress=False,
        ).fit(X, y)
        s = m.to_sklearn()
        assert isinstance(s, DecisionTreeRegressor) and s.criterion == loss
        Xt = rng.normal(size=(400, 3))
        np.testing.assert_array_equal(s.predict(Xt), m.predict(Xt))
        np.testing.assert_array_equal(s.apply(Xt), m.apply(Xt))
        assert s.tree_.value.shape == (m.tree_.n_nodes, 1, 1)
        assert s.get_n_leaves() == m.n_leaves_ and s.get_depth() == m.depth_ - 1
        np.testing.assert_array_equal(s.tree_.n_node_samples, m.tree_.n_samples)
        text = export_text(s, feature_names=["a", "b", "c"])
        assert text.count("value:") == m.n_leaves_
    # 0/1 input columns without a binarizer: X[:, j] <= 0.5 is the false side
    Xb, yb = _random(3)
    m = OptimalTreeRegressor(depth_budget=3, regularization=0.01, progress=False).fit(Xb, yb)
    assert m.binarizer_ is None
    np.testing.assert_array_equal(m.to_sklearn().predict(Xb), m.predict(Xb))


def test_scikit_learn_tree_tools_get_a_clear_error_or_the_converted_tree():
    import pandas as pd

    X = pd.DataFrame({"city": ["a", "b", "c", "a"] * 10, "v": np.arange(40.0)})
    y = np.where(X["city"] == "b", 5.0, 0.0) + 0.01 * np.arange(40.0)
    m = OptimalTreeRegressor(depth_budget=2, regularization=0.01, progress=False).fit(X, y)
    assert m.binary_feature_names_[m.tree_.feature[0]] == "city == b"
    with pytest.raises(ValueError, match="one-hot category"):
        m.to_sklearn()
    with pytest.raises(AttributeError, match=r"export_text\(\).*to_sklearn\(\)"):
        _ = m.tree_.children_left
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        _ = m.tree_.nonsense


def test_paper_setting_by_name():
    m = OptimalTreeRegressor.paper()
    assert m.regularization == 0.01 and m.depth_budget == 5
    assert m.binarizer.strategy == "uniform" and m.binarizer.n_thresholds == 3
    assert OptimalTreeRegressor.paper(depth_budget=3).depth_budget == 3
