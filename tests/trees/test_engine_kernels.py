"""The engine's kernels on their own (:mod:`jaxsr.trees.engine`): the absolute task's
leaf and split losses, the k-medians / k-means DP and the terminal solver against
brute-force and numpy oracles."""

import numpy as np
import oracles
import pytest
from oracles import absolute_loss, absolute_split_losses  # same folder (on sys.path)

from jaxsr.trees import engine, kmeans
from jaxsr.trees.losses import absolute_losses


def _abs_oracle(y, w):
    """The least ``sum w |y - c|`` over every constant ``c`` (a weighted median is among
    the samples' targets)."""
    if y.size == 0:
        return 0.0
    return min(float(np.sum(w * np.abs(y - c))) for c in y)


def _samples(rng, n, unit):
    y = np.sort(np.round(rng.normal(size=n), int(rng.integers(0, 3))))  # ties too
    w = np.ones(n) if unit else rng.choice([0.0, 0.5, 1.0, 3.0], size=n)
    return y, w


@pytest.mark.parametrize("unit", [True, False])
def test_absolute_kernels_equal_brute_force(unit):
    """absolute_loss and absolute_split_losses (both children of every split, unit
    weights read from the members' positions) are the least absolute loss of each set,
    and the same floats as absolute_losses of the 2B children's columns; empty children
    included."""
    rng = np.random.default_rng(11 + unit)
    for _ in range(150):
        n = int(rng.integers(1, 40))
        B = int(rng.integers(1, 6))
        y, w = _samples(rng, n, unit)
        member = rng.random((n, B)) < rng.uniform(0.0, 1.0)
        member[:, 0] = True  # a split with an empty false child
        lt, lf = absolute_split_losses(y, w, member)
        for b in range(B):
            assert lt[b] == pytest.approx(
                _abs_oracle(y[member[:, b]], w[member[:, b]]), rel=1e-12, abs=1e-12
            )
            assert lf[b] == pytest.approx(
                _abs_oracle(y[~member[:, b]], w[~member[:, b]]), rel=1e-12, abs=1e-12
            )
        assert lf[0] == 0.0
        both = absolute_losses(y, np.hstack([w[:, None] * member, w[:, None] * ~member]))[0]
        np.testing.assert_array_equal(np.concatenate([lt, lf]), both)
        np.testing.assert_array_equal(absolute_split_losses(y, w, member, unit=unit)[0], lt)
        assert absolute_loss(y, w) == pytest.approx(_abs_oracle(y, w), rel=1e-12, abs=1e-12)
    assert absolute_loss(np.zeros(0), np.zeros(0)) == 0.0
    lt, lf = absolute_split_losses(np.zeros(0), np.zeros(0), np.zeros((0, 3), bool))
    assert lt.tolist() == lf.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("unit", [True, False])
def test_engine_absolute_losses_equal_brute_force_and_numpy(unit):
    """The absolute task's leaf and split losses (a support's samples gathered from the
    class mask, in y order) are the least absolute loss of each set, and the floats of the
    numpy kernels (the same medians and the sums in sample order)."""
    rng = np.random.default_rng(5 + unit)
    for _ in range(200):
        U, M, n = int(rng.integers(1, 30)), int(rng.integers(1, 8)), int(rng.integers(1, 90))
        X = rng.random((U, M)) < rng.uniform(0.1, 0.9)
        cls_s = rng.integers(0, U, size=n).astype(np.int64)
        ys, ws = _samples(rng, n, unit)
        core = engine._core.make_problem(
            X.astype(np.uint8),
            engine.pack(X.T),
            np.ones(U),
            np.zeros(U),
            np.zeros(U),
            np.ones(U),
            np.arange(U),
            ys,
            ws,
            cls_s,
            0.01,
            1.0,
            1.0,
            2.0,
            2e4,
            0,
            True,
            True,
            True,
            True,
        )
        mask = rng.random(U) < rng.uniform(0.1, 1.0)
        nk = int(rng.integers(1, M + 1))
        F = rng.permutation(M)[:nk].astype(np.int64)
        lt, lf = engine.absolute_split_losses(core, mask, F)
        sm = mask[cls_s]
        member = X[cls_s[sm]][:, F]
        np.testing.assert_array_equal(
            np.concatenate([lt, lf]), np.concatenate(absolute_split_losses(ys[sm], ws[sm], member))
        )
        for q in range(nk):
            assert lt[q] == pytest.approx(
                _abs_oracle(ys[sm][member[:, q]], ws[sm][member[:, q]]), abs=1e-12
            )
        leaf = engine.leaf_loss(core, mask)
        assert leaf == absolute_loss(ys[sm], ws[sm])
        assert leaf == pytest.approx(_abs_oracle(ys[sm], ws[sm]), rel=1e-12, abs=1e-12)


