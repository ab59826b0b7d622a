"""jaxsr: interpretable regression on accelerators.

Two methods, both batched and jitted in JAX:

* :class:`SymbolicRegressor` -- deterministic symbolic regression (DoME): one closed-form
  expression over ``+ - * /``, variables and constants, grown greedily.
* :class:`OptimalTreeRegressor` -- optimal sparse regression trees (OSRT): the provably
  optimal tree for ``normalised loss + lambda * leaves``, with its certificate.

The functional layers (pure kernels for research with ``jax.vmap``) live in
:mod:`jaxsr.symbolic` and :mod:`jaxsr.trees`.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_names

__version__ = "0.1.0"

# The public names are imported on first use (PEP 562), so that ``import jaxsr`` and the
# ``jaxsr`` command's ``--help`` do not load JAX; ``jaxsr.SymbolicRegressor`` and
# ``from jaxsr import SymbolicRegressor`` work as usual.
_LAZY = {
    "SymbolicRegressor": "jaxsr.symbolic",
    "Expression": "jaxsr.symbolic",
    "ExtrapolationWarning": "jaxsr.symbolic",
    "PrecisionWarning": "jaxsr._validation",
    "ConcurrentFitError": "jaxsr._base",
    "ForkedAfterJAXError": "jaxsr._fork",
    "OptimalTreeRegressor": "jaxsr.trees",
    "OptimalTreeRegressorCV": "jaxsr.trees",
    "Tree": "jaxsr.trees",
    "Binarizer": "jaxsr.trees",
    "enable_compilation_cache": "jaxsr._config",
    "fast_compilation": "jaxsr._config",
}

__all__ = [
    "__version__",
    "SymbolicRegressor",
    "Expression",
    "ExtrapolationWarning",
    "PrecisionWarning",
    "ConcurrentFitError",
    "ForkedAfterJAXError",
    "OptimalTreeRegressor",
    "OptimalTreeRegressorCV",
    "Tree",
    "Binarizer",
    "enable_compilation_cache",
    "fast_compilation",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


if TYPE_CHECKING:  # for static analysers and IDEs only
    from ._base import ConcurrentFitError as ConcurrentFitError
    from ._config import enable_compilation_cache as enable_compilation_cache
    from ._config import fast_compilation as fast_compilation
    from ._fork import ForkedAfterJAXError as ForkedAfterJAXError
    from ._validation import PrecisionWarning as PrecisionWarning
    from .symbolic import Expression as Expression
    from .symbolic import ExtrapolationWarning as ExtrapolationWarning
    from .symbolic import SymbolicRegressor as SymbolicRegressor
    from .trees import Binarizer as Binarizer
    from .trees import OptimalTreeRegressor as OptimalTreeRegressor
    from .trees import OptimalTreeRegressorCV as OptimalTreeRegressorCV
    from .trees import Tree as Tree
