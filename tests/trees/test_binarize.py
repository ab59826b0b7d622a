"""Binarizer: hand-computed thresholds, the OSRT paper's own binarization, gbdt thresholds,
names, JSON round trip, scikit-learn conventions and errors."""

import json

import numpy as np
import pandas as pd
import pytest

from jaxsr.datasets import shared_data_dir
from jaxsr.trees.binarize import Binarizer


# ----------------------------------------------------------------------------- strategies
def test_quantile_thresholds_hand_computed():
    # x = 1..10: the share of rows with x <= u is u/10, so the quantiles at levels 1/5..4/5
    # (inverted CDF) are 2, 4, 6, 8; each cut sits midway to the next value.
    X = np.arange(1.0, 11.0).reshape(-1, 1)
    b = Binarizer(n_thresholds=4).fit(X)
    assert b.thresholds_[0].tolist() == [2.5, 4.5, 6.5, 8.5]
    assert b.feature_names_out_ == ["x1 <= 2.5", "x1 <= 4.5", "x1 <= 6.5", "x1 <= 8.5"]
    Z = b.transform(np.array([[1.0], [2.5], [3.0], [8.2], [8.6], [100.0], [-5.0]]))
    assert Z.dtype == np.uint8 and Z.shape == (7, 4)
    assert Z.tolist() == [
        [1, 1, 1, 1],
        [1, 1, 1, 1],  # x <= t is inclusive
        [0, 1, 1, 1],
        [0, 0, 0, 1],
        [0, 0, 0, 0],
        [0, 0, 0, 0],
        [1, 1, 1, 1],
    ]
    assert b.dropped_ == []


def test_quantile_deduplicates_and_drops_constant_columns():
    # Four 0s and six 1s: 40% of the rows are <= 0, so the quantiles at 1/5, 2/5 are 0 (cut
    # 0.5, once) and at 3/5, 4/5 the maximum 1 ("x <= 1" is all ones: dropped).
    X = np.array([0.0] * 4 + [1.0] * 6).reshape(-1, 1)
    b = Binarizer(n_thresholds=4).fit(X)
    assert b.thresholds_[0].tolist() == [0.5]
    assert b.feature_names_out_ == ["x1 <= 0.5"]
    assert b.dropped_ == [("x1 <= 1", "constant")]
    assert b.transform(X)[:, 0].tolist() == [1] * 4 + [0] * 6


def test_midpoints_between_every_two_realized_values():
    X = np.array([[3.0, 10.0], [1.0, 10.0], [2.0, 20.0], [2.0, 10.0], [7.0, 20.0]])
    b = Binarizer(strategy="midpoints").fit(X)
    assert b.thresholds_[0].tolist() == [1.5, 2.5, 5.0]
    assert b.thresholds_[1].tolist() == [15.0]
    assert b.feature_names_out_ == ["x1 <= 1.5", "x1 <= 2.5", "x1 <= 5", "x2 <= 15"]
    assert b.transform(X).tolist() == [
        [0, 0, 1, 1],
        [1, 1, 1, 1],
        [0, 1, 1, 0],
        [0, 1, 1, 1],
        [0, 0, 0, 0],
    ]


def test_uniform_edges_hand_computed():
    # min 0, max 10, 4 thresholds: 2, 4, 6, 8; "x <= 6" equals "x <= 4" on this data.
    X = np.array([[0.0], [3.0], [10.0], [7.0]])
    b = Binarizer(strategy="uniform", n_thresholds=4).fit(X)
    assert b.thresholds_[0].tolist() == [2.0, 4.0, 8.0]
    assert b.dropped_ == [("x1 <= 6", "duplicate of x1 <= 4")]


