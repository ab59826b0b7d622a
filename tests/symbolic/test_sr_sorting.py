"""The integer-key sorts of jaxsr.symbolic.sorting against jnp.sort / jnp.argsort."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr.symbolic import sorting


def _data(rng, n, dtype, ties):
    x = rng.normal(size=n).astype(dtype)
    if ties:
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
    return (sorting.argsort(x), jnp.argsort(x), sorting.sort(x), jnp.sort(x),
            jax.vmap(sorting.argsort)(X), jax.vmap(jnp.argsort)(X))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sort_and_argsort_equal_jnp(dtype):
    old = sorting.FAST_SORT
    sorting.FAST_SORT = True  # the integer-key path on every backend
    try:
        rng = np.random.default_rng(3)
        for n, ties in ((2, True), (700, False), (700, True)):
            x = jnp.asarray(_data(rng, n, dtype, ties))
            arg, arg_jnp, got, want, varg, varg_jnp = (np.asarray(v) for v in _both(x))
            np.testing.assert_array_equal(arg, arg_jnp)
            np.testing.assert_array_equal(varg, varg_jnp)
            np.testing.assert_array_equal(_zeros_as_zero(got, dtype),
                                          _zeros_as_zero(want, dtype))
            fin = got[~np.isnan(got)]
            assert np.all(fin[:-1] <= fin[1:])  # ordered by value
    finally:
        sorting.FAST_SORT = old
