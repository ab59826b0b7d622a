"""jaxsr: interpretable regression on accelerators.

Two methods, both batched and jitted in JAX:

* :class:`SymbolicRegressor` -- deterministic symbolic regression (DoME): one closed-form
  expression over ``+ - * /``, variables and constants, grown greedily.
* :class:`OptimalTreeRegressor` -- optimal sparse regression trees (OSRT): the provably
  optimal tree for ``normalised loss + lambda * leaves``, with its certificate.

The functional layers (pure kernels for research with ``jax.vmap``) live in
:mod:`jaxsr.symbolic` and :mod:`jaxsr.trees`.
"""

__version__ = "0.1.0"

from ._config import enable_compilation_cache as enable_compilation_cache
from ._config import fast_compilation as fast_compilation
from .symbolic import Expression as Expression
from .symbolic import ExtrapolationWarning as ExtrapolationWarning
from .symbolic import SymbolicRegressor as SymbolicRegressor
from .trees import Binarizer as Binarizer
from .trees import OptimalTreeRegressor as OptimalTreeRegressor
from .trees import Tree as Tree

__all__ = [
    "__version__",
    "SymbolicRegressor",
    "Expression",
    "ExtrapolationWarning",
    "OptimalTreeRegressor",
    "Tree",
    "Binarizer",
    "enable_compilation_cache",
    "fast_compilation",
]
