"""The search returns the optimum: exhaustive enumeration of all trees as the oracle."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import best_subtree_np, distinct_splits  # same folder (on sys.path)

from jaxsr.trees import OptimalTreeRegressor, engine, optimal_subtree_cost
from jaxsr.trees.extraction import node_values
from jaxsr.trees.problem import leaf_cost
from jaxsr.trees.search import ALL_BOUNDS, OptimalTreeSearch

# ----------------------------------------------------------------------------- oracles


def _leaf_loss(y, w, loss):
    if y.size == 0:
        return 0.0
    if loss == "squared_error":
        if w.sum() == 0:
            return 0.0
        m = np.dot(w, y) / w.sum()
        return float(np.dot(w, (y - m) ** 2))
    return float(min(np.dot(w, np.abs(y - c)) for c in y))  # a median is a sample value


def _norm(y, w, loss, normalize):
    if not normalize:
        return float(w.sum())
    v = _leaf_loss(y, w, loss)
    return v if v > 0 else 1.0


def exhaustive(X, y, w, lam, depth, loss="squared_error", msl=1, normalize=True):
    """Minimum objective over all trees of at most ``depth`` levels, by plain recursion over
    every split at every node (no bounds, no memo, on samples, not classes)."""
    n, M = X.shape
    norm = _norm(y, w, loss, normalize)
    m1 = max(1, msl)

    def best(idx, d):
        c = _leaf_loss(y[idx], w[idx], loss) / norm + lam
        if d <= 1:
            return c
        for f in range(M):
            t, e = idx[X[idx, f] == 1], idx[X[idx, f] == 0]
            if len(t) >= m1 and len(e) >= m1:
                c = min(c, best(t, d - 1) + best(e, d - 1))
        return c

    return best(np.arange(n), depth)


def _all_trees(M, depth):
    """Every tree structure with at most ``depth`` levels: None = leaf, (f, true, false)."""
    if depth <= 1:
        return [None]
    sub = _all_trees(M, depth - 1)
    return [None] + [(f, a, b) for f in range(M) for a in sub for b in sub]


def enumerate_trees(X, y, w, lam, depth, loss="squared_error", msl=1):
    """Literal enumeration: evaluate every tree structure, keep the best objective."""
    norm = _norm(y, w, loss, True)
    best = np.inf
    for t in _all_trees(X.shape[1], depth):
        leaves = []

        def route(node, idx, leaves=leaves):
            if node is None:
                leaves.append(idx)
                return
            f, a, b = node
            route(a, idx[X[idx, f] == 1])
            route(b, idx[X[idx, f] == 0])

        route(t, np.arange(X.shape[0]))
        if any(len(ix) < max(1, msl) for ix in leaves):
            continue
        obj = sum(_leaf_loss(y[ix], w[ix], loss) for ix in leaves) / norm + lam * len(leaves)
        best = min(best, obj)
    return best


def _problem(seed, n=None, M=None, weights=False):
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(8, 30))
    M = M or int(rng.integers(2, 7))
    X = rng.integers(0, 2, size=(n, M))
    y = np.round(rng.normal(size=n) * 2 + 2.0 * X[:, 0] - 1.5 * X[:, -1] * X[:, 0], 1)
    w = rng.integers(0, 4, size=n).astype(float) if weights else np.ones(n)
    if w.sum() == 0:
        w[0] = 1.0
    return X, y, w


# ----------------------------------------------------------------------------- tests


def test_recursive_oracle_equals_literal_enumeration():
    """The recursive oracle is the minimum over the explicit list of all trees."""
    for seed in range(4):
        X, y, w = _problem(seed, n=14, M=3, weights=seed % 2 == 1)
        for loss in ("squared_error", "absolute_error"):
            for msl in (1, 3):
                a = exhaustive(X, y, w, 0.02, 3, loss, msl)
                b = enumerate_trees(X, y, w, 0.02, 3, loss, msl)
                assert a == pytest.approx(b, rel=1e-12, abs=1e-12)


CASES = [
    (seed, depth, loss, weights, msl)
    for seed, (depth, loss, weights, msl) in enumerate(
        itertools.product((3, 4), ("squared_error", "absolute_error"), (False, True), (1, 2))
    )
]


@pytest.mark.parametrize("seed,depth,loss,weights,msl", CASES)
def test_optimal_objective_equals_exhaustive_enumeration(seed, depth, loss, weights, msl):
    X, y, w = _problem(seed, M=6 if seed % 3 == 0 else None, weights=weights)
    for lam in (0.0, 0.01, 0.05):
        ref = exhaustive(X, y, w, lam, depth, loss, msl)
        m = OptimalTreeRegressor(
            regularization=lam, depth_budget=depth, loss=loss, min_samples_leaf=msl
        ).fit(X, y, sample_weight=w)
        assert m.objective_ == pytest.approx(ref, rel=1e-9, abs=1e-12)
        assert m.optimal_
        assert m.lower_bound_ == pytest.approx(ref, rel=1e-9, abs=1e-12)
        assert m.depth_ <= depth
        assert np.all(m.tree_.n_samples[m.tree_.feature < 0] >= msl)


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_engine_equals_exhaustive_enumeration(loss):
    """The engine certifies the brute-force optimum, for both losses, with and without
    weights and min_samples_leaf, at fixed depth budgets and without one."""
    for seed, depth, weights, msl in (
        (40, 3, False, 1),
        (41, 4, True, 2),
        (42, 4, True, 1),
        (43, None, True, 1),
    ):
        X, y, w = _problem(seed, n=30 if depth is None else None, M=5, weights=weights)
        for lam in (0.005, 0.02) if depth is None else (0.0, 0.01):
            ref = (
                memo_oracle(X, y, w, lam, None, loss, msl)
                if depth is None
                else exhaustive(X, y, w, lam, depth, loss, msl)
            )
            r = OptimalTreeSearch(
                X, y, w, loss=loss, regularization=lam, depth_budget=depth, min_samples_leaf=msl
            ).run()
            assert r.objective == pytest.approx(ref, rel=1e-9, abs=1e-12), (seed, lam)
            assert r.lower_bound == pytest.approx(ref, rel=1e-9, abs=1e-12)
            assert r.status.value == "optimal"


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_raw_mean_loss_objective(loss):
    """normalize=False is the paper's objective: mean loss + lambda * leaves."""
    X, y, w = _problem(11, M=5)
    ref = exhaustive(X, y, w, 0.05, 4, loss, 1, normalize=False)
    m = OptimalTreeRegressor(regularization=0.05, depth_budget=4, loss=loss, normalize=False).fit(
        X, y
    )
    assert m.objective_ == pytest.approx(ref, rel=1e-9)
    resid = y - m.predict(X)
    mean_loss = np.mean(resid**2) if loss == "squared_error" else np.mean(np.abs(resid))
    assert m.loss_ == pytest.approx(mean_loss, rel=1e-12)


