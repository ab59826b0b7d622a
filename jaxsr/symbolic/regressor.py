"""``SymbolicRegressor``: deterministic symbolic regression (DoME) as an estimator.

Paper: ``shared/papers/deterministic-symbolic-regression.md`` (sections 2-2.8).
"""

from __future__ import annotations

import sys
import time

import jax.numpy as jnp
import numpy as np

from .._base import ParamsMixin
from .._config import precision, resolve_dtype
from .._validation import check_X_predict, check_X_y
from .expression import Expression
from .semantics import node_semantics
from .strategies import DomeSearch

__all__ = ["SymbolicRegressor"]

_FORMAT = "jaxsr.SymbolicRegressor"
_VERSION = 1


class SymbolicRegressor(ParamsMixin):
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
      feature_names_in_: list of str; n_features_in_: int.
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
        if self.strategy not in (1, 2, 3, 4):
            raise ValueError(f"strategy must be 1, 2, 3 or 4; got {self.strategy!r}")
        if self.max_nodes is not None and (int(self.max_nodes) != self.max_nodes
                                           or self.max_nodes < 1):
            raise ValueError(f"max_nodes must be a positive integer or None; got "
                             f"{self.max_nodes!r}")
        if self.max_height is not None and (int(self.max_height) != self.max_height
                                            or self.max_height < 1):
            raise ValueError(f"max_height must be a positive integer or None; got "
                             f"{self.max_height!r}")
        if self.max_iterations is not None and (int(self.max_iterations) != self.max_iterations
                                                or self.max_iterations < 0):
            raise ValueError(f"max_iterations must be a non-negative integer or None; got "
                             f"{self.max_iterations!r}")
        if not (np.isfinite(self.min_improvement) and self.min_improvement >= 0):
            raise ValueError(f"min_improvement must be a finite number >= 0; got "
                             f"{self.min_improvement!r}")
        if not (np.isfinite(self.goal_mse) and self.goal_mse >= 0):
            raise ValueError(f"goal_mse must be a finite number >= 0; got {self.goal_mse!r}")
        if self.max_time is not None and not (self.max_time > 0):
            raise ValueError(f"max_time must be positive seconds or None; got {self.max_time!r}")
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
        Xa, ya, names = check_X_y(X, y, dtype=dt)
        self.feature_names_in_ = list(names)
        self.n_features_in_ = Xa.shape[1]
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
                min_improvement=self.min_improvement, feature_names=self.feature_names_in_,
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
        self.expression_ = engine.expr.to_string(self.feature_names_in_)
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
        if not hasattr(self, "expression_tree_"):
            raise ValueError("this SymbolicRegressor is not fitted yet; call fit(X, y) first")

    def predict(self, X) -> np.ndarray:
        """Outputs of the expression, ``(n_samples,)`` float array."""
        self._check_fitted()
        dt = resolve_dtype(self.dtype)
        Xa = check_X_predict(X, self.n_features_in_, self.feature_names_in_, dtype=dt)
        with precision(dt):
            tree = self.expression_tree_.padded(dtype=dt)
            sem = node_semantics(tree, jnp.asarray(Xa.T))
            return np.asarray(sem[0])

    def score(self, X, y) -> float:
        """Coefficient of determination R^2 (scikit-learn convention)."""
        from .._validation import check_target

        pred = self.predict(X)
        yt = check_target(y, n_samples=pred.shape[0])
        ss_res = float(np.sum((yt - pred) ** 2))
        ss_tot = float(np.sum((yt - yt.mean()) ** 2))
        if ss_tot == 0.0:
            return 1.0 if ss_res == 0.0 else 0.0
        return 1.0 - ss_res / ss_tot

    def sympy(self):
        """The expression as sympy (variables are ``sympy.Symbol(feature name)``)."""
        self._check_fitted()
        return self.expression_tree_.sympy(self.feature_names_in_)

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
            "params": self.get_params(),
            "expression": self.expression_,
            "tree": self.expression_tree_.to_dict(),
            "feature_names_in_": list(self.feature_names_in_),
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
        est.expression_ = est.expression_tree_.to_string(d["feature_names_in_"])
        est.feature_names_in_ = list(d["feature_names_in_"])
        est.n_features_in_ = int(d["n_features_in_"])
        est.dropped_features_ = list(d.get("dropped_features_", []))
        est.mse_ = float(d["mse_"])
        est.n_iterations_ = int(d["n_iterations_"])
        est.stop_reason_ = d.get("stop_reason_", "")
        est.history_ = [dict(h) for h in d.get("history_", [])]
        return est
