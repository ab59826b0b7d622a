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

__all__ = ["jax", "after_import", "lazy_names"]

_AFTER_IMPORT: list = []


def after_import(hook) -> None:
    """Run ``hook()`` once, right after the first attribute read through :data:`jax`
    (which imports JAX): settings that need JAX (``_config``'s compilation cache) wait
    until JAX is used, so a process that never uses it never imports it."""
    _AFTER_IMPORT.append(hook)


def lazy_names(package: str, table: dict[str, str], namespace: dict[str, Any]):
    """PEP 562 ``(__getattr__, __dir__)`` for a package whose public names load on first
    use: ``table`` maps each name to the module that defines it; a name found is stored in
    the package's ``namespace`` (its ``globals()``), so later look-ups skip the hook.

    Raises (from ``__getattr__``): AttributeError for a name that is not in ``table``.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__


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
