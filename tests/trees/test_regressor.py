"""OptimalTreeRegressor: certificate, time limit, persistence, text, bad input."""

import functools
import json
import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from jaxsr import _memory, _progress
from jaxsr.trees import Binarizer, OptimalTreeRegressor, Tree
from jaxsr.trees.problem import auto_exact_levels, host_exact_levels, host_kernel_bytes


def _data(seed=0, n=200, M=12):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, M))
    y = 3.0 * X[:, 0] - 2.0 * X[:, 1] * X[:, 2 % M] + X[:, 3 % M] + rng.normal(size=n) * 0.5
    return X, y


def test_worked_example_two_leaves():
    """y depends on x1 only: the optimum is one split on x1, objective = 2 * lambda."""
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5)
    y = np.array([1.0, 1.0, 5.0, 5.0] * 5)
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, y)
    assert m.n_leaves_ == 2 and m.depth_ == 2
    assert m.objective_ == pytest.approx(0.02, abs=1e-15)
    assert m.optimal_ and m.gap_ == 0.0
    np.testing.assert_allclose(m.predict(X), y)
    assert m.score(X, y) == 1.0
    assert m.export_text() == (
        "|--- x1 == 1\n|   |--- predict 5.0000  (n = 10)\n"
        "|--- else\n|   |--- predict 1.0000  (n = 10)"
    )
    assert m.export_text(decimals=2).count("predict 5.00  (n = 10)") == 1


def test_objective_is_recomputed_from_predictions():
    X, y = _data(1)
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=4).fit(X, y)
    sst = np.sum((y - y.mean()) ** 2)
    loss = np.sum((y - m.predict(X)) ** 2) / sst
    assert m.loss_ == pytest.approx(loss, rel=1e-12)
    assert m.objective_ == pytest.approx(loss + 0.01 * m.n_leaves_, rel=1e-12)
    assert m.score(X, y) == pytest.approx(1 - loss, rel=1e-12)
    assert m.optimal_ and m.lower_bound_ <= m.objective_
    assert m.normalizer_ == pytest.approx(sst, rel=1e-12)


def test_time_limit_returns_best_tree_with_a_valid_gap():
    X, y = _data(2, n=300, M=16)
    full = OptimalTreeRegressor(regularization=0.002, depth_budget=5).fit(X, y)
    assert full.optimal_
    # time_limit=0: nothing but the root's bounds and the greedy tree, grown whole whatever
    # the clock: better than the one leaf
    with pytest.warns(ConvergenceWarning, match="time limit"):
        m0 = OptimalTreeRegressor(regularization=0.002, depth_budget=5, time_limit=0).fit(X, y)
    assert not m0.optimal_ and m0.timed_out_
    assert m0.n_leaves_ > 1 and m0.objective_ < 1.0 + 0.002 and m0.gap_ > 0
    assert m0.lower_bound_ <= full.objective_ + 1e-12 <= m0.objective_ + 1e-12
    # a short limit on an unbounded-depth problem: stops, certificate still valid
    t0 = time.perf_counter()
    with pytest.warns(ConvergenceWarning, match="without proving optimality"):
        m1 = OptimalTreeRegressor(regularization=0.0005, depth_budget=None, time_limit=0.3).fit(
            X, y
        )
    assert time.perf_counter() - t0 < 30  # generous: stops, not a speed test
    assert m1.timed_out_
    assert m1.lower_bound_ <= m1.objective_
    assert m1.gap_ == pytest.approx(m1.objective_ - m1.lower_bound_, abs=1e-15)
    assert m1.optimal_ == (m1.gap_ <= 1e-9 * max(1.0, m1.objective_))