def test_uniform_reproduces_the_osrt_paper_binarization_of_sync():
    """The OSRT experiments cut each column into 4 equal-width bins (pandas.cut); the interior
    edges are in raw/sync/*_intervals.txt. Our 'uniform' thresholds are those edges, and our
    binary matrix groups the rows exactly as the paper's binarized/sync.csv does."""
    data = shared_data_dir(required=False)
    if data is None or not (data / "osrt" / "raw" / "sync").is_dir():
        pytest.skip("shared/data/osrt not found")
    raw = pd.read_csv(data / "osrt/raw/sync/synchronous_machine.csv", sep=";", decimal=",")
    edges = {}
    for line in (data / "osrt/raw/sync/synchronous_machine_intervals.txt").read_text().splitlines():
        name, vals = line.split(":")
        edges[name.strip()] = [float(v) for v in vals.split(",")][1:-1]
    X = raw.iloc[:, :4]
    b = Binarizer(strategy="uniform", n_thresholds=3).fit(X)
    for j, name in enumerate(X.columns):
        if name == "e":  # e = 1 - PF here: its columns are complements of PF's, dropped
            assert b.thresholds_[j].size == 0
            continue
        np.testing.assert_allclose(b.thresholds_[j], edges[name], rtol=1e-12)
    assert sorted(r for _, r in b.dropped_) == [
        "complement of PF <= 0.7375",
        "complement of PF <= 0.825",
        "complement of PF <= 0.9125",
    ]
    paper = pd.read_csv(data / "osrt/binarized/sync.csv")
    np.testing.assert_allclose(paper.iloc[:, -1].to_numpy(), raw.iloc[:, -1].to_numpy())
    _, ours = np.unique(b.transform(X), axis=0, return_inverse=True)
    _, theirs = np.unique(paper.iloc[:, :-1].to_numpy(), axis=0, return_inverse=True)
    ours, theirs = ours.ravel(), theirs.ravel()
    pairs = set(zip(ours.tolist(), theirs.tolist(), strict=True))
    assert len(set(ours.tolist())) == len(set(theirs.tolist())) == len(pairs) == 35


def test_gbdt_thresholds_are_those_of_the_fitted_sklearn_trees():
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] > 0.2, 2.0, -1.0) + X[:, 1] ** 2 + 0.1 * rng.normal(size=120)
    params = {"n_estimators": 15, "max_depth": 2, "random_state": 3}
    b = Binarizer(strategy="gbdt", gbdt_params=params).fit(X, y)

    ref = GradientBoostingRegressor(learning_rate=0.1, **params).fit(X, y)
    expected = [set() for _ in range(3)]
    for est in ref.estimators_.ravel():
        internal = est.tree_.feature >= 0
        for f, t in zip(est.tree_.feature[internal], est.tree_.threshold[internal], strict=True):
            expected[f].add(float(t))
    # Every threshold of the reference trees is kept, unless its column equals a kept one on
    # the training data (two nodes can cut between the same two realized values).
    assert b.n_features_out_ > 5
    for j in range(3):
        kept = b.thresholds_[j].tolist()
        assert set(kept) <= expected[j]
        for t in expected[j] - set(kept):
            col = X[:, j] <= t
            assert any(np.array_equal(col, X[:, j] <= s) for s in kept)
    n_expected = sum(len(e) for e in expected)
    assert n_expected - b.n_features_out_ == len(b.dropped_)
    assert all(r.startswith("duplicate of x") for _, r in b.dropped_)
    # each column is x <= t, as in sklearn's trees (left child = "x <= threshold")
    Z = b.transform(X)
    for k, (j, op, t) in enumerate(b.features_):
        assert op == "<="
        np.testing.assert_array_equal(Z[:, k], (X[:, j] <= t).astype(np.uint8))


def _sklearn_stump_splits(X, y, w, n_estimators, learning_rate, random_state=0):
    """The splits of scikit-learn's boosted stumps: per column the sorted thresholds, and
    per (column, threshold) the summed weighted impurity decrease."""
    from sklearn.ensemble import GradientBoostingRegressor

    ref = GradientBoostingRegressor(
        n_estimators=n_estimators,
        max_depth=1,
        learning_rate=learning_rate,
        random_state=random_state,
    ).fit(X, y, sample_weight=w)
    found, gain = [set() for _ in range(X.shape[1])], {}
    for est in ref.estimators_.ravel():
        tr = est.tree_
        if tr.node_count == 1:
            continue
        f, t = int(tr.feature[0]), float(tr.threshold[0])
        found[f].add(t)
        wn, imp = tr.weighted_n_node_samples, tr.impurity
        gain[(f, t)] = gain.get((f, t), 0.0) + float(
            wn[0] * imp[0] - wn[1] * imp[1] - wn[2] * imp[2]
        )
    return [sorted(s) for s in found], gain


