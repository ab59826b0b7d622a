"""The k-means / k-medians dynamic programmes against brute force over all partitions."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import oracles  # same folder (pytest prepends it to sys.path)
import pytest

from jaxsr.trees import engine, kmeans


def _partitions(n):
    """All set partitions of range(n) as restricted growth strings (Bell(n) of them)."""
    if n == 0:
        yield ()
        return

    def rec(prefix, k):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for b in range(k + 1):
            yield from rec(prefix + [b], max(k, b + 1))

    yield from rec([0], 1)


@functools.cache
def _partitions_array(n):
    return np.array(list(_partitions(n)), dtype=int).reshape(-1, n)


def _brute(cost_of_group, n, K):
    """min over all partitions into at most k groups of the summed group cost, k=1..K."""
    if n == 0:
        return np.zeros(K)
    labels = _partitions_array(n)  # (Bell(n), n)
    n_groups = labels.max(axis=1) + 1
    # cost of every subset, indexed by its bitmask
    subset_cost = np.zeros(1 << n)
    for bits in range(1, 1 << n):
        subset_cost[bits] = cost_of_group(np.flatnonzero([(bits >> i) & 1 for i in range(n)]))
    total = np.zeros(labels.shape[0])
    for b in range(n):
        bits = ((labels == b) * (1 << np.arange(n))).sum(axis=1)
        total += np.where(n_groups > b, subset_cost[bits], 0.0)
    best = np.full(K, np.inf)
    for k in range(1, K + 1):
        sel = n_groups <= k
        best[k - 1] = total[sel].min()
    return best


def _problem(n, seed):
    rng = np.random.default_rng(seed)
    v = np.sort(np.round(rng.normal(size=n) * 5, 2))
    if n >= 3:
        v[1] = v[2]  # ties
    w = rng.integers(1, 5, size=n).astype(float)
    return v, w


SIZES = list(range(10))
PAD = 9  # jitted calls pad every size to 9 items (zero weight) so they compile once


def _padded(v, w):
    n = v.shape[0]
    fill = v[-1] if n else 0.0
    vp = np.concatenate([v, np.full(PAD - n, fill)])
    wp = np.concatenate([w, np.zeros(PAD - n)])
    return jnp.asarray(vp), jnp.asarray(wp)


def _extend(ref):
    return np.concatenate([ref, np.full(PAD - ref.shape[0], ref[-1])])


_jit_kmeans = jax.jit(kmeans.weighted_kmeans, static_argnums=2)
_jit_kmedians = jax.jit(kmeans.weighted_kmedians, static_argnums=2)


@pytest.mark.parametrize("n", SIZES)
def test_weighted_kmeans_equals_brute_force(n):
    v, w = _problem(n, n)
    K = max(n, 1)

    def group_cost(idx):
        m = np.dot(w[idx], v[idx]) / w[idx].sum()
        return float(np.dot(w[idx], (v[idx] - m) ** 2))

    ref = _brute(group_cost, n, K)
    got_jit = np.asarray(_jit_kmeans(*_padded(v, w), PAD))
    host = oracles.kmeans_losses_np(w, w * v, w * v * v, K)  # the same code on numpy
    if n in (0, 1, 4, 9):  # op-by-op JAX compiles every primitive per shape: a few sizes
        got = np.asarray(kmeans.weighted_kmeans(jnp.asarray(v), jnp.asarray(w), K))
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(got_jit, _extend(ref), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(host, ref[: host.shape[0]], rtol=1e-10, atol=1e-9)
    assert np.all(np.diff(ref) <= 1e-12)  # more clusters never hurt


@pytest.mark.parametrize("n", SIZES)
def test_constrained_kmeans_equals_brute_force_over_samples(n):
    """Classes with internal spread (Definition 3.2): brute force over the samples themselves,
    with all samples of a class kept in one cluster, equals the DP on class statistics."""
    rng = np.random.default_rng(100 + n)
    sizes = rng.integers(1, 4, size=n)
    samples = [np.round(rng.normal(size=s) * 3 + rng.normal() * 4, 2) for s in sizes]
    W = np.array([s.size for s in samples], dtype=float)
    S = np.array([s.sum() for s in samples])
    Q = np.array([np.sum(s * s) for s in samples])
    order = np.argsort(np.where(W > 0, S / W, 0.0), kind="stable")
    W, S, Q = W[order], S[order], Q[order]
    samples = [samples[i] for i in order]
    K = max(n, 1)

    def group_cost(idx):
        ys = np.concatenate([samples[i] for i in idx])
        return float(np.sum((ys - ys.mean()) ** 2))

    ref = _brute(group_cost, n, K)
    v = S / np.maximum(W, 1)
    vp, wp = _padded(v, W)
    qp = jnp.asarray(np.concatenate([Q, np.zeros(PAD - n)]))
    got = np.asarray(_jit_kmeans(vp, wp, PAD, sq_sums=qp))
    np.testing.assert_allclose(got, _extend(ref), rtol=1e-10, atol=1e-9)
    # the correction term of Algorithm 1: constrained = weighted k-means + sum y^2 - sum W v^2
    plain = np.asarray(_jit_kmeans(vp, wp, PAD))
    np.testing.assert_allclose(
        plain + (Q.sum() - np.dot(W, v * v)), _extend(ref), rtol=1e-10, atol=1e-9
    )


@pytest.mark.parametrize("n", SIZES)
def test_weighted_kmedians_equals_brute_force(n):
    v, w = _problem(n, 50 + n)
    K = max(n, 1)

    def group_cost(idx):
        return float(min(np.dot(w[idx], np.abs(v[idx] - c)) for c in v[idx]))

    ref = _brute(group_cost, n, K)
    got_jit = np.asarray(_jit_kmedians(*_padded(v, w), PAD))
    host = oracles.kmedians_losses_np(v, w, K)  # the same code on numpy, not jitted
    if n in (0, 3, 9):  # op-by-op JAX compiles every primitive per shape: a few sizes only
        got = np.asarray(kmeans.weighted_kmedians(jnp.asarray(v), jnp.asarray(w), K))
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(got_jit, _extend(ref), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(host, ref[: host.shape[0]], rtol=1e-10, atol=1e-9)


def test_early_stop_gives_the_same_penalised_minimum():
    """Theorem 3.7: stopping at the first gain <= lambda loses nothing."""
    rng = np.random.default_rng(7)
    v = np.sort(rng.normal(size=40) * 10)
    w = rng.integers(1, 6, size=40).astype(float)
    full = oracles.kmeans_losses_np(w, w * v, w * v * v, 40)
    for lam in [0.0, 1.0, 10.0, 100.0, 1e4]:
        part = oracles.kmeans_losses_np(w, w * v, w * v * v, 40, stop_gain=lam)
        for cmin in (1, 2):
            assert kmeans.penalized_minimum(part, lam, 1.0, cmin) == pytest.approx(
                kmeans.penalized_minimum(full, lam, 1.0, cmin), rel=1e-12
            )
    # convexity of the loss in k (Theorem 3.7)
    assert np.all(np.diff(full, 2) >= -1e-9)


def test_kmeans_lower_bound_masked_vmap_matches_gathered():
    """Masking a class out equals removing it; vmap over a batch of masks equals a loop."""
    rng = np.random.default_rng(3)
    U = 9
    W = rng.integers(1, 5, size=U).astype(float)
    S = rng.normal(size=U) * W
    Q = S * S / W + rng.random(U)
    order = np.argsort(S / W)
    W, S, Q = W[order], S[order], Q[order]
    masks = rng.integers(0, 2, size=(6, U)).astype(bool)
    masks[0] = False
    masks[1] = True
    lam, norm = 0.05, float(Q.sum() - S.sum() ** 2 / W.sum())
    batched = jax.jit(
        jax.vmap(kmeans.kmeans_lower_bound, in_axes=(None, None, None, 0, None, None, None, None)),
        static_argnums=(5, 7),
    )(jnp.asarray(W), jnp.asarray(S), jnp.asarray(Q), jnp.asarray(masks), lam, 4, norm, 2)
    for m, got in zip(masks, np.asarray(batched), strict=True):
        losses = oracles.kmeans_losses_np(W[m], S[m], Q[m], 4)
        if m.sum() == 0:
            losses = np.zeros(4)
        losses = np.concatenate([losses, np.full(4 - losses.shape[0], losses[-1])])
        expect = kmeans.penalized_minimum(losses, lam, norm, 2)
        assert float(got) == pytest.approx(float(expect), rel=1e-12, abs=1e-12)


def test_docstring_example():
    got = kmeans.weighted_kmeans(jnp.array([0.0, 1.0, 10.0]), jnp.array([1.0, 1.0, 2.0]), 3)
    np.testing.assert_allclose(np.asarray(got), [90.75, 0.5, 0.0], atol=1e-12)


_table_kmeans = jax.jit(
    lambda w, s, q, K: kmeans.kmeans_dp(kmeans.kmeans_cost_matrix(w, s, q), K), static_argnums=3
)
_table_kmedians = jax.jit(
    lambda v, w, K: kmeans.kmeans_dp(kmeans.kmedians_cost_matrix(v, w), K), static_argnums=2
)


@pytest.mark.parametrize("n", [2, 17, 150, 450])
def test_host_divide_and_conquer_equals_full_table(n):
    """The host rows (divide and conquer over monotone split points, O(n) memory; numpy and
    the engine's) equal the full-table DP of the JAX layer, with zero weights (masked items)
    and class spread."""
    rng = np.random.default_rng(n)
    v = np.sort(np.round(rng.normal(size=n) * 3, 1))
    w = rng.integers(0, 4, size=n).astype(float)
    q = w * v * v + rng.random(n) * (w > 0)
    K = min(8, n)
    table = np.asarray(_table_kmeans(w, w * v, q, K))
    np.testing.assert_allclose(
        oracles.kmeans_losses_np(w, w * v, q, K), table, rtol=1e-10, atol=1e-9
    )
    # the engine's DP, without and with the early stop of Theorem 3.7
    np.testing.assert_allclose(engine.kmeans_losses(w, w * v, q, K), table, rtol=1e-10, atol=1e-9)
    for gain in (0.5, 5.0):
        host = oracles.kmeans_losses_np(w, w * v, q, K, gain)
        np.testing.assert_allclose(
            engine.kmeans_losses(w, w * v, q, K, gain), host, rtol=1e-10, atol=1e-9
        )
    table = np.asarray(_table_kmedians(v, w, K))
    np.testing.assert_allclose(oracles.kmedians_losses_np(v, w, K), table, rtol=1e-10, atol=1e-9)
