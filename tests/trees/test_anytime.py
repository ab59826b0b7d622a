"""Anytime: under a time limit the tree is never worse than greedy CART, the bound is valid,
and the limit (binarization included) is honoured.

The oracle of greedy CART is plain numpy on the samples (no classes, no statistics), written
here independently of the search. The time assertions are generous (``1.1 x limit + 0.5 s``:
the suite runs on loaded machines); the exact figures are in
``benchmarks/results/trees_anytime.txt`` (``benchmarks/bench_trees_anytime.py``).
"""

import sys
import warnings

import numpy as np
import pytest

from jaxsr.trees import Binarizer, OptimalTreeRegressor
from jaxsr.trees.incumbent import greedy_tree
from jaxsr.trees.problem import leaf_cost, levels
from jaxsr.trees.search import OptimalTreeSearch

pytestmark = pytest.mark.usefixtures("frozen_heap")  # no collector pause of the suite's heap


def _leaf_loss(y, w, absolute):
    if y.size == 0:
        return 0.0
    if not absolute:
        W = w.sum()
        mu = np.dot(w, y) / W if W > 0 else y.mean()
        return float(np.dot(w, (y - mu) ** 2))
    return float(min(np.dot(w, np.abs(y - c)) for c in y))  # a median is a sample value


def greedy_cart(X, y, w, lam, depth, msl=1, absolute=False):
    """Greedy CART pruned at ``lam``: each node splits on the feature of least summed
    children's loss (near-ties, 1e-12 of the node's loss, to the lowest index; both
    children with >= ``msl`` samples) while that loss is below the node's, to ``depth``
    levels (None: no limit); then the subtree at a node is kept only where it costs less
    than the node's leaf (bottom up).
    Returns the objective ``loss / one-leaf loss + lam * leaves``."""
    X = np.asarray(X, dtype=bool)
    norm = _leaf_loss(y, w, absolute) or 1.0

    def solve(idx, lev):
        leaf = _leaf_loss(y[idx], w[idx], absolute) / norm + lam
        if lev <= 1:
            return leaf
        node = _leaf_loss(y[idx], w[idx], absolute)
        c = np.full(X.shape[1], np.inf)
        for j in range(X.shape[1]):
            t = X[idx, j]
            if t.sum() < msl or (~t).sum() < msl:
                continue
            c[j] = _leaf_loss(y[idx[t]], w[idx[t]], absolute) + _leaf_loss(
                y[idx[~t]], w[idx[~t]], absolute
            )
        if not np.isfinite(c.min()):
            return leaf
        # the least children's loss; near-ties (1e-12 of the node's loss) to the lowest
        bj = int(np.flatnonzero(c <= c.min() + 1e-12 * node)[0])
        best = c[bj] / norm + lam
        if not best < leaf * (1 - 1e-12):
            return leaf
        t = X[idx, bj]
        return min(leaf, solve(idx[t], lev - 1) + solve(idx[~t], lev - 1))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    return float(solve(np.arange(y.size), 1 << 30 if depth is None else depth))