@pytest.mark.parametrize("case", range(12))
def test_boosted_stumps_are_sklearns_gradient_boosting(case):
    # the default gbdt binarizer boosts stumps itself (one sort per column instead of one
    # per stage): the same thresholds as scikit-learn's GradientBoostingRegressor
    # (max_depth=1) and the same gains, on real, integer and rounded columns, with and
    # without weights, 1 to 60 stages
    from jaxsr.trees.binarize import _boosted_stumps

    rng = np.random.default_rng(100 + case)
    n, p = int(rng.integers(150, 500)), int(rng.integers(1, 6))  # no two equal columns
    X = [
        rng.normal(size=(n, p)),
        rng.integers(0, 5, size=(n, p)).astype(float),
        np.round(rng.normal(size=(n, p)), 1),
    ][case % 3]
    y = np.sin(X.sum(axis=1)) + X[:, 0] ** 2 + 0.3 * rng.normal(size=n)
    if case % 4 == 0:
        y = np.round(y)
    w = rng.uniform(0.2, 3.0, size=n) if case % 2 else np.ones(n)
    n_est, lr = [(40, 0.1), (1, 0.5), (60, 0.3)][case % 3]
    ours, gain = _boosted_stumps(X, y, w, n_est, lr)
    theirs, their_gain = _sklearn_stump_splits(X, y, w, n_est, lr)
    assert [t.tolist() for t in ours] == theirs
    assert set(gain) == set(their_gain)
    for k, v in their_gain.items():
        assert gain[k] == pytest.approx(v, rel=1e-9, abs=1e-12)


def test_boosted_stumps_on_equal_columns_split_the_same_rows():
    # equal and complementary columns tie (to rounding): scikit-learn draws one at random,
    # the stumps here take the first in column order (an equal column's sums are the same
    # to the bit, so never it); either way the binary columns are the same partitions
    rng = np.random.default_rng(7)
    x = rng.normal(size=300)
    X = np.column_stack([x, rng.normal(size=300), x, -x])
    y = np.sin(3 * x) + 0.2 * rng.normal(size=300)
    ours = Binarizer(strategy="gbdt").fit(X, y)
    ref = Binarizer(strategy="gbdt", gbdt_params={"subsample": 1.0}).fit(X, y)  # sklearn's
    assert ours.thresholds_[2].size == 0 and ref.thresholds_[2].size > 0
    cols = {tuple(c) for c in ours.transform(X).T}
    ref_cols = {tuple(c) for c in ref.transform(X).T}
    flipped = {tuple(1 - np.array(c)) for c in ref_cols}
    assert cols <= ref_cols | flipped and ref_cols <= cols | {tuple(1 - np.array(c)) for c in cols}


def test_boosted_stumps_leave_a_constant_target_unsplit():
    from jaxsr.trees.binarize import _boosted_stumps

    X = np.random.default_rng(0).normal(size=(50, 2))
    ours, gain = _boosted_stumps(X, np.full(50, 3.0), np.ones(50), 10, 0.1)
    theirs, _ = _sklearn_stump_splits(X, np.full(50, 3.0), np.ones(50), 10, 0.1)
    assert [t.tolist() for t in ours] == theirs == [[], []] and gain == {}


def test_gbdt_max_features_keeps_the_most_useful_split():
    # y is a big step in x2 at 0.3 plus a small slope in x1: the single kept column splits
    # x2 near 0.3, the x1 splits of the reference model are dropped.
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(200, 2))
    y = 10.0 * (X[:, 1] > 0.3) + X[:, 0]
    b = Binarizer(strategy="gbdt", max_features=1).fit(X, y)
    assert b.n_features_out_ == 1
    ((j, op, t),) = b.features_
    below, above = X[X[:, 1] <= 0.3, 1].max(), X[X[:, 1] > 0.3, 1].min()
    assert j == 1 and op == "<=" and below < t < above
    assert any(r == "max_features" for _, r in b.dropped_)


def test_max_features_spreads_the_budget_over_columns():
    # Ten rows. Column 1: 1..10, 9 midpoints with fractions of ones k/10. Column 2: a
    # permutation of 1..10 (its "<= 9.5" equals column 1's and is dropped). Budget 3 is dealt
    # x1, x2, x1: column 1 keeps fractions closest to 1/3, 2/3 (3.5, 7.5), column 2 to 1/2.
    X = np.column_stack([np.arange(1.0, 11.0), [4, 1, 7, 2, 9, 5, 3, 6, 8, 10.0]])
    b = Binarizer(strategy="midpoints", max_features=3).fit(X)
    assert b.thresholds_[0].tolist() == [3.5, 7.5]
    assert b.thresholds_[1].tolist() == [5.5]
    assert ("x2 <= 9.5", "duplicate of x1 <= 9.5") in b.dropped_
    assert sum(r == "max_features" for _, r in b.dropped_) == 9 + 8 - 3


