"""The integer-key sorts of jaxsr.symbolic.sorting against jnp.sort / jnp.argsort."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr.symbolic import sorting


def _data(rng, n, dtype, ties):
    x = rng.normal(size=n).astype(dtype)
    if ties == "ulp":  # neighbours one ulp apart: keys that differ in their last bits only
        x[1::3] = np.nextafter(x[0::3][: x[1::3].size], np.inf)
        x[2::3] = np.nextafter(x[0::3][: x[2::3].size], -np.inf)
        rng.shuffle(x)
    elif ties:
        x = np.round(x * 3).astype(dtype)
    tiny = np.finfo(dtype).tiny
    for v in (np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-3 * tiny, -1e-3 * tiny):
        x[rng.uniform(size=n) < 0.04] = v
    return x


def _zeros_as_zero(v, dtype):
    v = np.array(v)
    v[np.abs(v) < np.finfo(dtype).tiny] = 0.0  # -0.0 and subnormals: one value
    return v


@jax.jit
def _both(x):
    X = jnp.stack([x, x[::-1]])  # under vmap too (the constant solver's rows)
    return (
        sorting.argsort(x),
        jnp.argsort(x),
        sorting.sort(x),
        jnp.sort(x),
        jax.vmap(sorting.argsort)(X),
        jax.vmap(jnp.argsort)(X),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sort_and_argsort_equal_jnp(dtype):
    old = sorting.FAST_SORT
    sorting.FAST_SORT = True  # the integer-key path on every backend
    try:
        rng = np.random.default_rng(3)
        for n, ties in ((2, True), (700, False), (700, True), (5000, True), (700, "ulp")):
            x = jnp.asarray(_data(rng, n, dtype, ties))
            arg, arg_jnp, got, want, varg, varg_jnp = (np.asarray(v) for v in _both(x))
            np.testing.assert_array_equal(arg, arg_jnp)
            np.testing.assert_array_equal(varg, varg_jnp)
            np.testing.assert_array_equal(_zeros_as_zero(got, dtype), _zeros_as_zero(want, dtype))
            fin = got[~np.isnan(got)]
            assert np.all(fin[:-1] <= fin[1:])  # ordered by value
    finally:
        sorting.FAST_SORT = old


@pytest.mark.parametrize("fast", [True, False])
def test_argsort_below_inf_is_the_argsort_of_the_finite_entries(fast):
    """argsort_below_inf: its first m entries (those below +inf) are argsort's, by the
    prefix route (at most cap below +inf) and by the full sort (more)."""
    old = sorting.FAST_SORT
    sorting.FAST_SORT = fast
    try:
        rng = np.random.default_rng(8)
        n, cap = 3000, 256
        run = jax.jit(lambda x: sorting.argsort_below_inf(x, cap))
        for n_below in (0, 1, 40, cap, cap + 1, 2000):
            x = np.full(n, np.inf)
            x[rng.uniform(size=n) < 0.05] = np.nan
            pos = rng.choice(n, n_below, replace=False)
            x[pos] = np.round(rng.normal(size=n_below) * 4)  # ties
            x[pos[: n_below // 8]] = -np.inf
            x[pos[n_below // 8 : n_below // 4]] = -0.0
            order, xs = (np.asarray(v) for v in run(jnp.asarray(x)))
            want = np.argsort(x, kind="stable")[:n_below]  # numpy: nan last, as jnp
            np.testing.assert_array_equal(order[:n_below], want)
            np.testing.assert_array_equal(xs[:n_below], x[want])
            assert not np.any(xs[n_below:] < np.inf)  # +inf or nan
            rest = order[n_below:]
            assert np.all((rest == n) | ~(x[np.minimum(rest, n - 1)] < np.inf))
    finally:
        sorting.FAST_SORT = old