SUBSETS = [b for r in range(len(ALL_BOUNDS) + 1) for b in itertools.combinations(ALL_BOUNDS, r)]


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_removing_any_bound_never_changes_the_optimum(loss):
    """All 16 subsets of the bounds, generic search (exact_levels=0) and kernels."""
    for seed, depth in ((21, 4), (22, 5)):
        X, y, w = _problem(seed, n=40, M=6)
        ref = exhaustive(X, y, w, 0.01, depth, loss)
        for bounds in SUBSETS:
            for el in (0, 2) if loss == "squared_error" else (0,):
                r = OptimalTreeSearch(
                    X,
                    y,
                    w,
                    loss=loss,
                    regularization=0.01,
                    depth_budget=depth,
                    bounds=bounds,
                    exact_levels=el,
                ).run()
                assert r.objective == pytest.approx(ref, rel=1e-9), (bounds, el)
                assert r.lower_bound == pytest.approx(ref, rel=1e-9), (bounds, el)


def test_bounds_prune_the_search():
    """The bounds are not idle: with all of them the generic search memoises fewer
    subproblems than with none (same optimum, checked above)."""
    X, y, w = _problem(5, n=60, M=6)
    sizes = {}
    for bounds in ((), ALL_BOUNDS):
        r = OptimalTreeSearch(
            X, y, w, regularization=0.02, depth_budget=5, bounds=bounds, exact_levels=0
        ).run()
        sizes[bounds] = r.n_subproblems
    assert sizes[ALL_BOUNDS] < sizes[()]


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_depth_budget_none_equals_a_large_enough_budget(loss):
    """No depth limit: the optimum of eq. 1. With lambda > 0 no tree deeper than the number
    of equivalence classes helps, so a budget of n levels gives the same optimum."""
    X, y, w = _problem(31, n=12, M=4)
    lam = 0.03
    ref = exhaustive(X, y, w, lam, 7, loss)  # 7 levels: more than any useful tree here
    m = OptimalTreeRegressor(regularization=lam, depth_budget=None, loss=loss).fit(X, y)
    assert m.objective_ == pytest.approx(ref, rel=1e-9)
    assert m.optimal_
    m5 = OptimalTreeRegressor(regularization=lam, depth_budget=3, loss=loss).fit(X, y)
    assert m.objective_ <= m5.objective_ + 1e-12


def memo_oracle(X, y, w, lam, depth, loss="squared_error", msl=1):
    """Exact optimum by plain recursion over every split, memoised on (sample set, levels);
    no bounds. ``depth=None``: no limit (a tree has at most as many leaves as distinct rows,
    so ``levels = distinct rows`` is no restriction)."""
    n, M = X.shape
    norm = _norm(y, w, loss, True)
    depth = np.unique(X, axis=0).shape[0] if depth is None else depth
    memo = {}

    def best(idx, d):
        key = (idx.tobytes(), d)
        if key not in memo:
            c = _leaf_loss(y[idx], w[idx], loss) / norm + lam
            if d > 1:
                for f in range(M):
                    t, e = idx[X[idx, f] == 1], idx[X[idx, f] == 0]
                    if len(t) >= max(1, msl) and len(e) >= max(1, msl):
                        c = min(c, best(t, d - 1) + best(e, d - 1))
            memo[key] = c
        return memo[key]

    return best(np.arange(n), depth)


def _objective_of_tree(m, X, y, w, loss):
    r = y - m.predict(X)
    if loss == "squared_error":
        mu = np.dot(w, y) / w.sum()
        return np.dot(w, r * r) / np.dot(w, (y - mu) ** 2) + m.regularization * m.n_leaves_
    base = min(np.dot(w, np.abs(y - c)) for c in y)
    return np.dot(w, np.abs(r)) / base + m.regularization * m.n_leaves_


@pytest.mark.parametrize("seed", range(6))
def test_no_depth_limit_small_lambda_equals_oracle(seed):
    """depth_budget=None with small lambda on 6-feature problems (deep optimal trees): the
    shallow-kernel upper bounds and the bound on trees with >= kl + 2 leaves keep the exact
    optimum for every kernel depth, and the tree returned has the objective reported."""
    X, y, w = _problem(100 + seed, n=36, M=6, weights=seed % 2 == 1)
    msl = 1 + seed % 3 // 2
    for lam in (0.003, 0.01, 0.03):
        ref = memo_oracle(X, y, w, lam, None, "squared_error", msl)
        for el in (None, 1, 2):
            s = OptimalTreeSearch(
                X,
                y,
                w,
                regularization=lam,
                depth_budget=None,
                min_samples_leaf=msl,
                exact_levels=el,
            )
            r = s.run()
            assert r.objective == pytest.approx(ref, rel=1e-9), (lam, el)
            assert r.lower_bound == pytest.approx(ref, rel=1e-9), (lam, el)
        m = OptimalTreeRegressor(regularization=lam, depth_budget=None, min_samples_leaf=msl).fit(
            X, y, sample_weight=w
        )
        assert m.objective_ == pytest.approx(ref, rel=1e-9)
        assert _objective_of_tree(m, X, y, w, "squared_error") == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_no_depth_limit_absolute_loss_with_weights_equals_oracle(seed):
    X, y, w = _problem(200 + seed, n=30, M=6, weights=True)
    for lam in (0.005, 0.02):
        ref = memo_oracle(X, y, w, lam, None, "absolute_error")
        m = OptimalTreeRegressor(regularization=lam, depth_budget=None, loss="absolute_error").fit(
            X, y, sample_weight=w
        )
        assert m.optimal_
        assert m.objective_ == pytest.approx(ref, rel=1e-9)
        assert _objective_of_tree(m, X, y, w, "absolute_error") == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("depth", [5, 6])
def test_deep_budget_with_shallow_kernels_equals_oracle(depth):
    """Budgets deeper than the kernels (the shallow-kernel upper bound at inner subproblems);
    the tree rebuilt from a kernel-bounded memo entry has the reported objective."""
    for seed in range(4):
        X, y, w = _problem(300 + seed, n=40, M=6, weights=seed % 2 == 0)
        for lam in (0.002, 0.01):
            ref = memo_oracle(X, y, w, lam, depth)
            for el in (1, 2, 3):
                m = OptimalTreeRegressor(
                    regularization=lam, depth_budget=depth, exact_levels=el
                ).fit(X, y, sample_weight=w)
                assert m.objective_ == pytest.approx(ref, rel=1e-9), (seed, lam, el)
                assert m.optimal_
                # the search itself gives the same certified optimum
                r = OptimalTreeSearch(
                    X, y, w, regularization=lam, depth_budget=depth, exact_levels=el
                ).run()
                assert r.objective == pytest.approx(ref, rel=1e-9), (seed, lam, el)
                assert r.lower_bound == pytest.approx(ref, rel=1e-9), (seed, lam, el)
                assert m.depth_ <= depth
                assert _objective_of_tree(m, X, y, w, "squared_error") == pytest.approx(
                    ref, rel=1e-9
                )