# ----------------------------------------------------------------------------- categorical
def test_categorical_one_hot_and_frames():
    df = pd.DataFrame(
        {
            "size": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "colour": ["red", "green", "blue", "red", "green", "red"],
            "grade": [1, 1, 2, 2, 1, 1],
        }
    )
    b = Binarizer(n_thresholds=2, categorical=["grade"]).fit(df)
    # quantiles of 1..6 at 1/3, 2/3: 2 and 4, cut midway to the next values
    assert b.feature_names_out_ == [
        "size <= 2.5",
        "size <= 4.5",
        "colour == blue",
        "colour == green",
        "colour == red",
        "grade == 1",
    ]
    assert b.dropped_ == [("grade == 2", "complement of grade == 1")]
    assert b.categories_ == {1: ["blue", "green", "red"], 2: [1]}
    Z = b.transform(df)
    assert Z[:, 2:].tolist() == [
        [0, 0, 1, 1],
        [0, 1, 0, 1],
        [1, 0, 0, 0],
        [0, 0, 1, 0],
        [0, 1, 0, 1],
        [0, 0, 1, 1],
    ]
    # columns are matched by name; an unseen category is 0 in every one-hot column
    new = pd.DataFrame({"grade": [3], "colour": ["purple"], "size": [2.0]})
    assert b.transform(new).tolist() == [[1, 1, 0, 0, 0, 0]]
    assert list(b.get_feature_names_out()) == b.feature_names_out_
    assert list(b.get_feature_names_out(["a", "b", "c"]))[0] == "a <= 2.5"


def test_categorical_by_index_on_arrays():
    X = np.array([[0.5, 7], [1.5, 8], [2.5, 7], [3.5, 9]])
    b = Binarizer(n_thresholds=1, categorical=[1]).fit(X)
    assert b.feature_names_out_ == ["x1 <= 2", "x2 == 7.0", "x2 == 8.0", "x2 == 9.0"]
    assert b.transform(X).tolist() == [[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]]


# ----------------------------------------------------------------------------- names
def test_names_are_short_but_distinct():
    X = np.array([[1.0], [1.0000001], [1.0000002], [5.0]])
    b = Binarizer(strategy="midpoints").fit(X)
    assert b.feature_names_out_ == ["x1 <= 1.00000005", "x1 <= 1.00000015", "x1 <= 3.0000001"]
    b = Binarizer(strategy="midpoints").fit(np.array([[1e-7], [2e-7], [3e-7], [-4e7]]))
    assert b.feature_names_out_ == ["x1 <= -2e+07", "x1 <= 1.5e-07", "x1 <= 2.5e-07"]


def test_third_column_is_x3():
    X = np.column_stack([np.zeros(4), np.ones(4), [1.0, 2.0, 6.0, 7.0]])
    b = Binarizer(strategy="midpoints").fit(X)
    assert b.feature_names_out_ == ["x3 <= 1.5", "x3 <= 4", "x3 <= 6.5"]
    assert ("x1", "constant input column") in b.dropped_


# ----------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("strategy", ["quantile", "uniform", "midpoints", "gbdt"])
def test_json_round_trip(strategy):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {
            "a": rng.normal(size=50),
            "b": rng.exponential(size=50),
            "c": rng.choice(["u", "v", "w"], size=50),
        }
    )
    y = df["a"].to_numpy() * 2 + (df["c"] == "u")
    b = Binarizer(strategy=strategy, n_thresholds=5, gbdt_params={"n_estimators": 5}).fit(df, y)
    b2 = Binarizer.from_dict(json.loads(json.dumps(b.to_dict())))
    assert b2.get_params() == b.get_params()
    assert b2.feature_names_out_ == b.feature_names_out_
    assert b2.features_ == b.features_  # thresholds to the last bit
    assert b2.dropped_ == b.dropped_
    new = pd.DataFrame(
        {
            "a": rng.normal(size=20),
            "b": rng.exponential(size=20),
            "c": rng.choice(["u", "v", "x"], size=20),
        }
    )
    np.testing.assert_array_equal(b2.transform(new), b.transform(new))
    # an unfitted binarizer round-trips its parameters only
    u = Binarizer.from_dict(json.loads(json.dumps(Binarizer(max_features=3).to_dict())))
    assert u.max_features == 3 and not hasattr(u, "features_")


