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

__all__ = ["jax", "after_import"]

_AFTER_IMPORT: list = []


def after_import(hook) -> None:
    """Run ``hook()`` once, right after the first attribute read through :data:`jax`
    (which imports JAX): settings that need JAX (``_config``'s compilation cache) wait
    until JAX is used, so a process that never uses it never imports it."""
    _AFTER_IMPORT.append(hook)


class _LazyModule:
    """A module imported on the first read of one of its attributes."""

    def __init__(self, name: str):
        self.__dict__["_name"] = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        while _AFTER_IMPORT:
            _AFTER_IMPORT.pop(0)()
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


if TYPE_CHECKING:
    import jax as jax
else:
    jax = _LazyModule("jax")
