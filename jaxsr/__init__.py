"""jaxsr: interpretable regression on accelerators.

Two methods, both batched and jitted in JAX:

* :class:`SymbolicRegressor` -- deterministic symbolic regression (DoME): one closed-form
  expression over ``+ - * /``, variables and constants, grown greedily.
* :class:`OptimalTreeRegressor` -- optimal sparse regression trees (OSRT): the provably
  optimal tree for ``normalised loss + lambda * leaves``, with its certificate.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