# ----------------------------------------------------------------------------- conventions
def test_sklearn_conventions():
    from sklearn.base import clone

    b = Binarizer(strategy="midpoints", max_features=4)
    assert b.get_params() == {
        "strategy": "midpoints",
        "n_thresholds": 4,
        "max_features": 4,
        "categorical": None,
        "gbdt_params": None,
    }
    assert b.set_params(n_thresholds=7) is b and b.n_thresholds == 7
    c = clone(b)
    assert c.get_params() == b.get_params() and c is not b
    X = np.arange(12.0).reshape(6, 2)
    np.testing.assert_array_equal(b.fit_transform(X), b.fit(X).transform(X))
    assert repr(Binarizer(n_thresholds=3)) == "Binarizer(n_thresholds=3)"


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"strategy": "kmeans"}, "Unknown strategy"),
        ({"n_thresholds": 0}, "n_thresholds"),
        ({"n_thresholds": 2.5}, "n_thresholds"),
        ({"max_features": 0}, "max_features"),
        ({"categorical": ["nope"]}, "not a column"),
        ({"categorical": [5]}, "out of range"),
        ({"gbdt_params": 3}, "gbdt_params"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Binarizer(**kwargs).fit(np.ones((3, 2)))


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.array([[1.0, np.nan], [2.0, 3.0]]), "NaN or infinite"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), "NaN or infinite"),
        (np.zeros((0, 2)), "no rows"),
        (np.zeros((3, 0)), "no columns"),
        (np.arange(3.0), "2-D"),
        (np.array([["a", "1"], ["b", "2"]], dtype=object), "non-numeric"),
        (pd.DataFrame({"c": ["a", None, "b"]}), "missing values"),
    ],
)
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        Binarizer().fit(X)