def test_verbose_prints_progress(capsys):
    X, y = _data(3)
    OptimalTreeRegressor(regularization=0.01, depth_budget=4, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "lower bound" in err and "upper bound" in err and "elapsed" in err


def test_progress_bar_shows_bounds_and_turns_off(monkeypatch, capsys):
    """The bar (tqdm on stderr, shown after ``delay``: 0 here, so that a short test fit
    shows it) reads steps, bound, objective, gap and subproblems; ``progress=False``
    prints nothing."""
    rng = np.random.default_rng(13)
    X = rng.integers(0, 2, (200, 10))
    y = X @ rng.normal(size=10) + 2.0 * X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=200)
    monkeypatch.setattr(
        _progress, "FitProgress", functools.partial(_progress.FitProgress, delay=0.0)
    )
    kw = dict(regularization=0.002, depth_budget=5, exact_levels=1, backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OptimalTreeRegressor(**kw).fit(X, y)
    err = capsys.readouterr().err
    assert "OptimalTreeRegressor" in err and "steps" in err
    for key in ("bound=", "objective=", "gap=", "subproblems="):
        assert key in err
    OptimalTreeRegressor(progress=False, **kw).fit(X, y)
    # (a first fit of a fresh install may also announce the kernels' compilation)
    assert [ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("jaxsr: ")] == []


def test_the_bar_shows_the_phases_and_the_roots_bound_before_the_first_step(monkeypatch):
    """The set-up's phases (binarize, classes, greedy, search) reach the bar in order, and
    the root's lower bound and the greedy tree's objective reach it before the engine's
    first step; the steps, sized by their time, give the tree of one plain run."""
    from jaxsr.trees import engine

    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.2 * rng.normal(size=400)
    events = []
    real_update, real_step = _progress.FitProgress.update, engine.step

    def update(self, n=1, **postfix):
        events.extend(
            ("phase", postfix["phase"]) if k == "phase" else (k, postfix[k])
            for k in postfix
            if k in ("phase", "bound", "objective")
        )
        return real_update(self, n, **postfix)

    def step(state, chunk=engine.CHUNK):
        events.append(("step", chunk))
        return real_step(state, chunk)

    monkeypatch.setattr(_progress.FitProgress, "update", update)
    monkeypatch.setattr(engine, "step", step)
    kw = dict(regularization=0.002, depth_budget=5)
    m = OptimalTreeRegressor(**kw).fit(X, y)
    assert sum(k == "step" for k, _ in events) > 1  # the search took several steps
    phases = [v for k, v in events if k == "phase"]
    assert phases == ["binarize", "classes", "greedy", "search"]
    first_step = next(i for i, (k, _) in enumerate(events) if k == "step")
    before = dict(events[:first_step])
    assert float(before["bound"]) <= m.objective_ + 1e-12
    assert float(before["objective"]) >= m.objective_ - 1e-6
    # the engine in one plain run (a single step of every visit): the same tree
    monkeypatch.setattr(engine, "step", lambda state, chunk=0: real_step(state, 10**9))
    one = OptimalTreeRegressor(progress=False, **kw).fit(X, y)
    assert one.objective_ == m.objective_ and one.lower_bound_ == m.lower_bound_
    np.testing.assert_array_equal(one.tree_.feature, m.tree_.feature)


def test_a_line_before_the_bar_shows_does_not_draw_it():
    """A notice written during a fit shorter than the bar's delay is one plain line: the
    bar stays hidden (tqdm's own write would redraw it after the line)."""
    import io

    buf = io.StringIO()
    with _progress.FitProgress("OptimalTreeRegressor", True, delay=60.0, file=buf, watch_jax=False):
        _progress.write("jaxsr: a notice")
        _progress.update(3, gap="0")
    assert buf.getvalue() == "jaxsr: a notice\n"


def test_the_bar_in_a_log_file_is_one_line_per_redraw():
    """On a stream that is not a terminal each redraw of the bar is its own line (no
    carriage returns), a redraw that shows nothing new is not repeated, and a verbose line
    is kept whole between them."""
    import io

    log = io.StringIO()
    with _progress.FitProgress(
        "OptimalTreeRegressor", True, delay=0.0, file=log, watch_jax=False
    ) as p:
        p._interval = 0.0  # (a redraw at every update: LOG_INTERVAL is 10 s)
        _progress.update(3, gap="0.5")
        _progress.update(0, gap="0.5")
        _progress.write("[osrt] a verbose line")
        _progress.update(2, gap="0")
    text = log.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and text.endswith("\n")
    assert "[osrt] a verbose line" in lines
    assert lines[-1].startswith("OptimalTreeRegressor: 5 it") and "gap=0]" in lines[-1]
    assert all(a != b for a, b in zip(lines, lines[1:], strict=False))
    assert sum(ln.startswith("OptimalTreeRegressor: 3 it") for ln in lines) <= 2


def test_to_dict_round_trip_json():
    X, y = _data(4)
    m = OptimalTreeRegressor(regularization=0.02, depth_budget=4, loss="absolute_error").fit(X, y)
    d = json.loads(json.dumps(m.to_dict()))
    m2 = OptimalTreeRegressor.from_dict(d)
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    assert m2.export_text() == m.export_text()
    assert m2.get_params() == m.get_params()
    assert (m2.objective_, m2.lower_bound_, m2.optimal_) == (
        m.objective_,
        m.lower_bound_,
        m.optimal_,
    )
    t = Tree.from_dict(m.tree_.to_dict())
    np.testing.assert_array_equal(t.feature, m.tree_.feature)
    with pytest.raises(ValueError, match="format"):
        OptimalTreeRegressor.from_dict({"tree": {}})
    bad = m.tree_.to_dict()
    bad["true_child"][0] = 0
    with pytest.raises(ValueError, match="tree"):
        Tree.from_dict(bad)


def test_dataframe_names_and_index_card():
    X, y = _data(5, M=4)
    df = pd.DataFrame(X, columns=["hot", "wet", "windy", "weekend"])
    m = OptimalTreeRegressor(regularization=0.02, depth_budget=3).fit(df, y)
    assert list(m.feature_names_in_) == ["hot", "wet", "windy", "weekend"]
    assert m.n_features_in_ == 4
    text = m.export_text()
    assert text.startswith("|--- hot == 1\n")
    assert text.count("predict") == m.n_leaves_
    # follow the card by hand for one row
    row = df.iloc[0]
    node = 0
    while m.tree_.feature[node] >= 0:
        f = m.tree_.feature[node]
        node = m.tree_.true_child[node] if row.iloc[f] else m.tree_.false_child[node]
    assert m.predict(df.iloc[:1])[0] == m.tree_.value[node]
    # columns are matched by name at predict time
    np.testing.assert_array_equal(m.predict(df[["weekend", "windy", "wet", "hot"]]), m.predict(df))


def test_with_binarizer_on_real_features():
    rng = np.random.default_rng(6)
    Xr = rng.uniform(0, 10, size=(150, 2))
    y = np.where(Xr[:, 0] > 5, 10.0, 0.0) + rng.normal(size=150) * 0.1
    m = OptimalTreeRegressor(
        regularization=0.01, depth_budget=3, binarizer=Binarizer(strategy="midpoints")
    ).fit(Xr, y)
    assert m.optimal_
    assert m.score(Xr, y) > 0.99
    assert m.binarizer is not m.binarizer_  # the estimator's binarizer stays unfitted
    assert m.export_text().startswith("|--- x1 <= ")
    d = json.loads(json.dumps(m.to_dict()))
    np.testing.assert_array_equal(OptimalTreeRegressor.from_dict(d).predict(Xr), m.predict(Xr))


def test_get_set_params():
    m = OptimalTreeRegressor()
    assert m.get_params()["regularization"] == 0.005 and m.depth_budget == 6
    m.set_params(regularization=0.1, depth_budget=None)
    assert m.regularization == 0.1 and m.depth_budget is None
    with pytest.raises(ValueError, match="(?i)invalid parameter"):
        m.set_params(alpha=1)


def test_constant_target_is_one_optimal_leaf():
    X, _ = _data(7)
    y = np.full(X.shape[0], 3.25)
    for lam in (0.0, 0.01):
        m = OptimalTreeRegressor(regularization=lam, depth_budget=4).fit(X, y)
        assert m.n_leaves_ == 1 and m.optimal_
        assert m.objective_ == pytest.approx(lam, abs=1e-15)
        np.testing.assert_array_equal(m.predict(X), y)


def test_huge_lambda_gives_one_leaf():
    X, y = _data(8)
    m = OptimalTreeRegressor(regularization=10.0, depth_budget=None).fit(X, y)
    assert m.n_leaves_ == 1 and m.optimal_
    assert m.objective_ == pytest.approx(1.0 + 10.0)
    np.testing.assert_allclose(m.predict(X), y.mean())


def test_lambda_zero_with_depth_budget_fits_exactly_to_the_classes():
    X, y = _data(9, n=60, M=3)
    m = OptimalTreeRegressor(regularization=0.0, depth_budget=4).fit(X, y)
    # three binary features, depth 4: every class can get its own leaf -> equivalence loss
    keys = X @ (1 << np.arange(3))
    within = sum(np.sum((y[keys == k] - y[keys == k].mean()) ** 2) for k in np.unique(keys))
    assert m.objective_ == pytest.approx(within / np.sum((y - y.mean()) ** 2), rel=1e-9)


def test_float32_dtype():
    X, y = _data(10)
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=3, dtype="float32").fit(X, y)
    assert m.predict(X).dtype == np.float32
    m64 = OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, y)
    assert m.objective_ == pytest.approx(m64.objective_, rel=1e-5)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"regularization": -0.1}, "regularization"),
        ({"regularization": float("nan")}, "regularization"),
        ({"regularization": "big"}, "regularization"),
        ({"regularization": 0.0, "depth_budget": None}, "unbounded"),
        ({"depth_budget": 0}, "depth_budget"),
        ({"depth_budget": 2.5}, "depth_budget"),
        ({"loss": "huber"}, "loss"),
        ({"min_samples_leaf": 0}, "min_samples_leaf"),
        ({"time_limit": -1}, "time_limit"),
        ({"bounds": ("kmeans", "magic")}, "unknown bounds"),
        ({"exact_levels": 7}, "exact_levels"),
        ({"backend": "cuda"}, "backend"),
        ({"binarizer": "quantile"}, "binarizer"),
    ],
)
def test_bad_hyperparameters(kwargs, match):
    X, y = _data(11, n=20, M=3)
    with pytest.raises(ValueError, match=match):
        OptimalTreeRegressor(**kwargs).fit(X, y)