@pytest.mark.parametrize("seed", range(4))
def test_same_support_at_different_depths_equals_oracle(seed):
    """Implied and duplicated features make one support reachable by paths of different
    lengths, so it is memoised with different numbers of levels (lower bounds are shared
    only from more levels to fewer)."""
    rng = np.random.default_rng(400 + seed)
    n = 60
    base = rng.integers(0, 2, size=(n, 4))
    X = np.column_stack([base, base[:, 0] & base[:, 1], base[:, 2] | base[:, 3]])
    y = np.round(
        rng.normal(size=n) * 0.5
        + 2.0 * base[:, 0]
        - 1.5 * base[:, 1] * base[:, 2]
        + base[:, 3] * base[:, 0],
        1,
    )
    w = rng.integers(1, 3, size=n).astype(float)
    for depth, lam in ((4, 0.001), (5, 0.001), (6, 0.001), (None, 0.002)):
        ref = memo_oracle(X, y, w, lam, depth)
        for el in (0, 1, None):
            r = OptimalTreeSearch(
                X, y, w, regularization=lam, depth_budget=depth, exact_levels=el
            ).run()
            assert r.objective == pytest.approx(ref, rel=1e-9), (depth, el)
            assert r.lower_bound == pytest.approx(ref, rel=1e-9), (depth, el)


def test_memo_oracle_equals_exhaustive():
    X, y, w = _problem(7, n=20, M=4, weights=True)
    for loss in ("squared_error", "absolute_error"):
        assert memo_oracle(X, y, w, 0.01, 4, loss, 2) == pytest.approx(
            exhaustive(X, y, w, 0.01, 4, loss, 2), rel=1e-12
        )


@pytest.mark.parametrize("levels,msl", [(2, 1), (3, 1), (3, 2)])
def test_engine_subtree_on_dense_and_complemented_columns(levels, msl):
    """The engine's terminal solver takes each column of a support the way round with fewer
    ones (a column and its complement make the same splits): on threshold columns (x <= t,
    nested, from sparse to dense) and dense random ones it equals the oracle, and
    complementing every column of the problem changes neither the cost nor the root."""
    rng = np.random.default_rng(40 + levels + 10 * msl)
    U = 30
    x = rng.normal(size=(U, 2))
    thr = np.concatenate(
        [
            x[:, 0:1] <= np.quantile(x[:, 0], [0.2, 0.5, 0.8])[None, :],
            x[:, 1:2] <= np.quantile(x[:, 1], [0.3, 0.9])[None, :],
        ],
        axis=1,
    )
    Xc = np.column_stack([thr, rng.random((U, 3)) < 0.85]).astype(float)
    y = np.sin(2 * x[:, 0]) + x[:, 1] + 0.3 * rng.normal(size=U)
    Wc = rng.integers(1, 4, size=U).astype(float)
    st = np.column_stack([Wc, Wc * y, Wc * y * y + 0.1 * rng.random(U), Wc])
    lam, norm = 0.01, 10.0
    mean = st[:, 1] / Wc
    E = st[:, 2] - Wc * mean * mean

    def core_of(X):
        return engine._core.make_problem(
            X.astype(np.uint8),
            engine.pack(X.T > 0.5),
            Wc,
            mean,
            E,
            Wc,
            np.argsort(mean, kind="stable"),
            np.zeros(0),
            np.zeros(0),
            np.zeros(0, np.int64),
            lam,
            norm,
            float(msl),
            2.0,
            2e4,
            0,
            True,
            True,
            True,
            False,
        )

    core, flipped = core_of(Xc), core_of(1.0 - Xc)
    masks = rng.random((6, U)) < 0.75
    masks[0] = True
    for m in masks:
        c_np, f_np = best_subtree_np(Xc[m], st[m], levels, lam, norm, msl)
        c, f = engine.subtree(core, m, levels, lam * norm)
        c_fl, f_fl = engine.subtree(flipped, m, levels, lam * norm)
        assert c / norm == pytest.approx(c_np, rel=1e-12) and f == f_np
        assert c_fl == pytest.approx(c, rel=1e-12) and f_fl == f