def test_errors_at_transform_time_and_gbdt_without_y():
    X = np.arange(12.0).reshape(4, 3)
    b = Binarizer()
    with pytest.raises(ValueError, match="not fitted"):
        b.transform(X)
    b.fit(X)
    with pytest.raises(ValueError, match="Binarizer is expecting 3 features"):
        b.transform(np.ones((2, 2)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        b.transform(np.array([[1.0, np.nan, 2.0]]))
    f = Binarizer().fit(pd.DataFrame(X, columns=["a", "b", "c"]))
    with pytest.raises(ValueError, match="missing the columns"):
        f.transform(pd.DataFrame(X, columns=["a", "b", "d"]))
    with pytest.raises(ValueError, match="needs the target"):
        Binarizer(strategy="gbdt").fit(X)
    with pytest.raises(ValueError, match="different numbers of samples"):
        Binarizer(strategy="gbdt").fit(X, np.ones(3))
    with pytest.raises(ValueError, match="(?i)invalid parameter .* for estimator Binarizer"):
        Binarizer().set_params(bins=3)
    with pytest.raises(ValueError, match="not a Binarizer dict"):
        Binarizer.from_dict({"class": "Tree"})


# ----------------------------------------------------------------------------- extremes
# Exact-arithmetic oracles (fractions.Fraction): the threshold a strategy means, and the
# binary column it gives on the data, with no rounding and no overflow.
from fractions import Fraction  # noqa: E402

_MAX = float(np.finfo(np.float64).max)
_TINY = float(np.finfo(np.float64).smallest_subnormal)


def _exact_thresholds(x, strategy, n, w=None):
    x = np.asarray(x, dtype=np.float64)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    x, w = x[keep], w[keep]
    if strategy == "midpoints":
        u = [Fraction(v) for v in np.unique(x)]
        return [(a + b) / 2 for a, b in zip(u[:-1], u[1:], strict=True)]
    if strategy == "uniform":
        lo, hi = Fraction(float(x.min())), Fraction(float(x.max()))
        return [lo + Fraction(k, n + 1) * (hi - lo) for k in range(1, n + 1)]
    u = [Fraction(float(t)) for t in np.unique(x)]
    F = [
        sum(Fraction(float(wk)) for xk, wk in zip(x, w, strict=True) if Fraction(float(xk)) <= uk)
        for uk in u
    ]
    out = []
    for k in range(1, n + 1):
        i = min(i for i in range(len(u)) if F[i] >= Fraction(k, n + 1) * F[-1])
        out.append(u[i] if i == len(u) - 1 else (u[i] + u[i + 1]) / 2)
    return out


def _exact_columns(x, thresholds):
    """The distinct non-constant columns ``x <= t`` (as tuples), in exact arithmetic."""
    xs = [Fraction(float(v)) for v in x]
    cols = {tuple(v <= t for v in xs) for t in thresholds}
    return {c for c in cols if any(c) and not all(c)}


def _our_columns(b, x):
    Z = b.transform(np.asarray(x, dtype=np.float64).reshape(-1, 1))
    return {tuple(bool(v) for v in Z[:, k]) for k in range(Z.shape[1])}


_EXTREME_COLUMNS = {
    "near +max": [0.5 * _MAX, 0.75 * _MAX, 0.9 * _MAX, _MAX, _MAX, 0.6 * _MAX],
    "near -max": [-_MAX, -0.9 * _MAX, -0.75 * _MAX, -0.5 * _MAX, -_MAX, -0.6 * _MAX],
    "-max..+max": [-_MAX, -1.0, 0.0, 3.0, _MAX, 0.5 * _MAX],
    "subnormal": [0.0, _TINY, 2 * _TINY, 3 * _TINY, 7 * _TINY, -_TINY],
    "one ulp apart": [
        1.0,
        np.nextafter(1.0, 2.0),
        np.nextafter(np.nextafter(1.0, 2.0), 2.0),
        np.nextafter(1.0, 0.0),
        1.0,
        2.0,
    ],
    "ulps below max": [
        _MAX,
        np.nextafter(_MAX, 0.0),
        np.nextafter(np.nextafter(_MAX, 0.0), 0.0),
        -_MAX,
        np.nextafter(-_MAX, 0.0),
        0.0,
    ],
}


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "midpoints"])
@pytest.mark.parametrize("case", sorted(_EXTREME_COLUMNS))
def test_thresholds_near_the_float_limits_match_exact_arithmetic(strategy, case):
    """Near +-max (where a + b and max - min overflow), at subnormals and for values one ulp
    apart, every threshold is finite and within rounding (a few ulps of the column's largest
    magnitude) of the exact one, and the binary columns are those of the exact thresholds:
    no split is lost or invented."""
    x = np.array(_EXTREME_COLUMNS[case], dtype=np.float64)
    with np.errstate(over="raise", invalid="raise"):
        b = Binarizer(strategy=strategy, n_thresholds=5).fit(x.reshape(-1, 1))
    exact = _exact_thresholds(x, strategy, 5)
    assert np.all(np.isfinite(b.thresholds_[0]))
    assert _our_columns(b, x) == _exact_columns(x, exact)
    tol = Fraction(4 * np.finfo(np.float64).eps) * Fraction(float(np.max(np.abs(x))))
    for t in b.thresholds_[0]:
        nearest = min(exact, key=lambda e, t=t: abs(Fraction(float(t)) - e))
        assert abs(Fraction(float(t)) - nearest) <= tol + Fraction(_TINY)


def test_gbdt_refuses_values_beyond_float32_with_a_clear_error():
    X = np.array([[1e39], [2e39], [3e39], [4e39]])
    with pytest.raises(ValueError, match="float32.*midpoints"):
        Binarizer(strategy="gbdt").fit(X, [1.0, 2.0, 3.0, 4.0])


def test_the_only_informative_split_near_the_maximum_is_kept():
    # The case: two values near the float maximum, the target steps between them.
    x = np.array([0.8 * _MAX] * 3 + [_MAX] * 3).reshape(-1, 1)
    for strategy in ("quantile", "uniform", "midpoints"):
        b = Binarizer(strategy=strategy, n_thresholds=1).fit(x)
        assert b.n_features_out_ == 1, strategy
        assert b.transform(x)[:, 0].tolist() == [1, 1, 1, 0, 0, 0], strategy


@pytest.mark.parametrize("a", [_TINY, 1.0, -1.0, 1e300, -1e-300, np.nextafter(_MAX, 0.0)])
def test_midpoints_keep_values_one_ulp_apart_on_both_sides(a):
    b_ = np.nextafter(a, np.inf)
    x = np.array([a, b_, a, b_]).reshape(-1, 1)
    bz = Binarizer(strategy="midpoints").fit(x)
    (t,) = bz.thresholds_[0]
    assert a <= t < b_
    assert bz.transform(x)[:, 0].tolist() == [1, 0, 1, 0]
    assert len(set(bz.feature_names_out_)) == 1