def test_kmedians_table_equals_the_cost_matrix_and_brute_force():
    """The host k-medians table is the cost matrix of the JAX layer's formula (numpy) to
    the bit, and each entry the least absolute loss of its group; the host DP built on it
    first (few items) equals the one on divide-and-conquer rows."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 17, 60, 130):
        v = np.sort(np.round(rng.normal(size=n) * 3, 1))
        w = rng.integers(0, 4, size=n).astype(float)
        t = oracles._kmedians_table_np(v, w)
        np.testing.assert_array_equal(t, kmeans._kmedians_cost(np, v, w))
        for j, i in ((0, n - 1), (n // 2, n - 1), (0, n // 3)):
            assert t[j, i] == pytest.approx(_abs_oracle(v[j : i + 1], w[j : i + 1]), abs=1e-12)
        rows = oracles._dp_host(oracles._kmedians_cost_fn(v, w), n, 6, None)
        np.testing.assert_allclose(
            oracles.kmedians_losses_np(v, w, 6), rows, rtol=1e-12, atol=1e-12
        )


def test_engine_kmeans_and_kmedians_dp_equal_numpy():
    """The engine's DP (each row by divide and conquer) equals the numpy one (a table or
    rows), with and without the early stop of Theorem 3.7, for 0..130 items with zero
    weights, and stops where the numpy one stops."""
    rng = np.random.default_rng(8)
    for n in (1, 2, 3, 5, 17, 60, 130):
        v = np.sort(np.round(rng.normal(size=n) * 3, 1))
        w = rng.integers(0, 4, size=n).astype(float)
        q = w * v * v + rng.random(n) * (w > 0)
        for K in (1, 2, 6, 40):
            for gain in (None, 0.0, 0.5, 5.0):
                np.testing.assert_allclose(
                    engine.kmeans_losses(w, w * v, q, K, gain),
                    oracles.kmeans_losses_np(w, w * v, q, K, gain),
                    rtol=1e-10,
                    atol=1e-12,
                )
                np.testing.assert_allclose(
                    engine.kmedians_losses(v, w, K, gain),
                    oracles.kmedians_losses_np(v, w, K, gain),
                    rtol=1e-10,
                    atol=1e-12,
                )
    assert engine.kmeans_losses(np.zeros(0), np.zeros(0), np.zeros(0), 3).tolist() == [0.0]


def _sse(st, rows):
    s = st[rows].sum(0)
    return max(s[2] - s[1] ** 2 / max(s[0], np.finfo(float).tiny), 0.0)


def _best_tree(X, st, rows, lev, lamn, m1):
    """Brute force: the least cost of a tree with at most ``lev`` split levels on rows."""
    c = _sse(st, rows) + lamn
    if lev == 0:
        return c
    for f in range(X.shape[1]):
        t, e = rows & (X[:, f] == 1), rows & (X[:, f] == 0)
        if st[t, 3].sum() >= m1 and st[e, 3].sum() >= m1:
            c = min(
                c, _best_tree(X, st, t, lev - 1, lamn, m1) + _best_tree(X, st, e, lev - 1, lamn, m1)
            )
    return c


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_engine_terminal_solver_equals_brute_force(levels):
    """The terminal solver's cost per root feature is the least cost of every tree with
    at most ``levels`` split levels whose root splits there (brute force over the
    features of each level), min_samples_leaf 1 and 2."""
    rng = np.random.default_rng(20 + levels)
    for _ in range(6):
        U, M = int(rng.integers(2, 12)), int(rng.integers(1, 5))
        X = (rng.random((U, M)) < 0.5).astype(np.uint8)
        W = rng.integers(0, 3, size=U).astype(float)
        yv = rng.normal(size=U)
        st = np.column_stack([W, W * yv, W * yv * yv + rng.random(U) * (W > 0), np.maximum(W, 1.0)])
        lamn = float(rng.choice([0.0, 0.1, 1.0]))
        for m1 in (1.0, 2.0):
            leaf, split = engine.subtree_splits(X, st, levels, lamn, m1)

            allr = np.ones(U, bool)
            assert leaf == pytest.approx(_sse(st, allr) + lamn, rel=1e-12, abs=1e-12)
            for f in range(M):
                t, e = X[:, f] == 1, X[:, f] == 0
                if st[t, 3].sum() >= m1 and st[e, 3].sum() >= m1:
                    ref = _best_tree(X, st, t, levels - 1, lamn, m1) + _best_tree(
                        X, st, e, levels - 1, lamn, m1
                    )
                    assert split[f] == pytest.approx(ref, rel=1e-9, abs=1e-12)
                else:
                    assert split[f] == np.inf