def _tree_data(seed, n=300, m=8):
    """Binary features, y from a depth-3 tree plus noise (the example's kind of data)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, m)).astype(float)
    y = np.where(
        X[:, 0] == 1, np.where(X[:, 3] == 1, 10.0, 6.0), np.where(X[:, 5] == 1, 2.0, 0.0)
    ) + rng.normal(0.0, 1.0, n)
    return X, y


def _smooth_data(seed, n=250):
    """Continuous features binarized by quantiles: greedy and optimum differ."""
    rng = np.random.default_rng(seed)
    Xr = rng.normal(size=(n, 4))
    y = np.sin(2 * Xr[:, 0]) + Xr[:, 1] * Xr[:, 2] + 0.3 * rng.normal(size=n)
    return Xr, y


def _diabetes():
    from jaxsr.datasets import load_diabetes

    X, y = load_diabetes()
    return np.asarray(X, float)[:200], np.asarray(y, float)[:200]


DATA = {
    "tree": lambda: (_tree_data(0), None),
    "smooth": lambda: (_smooth_data(1), Binarizer(n_thresholds=6)),
    "diabetes": lambda: (_diabetes(), Binarizer(n_thresholds=5)),
}


def _binary(X, binarizer):
    return (
        np.asarray(X)
        if binarizer is None
        else np.asarray(Binarizer(**binarizer.get_params()).fit_transform(X))
    ) > 0.5


def _fit(X, y, binarizer, **kw):
    m = OptimalTreeRegressor(binarizer=binarizer, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the time-limit warning
        return m.fit(X, y)


@pytest.mark.parametrize("name", list(DATA))
@pytest.mark.parametrize(
    "backend,loss",
    [
        ("numpy", "squared_error"),
        ("jax", "squared_error"),
        ("numpy", "absolute_error"),
        ("jax", "absolute_error"),
    ],
)
def test_time_limited_fit_is_never_worse_than_greedy_cart(name, backend, loss):
    """At short limits (0.02 and 0.4 s, no depth budget, lambda 0.002: far from a
    certificate) on three datasets, both backends (the host engine, or the host engine with
    the device's batches) and both losses: the objective is at most greedy CART's on the
    same binary features (numpy oracle; the incumbent is grown whole whatever the clock), the
    certificate is consistent and the limit holds but for the greedy tree (the time of a
    fit that stops after it, max_steps=0, measured here: the machine's load scales both;
    generous margin)."""
    (X, y), binarizer = DATA[name]()
    lam = 0.002
    Xb = _binary(X, binarizer)
    g = greedy_cart(Xb, y, np.ones(y.size), lam, None, absolute=loss == "absolute_error")
    for limit in (0.02, 0.4):
        m = _fit(
            X,
            y,
            binarizer,
            regularization=lam,
            depth_budget=None,
            loss=loss,
            time_limit=limit,
            backend=backend,
        )
        greedy = _fit(
            X,
            y,
            binarizer,
            regularization=lam,
            depth_budget=None,
            loss=loss,
            max_steps=0,
            backend=backend,
        ).fit_seconds_
        assert m.fit_seconds_ <= 1.1 * limit + 2.0 * greedy + 0.5
        assert m.objective_ <= g * (1 + 1e-9), (name, limit)  # greedy CART is always there
        assert m.objective_ <= 1.0 + lam + 1e-12  # never worse than the one leaf
        assert 0.0 <= m.lower_bound_ <= m.objective_
        assert m.gap_ == pytest.approx(m.objective_ - m.lower_bound_, abs=1e-15)
        assert m.optimal_ or m.status_ == "time_limit"


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
@pytest.mark.parametrize("msl,depth", [(1, None), (3, 4)])
def test_greedy_incumbent_equals_the_oracle(loss, msl, depth):
    """The search's incumbent (:func:`jaxsr.trees.incumbent.greedy_tree`: the engine's
    kernels, best-first growth with per-node leaf budgets) is greedy CART pruned at lambda:
    the oracle's objective, on weighted and unweighted data, both losses."""
    for seed, (X, y) in enumerate([_tree_data(3, n=200), _smooth_data(4, n=200)]):
        Xb = _binary(X, None if seed == 0 else Binarizer(n_thresholds=5))
        w = np.random.default_rng(seed).uniform(0.5, 2.0, y.size) if seed else np.ones(y.size)
        for lam in (0.002, 0.02):
            s = OptimalTreeSearch(
                Xb, y, w, regularization=lam, depth_budget=depth, min_samples_leaf=msl, loss=loss
            )
            P = s.problem
            mask = np.ones(P.U, dtype=bool)
            d = levels(P, P.depth, P.stats.sum(0), leaf_cost(P, mask))
            obj = greedy_tree(P, mask, d).objective
            ref = greedy_cart(Xb, y, w, lam, depth, msl, absolute=loss == "absolute_error")
            assert obj == pytest.approx(ref, rel=1e-9)


def test_greedy_is_whole_at_a_tiny_limit():
    """A limit too short for anything: the greedy incumbent is grown whole whatever the
    clock says (greedy CART, the oracle's objective), so the tree returned is never worse
    than it; valid certificate, an objective from its own predictions."""
    X, y = _tree_data(5, n=400)
    sst = float(np.sum((y - y.mean()) ** 2))
    s = OptimalTreeSearch(
        X > 0.5, y, np.ones(y.size), regularization=0.001, depth_budget=None, time_limit=0.0
    )
    mask = np.ones(s.problem.U, dtype=bool)
    # a deadline already past: the whole greedy tree all the same
    obj, nodes = greedy_tree(s.problem, mask, 50, deadline=0.0)[:2]
    g = greedy_cart(X > 0.5, y, np.ones(y.size), 0.001, None)
    assert len(nodes) > 1 and obj == pytest.approx(g, rel=1e-9)
    assert obj < leaf_cost(s.problem, mask)
    for limit in (0.0, 1e-4, 1e-3, 5e-3):
        m = _fit(X, y, None, regularization=0.001, depth_budget=None, time_limit=limit)
        r = y - m.predict(X)
        assert m.objective_ == pytest.approx(r @ r / sst + 0.001 * m.n_leaves_, rel=1e-9)
        assert 0.0 <= m.lower_bound_ <= m.objective_ <= g * (1 + 1e-9)
        assert m.fit_seconds_ <= 0.5


