"""JAX, imported on its first use.

The modules that every estimator loads (``_config``, ``_compilation_cache``) refer to
``jax`` through :data:`jax` below, so importing them costs nothing until JAX is needed: a
saved tree loads and predicts with numpy alone (``jaxsr.io.load_model``, ``jaxsr predict``),
and ``import jaxsr`` stays fast. The first attribute read (``jax.jit``, ``jax.Array``, ...)
imports JAX and every later one reads JAX's module directly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["jax"]


class _LazyModule:
    """A module imported on the first read of one of its attributes."""

    def __init__(self, name: str):
        self.__dict__["_name"] = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


if TYPE_CHECKING:
    import jax as jax
else:
    jax = _LazyModule("jax")