def test_float32_input_near_its_maximum_and_one_ulp_apart():
    f32max = np.finfo(np.float32).max
    one_up = np.nextafter(np.float32(1), np.float32(2))
    X = np.array(
        [[f32max, 1.0], [np.float32(0.9) * f32max, one_up], [-f32max, 1.0], [f32max, one_up]],
        dtype=np.float32,
    )
    for strategy in ("quantile", "uniform", "midpoints"):
        b = Binarizer(strategy=strategy, n_thresholds=3).fit(X)
        assert all(np.all(np.isfinite(t)) for t in b.thresholds_), strategy
        Z = b.transform(X)
        # column 2: 1.0 and its float32 neighbour are told apart by some kept feature
        k2 = [k for k, (j, _, _) in enumerate(b.features_) if j == 1]
        assert any(Z[:, k].tolist() == [1, 0, 1, 0] for k in k2), strategy
        # column 1: the three distinct values stay distinguishable with midpoints
        if strategy == "midpoints":
            k1 = [k for k, (j, _, _) in enumerate(b.features_) if j == 0]
            assert len({tuple(Z[i, k1]) for i in range(4)}) == 3
        np.testing.assert_array_equal(Z, b.transform(X.astype(np.float64)))


# ----------------------------------------------------------------------------- weights
def test_weighted_quantiles_hand_computed_and_against_numpy():
    # values 0, 10, 20 with weights 1, 2, 1 (total 4, cumulative 1, 3, 4): level 1/4 is
    # reached at 0 (cut 5), levels 1/2 and 3/4 at 10 (cut 15, once).
    X = np.array([[0.0], [10.0], [20.0]])
    b = Binarizer(n_thresholds=3).fit(X, sample_weight=[1.0, 2.0, 1.0])
    assert b.thresholds_[0].tolist() == [5.0, 15.0]
    # numpy's weighted inverted-CDF quantile gives the columns, for any weights
    rng = np.random.default_rng(4)
    x = np.round(rng.normal(size=37), 1)  # with ties
    for w in (
        None,
        np.full(37, 3.5),
        rng.uniform(0.1, 3.0, size=37),
        rng.integers(0, 4, size=37).astype(float),
    ):
        for n in (1, 3, 7, 12):
            b = Binarizer(n_thresholds=n).fit(x.reshape(-1, 1), sample_weight=w)
            levels = np.arange(1, n + 1) / (n + 1)
            Q = np.quantile(x, levels, weights=w, method="inverted_cdf")
            live = x if w is None else x[w > 0]  # the columns on the rows that count
            want = {tuple(bool(v) for v in live <= q) for q in Q} - {(True,) * live.size}
            assert _our_columns(b, live) == want
    # and the exact definition (fractions), column by column
    w = rng.uniform(0.1, 3.0, size=37)
    b = Binarizer(n_thresholds=6).fit(x.reshape(-1, 1), sample_weight=w)
    assert _our_columns(b, x) == _exact_columns(x, _exact_thresholds(x, "quantile", 6, w))


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "midpoints"])
def test_integer_weights_equal_repeated_rows(strategy):
    rng = np.random.default_rng(9)
    X = np.column_stack([rng.normal(size=40), rng.integers(0, 5, size=40) * 1.0])
    w = rng.integers(0, 4, size=40)
    kw = {"strategy": strategy, "n_thresholds": 6, "max_features": 7}
    weighted = Binarizer(**kw).fit(X, sample_weight=w.astype(float))
    repeated = Binarizer(**kw).fit(np.repeat(X, w, axis=0))
    assert weighted.features_ == repeated.features_
    np.testing.assert_array_equal(weighted.transform(X), repeated.transform(X))


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "midpoints", "gbdt"])
def test_zero_weight_rows_are_as_if_absent(strategy):
    rng = np.random.default_rng(5)
    df = pd.DataFrame(
        {
            "a": rng.normal(size=60),
            "b": rng.integers(0, 6, size=60) * 1.0,
            "c": rng.choice(["u", "v", "w"], size=60),
        }
    )
    y = df["a"].to_numpy() + (df["c"] == "u") + 0.1 * rng.normal(size=60)
    w = np.ones(60)
    w[::3] = 0.0
    # the zero-weight rows carry values nobody else has: they must create nothing
    df.loc[::3, "a"] = 100.0 + np.arange(20)
    df.loc[::3, "c"] = "zero-only"
    kw = {"strategy": strategy, "n_thresholds": 5, "gbdt_params": {"n_estimators": 8}}
    weighted = Binarizer(**kw).fit(df, y, sample_weight=w)
    subset = Binarizer(**kw).fit(df[w > 0].reset_index(drop=True), y[w > 0])
    assert weighted.features_ == subset.features_
    assert weighted.dropped_ == subset.dropped_
    assert all(t < 100.0 for t in weighted.thresholds_[0])
    assert "zero-only" not in weighted.categories_[2]
    # transform still covers every row
    assert weighted.fit_transform(df, y, sample_weight=w).shape[0] == 60


