"""Numeric configuration shared by both methods: dtypes and the scoped float64 context.

jaxsr never flips ``jax_enable_x64`` globally behind the user's back. Estimators take a
``dtype`` (float64 by default, float32 as an option) and run their numeric passes inside
:func:`precision`, a scoped ``jax.enable_x64`` context, so the user's own JAX code keeps its
settings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["resolve_dtype", "precision", "DEFAULT_DTYPE"]

DEFAULT_DTYPE = np.dtype(np.float64)
_ALLOWED = (np.dtype(np.float64), np.dtype(np.float32))


def resolve_dtype(dtype) -> np.dtype:
    """Return the numpy dtype for a user's ``dtype`` option.

    Args:
      dtype: ``None`` (float64), ``"float64"``, ``"float32"``, ``np.float64``, ``np.float32``
        or ``jnp.float64`` / ``jnp.float32``.

    Returns:
      ``np.dtype('float64')`` or ``np.dtype('float32')``.

    Raises:
      ValueError: for any other dtype (integers, float16, complex, ...).
    """
    if dtype is None:
        return DEFAULT_DTYPE
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise ValueError(f"dtype must be float64 or float32, got {dtype!r}") from err
    if dt not in _ALLOWED:
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    return dt


@contextlib.contextmanager
def precision(dtype=None) -> Iterator[np.dtype]:
    """Scoped numeric context: float64 enabled inside for ``dtype=float64``.

    Yields the resolved dtype. Inside the block, ``jnp.asarray(x, dtype)`` really has that
    dtype; the global ``jax_enable_x64`` flag is restored on exit.

    Raises:
      ValueError: if float64 is asked for and this JAX backend cannot provide it.
    """
    dt = resolve_dtype(dtype)
    with jax.enable_x64(dt == np.float64 or bool(jax.config.jax_enable_x64)):
        if dt == np.float64 and jnp.zeros((), dt).dtype != np.float64:
            raise ValueError(
                "float64 was requested but this JAX backend does not provide it; "
                "pass dtype='float32'"
            )
        yield dt