@pytest.mark.parametrize("levels,msl", [(1, 2), (2, 2), (3, 2), (2, 1), (3, 1), (3, 3)])
def test_subtree_kernels_numpy_jax_vmap(levels, msl):
    """The matrix-product kernels: the host kernel (symmetric triple statistics, octants by
    transposition, no inner masks for min_samples_leaf 1), the engine's terminal solver
    (pair statistics per root side), jitted JAX and vmapped JAX agree
    with the oracle; some classes have zero weight. Columns 5-7 repeat column 3,
    complement column 1 and are constant: the host kernel drops them (one feature per
    distinct split), the oracle and the JAX kernel do not."""
    rng = np.random.default_rng(levels + 10 * msl)
    U = 24
    Xc = rng.integers(0, 2, size=(U, 5)).astype(float)
    Xc = np.column_stack([Xc, Xc[:, 3], 1.0 - Xc[:, 1], np.ones(U)])
    M = Xc.shape[1]
    y = rng.normal(size=U) * 3 + 2 * Xc[:, 1]
    Wc = rng.integers(0, 4, size=U).astype(float)
    Nc = np.maximum(Wc, 1.0)
    st = np.column_stack([Wc, Wc * y, Wc * y * y + rng.random(U) * (Wc > 0), Nc])
    masks = rng.random((5, U)) < 0.7
    masks[0] = True
    lam, norm = 0.02, 10.0
    X8 = Xc.astype(np.uint8)
    mean = np.where(Wc > 0, st[:, 1] / np.maximum(Wc, 1.0), 0.0)
    E = st[:, 2] - Wc * mean * mean
    core = engine._core.make_problem(
        X8,
        engine.pack(Xc.T > 0.5),
        Wc,
        mean,
        E,
        Nc,
        np.argsort(mean, kind="stable"),
        np.zeros(0),
        np.zeros(0),
        np.zeros(0, np.int64),
        lam,
        norm,
        float(msl),
        2.0,
        2e4,
        0,
        True,
        True,
        True,
        False,
    )
    batched = jax.vmap(optimal_subtree_cost, in_axes=(None, None, 0, None, None, None, None))(
        jnp.asarray(Xc), jnp.asarray(st), jnp.asarray(masks), lam, norm, levels, msl
    )
    for b, m in enumerate(masks):
        c_np, f_np = best_subtree_np(Xc[m], st[m], levels, lam, norm, msl)
        # the engine's terminal solver on the support's distinct columns: the same cost
        keep = distinct_splits(Xc[m] > 0.5)
        c_leaf, split = engine.subtree_splits(X8[m][:, keep], st[m], levels, lam * norm, msl)
        assert min(c_leaf, split.min()) / norm == pytest.approx(c_np, rel=1e-12)
        # and from the support mask over all classes (gather, distinct splits, re-centring
        # and tie-breaking in the engine): the same cost and the same root
        c_sm, f_sm = engine.subtree(core, m, levels, lam * norm)
        assert c_sm / norm == pytest.approx(c_np, rel=1e-12)
        assert f_sm == f_np
        np.testing.assert_array_equal(engine.splits(core, m), keep)
        c_jx, f_jx = optimal_subtree_cost(
            jnp.asarray(Xc),
            jnp.asarray(st),
            jnp.asarray(m),
            lam,
            norm,
            levels=levels,
            min_samples_leaf=msl,
        )
        assert float(c_jx) == pytest.approx(c_np, rel=1e-12)
        assert float(batched[0][b]) == pytest.approx(c_np, rel=1e-12)
        # oracle on the classes as weighted "samples": class internal spread is a constant
        idx = np.flatnonzero(m)
        pos = idx[st[idx, 0] > 0]
        spread = float(np.sum(st[pos, 2] - st[pos, 1] ** 2 / st[pos, 0]))

        def best(ix, d):
            def leaf(ix):
                W, S, Q = st[ix, 0].sum(), st[ix, 1].sum(), st[ix, 2].sum()
                return (Q - S * S / W if W > 0 else 0.0) / norm + lam

            c = leaf(ix)
            if d <= 1:
                return c
            for f in range(M):
                t, e = ix[Xc[ix, f] == 1], ix[Xc[ix, f] == 0]
                if st[t, 3].sum() >= msl and st[e, 3].sum() >= msl:
                    c = min(c, best(t, d - 1) + best(e, d - 1))
            return c

        assert c_np == pytest.approx(best(idx, levels + 1), rel=1e-12)
        # the equivalent-points bound (OSRT section 4.3): no tree's loss is below the
        # classes' internal spread, which a single-leaf tree pays on top of its own
        assert spread > 0 and c_np >= spread / norm + lam - 1e-12
        # both root features are optimal roots (ties may break differently); the host
        # kernel's is the lowest of its equivalent features
        assert f_np not in (5, 6, 7)
        for f in (f_np, int(f_jx)):
            if f < 0:
                assert best(idx, 1) == pytest.approx(c_np, rel=1e-12)
            else:
                t, e = idx[Xc[idx, f] == 1], idx[Xc[idx, f] == 0]
                assert best(t, levels) + best(e, levels) == pytest.approx(c_np, rel=1e-12)


@pytest.mark.parametrize("depth,el", [(5, 3), (4, 0), (None, 2)])
def test_jax_backend_equals_numpy_backend(depth, el):
    """Batched device evaluation of the children (exact subtrees / k-means bounds) gives
    the same certified optimum as the host path."""
    X, y, w = _problem(41, n=50, M=6, weights=True)
    res = {}
    for backend, batch_kmeans in (("numpy", False), ("jax", False), ("jax", True)):
        s = OptimalTreeSearch(
            X, y, w, regularization=0.02, depth_budget=depth, exact_levels=el, backend=backend
        )
        if s.dev is not None:
            s.dev.batch_kmeans = batch_kmeans  # True: the accelerator path, forced on CPU
        r = s.run()
        r.dev = s.dev
        res[backend, batch_kmeans] = r
        assert r.lower_bound == pytest.approx(r.objective, rel=1e-12)
    for key in (("jax", False), ("jax", True)):
        assert res[key].objective == pytest.approx(res["numpy", False].objective, rel=1e-10)
    if depth != 5:
        assert res["jax", True].dev.n_kmeans_items > 0  # the batched bounds were used
    assert res["jax", False].dev.n_kmeans_items == 0
    if depth is not None:
        assert res["numpy", False].objective == pytest.approx(
            exhaustive(X, y, w, 0.02, depth), rel=1e-9
        )


def test_jax_backend_compiles_once_per_shape():
    """Refitting on new targets of the same shapes traces nothing new (pad and mask)."""
    from jaxsr.trees import device

    X, y, w = _problem(43, n=60, M=6)
    rng = np.random.default_rng(0)
    calls = {"n": 0}
    original = device.DeviceBatcher._timed

    def counted(self, sig, fn, *args):
        calls["n"] += 1
        return original(self, sig, fn, *args)

    OptimalTreeSearch(X, y, w, regularization=0.01, depth_budget=5, backend="jax").run()
    compiles = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(device.DeviceBatcher, "_timed", counted)
            for _ in range(2):
                y2 = rng.normal(size=y.shape[0])
                OptimalTreeSearch(
                    X, y2, w, regularization=0.01, depth_budget=5, backend="jax"
                ).run()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert calls["n"] > 0  # the device kernels ran
    assert not compiles, compiles


# ------------------------------------------------------------------ certificates at every scale


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_outlier_with_raw_mean_loss_gets_a_true_certificate(backend):
    """normalize=False and an outlier 1e7 made the absolute search
    tolerance (1e-12 of the root loss, ~9 here) prune the optimum 0.03 and certify 2.02."""
    X = np.array([[1, 0]] + [[0, 0]] * 4 + [[0, 1]] * 5)
    y = np.array([1e7] + [0.0] * 4 + [3.0] * 5)
    w = np.ones(10)
    ref = exhaustive(X, y, w, 0.01, 3, normalize=False)
    assert ref == pytest.approx(0.03, rel=1e-12)
    for el in (0, 1, 2, None):
        m = OptimalTreeRegressor(
            regularization=0.01, depth_budget=3, exact_levels=el, normalize=False, backend=backend
        ).fit(X, y)
        assert m.objective_ == pytest.approx(ref, rel=1e-9), el
        assert m.lower_bound_ == pytest.approx(ref, rel=1e-9), el
        assert m.optimal_ and m.n_leaves_ == 3


def test_a_lower_bound_above_the_objective_raises(monkeypatch):
    """The certificate is never clamped into shape: lb > objective is a bug, raised."""
    X, y, w = _problem(3, n=20, M=4)
    run = OptimalTreeSearch.run

    def broken(self, max_steps=None):
        r = run(self, max_steps)
        r.lower_bound = r.objective + 0.5
        return r

    monkeypatch.setattr(OptimalTreeSearch, "run", broken)
    with pytest.raises(RuntimeError, match="lower bound"):
        OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, y)