@pytest.mark.parametrize("strategy", ["quantile", "uniform", "midpoints", "gbdt"])
def test_uniformly_rescaled_weights_give_the_same_binarizer(strategy):
    rng = np.random.default_rng(6)
    X = np.column_stack([rng.normal(size=80), rng.integers(0, 9, size=80) * 0.5])
    y = X[:, 0] ** 2 + X[:, 1]
    w = rng.integers(0, 4, size=80).astype(float)
    kw = {
        "strategy": strategy,
        "n_thresholds": 7,
        "max_features": 9,
        "gbdt_params": {"n_estimators": 10},
    }
    ref = Binarizer(**kw).fit(X, y, sample_weight=w)
    for scale in (0.2222222222, 1e-6, 3.0, 1e8):
        other = Binarizer(**kw).fit(X, y, sample_weight=w * scale)
        np.testing.assert_array_equal(other.transform(X), ref.transform(X))
        assert other.feature_names_out_ == ref.feature_names_out_


def test_tree_gets_the_weights_through_to_its_binarizer():
    from jaxsr.trees import OptimalTreeRegressor

    rng = np.random.default_rng(8)
    X = rng.normal(size=(50, 2))
    y = (X[:, 0] > 0.3) * 3.0 + X[:, 1]
    w = np.ones(50)
    w[:10] = 0.0
    X[:10, 0] = 50.0 + np.arange(10)  # values only zero-weight rows have
    kw = {"regularization": 0.05, "depth_budget": 3}
    m = OptimalTreeRegressor(binarizer=Binarizer(n_thresholds=5), **kw)
    m.fit(X, y, sample_weight=w)
    sub = OptimalTreeRegressor(binarizer=Binarizer(n_thresholds=5), **kw).fit(X[10:], y[10:])
    assert m.binarizer_.features_ == sub.binarizer_.features_
    assert m.tree_.feature.tolist() == sub.tree_.feature.tolist()
    np.testing.assert_allclose(m.tree_.value, sub.tree_.value, rtol=1e-12)


def test_tree_does_not_depend_on_a_uniform_rescaling_of_the_weights():
    """The issue's repro: weights w and 0.2222222222 * w must give the same tree. Splits on
    x1 and x2 tie here (same objective in exact arithmetic)."""
    from jaxsr.trees import OptimalTreeRegressor

    rng = np.random.default_rng(23)
    X = rng.integers(0, 3, size=(40, 3)).astype(float)
    y = 1.0 * (X[:, 0] > 0) + 1.0 * (X[:, 1] > 0) + rng.integers(0, 2, 40) * 0.5
    w = rng.integers(1, 3, 40).astype(float)
    fits = [
        OptimalTreeRegressor(
            regularization=0.05, depth_budget=3, binarizer=Binarizer(strategy="midpoints")
        ).fit(X, y, sample_weight=w * scale)
        for scale in (1.0, 0.2222222222)
    ]
    a, b = fits
    assert a.binarizer_.features_ == b.binarizer_.features_  # the Binarizer side holds
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-12)
    assert a.tree_.feature.tolist() == b.tree_.feature.tolist()
    np.testing.assert_allclose(a.tree_.value, b.tree_.value, rtol=1e-12)


def test_docstring_examples():
    import doctest

    import jaxsr.trees.binarize as module

    result = doctest.testmod(module)
    assert result.attempted >= 4 and result.failed == 0