def test_time_limited_lower_bound_is_below_the_optimum():
    """lower_bound_ at any limit is at most the optimum certified by a full run (small
    data, no depth budget), and the full run is never worse than greedy CART."""
    X, y = _tree_data(6, n=200, m=6)
    lam = 0.003
    full = _fit(X, y, None, regularization=lam, depth_budget=None)
    assert full.optimal_
    assert full.objective_ <= greedy_cart(X > 0.5, y, np.ones(y.size), lam, None) * (1 + 1e-9)
    for limit in (0.005, 0.02, 0.1):
        for backend in ("numpy", "jax"):
            m = _fit(
                X, y, None, regularization=lam, depth_budget=None, time_limit=limit, backend=backend
            )
            assert m.lower_bound_ <= full.objective_ * (1 + 1e-9)
            assert m.objective_ >= full.objective_ * (1 - 1e-9)


def test_time_limit_counts_binarization_and_device_compilation():
    """With backend="jax" and a limit shorter than a compilation, no device call is made
    for shapes not compiled in the process (jaxsr.trees.device.COMPILE_SECONDS), so the
    limit holds but for the greedy tree, which is always grown whole (the time of a fit
    that stops after it, max_steps=0); the binarization is inside the limit too."""
    from jaxsr.trees import device

    X, y = _smooth_data(7, n=300)
    b = Binarizer(strategy="midpoints")
    n_feat = np.asarray(Binarizer(strategy="midpoints").fit_transform(X)).shape[1]
    assert n_feat > 1000  # thousands of binary features: greedy stays vectorised
    before = dict(device._CALL_SECONDS)
    m = _fit(X, y, b, regularization=0.002, depth_budget=None, time_limit=0.3, backend="jax")
    greedy = _fit(
        X, y, b, regularization=0.002, depth_budget=None, max_steps=0, backend="numpy"
    ).fit_seconds_
    assert m.fit_seconds_ <= 1.1 * 0.3 + 2.0 * greedy + 0.5
    assert m.objective_ < 1.0  # the greedy tree, at least
    new = set(device._CALL_SECONDS) - set(before)
    assert not new  # nothing was compiled inside the short limit


def test_polished_greedy_incumbent_is_exact_and_not_worse():
    """Under a time limit the incumbent is greedy CART with each node's exact shallow
    subtree (kernel, up to exact_levels split levels) as an alternative in the pruning: its
    objective, as the search reports it, is the objective of the tree built from it
    (recomputed from predictions) and at most greedy CART's; here it is strictly better."""
    X, y = _smooth_data(8, n=300)
    Xb = _binary(X, Binarizer(n_thresholds=6))
    lam = 0.002
    g = greedy_cart(Xb, y, np.ones(y.size), lam, None)
    sst = float(np.sum((y - y.mean()) ** 2))
    res = OptimalTreeSearch(
        Xb, y, np.ones(y.size), regularization=lam, depth_budget=None, time_limit=100.0
    ).run(max_steps=0)
    r = y - res.tree.predict(Xb)
    assert float(r @ r / sst + lam * res.tree.n_leaves) == pytest.approx(res.objective, rel=1e-9)
    assert res.objective < g * (1 - 1e-6)


@pytest.mark.parametrize("engine", ["host", "device"])
def test_live_lower_bound_is_valid_and_tightens(monkeypatch, engine):
    """The live lower bound (bottom up through the engine's frontier; the host engine
    alone or handing its expansions to the device) after every step: never
    below the root's recorded bound, never above the optimum, and at the end the certified
    optimum."""
    from jaxsr.trees import engine as cs
    from jaxsr.trees import solver

    X, y = _smooth_data(9, n=200)
    Xb = _binary(X, Binarizer(n_thresholds=4))
    lam = 0.004
    kw = dict(regularization=lam, depth_budget=5, exact_levels=1)
    opt = OptimalTreeSearch(Xb, y, np.ones(y.size), **kw).run()
    assert opt.status is solver.Status.OPTIMAL
    lbs = []
    step = cs.step

    def rec(state, chunk=2048):
        st = step(state, chunk=1)
        if st.status is None:
            lbs.append((cs.live_lower_bound(st), st.root_lb))
        return st

    monkeypatch.setattr(cs, "step", rec)
    res = OptimalTreeSearch(
        Xb, y, np.ones(y.size), backend="jax" if engine == "device" else "numpy", **kw
    ).run()
    assert res.objective == pytest.approx(opt.objective, rel=1e-9)
    assert len(lbs) > 5
    for live, rec_lb in lbs:
        assert rec_lb - 1e-12 <= live <= opt.objective * (1 + 1e-9)
    assert max(v for v, _ in lbs) > lbs[0][0]  # it rises during the search