@pytest.mark.parametrize(
    "offset,scale",
    [(1e10, 0.1), (-1e10, 0.1), (0.0, 1e200), (1e200, 1e188), (0.0, 1e-200), (0.0, 1e300)],
)
def test_targets_far_from_unit_scale_give_the_unit_scale_tree(offset, scale):
    """y = offset + scale * signal: the same tree and objective (normalize=True is
    scale-free) as the signal alone; no overflow near 1e300, no signal lost on 1e10."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(40, 4))
    sig = 1.0 * X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=40)
    ref = OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, sig)
    y = offset + scale * sig
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, y)
    assert m.optimal_
    np.testing.assert_array_equal(m.tree_.feature, ref.tree_.feature)
    # the targets themselves carry the rounding of offset + scale * signal
    tol = 1e-12 + 4 * np.spacing(abs(offset) + scale) / scale
    assert m.objective_ == pytest.approx(ref.objective_, rel=100 * tol)
    pred = m.predict(X)
    assert np.all(np.isfinite(pred))
    np.testing.assert_allclose((pred - offset) / scale, ref.predict(X), rtol=0, atol=10 * tol)


def test_raw_mean_loss_beyond_float64_is_a_clear_error():
    X = np.array([[0], [1], [0], [1]])
    with pytest.raises(ValueError, match="normalize=False"):
        OptimalTreeRegressor(depth_budget=2, normalize=False).fit(
            X, np.array([1e200, -1e200, 2e200, 0.0])
        )


def test_constant_target_on_a_large_offset_is_one_leaf():
    X = np.array([[0], [1], [0], [1]] * 3)
    m = OptimalTreeRegressor(regularization=0.0, depth_budget=3).fit(X, np.full(12, 1e10))
    assert m.n_leaves_ == 1 and m.optimal_ and m.objective_ == 0.0


@pytest.mark.parametrize("el", [0, None])
def test_tree_does_not_depend_on_a_rescaling_of_the_weights(el):
    """Ties were broken differently for weights 1 and 0.2222222222 (seeds 16, 18
    differed on main); non-uniform integer weights times a factor (seeds 14, 51)."""
    for seed in (14, 16, 18, 51):
        rng = np.random.default_rng(seed)
        n, M = 24, 6
        X = rng.integers(0, 2, (n, M))
        y = rng.integers(0, 3, n).astype(float)
        w0 = rng.integers(1, 4, n).astype(float) if seed in (14, 51) else np.ones(n)
        fits = [
            OptimalTreeRegressor(regularization=0.01, depth_budget=3, exact_levels=el).fit(
                X, y, sample_weight=c * w0
            )
            for c in (1.0, 0.2222222222, 3.3)
        ]
        for m in fits[1:]:
            np.testing.assert_array_equal(m.tree_.feature, fits[0].tree_.feature)
            assert m.objective_ == pytest.approx(fits[0].objective_, rel=1e-12)


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_jax_backend_runs_every_bound_subset_depth_and_loss(loss):
    """backend="jax" runs the accelerator's code on CPU (batched k-means bounds included)
    for all 16 bound subsets; a subset without "equivalent" crashed there."""
    X, y, w = _problem(23, n=30, M=5, weights=True)
    for depth in (3, 4, 5):
        ref = exhaustive(X, y, w, 0.01, depth, loss)
        for bounds in SUBSETS:
            s = OptimalTreeSearch(
                X,
                y,
                w,
                loss=loss,
                regularization=0.01,
                depth_budget=depth,
                bounds=bounds,
                backend="jax",
                exact_levels=1 if loss == "squared_error" else None,
            )
            assert s.dev.batch_kmeans
            r = s.run()
            assert r.objective == pytest.approx(ref, rel=1e-9), (depth, bounds)
            assert r.lower_bound == pytest.approx(ref, rel=1e-9), (depth, bounds)


# ------------------------------------------------------------------ the explicit solver


def _tree_objective(tree, X, y, w, lam, norm_y, loss="squared_error"):
    r = y - tree.predict(X)
    loss_y = np.dot(w, r * r) if loss == "squared_error" else np.dot(w, np.abs(r))
    return float(loss_y / norm_y + lam * tree.n_leaves)


def test_solver_stops_at_max_steps_with_a_valid_certificate():
    """init / step / terminate: a node limit stops the search with status NODE_LIMIT, a
    lower bound below the optimum and a tree whose objective is the one reported."""
    from jaxsr.trees.solver import Status

    X, y, w = _problem(51, n=60, M=6, weights=True)
    lam = 0.003
    ref = memo_oracle(X, y, w, lam, 5)
    sst = float(np.dot(w, (y - np.dot(w, y) / w.sum()) ** 2))
    full = OptimalTreeSearch(X, y, w, regularization=lam, depth_budget=5, exact_levels=0).run()
    assert full.status is Status.OPTIMAL and full.objective == pytest.approx(ref, rel=1e-9)
    assert full.steps > 8
    for k in (1, 3, full.steps // 2):
        r = OptimalTreeSearch(X, y, w, regularization=lam, depth_budget=5, exact_levels=0).run(
            max_steps=k
        )
        assert r.status is Status.NODE_LIMIT and r.steps <= k + 1  # checked per split
        assert r.lower_bound <= ref * (1 + 1e-12) <= r.objective * (1 + 1e-12)
        assert _tree_objective(r.tree, X, y, w, lam, sst) == pytest.approx(r.objective, rel=1e-9)


def test_estimator_maps_the_status_and_warns():
    from sklearn.exceptions import ConvergenceWarning

    X, y, w = _problem(52, n=40, M=5)
    m = OptimalTreeRegressor(regularization=0.01, depth_budget=4).fit(X, y)
    assert m.status_ == "optimal" and m.optimal_ and not m.timed_out_
    with pytest.warns(ConvergenceWarning, match="time limit"):
        m = OptimalTreeRegressor(regularization=0.01, depth_budget=4, time_limit=0).fit(X, y)
    assert m.status_ == "time_limit" and m.timed_out_ and not m.optimal_
    assert m.lower_bound_ <= m.objective_
    # max_steps: the node limit, reproducible; the bound stays below the optimum
    X, y, w = _problem(51, n=60, M=6, weights=True)
    ref = memo_oracle(X, y, w, 0.003, 5)
    with pytest.warns(ConvergenceWarning, match="node limit.*max_steps"):
        m = OptimalTreeRegressor(
            regularization=0.003, depth_budget=5, exact_levels=0, max_steps=2
        ).fit(X, y, sample_weight=w)
    assert m.status_ == "node_limit" and not m.timed_out_ and not m.optimal_
    assert m.lower_bound_ <= ref * (1 + 1e-12) <= m.objective_ * (1 + 1e-12)
    with pytest.warns(ConvergenceWarning):
        m2 = OptimalTreeRegressor(
            regularization=0.003, depth_budget=5, exact_levels=0, max_steps=2
        ).fit(X, y, sample_weight=w)
    assert m2.objective_ == m.objective_ and m2.lower_bound_ == m.lower_bound_
    m = OptimalTreeRegressor(regularization=0.003, depth_budget=5, max_steps=10**6).fit(
        X, y, sample_weight=w
    )
    assert m.optimal_ and m.objective_ == pytest.approx(ref, rel=1e-9)
    with pytest.raises(ValueError, match="max_steps"):
        OptimalTreeRegressor(max_steps=-1).fit(X, y)


def test_unique_rows_equals_numpy_unique_along_rows():
    """problem.unique_rows: the classes (unique binary rows) and inverse of np.unique(axis=0),
    in the same order, for 1..130 features (one uint64 key per row up to 64, bytes above)."""
    from jaxsr.trees.problem import unique_rows

    rng = np.random.default_rng(4)
    for M in (1, 7, 8, 9, 63, 64, 65, 130):
        X = rng.random((200, M)) < rng.uniform(0.05, 0.95, size=M)
        X[50:120] = X[rng.integers(0, 50, size=70)]  # repeated rows
        p = np.packbits(X, axis=1)
        u, inv = unique_rows(p)
        u0, inv0 = np.unique(p, axis=0, return_inverse=True)
        np.testing.assert_array_equal(u, u0)
        np.testing.assert_array_equal(inv, np.asarray(inv0).reshape(-1))


def test_memo_keys_equal_the_engine_words():
    """The memo view's key conversion (np.packbits bytes -> the engine's words) gives the
    words of engine.pack (bit u % 64 of word u // 64) for 1..1000 classes."""
    from types import SimpleNamespace

    rng = np.random.default_rng(5)
    for U in (1, 7, 8, 9, 27, 63, 64, 65, 130, 1000):
        state = SimpleNamespace(search=SimpleNamespace(n_words=max(1, (U + 63) // 64)))
        memo = engine.MemoView([state])
        for m in rng.random((5, U)) < rng.uniform(0.05, 0.95):
            np.testing.assert_array_equal(
                memo._words(np.packbits(m).tobytes()), engine.pack(m[None, :])[0]
            )
    words = engine.pack(np.eye(70, dtype=bool))
    assert words.shape == (70, 2) and words[69, 1] == 1 << 5 and words[3, 0] == 8


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
def test_leaf_values_of_many_nodes_equal_a_numpy_oracle(loss, monkeypatch):
    """extraction.node_values (every node of a tree at once) against plain numpy on
    each node's samples in y units (weighted data, zero weights, y far from 0): weighted
    mean and squared loss, or a weighted median's absolute loss (the least over the
    node's targets), to the rounding of sums of ~1e5 (1e-9 absolute); a node whose
    targets are all equal gets exactly that value and a zero loss (a plain weighted mean
    rounds there: 7.25 + 2.9e-11)."""
    rng = np.random.default_rng(6)
    X = rng.random((400, 8)) < 0.5
    y = rng.normal(size=400) * 1e3 + 1e5
    y[X[:, 0] & X[:, 1]] = 7.25
    w = rng.random(400)
    w[:40] = 0.0
    s = OptimalTreeSearch(X, y, w, loss=loss, regularization=0.01, depth_budget=4).problem
    masks = rng.random((12, s.U)) < 0.5
    masks[0] = s.Xc_bool[:, 0] & s.Xc_bool[:, 1]  # the constant node
    v, n, W, L = node_values(s, masks)
    for k, m in enumerate(masks):
        sm = m[s.inv]
        ys, ws = y[sm], w[sm]
        assert n[k] == sm.sum()
        assert W[k] == pytest.approx(ws.sum(), rel=1e-13)
        if loss == "squared_error":
            mu = np.dot(ws, ys) / ws.sum()
            assert v[k] == pytest.approx(mu, rel=1e-13, abs=1e-9)
            assert L[k] == pytest.approx(np.dot(ws, (ys - mu) ** 2), rel=1e-9, abs=1e-9)
        else:
            best = min(np.dot(ws, np.abs(ys - c)) for c in ys)
            assert v[k] in ys
            assert L[k] == pytest.approx(best, rel=1e-9, abs=1e-9)
            assert np.dot(ws, np.abs(ys - v[k])) == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert v[0] == 7.25 and L[0] == 0.0
    from jaxsr.trees import extraction

    # in chunks of 3 nodes (large data): the same numbers
    monkeypatch.setattr(extraction, "NODE_VALUE_ELEMENTS", 3 * s.n)
    for a, b in zip(node_values(s, masks), (v, n, W, L), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.usefixtures("frozen_heap")  # no collector pause of the suite's heap
def test_time_limit_bounds_the_whole_fit():
    """time_limit bounds the whole fit: a limit too short for the search stops with a
    valid tree and a valid bound, the tree's objective as reported."""
    from sklearn.exceptions import ConvergenceWarning

    X, y, w = _problem(53, n=300, M=12)
    sst = float(np.sum((y - y.mean()) ** 2))
    with pytest.warns(ConvergenceWarning, match="time limit"):
        m = OptimalTreeRegressor(regularization=0.0005, depth_budget=7, time_limit=0.05).fit(X, y)
    assert m.timed_out_ and not m.optimal_
    with pytest.warns(ConvergenceWarning):  # any tree's objective is above the optimum
        ref = OptimalTreeRegressor(regularization=0.0005, depth_budget=7, max_steps=40).fit(X, y)
    assert m.fit_seconds_ < 2.0  # generous under load
    assert m.lower_bound_ <= ref.objective_ * (1 + 1e-12)
    assert _tree_objective(m.tree_, X, y, w, 0.0005, sst) == pytest.approx(m.objective_, rel=1e-9)


@pytest.mark.parametrize("depth", [None, 6])
def test_stopped_search_is_never_worse_than_greedy_cart(depth):
    """Anytime: the incumbent starts from greedy CART on the same binary features, pruned at
    lambda; scikit-learn's DecisionTreeRegressor with the equivalent ccp_alpha
    (lambda * SST / n) is the oracle of that tree's objective."""
    from sklearn.tree import DecisionTreeRegressor

    from jaxsr.trees import Binarizer

    rng = np.random.default_rng(0)
    n = 200
    Xr = rng.normal(size=(n, 4))
    y = np.sin(2 * Xr[:, 0]) + Xr[:, 1] * Xr[:, 2] + 0.3 * rng.normal(size=n)
    X = Binarizer(n_thresholds=6).fit_transform(Xr).astype(int)
    lam = 0.003
    sst = float(np.sum((y - y.mean()) ** 2))
    cart = DecisionTreeRegressor(
        max_depth=None if depth is None else depth - 1, ccp_alpha=lam * sst / n, random_state=0
    ).fit(X, y)
    r = y - cart.predict(X)
    cart_objective = float(r @ r / sst + lam * cart.get_n_leaves())
    for k in (1, 30):
        res = OptimalTreeSearch(X, y, np.ones(n), regularization=lam, depth_budget=depth).run(
            max_steps=k
        )
        assert res.objective <= cart_objective * (1 + 1e-12)
        assert res.lower_bound <= res.objective
        obj = _tree_objective(res.tree, X, y, np.ones(n), lam, sst)
        assert obj == pytest.approx(res.objective, rel=1e-9)


@pytest.mark.parametrize("el", [0, 3])
def test_best_first_root_keeps_the_optimum_and_raises_the_bound(monkeypatch, el):
    """Anytime: with the root best-first from the start (capped attempts per root split,
    least bound sum first) the search still ends with the oracle's optimum and tree; and
    stopped after k steps its lower bound is valid and rises with k, well above the root's
    first bound (here 0.2151 -> 0.2494 in 12 steps with the kernels)."""
    from jaxsr.trees import solver

    X, y, w = _problem(61, n=60, M=6, weights=True)
    lam = 0.003
    ref = memo_oracle(X, y, w, lam, 5)
    sst = float(np.dot(w, (y - np.dot(w, y) / w.sum()) ** 2))
    monkeypatch.setattr(solver, "BEST_FIRST_AFTER", 0.0)
    r = OptimalTreeSearch(
        X, y, w, regularization=lam, depth_budget=5, exact_levels=el, time_limit=1e6
    ).run()
    assert r.status is solver.Status.OPTIMAL
    assert r.objective == pytest.approx(ref, rel=1e-9)
    assert r.lower_bound == pytest.approx(ref, rel=1e-9)
    assert _tree_objective(r.tree, X, y, w, lam, sst) == pytest.approx(ref, rel=1e-9)
    lbs = []
    for k in (1, 4, 12):
        s = OptimalTreeSearch(
            X, y, w, regularization=lam, depth_budget=5, exact_levels=el, time_limit=1e6
        ).run(max_steps=k)
        assert s.lower_bound <= ref * (1 + 1e-9) <= s.objective * (1 + 2e-9)
        lbs.append(s.lower_bound)
    assert lbs[0] <= lbs[1] <= lbs[2]
    if el == 3:
        assert lbs[2] > lbs[0] + 0.02


def _split_bound_oracle(P, mask, d):
    """The bounds of a new subproblem of squared loss, ``(b, deep)``, from numpy:
    ``b`` bounds every tree that splits (equivalent points, Theorem 3.3, and k-Means,
    Theorem 3.5), ``deep`` every tree with at least ``kl + 2`` leaves."""
    from oracles import kmeans_losses_np

    from jaxsr.trees.bounds import equivalent_points_bound, kmeans_bound
    from jaxsr.trees.losses import STAT_C, STAT_N
    from jaxsr.trees.problem import sub_stats

    tot = P.stats[mask].sum(0)
    eq = lambda k: (
        float(equivalent_points_bound(tot, P.lam, P.norm, leaves=k)) if P.equiv else P.lam * k
    )
    b = eq(P.look)
    cmax = int(min(tot[STAT_C], np.floor(tot[STAT_N] / P.m1), 2 ** (d - 1)))
    kdeep = P.kl + 2
    deep = np.inf if cmax < kdeep else eq(kdeep)
    if not P.use_kmeans or d <= P.kl:
        return b, deep
    if cmax < P.look:
        return np.inf, np.inf
    sel = P.korder[mask[P.korder]]
    s = sub_stats(P, sel)
    losses = kmeans_losses_np(s[:, 0], s[:, 1], s[:, 2], cmax, P.lam * P.norm)
    if P.kl and cmax >= kdeep:
        deep = max(deep, kmeans_bound(losses, P.lam, P.norm, kdeep))
    return max(b, kmeans_bound(losses, P.lam, P.norm, P.look)), deep


def test_engine_leaf_and_bounds_equal_the_numpy_ones():
    """The squared task's bounds (leaf loss, equivalent points and k-Means bounds of a new
    subproblem in one call) equal a numpy oracle (the leaf around the support's mean,
    _split_bound_oracle) on random supports, depths, bound subsets and leaf sizes."""
    from jaxsr.trees.losses import stats_loss
    from jaxsr.trees.problem import sub_stats

    rng = np.random.default_rng(5)
    X, y, w = _problem(61, n=80, M=9, weights=True)
    for bounds, msl, el in (
        (ALL_BOUNDS, 1, 3),
        (("equivalent", "kmeans"), 2, 2),
        (("hierarchical",), 1, 0),
    ):
        s = OptimalTreeSearch(
            X,
            y,
            w,
            regularization=0.003,
            depth_budget=6,
            bounds=bounds,
            min_samples_leaf=msl,
            exact_levels=el,
        ).problem
        for _ in range(12):
            mask = rng.random(s.U) < rng.uniform(0.2, 1.0)
            if not mask.any():
                continue
            leaf0 = float(stats_loss(sub_stats(s, np.flatnonzero(mask)).sum(0)))
            for d in (1, 2, 4, 6):
                loss, b, deep, _ = engine.support_bounds(s.core, mask, d)
                assert loss == pytest.approx(leaf0, rel=1e-10, abs=1e-15)
                assert leaf_cost(s, mask) == pytest.approx(leaf0 / s.norm + s.lam, rel=1e-10)
                b0, deep0 = _split_bound_oracle(s, mask, d)
                assert b == pytest.approx(b0, rel=1e-10), (bounds, d)
                assert deep == pytest.approx(deep0, rel=1e-10), (bounds, d)


def test_engine_certifies_the_oracle_and_stops_at_max_steps():
    """The engine (memo hash table grown from its first 1024 entries, frontier grown
    level by level) certifies the oracle's optimum for both losses, with and without a
    depth budget; under max_steps it stops with a valid bound and a tree whose objective
    is as reported; the tree rebuilt from its memo has the reported objective."""
    from jaxsr.trees import solver

    cases = [
        ("squared_error", lam, depth, el)
        for lam, depth, el in ((0.002, 6, 0), (0.004, None, 2), (0.01, 5, 3))
    ]
    cases += [("absolute_error", lam, depth, 0) for lam, depth in ((0.002, 6), (0.01, None))]
    for seed in range(3):
        X, y, w = _problem(700 + seed, n=50, M=6, weights=seed % 2 == 1)
        for loss, lam, depth, el in cases:
            kw = dict(loss=loss, regularization=lam, depth_budget=depth, exact_levels=el)
            opt = memo_oracle(X, y, w, lam, depth, loss)
            ref = OptimalTreeSearch(X, y, w, **kw).run()
            assert isinstance(ref.status, solver.Status)
            assert ref.status is solver.Status.OPTIMAL
            assert ref.objective == pytest.approx(opt, rel=1e-10), (seed, lam)
            assert ref.lower_bound == pytest.approx(opt, rel=1e-10), (seed, lam)
            norm = _norm(y, w, loss, True)
            assert _tree_objective(ref.tree, X, y, w, lam, norm, loss) == pytest.approx(
                ref.objective, rel=1e-9
            )
            assert ref.n_subproblems > 4
            k = max(1, ref.steps // 3)
            s = OptimalTreeSearch(X, y, w, **kw).run(max_steps=k)
            assert s.status is solver.Status.NODE_LIMIT and s.steps <= k + 1
            assert s.lower_bound <= ref.objective * (1 + 1e-12)
            assert ref.objective <= s.objective * (1 + 1e-12)
            assert _tree_objective(s.tree, X, y, w, lam, norm, loss) == pytest.approx(
                s.objective, rel=1e-9
            )


def test_memo_and_frontier_grow():
    """A search of many subproblems (tens of thousands of memo entries: the table is
    rebuilt several times; depth 9: the frontier grows past its first levels) keeps the
    optimum of the same search on fewer classes' duplicates (rows repeated: same optimum)."""
    rng = np.random.default_rng(77)
    X = rng.random((400, 10)) < 0.5
    y = X[:, 0] * 2.0 - X[:, 1] * X[:, 2] + rng.normal(size=400) * 0.5
    kw = dict(regularization=0.0005, depth_budget=9, exact_levels=1)
    r = OptimalTreeSearch(X, y, np.ones(400), **kw).run()
    assert r.status.value == "optimal" and r.n_subproblems > 4096
    r2 = OptimalTreeSearch(np.vstack([X, X]), np.concatenate([y, y]), np.ones(800), **kw).run()
    assert r2.objective == pytest.approx(r.objective, rel=1e-10)
    assert r2.lower_bound == pytest.approx(r.lower_bound, rel=1e-10)


def test_leaf_budget_decides_capped_subproblems_and_keeps_the_optimum():
    """Under a cap only trees with at most ``lmax`` leaves can win (each leaf costs lambda
    on top of the equivalent points loss), so a kernel with ``lmax - 1`` levels decides the
    subproblem (leaf_budget in engine/bounds.hpp): on rows with repeated feature vectors
    (classes with internal loss, where the budget is tight) the engine keeps the exact
    optimum and certificate for every kernel depth."""
    for seed in range(3):
        rng = np.random.default_rng(900 + seed)
        base = rng.integers(0, 2, size=(10, 5))
        rows = rng.integers(0, 10, size=70)
        X = base[rows]
        y = np.round(
            2.0 * X[:, 0] - 1.5 * X[:, 1] * X[:, 2] + X[:, 3] * X[:, 0] + rng.normal(size=70) * 0.8,
            2,
        )
        w = rng.integers(1, 3, size=70).astype(float)
        sst = float(np.dot(w, (y - np.dot(w, y) / w.sum()) ** 2))
        for depth, lam in ((4, 0.002), (5, 0.004), (6, 0.01)):
            ref = memo_oracle(X, y, w, lam, depth)
            for el in (1, 2, 3):
                r = OptimalTreeSearch(
                    X, y, w, regularization=lam, depth_budget=depth, exact_levels=el
                ).run()
                assert r.objective == pytest.approx(ref, rel=1e-9), (seed, depth, el)
                assert r.lower_bound == pytest.approx(ref, rel=1e-9), (seed, depth, el)
                assert _tree_objective(r.tree, X, y, w, lam, sst) == pytest.approx(ref, rel=1e-9)


def _exactly_fittable(seed, scale, offset=0.0, weights=False):
    """Data that a depth-3 tree fits exactly: y depends on two binary features only."""
    rng = np.random.default_rng(seed)
    n, M = int(rng.integers(12, 40)), int(rng.integers(2, 6))
    X = rng.integers(0, 2, size=(n, M))
    y = offset + scale * np.where(X[:, 0] == 1, 3.0, np.where(X[:, 1] == 1, -1.0, 0.5))
    w = rng.uniform(0.1, 3.0, size=n) if weights else np.ones(n)
    return X, y, w


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("normalize", [True, False])
def test_lambda_zero_on_exactly_fittable_data_is_certified(loss, weights, normalize):
    """At ``regularization=0`` a tree that fits exactly has objective 0: the search's
    lower bound rounds to about +-1e-16 of the one-leaf loss, and every certificate
    comparison holds there (no 'lower bound exceeds the objective' error); the engine
    certifies the brute-force optimum 0, whatever the scale of y."""
    for seed, (scale, offset) in enumerate(
        ((1.0, 0.0), (1e-3, 0.0), (1e5, 0.0), (1.0, 1e6), (0.37, -2.0))
    ):
        X, y, w = _exactly_fittable(seed + 100, scale, offset, weights)
        ref = exhaustive(X, y, w, 0.0, 3, loss, normalize=normalize)
        assert ref == pytest.approx(
            0.0, abs=1e-9 * _leaf_loss(y, w, loss) / _norm(y, w, loss, normalize)
        )
        m = OptimalTreeRegressor(
            regularization=0.0, depth_budget=4, loss=loss, normalize=normalize
        ).fit(X, y, sample_weight=w)
        tol = 1e-9 * m.loss_scale_
        assert m.optimal_ and m.status_ == "optimal"
        assert abs(m.objective_) <= tol and abs(m.lower_bound_) <= tol
        assert 0.0 <= m.gap_ <= tol
        np.testing.assert_allclose(m.predict(X), y, rtol=1e-12, atol=1e-12 * abs(scale))
        r = OptimalTreeSearch(
            X, y, w, loss=loss, regularization=0.0, depth_budget=4, normalize=normalize
        ).run()
        assert r.status.value == "optimal"
        assert abs(r.objective) <= tol and abs(r.lower_bound) <= tol


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error"])
@pytest.mark.parametrize("weights", [False, True])
def test_regularization_path_with_default_lambdas_on_exactly_fittable_data(loss, weights):
    """``regularization_path()`` starts at lambda 0, where the optimum fits exactly: the
    path covers ``[0, inf)``, its first piece has loss 0, every piece is certified and
    matches the brute-force optimum at its midpoint."""
    for seed in range(6):
        X, y, w = _exactly_fittable(seed + 200, 1.0 + seed, 0.0, weights)
        path = OptimalTreeRegressor(depth_budget=3, loss=loss).regularization_path(
            X, y, sample_weight=w
        )
        assert path[0].lambda_min == 0.0 and path[-1].lambda_max == np.inf
        assert path[0].loss == pytest.approx(0.0, abs=1e-9)
        assert path[-1].n_leaves == 1
        for a, b in zip(path[:-1], path[1:], strict=True):
            assert a.lambda_max == b.lambda_min and a.n_leaves > b.n_leaves
        for p in path:
            assert p.optimal
            mid = p.lambda_min + 0.5 * (
                (p.lambda_max if np.isfinite(p.lambda_max) else 2 * p.lambda_min + 1.0)
                - p.lambda_min
            )
            ref = exhaustive(X, y, w, mid, 3, loss)
            assert p.loss + mid * p.n_leaves == pytest.approx(ref, rel=1e-9, abs=1e-12)
