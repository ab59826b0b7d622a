"""The search sample (jaxsr.symbolic.sampling): the rows drawn, the checks on all rows, and
the law of an exact dataset found from a sample as from every row."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr import SymbolicRegressor
from jaxsr.symbolic import beam as _beam
from jaxsr.symbolic import search as _search
from jaxsr.symbolic.sampling import DEFAULT_ROWS, sample_size, search_rows
from jaxsr.symbolic.strategies import DomeSearch


@pytest.mark.parametrize(
    "n, size, weighted", [(1000, 100, False), (997, 250, True), (50, 49, False)]
)
def test_search_rows_stratified_with_the_box(n, size, weighted):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 3)) * [1.0, 10.0, 0.1]
    y = X[:, 0] ** 2 + rng.normal(size=n)
    w = rng.integers(0, 3, n).astype(float) if weighted else None
    rows = search_rows(X, y, size, w)
    assert rows.dtype == np.int64
    np.testing.assert_array_equal(rows, np.unique(rows))  # sorted, distinct
    live = np.arange(n) if w is None else np.flatnonzero(w > 0)
    k = min(size, live.size)
    assert k <= rows.size <= k + 2 * X.shape[1]
    # the box of the sample is the box of the data
    np.testing.assert_array_equal(X[rows].min(axis=0), X.min(axis=0))
    np.testing.assert_array_equal(X[rows].max(axis=0), X.max(axis=0))
    # one row in each of the k strata of y (rank order of the rows of positive weight)
    order = live[np.lexsort((live, y[live]))]
    edges = (np.arange(k + 1) * order.size) // k
    in_sample = np.isin(order, rows)
    counts = np.add.reduceat(in_sample.astype(int), edges[:-1])
    assert np.all(counts >= 1)
    assert counts.sum() >= k
    # rows of weight 0 only as a feature's extreme
    if w is not None:
        extremes = set(np.argmin(X, 0)) | set(np.argmax(X, 0))
        assert {int(r) for r in rows if w[r] == 0} <= extremes
    np.testing.assert_array_equal(rows, search_rows(X, y, size, w))  # deterministic


def test_sample_size_rule_and_errors():
    assert sample_size("auto", DEFAULT_ROWS) is None
    assert sample_size("auto", DEFAULT_ROWS + 1) == DEFAULT_ROWS
    assert sample_size(None, 10**9) is None
    assert sample_size(100, 101) == 100 and sample_size(100, 100) is None
    for bad in ("all", 1, 0, -5, 2.5, True):
        with pytest.raises(ValueError, match="search_sample"):
            sample_size(bad, 1000)
    with pytest.raises(ValueError, match="search_sample"):
        SymbolicRegressor(search_sample="rows").fit(
            np.ones((5, 1)) * np.arange(5)[:, None], np.arange(5.0)
        )


def _engine(X, y, rows, verify):
    XT, yj = jnp.asarray(X.T), jnp.asarray(y)
    full = (XT, yj, jnp.ones(X.shape[0])) if verify else None
    return DomeSearch(
        XT[:, rows],
        yj[rows],
        np.ones(X.shape[1], bool),
        max_nodes=15,
        max_height=None,
        min_improvement=1e-6,
        feature_names=None,
        weights=jnp.ones(rows.size),
        all_rows=full,
    )


def _all_rows_mse(expr, X, y):
    return float(np.mean((expr.evaluate(X) - y) ** 2))


def test_every_kept_change_improves_on_all_rows():
    """On the sample ``y = x1 + x2`` exactly; on the other rows ``y = x1 - x2``: the
    sample's search accepts ``+ x2``, which raises the MSE on all rows; with the checks
    on all rows no change that does so is kept."""
    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, (400, 2))
    rows = np.arange(40)
    sign = np.where(np.isin(np.arange(400), rows), 1.0, -1.0)
    y = X[:, 0] + sign * X[:, 1]

    def path(verify):
        eng = _engine(X, y, rows, verify)
        trees = [eng.expr]
        state = _search.init(
            eng, goal=0.0, max_iterations=12, max_nodes=15, deadline=None, n_pool=2
        )
        while _search.terminate(eng, state) is _search.Status.RUNNING:
            state, rec = _search.step(eng, state, 1)
            if rec is not None:
                trees.append(eng.expr)
        return [_all_rows_mse(t, X, y) for t in trees], eng

    unchecked, _ = path(False)
    assert any(b > a for a, b in zip(unchecked, unchecked[1:], strict=False))  # can fail
    checked, eng = path(True)
    assert len(checked) >= 2  # the search did move
    assert all(b < a for a, b in zip(checked, checked[1:], strict=False))
    mse, ok = eng.all_rows_check(eng.expr)
    assert ok and mse == pytest.approx(checked[-1], rel=1e-12)


def test_the_beam_keeps_children_better_on_all_rows():
    """The same data in a beam of 4: every tree that enters the beam beats its parent on
    all rows (without the checks some do not)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(1.0, 2.0, (400, 2))
    rows = np.arange(40)
    y = X[:, 0] + np.where(np.arange(400) < 40, 1.0, -1.0) * X[:, 1]

    def worse_children(verify):
        eng = _engine(X, y, rows, verify)
        state = _beam.beam_init(eng, 4)
        worse = moved = 0
        for _ in range(4):
            parents = [m.expression for m in state.members]
            state, _ = _beam.beam_step(eng, state, 1, 4)
            if state.status != _beam.BeamStatus.RUNNING:
                break
            for m in state.members:
                parent = parents[m.record["beam_parent"]]
                moved += 1
                worse += _all_rows_mse(m.expression, X, y) >= _all_rows_mse(parent, X, y)
        return worse, moved

    assert worse_children(False)[0] > 0  # the test can fail
    worse, moved = worse_children(True)
    assert moved > 0 and worse == 0


def test_the_sample_finds_the_law_of_every_row():
    rng = np.random.default_rng(3)
    X = rng.uniform(1.0, 2.0, (1500, 3))
    y = 2.0 * X[:, 0] * X[:, 1] + X[:, 2]
    Xt = rng.uniform(1.05, 1.95, (500, 3))
    kw = dict(progress=False, beam_width=1, backward_elimination=False)
    full = SymbolicRegressor(search_sample=None, **kw).fit(X, y)
    part = SymbolicRegressor(search_sample=400, **kw).fit(X, y)
    assert full.search_rows_ is None
    assert 400 <= part.search_rows_.size <= 406
    for m in (full, part):
        assert m.stop_reason_ in ("goal", "rounding level")
    np.testing.assert_allclose(part.predict(Xt), full.predict(Xt), rtol=1e-10)
    # the front and mse_ are scored on every row
    assert part.mse_ == pytest.approx(np.mean((part.predict(X) - y) ** 2), abs=1e-20)
    assert part.mse_ <= 1e-20
