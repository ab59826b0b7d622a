"""Leaf statistics and the lower bounds: exact values, and validity against exhaustive search."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_search import exhaustive  # same folder (pytest prepends it to sys.path)

from jaxsr.trees import kmeans_lower_bound, leaf_statistics
from jaxsr.trees.bounds import (
    STAT_E,
    STAT_N,
    equivalent_points_bound,
    leaf_cost,
    squared_loss,
)
from jaxsr.trees.search import OptimalTreeSearch

_jit_kmeans_lb = jax.jit(kmeans_lower_bound, static_argnums=5)


def _classes(seed, U=12, M=4):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(U, M)).astype(float)
    W = rng.integers(1, 4, size=U).astype(float)
    mean = rng.normal(size=U) * 2
    S = W * mean
    Q = W * mean**2 + rng.random(U)
    E = Q - S**2 / W
    st = np.column_stack([W, S, Q, E, W, np.ones(U)])
    return X, st


def test_leaf_statistics_jit_vmap_against_numpy():
    X, st = _classes(0)
    masks = np.random.default_rng(1).random((5, X.shape[0])) < 0.6
    f = jax.jit(jax.vmap(leaf_statistics, in_axes=(None, None, 0)))
    true_b, tot_b = f(jnp.asarray(X), jnp.asarray(st), jnp.asarray(masks))
    for b, m in enumerate(masks):
        ref_true = X[m].T @ st[m]
        np.testing.assert_allclose(np.asarray(true_b[b]), ref_true, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(np.asarray(tot_b[b]), st[m].sum(0), rtol=1e-13, atol=1e-13)
        t1, tt = leaf_statistics(X, st, m)  # un-jitted
        np.testing.assert_allclose(np.asarray(t1), ref_true, rtol=1e-13, atol=1e-13)


def test_leaf_cost_and_equivalent_bound_values():
    X, st = _classes(2)
    tot = st.sum(0)
    sse = tot[2] - tot[1] ** 2 / tot[0]
    assert float(squared_loss(tot)) == pytest.approx(sse, rel=1e-12)
    assert float(leaf_cost(tot, 0.1, 5.0)) == pytest.approx(sse / 5.0 + 0.1, rel=1e-12)
    assert float(leaf_cost(tot, 0.1, 5.0, min_samples_leaf=int(tot[STAT_N]) + 1)) == np.inf
    assert float(equivalent_points_bound(tot, 0.1, 5.0)) == pytest.approx(
        tot[STAT_E] / 5.0 + 0.2, rel=1e-12
    )
    assert float(equivalent_points_bound(tot, 0.1, 5.0, lookahead=False)) == pytest.approx(
        tot[STAT_E] / 5.0 + 0.1, rel=1e-12
    )
    # the within-class loss never exceeds the leaf loss
    assert tot[STAT_E] <= sse


@pytest.mark.parametrize("seed", range(6))
def test_bounds_never_exceed_the_optimum(seed):
    """Theorems 3.3 and 3.5 on random problems: every bound <= exhaustive optimum, and the
    k-means bound (Cmax = 2^(d-1)) dominates the equivalent-points bound."""
    rng = np.random.default_rng(seed)
    n, M, depth, lam = 30, 4, 4, 0.01
    X = rng.integers(0, 2, size=(n, M))
    y = rng.normal(size=n) + 3 * X[:, 0] * X[:, 1]
    w = np.ones(n)
    opt = exhaustive(X, y, w, lam, depth)
    s = OptimalTreeSearch(X, y, w, regularization=lam, depth_budget=depth).problem
    st = s.stats
    pad = 32 - s.U  # fixed shapes: one compilation for all seeds (padding is masked out)
    W, S, Q = (np.concatenate([st[s.korder, j], np.zeros(pad)]) for j in range(3))
    mask = np.arange(32) < s.U
    km = float(
        _jit_kmeans_lb(
            jnp.asarray(W),
            jnp.asarray(S),
            jnp.asarray(Q),
            jnp.asarray(mask),
            lam,
            2 ** (depth - 1),
            s.norm,
        )
    )
    eq = float(st[:, STAT_E].sum() / s.norm + lam)
    assert km <= opt + 1e-12
    assert eq <= km + 1e-12
    # and the search's root bound before any expansion is valid too
    r = OptimalTreeSearch(X, y, w, regularization=lam, depth_budget=depth, time_limit=0).run()
    assert r.lower_bound <= opt + 1e-12


def test_kmeans_bound_from_a_truncated_table():
    """The k-means bound the search calls (Theorems 3.5 and 3.7): from the table cut at the
    first gain <= lambda * norm it equals the minimum over the full table of the trees with
    at least ``min_leaves`` leaves where the cut table reaches that far, and is below it
    (valid) where it does not (convex extrapolation)."""
    from oracles import kmeans_losses_np

    from jaxsr.trees.bounds import kmeans_bound

    rng = np.random.default_rng(3)
    checked_exact = checked_below = 0
    for trial in range(12):
        n = int(rng.integers(2, 30))
        W = rng.integers(1, 4, size=n).astype(float)
        m = np.sort(rng.normal(size=n) * (1 + trial))
        S, Q = W * m, W * m * m + rng.random(n) * 0.1
        sst = Q.sum() - S.sum() ** 2 / W.sum()
        lam = [0.001, 0.01, 0.05][trial % 3]
        full = kmeans_losses_np(W, S, Q, n, None)
        cut = kmeans_losses_np(W, S, Q, n, lam * sst)
        for k in range(1, 8):
            C = np.arange(k, n + 1)
            want = float(np.min(full[k - 1 :] / sst + lam * C)) if k <= n else np.inf
            got = kmeans_bound(cut, lam, sst, k)
            if k <= cut.shape[0]:
                assert got == pytest.approx(want, rel=1e-12)
                checked_exact += 1
            else:
                assert got <= want * (1 + 1e-12)
                checked_below += 1
    assert checked_exact > 20 and checked_below > 10
