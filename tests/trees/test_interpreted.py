"""The numpy kernels the interpreted engine binds in place of compiled functions
(:mod:`jaxsr.trees.interpreted`): brute-force oracles, and the same floats as the compiled
kernels they replace."""

import numpy as np
import pytest

from jaxsr.trees import compiled, interpreted, kmeans
from jaxsr.trees import engine as E
from jaxsr.trees.losses import absolute_loss, absolute_losses, absolute_split_losses


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
            assert lt[b] == pytest.approx(_abs_oracle(y[member[:, b]], w[member[:, b]]),
                                          rel=1e-12, abs=1e-12)
            assert lf[b] == pytest.approx(_abs_oracle(y[~member[:, b]], w[~member[:, b]]),
                                          rel=1e-12, abs=1e-12)
        assert lf[0] == 0.0
        both = absolute_losses(y, np.hstack([w[:, None] * member, w[:, None] * ~member]))[0]
        np.testing.assert_array_equal(np.concatenate([lt, lf]), both)
        np.testing.assert_array_equal(absolute_split_losses(y, w, member, unit=unit)[0], lt)
        assert absolute_loss(y, w) == pytest.approx(_abs_oracle(y, w), rel=1e-12, abs=1e-12)
    assert absolute_loss(np.zeros(0), np.zeros(0)) == 0.0
    lt, lf = absolute_split_losses(np.zeros(0), np.zeros(0), np.zeros((0, 3), bool))
    assert lt.tolist() == lf.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("unit", [True, False])
def test_absolute_twins_give_the_compiled_floats(unit):
    """The interpreted engine's absolute leaf and split losses (a support's samples,
    gathered from the class mask) are the compiled kernels' floats, bit for bit: the same
    medians and the sums in sample order."""
    rng = np.random.default_rng(5 + unit)
    for _ in range(200):
        U, M, n = int(rng.integers(1, 30)), int(rng.integers(1, 8)), int(rng.integers(1, 90))
        X = (rng.random((U, M)) < rng.uniform(0.1, 0.9)).astype(np.uint8)
        cls_s = rng.integers(0, U, size=n).astype(np.int64)
        ys, ws = _samples(rng, n, unit)
        mask = rng.random(U) < rng.uniform(0.1, 1.0)
        nk = int(rng.integers(1, M + 1))
        F = rng.permutation(M)[:nk].astype(np.int64)
        want = np.full((2, M), np.nan)
        got = np.full((2, M), np.nan)
        compiled.absolute_split_losses(mask, ys, ws, cls_s, X, F, nk, want[0], want[1])
        interpreted._split_absolute(mask, ys, ws, cls_s, X, F, nk, got[0], got[1])
        np.testing.assert_array_equal(got[:, :nk], want[:, :nk])
        assert (interpreted._leaf_absolute(mask, ys, ws, cls_s)
                == compiled.absolute_leaf_loss(mask, ys, ws, cls_s))


def test_kmedians_table_equals_the_cost_matrix_and_brute_force():
    """The host k-medians table is the cost matrix of the JAX layer's formula (numpy) to
    the bit, and each entry the least absolute loss of its group; the host DP built on it
    first (few items) equals the one on divide-and-conquer rows."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 17, 60, 130):
        v = np.sort(np.round(rng.normal(size=n) * 3, 1))
        w = rng.integers(0, 4, size=n).astype(float)
        t = kmeans._kmedians_table_np(v, w)
        np.testing.assert_array_equal(t, kmeans._kmedians_cost(np, v, w))
        for j, i in ((0, n - 1), (n // 2, n - 1), (0, n // 3)):
            assert t[j, i] == pytest.approx(_abs_oracle(v[j:i + 1], w[j:i + 1]), abs=1e-12)
        rows = kmeans._dp_host(kmeans._kmedians_cost_fn(v, w), n, 6, None)
        np.testing.assert_allclose(kmeans.kmedians_losses_np(v, w, 6), rows,
                                   rtol=1e-12, atol=1e-12)


def _memo_with_collisions(rng, nw, entries, slots):
    """A memo filled by the compiled insert, its table only ``slots`` long (mostly
    occupied: linear probing runs), with several levels per support."""
    memo = E._new_memo(entries, nw)._replace(table=np.full(slots, -1, np.int64))
    ctr = E._new_counters()
    supports = rng.integers(0, 2**63, size=(entries // 2, nw), dtype=np.uint64)
    for k in range(entries):
        E.insert(memo, ctr, supports[k % supports.shape[0]], np.int64(2 + k % 3), 0.1 * k,
                 1.0, np.int64(-1), np.int64(0), np.int64(-1), np.inf)
    return memo, supports


def test_memo_lookups_of_all_children_equal_the_compiled_lookup():
    """The interpreted memo lookups (Python-integer hash and probe; every child's lookup
    at once, the linear-probing ones one by one) find the compiled engine's entry of each
    support and level, and -1 for the ones it does not hold."""
    rng = np.random.default_rng(8)
    for nw in (1, 3):
        memo, supports = _memo_with_collisions(rng, nw, 40, 64)
        absent = rng.integers(0, 2**63, size=(30, nw), dtype=np.uint64)
        words = np.concatenate([supports, supports, absent])
        lev = np.concatenate([np.full(supports.shape[0], 2), rng.integers(2, 6, supports.shape[0]),
                              np.full(30, 2)]).astype(np.int64)
        want = np.array([E.lookup(memo, words[r], lev[r]) for r in range(words.shape[0])])
        assert (want >= 0).sum() > supports.shape[0]  # found, at several levels
        assert (want < 0).sum() >= 30
        np.testing.assert_array_equal(interpreted._find(memo, words, lev), want)
        for r in range(words.shape[0]):
            h = np.uint64(E._hash(words[r]))  # numba returns a Python int
            assert interpreted._hash(words[r]) == h
            assert interpreted._hashes(words[r:r + 1])[0] == h
            assert interpreted._probe(memo, words[r], h) == E._probe(memo, words[r], h)