def test_bad_data():
    X, y = _data(12, n=20, M=3)
    m = OptimalTreeRegressor(binarizer=None)
    Xn = X.astype(float)
    Xn[0, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        m.fit(Xn, y)
    yi = y.copy()
    yi[3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        m.fit(X, yi)
    with pytest.raises(ValueError, match="different numbers of samples"):
        m.fit(X, y[:-1])
    with pytest.raises(ValueError, match="empty|no rows"):
        m.fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="sample_weight"):
        m.fit(X, y, sample_weight=-np.ones(20))
    Xr = X.astype(float)
    Xr[:, 2] = np.linspace(0, 1, 20)
    with pytest.raises(ValueError, match=r"binary.*\['x3'\].*Binarizer"):
        m.fit(Xr, y)
    with pytest.raises(ValueError, match="not fitted"):
        OptimalTreeRegressor().predict(X)
    m.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="binary"):
        m.predict(Xr)


def test_too_many_features_for_memory(monkeypatch):
    X, y = _data(13, n=50, M=40)
    monkeypatch.setattr(_memory, "available_memory_bytes", lambda: 1e5)
    with pytest.raises(ValueError, match="binary features.*memory"):
        OptimalTreeRegressor(depth_budget=3).fit(X, y)


def test_the_default_binarizer_binarizes_real_features_and_keeps_binary_ones():
    """binarizer="auto": 0/1 data as they are, anything else through the thresholds of
    boosted stumps, Binarizer(strategy="gbdt") (quantile 16 beyond float32); the model
    equals the one fitted with that choice made by hand."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    auto = OptimalTreeRegressor(depth_budget=3).fit(X, y)
    by_hand = OptimalTreeRegressor(depth_budget=3, binarizer=Binarizer(strategy="gbdt")).fit(X, y)
    assert isinstance(auto.binarizer_, Binarizer) and auto.optimal_
    assert auto.binarizer_.strategy == "gbdt"
    huge = OptimalTreeRegressor(depth_budget=3).fit(X * 1e300, y)
    assert huge.binarizer_.strategy == "quantile" and huge.binarizer_.n_thresholds == 16
    # the boosted stumps' thresholds do not depend on the scale of y
    for yy in (y * 1e200, y * 1e-200, y + 1e6):
        b = Binarizer(strategy="gbdt").fit(X, yy)
        assert list(b.get_feature_names_out()) == auto.binary_feature_names_
    assert auto.objective_ == by_hand.objective_
    np.testing.assert_array_equal(auto.predict(X), by_hand.predict(X))
    Xb = (X > 0).astype(float)
    auto = OptimalTreeRegressor(depth_budget=3).fit(Xb, y)
    plain = OptimalTreeRegressor(depth_budget=3, binarizer=None).fit(Xb, y)
    assert auto.binarizer_ is None and auto.objective_ == plain.objective_
    np.testing.assert_array_equal(auto.predict(Xb), plain.predict(Xb))
    with pytest.raises(ValueError, match="binary"):  # fitted on 0/1 data: 0/1 data only
        auto.predict(X)
    with pytest.raises(ValueError, match="NaN"):
        OptimalTreeRegressor().fit(np.where(X > 0.05, np.nan, X), y)
    with pytest.raises(ValueError, match="binarizer must be 'auto', None or a Binarizer"):
        OptimalTreeRegressor(binarizer="quantile").fit(X, y)


def test_depth_budget_one_is_a_single_leaf():
    X, y = _data(14)
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=1).fit(X, y)
    assert m.n_leaves_ == 1 and m.depth_ == 1 and m.optimal_
    assert m.objective_ == pytest.approx(1.01, rel=1e-12)


def test_sklearn_clone_and_params_round_trip():
    sklearn_base = pytest.importorskip("sklearn.base")
    m = OptimalTreeRegressor(regularization=0.1, binarizer=Binarizer(n_thresholds=3))
    c = sklearn_base.clone(m)
    assert c.get_params()["binarizer__n_thresholds"] == 3
    assert c.binarizer is not m.binarizer
    c.set_params(binarizer__n_thresholds=5)
    assert c.binarizer.n_thresholds == 5 and m.binarizer.n_thresholds == 3


def test_auto_exact_levels_from_distinct_rows_not_samples():
    # many samples, few distinct rows (household-like): the automatic kernel depth follows
    # the distinct rows (3 levels), not the sample count (the device's arrays: 1 level at
    # 3.2e5 x 60), and the optimum is the one every explicit choice of levels gives
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2, size=(300, 60)).astype(np.uint8)
    rows = rng.integers(0, 300, size=320_000)
    X = base[rows]
    y = base[rows, 0] * 2.0 + base[rows, 1] * base[rows, 2] + rng.normal(0, 0.3, rows.size)
    assert auto_exact_levels(X.shape[0], 60) == 1
    auto = OptimalTreeRegressor(regularization=0.01, depth_budget=4).fit(X, y)
    assert auto.exact_levels_ == host_exact_levels(300, 60) == auto_exact_levels(300, 60) == 3
    for el in (0, 1):
        m = OptimalTreeRegressor(regularization=0.01, depth_budget=4, exact_levels=el).fit(X, y)
        assert m.exact_levels_ == el and m.optimal_ and auto.optimal_
        assert m.objective_ == pytest.approx(auto.objective_, rel=1e-9, abs=1e-12)


def test_host_exact_levels_follow_the_engines_memory_and_work():
    """The host engine's kernel holds U x M bytes (not the device's U x M x M doubles) and
    adds at most C(ceil(M/2), 3) triples a class: 3 levels at 1e6 classes x 40 features
    (the device's model: 1), fewer where the work or the bytes exceed their budgets; a
    fit on many distinct rows takes them and reaches the optimum of 1 level."""
    assert auto_exact_levels(950_000, 40) == 1 and host_exact_levels(950_000, 40) == 3
    assert host_kernel_bytes(950_000, 40) == 950_000 * (9 * 40 + 56) + 96 * 40**2
    assert host_exact_levels(2 * 10**5, 100) == 2  # C(50, 3) x 2e5 adds exceed 2e9
    assert host_exact_levels(2000, 200) == 2  # 480 M^3 bytes exceed 6e8
    assert host_exact_levels(2 * 10**6, 40) == 1  # 7.9e8 bytes
    levels = [host_exact_levels(U, 40) for U in (10, 10**3, 10**5, 10**6, 10**7)]
    assert levels == sorted(levels, reverse=True)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=3000)
    kw = dict(regularization=0.01, depth_budget=5, binarizer=Binarizer(n_thresholds=6))
    auto = OptimalTreeRegressor(progress=False, **kw).fit(X, y)
    one = OptimalTreeRegressor(progress=False, exact_levels=1, **kw).fit(X, y)
    assert auto.exact_levels_ == 3 and auto.optimal_ and one.optimal_
    assert auto.objective_ == pytest.approx(one.objective_, rel=1e-9, abs=1e-12)


def test_a_tree_of_1500_levels_loads_prints_and_predicts():
    # a chain: split i tests feature i % 3; its true child is a leaf, its false child the
    # next split; pre-order: split, leaf, split, leaf, ..., last leaf
    levels, M = 1500, 3
    feature, true_child, false_child, value = [], [], [], []
    for k in range(levels):
        i = 2 * k
        feature += [k % M, -1]
        true_child += [i + 1, -1]
        false_child += [i + 2, -1]
        value += [0.0, float(k)]
    feature.append(-1)
    true_child.append(-1)
    false_child.append(-1)
    value.append(-1.0)
    n = len(feature)
    d = {
        "feature": feature,
        "true_child": true_child,
        "false_child": false_child,
        "value": value,
        "n_samples": [1] * n,
        "weight": [1.0] * n,
        "loss": [0.0] * n,
    }
    tree = Tree.from_dict(json.loads(json.dumps(d)), n_features=M)
    assert tree.depth == levels + 1
    lines = tree.export_text().splitlines()
    assert len(lines) == 3 * levels + 1  # a test, its leaf and an "else" per level; last leaf
    assert lines[-1] == "|   " * levels + "|--- predict -1.0000  (n = 1)"
    X = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(tree.predict(X), [0.0, 1.0, 2.0, -1.0])
    from jaxsr.trees.plot import _layout

    x, depth = _layout(tree)
    assert depth.max() == levels and x[-1] == levels  # the last leaf is the rightmost


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_auto_backend_on_an_accelerator_runs_the_host_engine(monkeypatch, loss):
    """backend="auto" with an accelerator as JAX's default backend runs the host engine
    (no device batcher is made, the engine's loop runs) and finds the same certified tree
    as on a CPU."""
    import jax

    from jaxsr.trees import device, engine

    X, y = _data(seed=5, n=120, M=8)
    w = np.random.default_rng(5).integers(1, 3, size=120).astype(float)
    params = dict(regularization=0.005, depth_budget=5, loss=loss, exact_levels=1)
    cpu = OptimalTreeRegressor(**params).fit(X, y, sample_weight=w)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")

    def no_device(*args, **kwargs):
        raise AssertionError("backend='auto' made a device batcher on an accelerator")

    monkeypatch.setattr(device, "DeviceBatcher", no_device)
    steps = []
    run = engine.step
    monkeypatch.setattr(
        engine, "step", lambda state, *a, **k: steps.append(1) or run(state, *a, **k)
    )
    m = OptimalTreeRegressor(**params)
    assert m._resolve_backend() == "numpy"
    m.fit(X, y, sample_weight=w)
    assert steps  # the engine ran the search
    assert m.optimal_ and cpu.optimal_
    assert m.objective_ == pytest.approx(cpu.objective_, rel=1e-12)
    np.testing.assert_array_equal(m.predict(X), cpu.predict(X))
