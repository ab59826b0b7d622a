"""Sorting of float vectors at the cost of an integer sort (the constant solver's hot spot).

On the CPU backend XLA sorts a single integer operand with its fast native path, but a
float sort (``jnp.sort`` compares with a total-order comparator that canonicalises ``-0``
and ``nan`` on every comparison) or any sort that carries a payload (``jnp.argsort``) runs
its generic comparator loop: measured on one core, float64, ``N = 1e5``: ``jnp.sort``
23-26 ms, ``jnp.argsort`` 29-32 ms, one int64 sort 5 ms. The general case of the constant
search (:mod:`~jaxsr.symbolic.constant`) sorts zeros, poles and forbidden values of every
candidate row, so these sorts were most of a search iteration.

* :func:`sort` maps the floats to int64 (int32) keys whose integer order is the float
  order (the IEEE bits, negatives with their magnitude bits flipped; ``nan`` made the
  positive quiet ``nan``, so it sorts last as in ``jnp.sort``), sorts the keys, maps back.
  The result holds the same values as ``jnp.sort(x)``, in the same order, except that
  ``-0.0`` sorts before ``0.0`` and subnormals are ordered by value (XLA's CPU comparisons
  read them as 0, so ``jnp.sort`` leaves them among the zeros in input order); every
  ``nan`` comes back as the canonical one.
* :func:`argsort` is ``jnp.argsort(x)``'s stable permutation, exactly (``-0.0``, ``0.0``
  and the subnormals being one key, as for ``jnp`` on the CPU): a 32-bit key and the
  index packed in one int64, one integer sort; a 64-bit key first by one integer sort of
  its top ``64 - b`` bits with the index in the low ``b = ceil(log2 n)`` bits, which is
  the stable order unless two different keys agree in those top bits (values within
  about ``2**(b - 52)`` of each other, relatively: one ulp apart, say), as the keys in
  that order then show; only then two stable passes of 32 bits (least significant half
  first; each an integer sort of ``half * 2**32 + position``) and a gather. Measured at
  ``N = 1e5``, one core: 6.5 ms, against 12.9 ms for the two passes always (18 ms when
  the check sends it to them; under ``jax.vmap`` the check's ``lax.cond`` becomes a select
  and both run, which the constant search's CPU path, one row at a time, avoids).

* :func:`argsort_below_inf` is :func:`argsort` where only the entries below ``+inf``
  matter (the constant search's candidate bounds: a few hundred finite among ``N``):
  when at most ``cap`` of them, they are moved to the front in index order (a prefix sum)
  and only those ``cap`` are sorted.

Off the CPU (GPU, TPU sort floats natively), or without 64-bit integers for the
packed keys, both call ``jnp``. Both take 1-D arrays and are jit- and vmap-able.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["sort", "argsort", "argsort_below_inf", "FAST_SORT"]

# ``None``: the integer-key sorts on the CPU backend only; True / False forces the choice
# (the tests compare both paths).
FAST_SORT: bool | None = None


def _fast(x) -> bool:
    if FAST_SORT is not None:
        return bool(FAST_SORT)
    return jax.default_backend() == "cpu" and jnp.issubdtype(x.dtype, jnp.floating)


def _int_type(dtype):
    size = jnp.dtype(dtype).itemsize
    if size == 8:
        return jnp.int64, 0x7FFFFFFFFFFFFFFF
    if size == 4:
        return jnp.int32, 0x7FFFFFFF
    return None, None


def _keys(x):
    """Integer keys, monotone in the float order, ``nan`` (either sign) largest."""
    it, mask = _int_type(x.dtype)
    x = jnp.where(jnp.isnan(x), jnp.asarray(jnp.nan, x.dtype), x)
    i = lax.bitcast_convert_type(x, it)
    return jnp.where(i < 0, i ^ jnp.asarray(mask, it), i)


def _floats(k, dtype):
    it, mask = _int_type(dtype)
    return lax.bitcast_convert_type(jnp.where(k < 0, k ^ jnp.asarray(mask, it), k), dtype)


def sort(x: jax.Array) -> jax.Array:
    """``jnp.sort(x)`` of a 1-D float array (module docstring): same values, same order."""
    x = jnp.asarray(x)
    if not _fast(x) or _int_type(x.dtype)[0] is None:
        return jnp.sort(x)
    return _floats(lax.sort(_keys(x)), x.dtype)


def argsort(x: jax.Array) -> jax.Array:
    """``jnp.argsort(x)`` (stable) of a 1-D float array, as int32 (module docstring)."""
    x = jnp.asarray(x)
    n = x.shape[0]
    if not _fast(x) or _int_type(x.dtype)[0] is None or not jax.config.jax_enable_x64 or n >= 2**31:
        return jnp.argsort(x).astype(jnp.int32)
    # -0.0 ties with 0.0, and so do subnormals (XLA's CPU comparisons read them as 0)
    tiny = jnp.finfo(x.dtype).tiny
    keys = _keys(jnp.where(jnp.abs(x) < tiny, jnp.zeros((), x.dtype), x))
    idx = jnp.arange(n, dtype=jnp.int64)
    low32 = jnp.int64(0xFFFFFFFF)
    if keys.dtype == jnp.int32:  # the key and the index in one int64: one sort
        return (lax.sort((keys.astype(jnp.int64) << 32) | idx) & low32).astype(jnp.int32)
    # a 64-bit key: first one sort of its top 64 - b bits with the index in the low b bits;
    # that is the stable order unless two different keys share their top bits (values
    # within about 2**(b - 52) of each other, relatively), which the keys in that order show
    b = max(1, (n - 1).bit_length())
    low_b = jnp.int64((1 << b) - 1)
    first = lax.sort(((keys >> b) << b) | idx) & low_b
    in_order = keys[first]
    exact = jnp.all(in_order[1:] >= in_order[:-1])

    def two_passes():  # 32 key bits each (least significant first), each one sort of
        # (32 key bits, position) packed in an int64
        u = keys ^ jnp.int64(-(2**63))  # the key's order as unsigned bits
        lo = (u & low32) - 2**31  # the low half as a signed int32 value, same order
        hi = ((u >> 32) & low32) - 2**31
        perm = lax.sort((lo << 32) | idx) & low32  # by (low half, index)
        pos = lax.sort((hi[perm] << 32) | idx) & low32  # then by high half, stably
        return perm[pos]

    return lax.cond(exact, lambda: first, two_passes).astype(jnp.int32)


def argsort_below_inf(x: jax.Array, cap: int) -> tuple[jax.Array, jax.Array]:
    """The entries of a 1-D float ``x`` below ``+inf`` in :func:`argsort` order.

    Args:
      x: ``(n,)`` float array.
      cap: static int; when at most ``cap`` entries are below ``+inf``, only ``cap``
        values are sorted (else all ``n``, as :func:`argsort`).

    Returns:
      ``(order, x_sorted)``, both ``(n,)``: with ``m`` the number of entries below
      ``+inf`` (``nan`` is not), ``order[:m]`` equals ``argsort(x)[:m]`` (the same stable
      permutation: by value, ties in index order) and ``x_sorted[:m] == x[order[:m]]``;
      after them ``x_sorted`` is not below ``+inf`` (``+inf`` or ``nan``) and ``order``
      holds indices of the other entries (``argsort``'s) or ``n`` (out of range, when
      only ``cap`` were sorted).

    The prefix route costs a prefix sum and a scatter of ``n`` plus a sort of ``cap``
    (``lax.cond`` on ``m``: on the CPU only, where a branch is a branch; elsewhere, where
    it is usually ``vmap``-ed into a select of both sides, :func:`argsort` of all).
    """
    x = jnp.asarray(x)
    n = x.shape[0]

    def full():
        order = argsort(x)
        return order, x[order]

    if n <= cap or not _fast(x):
        return full()
    below = x < jnp.inf

    def prefix():
        slot = jnp.where(below, jnp.cumsum(below, dtype=jnp.int32) - 1, cap)
        idx = (
            jnp.full((cap,), n, jnp.int32).at[slot].set(jnp.arange(n, dtype=jnp.int32), mode="drop")
        )
        vals = jnp.where(idx < n, x[jnp.minimum(idx, n - 1)], jnp.inf)
        o = argsort(vals)
        return (
            jnp.concatenate([idx[o], jnp.full((n - cap,), n, jnp.int32)]),
            jnp.concatenate([vals[o], jnp.full((n - cap,), jnp.inf, x.dtype)]),
        )

    return lax.cond(jnp.sum(below, dtype=jnp.int32) <= cap, prefix, full)
