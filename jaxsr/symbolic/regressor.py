"""``SymbolicRegressor``: deterministic symbolic regression (DoME) as an estimator.

Paper: ``shared/papers/deterministic-symbolic-regression.md`` (sections 2-2.8).
"""

from __future__ import annotations

import sys
import time

import jax.numpy as jnp
import numpy as np

from .._base import BaseEstimator, RegressorMixin, check_fitted
from .._config import precision, resolve_dtype
from .._validation import (
    check_choice,
    check_int,
    check_real,
    feature_names,
    validate_X,
    validate_X_y,
)
from .expression import Expression
from .semantics import node_semantics
from .strategies import DomeSearch

__all__ = ["SymbolicRegressor"]

_FORMAT = "jaxsr.SymbolicRegressor"
_VERSION = 1


class SymbolicRegressor(RegressorMixin, BaseEstimator):
    """Deterministic symbolic regression (DoME): grows one expression over ``+ - * /``.

    Starting from the mean of the target, each iteration replaces one node of the tree by
    the constant, variable, ``k op x`` or ``k op subtree`` that most reduces the training
    MSE, found exactly from the node equations (paper, section 2) and scored for all
    candidates at once in JAX.

    The search is greedy: it stops when no single replacement lowers the MSE by more than
    ``min_improvement * MSE``. On some data that happens at the initial constant (no
    3-node subtree beats the mean) or at a local optimum; e.g. strategy 3 on
    ``2.4*x1 - x2/x1 - 10`` over ``x1 = 1..100`` stops at the least-squares line while
    strategy 1 recovers the formula exactly (see ``tests/symbolic``).

    Args:
      max_nodes: maximum number of nodes of the tree (``None``: no limit; section 2.7).
      strategy: 1, 2, 3 or 4 (section 2.8); 3 is the paper's recommended one.
      min_improvement: a search succeeds only if it lowers the MSE by more than
        ``min_improvement * MSE`` (default ``1e-6``, section 2.8).
      max_iterations: stop after this many iterations (``None``: no limit).
      goal_mse: stop once the training MSE is ``<= goal_mse`` (default 0).
      max_time: stop after this many seconds of fitting (``None``: no limit).
      max_height: maximum tree height in levels (``None``: no limit; section 2.7).
      verbose: print one line per iteration on stderr (search, node, new subtree, MSE, nodes,
        elapsed seconds).
      dtype: ``"float64"`` (default) or ``"float32"``.

    Attributes:
      expression_: str, fully parenthesised infix with the feature names.
      expression_tree_: :class:`Expression` (pre-order arrays; variables index the
        columns of ``X``).
      mse_: float, training MSE of the final tree.
      n_iterations_: int; history_: list of dicts, one per iteration (``iteration,
        search, node`` (0-based pre-order), ``replaced, subtree, expression, mse,
        n_nodes, seconds``).
      n_features_in_: int, the number of columns of ``X`` in :meth:`fit`.
      feature_names_in_: object array of the column names, only when ``X`` was a DataFrame
        with string column names (scikit-learn's convention); the expression then uses
        them, else ``x1 .. xM``.
      dropped_features_: names of constant columns left out of the variable pool.
      stop_reason_: ``"goal"``, ``"no improvement"``, ``"max_iterations"``,
        ``"max_time"`` or ``"constant target"``.

    Example:
      >>> import numpy as np
      >>> X = np.arange(1.0, 21.0).reshape(-1, 1)
      >>> sr = SymbolicRegressor(strategy=3).fit(X, 3.0 * X[:, 0] + 2.0)
      >>> round(sr.score(X, 3.0 * X[:, 0] + 2.0), 12)
      1.0
    """

    def __init__(self, max_nodes=None, strategy=3, min_improvement=1e-6, max_iterations=None,
                 goal_mse=0.0, max_time=None, max_height=None, verbose=False, dtype="float64"):
        self.max_nodes = max_nodes
        self.strategy = strategy
        self.min_improvement = min_improvement
        self.max_iterations = max_iterations
        self.goal_mse = goal_mse
        self.max_time = max_time
        self.max_height = max_height
        self.verbose = verbose
        self.dtype = dtype

    # ---------------------------------------------------------------- checks
    def _check_params(self) -> None:
        """Hyperparameter checks (:mod:`jaxsr._validation`); raises ValueError."""
        check_choice(self.strategy, "strategy", (1, 2, 3, 4))
        check_int(self.max_nodes, "max_nodes", min_value=1, allow_none=True)
        check_int(self.max_height, "max_height", min_value=1, allow_none=True)
        check_int(self.max_iterations, "max_iterations", min_value=0, allow_none=True)
        check_real(self.min_improvement, "min_improvement", min_value=0)
        check_real(self.goal_mse, "goal_mse", min_value=0)
        check_real(self.max_time, "max_time", min_value=0, strict=True, allow_none=True,
                   hint=" (seconds)")
        resolve_dtype(self.dtype)

    # ---------------------------------------------------------------- fit
    def fit(self, X, y):
        """Grow the expression on ``X`` ``(n_samples, n_features)`` and ``y``
        ``(n_samples,)``; returns ``self``.

        Raises:
          ValueError: invalid hyperparameters, NaN/inf, mismatched lengths, empty data,
            non-numeric columns (see :mod:`jaxsr._validation`).
        """
        self._check_params()
        dt = resolve_dtype(self.dtype)
        Xa, ya = validate_X_y(self, X, y, dtype=dt)
        names = feature_names(self)
        const_cols = np.all(Xa == Xa[:1], axis=0)
        self.dropped_features_ = [names[j] for j in np.flatnonzero(const_cols)]
        start = time.perf_counter()
        deadline = None if self.max_time is None else start + float(self.max_time)
        self.history_ = []
        with precision(dt):
            XT = jnp.asarray(Xa.T)
            yj = jnp.asarray(ya)
            engine = DomeSearch(
                XT, yj, ~const_cols, max_nodes=self.max_nodes, max_height=self.max_height,
                min_improvement=self.min_improvement, feature_names=names,
                deadline=deadline,
            )
            if self.verbose:
                msg = f"[jaxsr] iteration 0: MSE {engine.mse:.6g}, {engine.expr.to_string(names)}"
                if self.dropped_features_:
                    msg += f" (constant columns dropped: {self.dropped_features_})"
                print(msg, file=sys.stderr, flush=True)
            if np.all(ya == ya[0]):
                engine.expr = Expression.constant(float(ya[0]))
                engine.mse = 0.0
                self.stop_reason_ = "constant target"
            else:
                self.stop_reason_ = self._loop(engine, start, deadline, names)
        self.expression_tree_ = engine.expr
        self.expression_ = engine.expr.to_string(names)
        self.mse_ = float(engine.mse)
        self.n_iterations_ = len(self.history_)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _loop(self, engine: DomeSearch, start, deadline, names) -> str:
        it = 0
        while True:
            if engine.mse <= self.goal_mse:
                return "goal"
            if self.max_iterations is not None and it >= self.max_iterations:
                return "max_iterations"
            if deadline is not None and time.perf_counter() > deadline:
                return "max_time"
            rec = engine.step(int(self.strategy))
            if rec is None:
                return "no improvement"
            it += 1
            rec = {
                "iteration": it,
                **rec,
                "expression": engine.expr.to_string(names),
                "mse": float(engine.mse),
                "n_nodes": engine.expr.n_nodes,
                "seconds": time.perf_counter() - start,
            }
            self.history_.append(rec)
            if self.verbose:
                print(f"[jaxsr] iteration {it}: {rec['search']} search at node {rec['node']}"
                      f" -> {rec['subtree']}; MSE {rec['mse']:.6g}, {rec['n_nodes']} nodes, "
                      f"{rec['seconds']:.2f} s", file=sys.stderr, flush=True)

    # ---------------------------------------------------------------- use
    def _check_fitted(self) -> None:
        check_fitted(self, "expression_tree_")  # NotFittedError (a ValueError)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False  # NaN/inf are refused with a clear message
        tags.input_tags.sparse = False
        tags.non_deterministic = False  # no randomness: the same data give the same tree
        return tags

    def predict(self, X) -> np.ndarray:
        """Outputs of the expression, ``(n_samples,)`` array of the model's ``dtype``.

        Args:
          X: ``(n_samples, n_features_in_)`` array-like or DataFrame (a frame with the
            fitted column names in another order is reordered).

        Raises:
          NotFittedError: before :meth:`fit`.
          ValueError: wrong number or names of features, NaN/inf, non-numeric values.
        """
        self._check_fitted()
        dt = resolve_dtype(self.dtype)
        Xa = validate_X(self, X, reset=False, dtype=dt)
        with precision(dt):
            tree = self.expression_tree_.padded(dtype=dt)
            sem = node_semantics(tree, jnp.asarray(Xa.T))
            return np.asarray(sem[0])

    def sympy(self):
        """The expression as sympy (variables are ``sympy.Symbol(feature name)``)."""
        self._check_fitted()
        return self.expression_tree_.sympy(feature_names(self))

    def to_jax(self):
        """Pure JAX function ``f(X) -> (n_samples,)`` equal to :meth:`predict`."""
        self._check_fitted()
        return self.expression_tree_.to_jax()

    # ---------------------------------------------------------------- persistence
    def to_dict(self) -> dict:
        """JSON-able dict of the hyperparameters and the fitted model."""
        self._check_fitted()
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "params": {**self.get_params(), "dtype": str(resolve_dtype(self.dtype))},
            "expression": self.expression_,
            "tree": self.expression_tree_.to_dict(),
            "feature_names": feature_names(self),
            "feature_names_in_": (None if not hasattr(self, "feature_names_in_")
                                  else [str(c) for c in self.feature_names_in_]),
            "n_features_in_": int(self.n_features_in_),
            "dropped_features_": list(self.dropped_features_),
            "mse_": float(self.mse_),
            "n_iterations_": int(self.n_iterations_),
            "stop_reason_": self.stop_reason_,
            "history_": [dict(h) for h in self.history_],
        }

    @classmethod
    def from_dict(cls, d: dict) -> SymbolicRegressor:
        """Rebuild a fitted model from :meth:`to_dict`.

        Raises:
          ValueError: if ``d`` is not a saved SymbolicRegressor.
        """
        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise ValueError("not a saved jaxsr.SymbolicRegressor (missing 'format' key)")
        if d.get("version") != _VERSION:
            raise ValueError(f"unsupported SymbolicRegressor format version {d.get('version')}")
        est = cls(**d["params"])
        est.expression_tree_ = Expression.from_dict(d["tree"])
        names = d.get("feature_names", d.get("feature_names_in_"))
        est.expression_ = est.expression_tree_.to_string(names)
        if d.get("feature_names_in_") is not None:
            est.feature_names_in_ = np.asarray(d["feature_names_in_"], dtype=object)
        est.n_features_in_ = int(d["n_features_in_"])
        est.dropped_features_ = list(d.get("dropped_features_", []))
        est.mse_ = float(d["mse_"])
        est.n_iterations_ = int(d["n_iterations_"])
        est.stop_reason_ = d.get("stop_reason_", "")
        est.history_ = [dict(h) for h in d.get("history_", [])]
        return est
