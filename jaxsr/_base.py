"""The scikit-learn base classes of every jaxsr estimator, and the supported versions.

``SymbolicRegressor`` and ``OptimalTreeRegressor`` are ``RegressorMixin + BaseEstimator``,
``Binarizer`` is ``TransformerMixin + BaseEstimator`` (scikit-learn's
``doc/developers/develop.rst``): ``get_params`` / ``set_params`` / ``repr`` / ``clone`` /
pipelines / grid searches come from scikit-learn, and the estimators describe themselves
with ``__sklearn_tags__``. That protocol, and the ``validate_data`` used by
:mod:`jaxsr._validation`, exist from scikit-learn 1.6 on: :data:`SKLEARN_MIN_VERSION`, the
floor in ``pyproject.toml``; an older scikit-learn is refused at import with a clear error.
"""

from __future__ import annotations

import numpy as np
import sklearn
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.base import RegressorMixin as _SklearnRegressorMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["BaseEstimator", "RegressorMixin", "TransformerMixin", "SKLEARN_MIN_VERSION",
           "check_fitted"]

SKLEARN_MIN_VERSION = (1, 6)


def _version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


if _version_tuple(sklearn.__version__) < SKLEARN_MIN_VERSION:  # pragma: no cover
    raise ImportError(
        f"jaxsr needs scikit-learn >= {'.'.join(map(str, SKLEARN_MIN_VERSION))} "
        f"(estimator tags and validate_data); found {sklearn.__version__}. "
        "Upgrade it: pip install -U 'scikit-learn>=1.6'"
    )


class RegressorMixin(_SklearnRegressorMixin):
    """scikit-learn's ``RegressorMixin`` whose :meth:`score` holds at any scale of ``y``."""

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R^2 of ``predict(X)`` against ``y``
        (``sklearn.metrics.r2_score``), computed on ``y`` and the predictions divided by
        their largest magnitude: R^2 does not depend on the scale of the target, but its
        sums of squares overflow for a target near ``1e300`` (R^2 became NaN) and
        underflow near ``1e-300``.

        Args:
          X: ``(n_samples, n_features)`` array or DataFrame, as for ``predict``.
          y: ``(n_samples,)`` true targets.
          sample_weight: optional ``(n_samples,)`` weights.

        Returns:
          float R^2 (1 is perfect; ``-inf`` < R^2 <= 1).
        """
        from sklearn.metrics import r2_score

        y_pred = np.asarray(self.predict(X), np.float64)
        y_true = np.asarray(y, np.float64)
        with np.errstate(all="ignore"):
            scale = max(float(np.max(np.abs(y_true), initial=0.0)),
                        float(np.max(np.abs(y_pred), initial=0.0)))
            if np.isfinite(scale) and scale > 0:
                y_true, y_pred = y_true / scale, y_pred / scale
        return float(r2_score(y_true, y_pred, sample_weight=sample_weight))


def check_fitted(estimator, attribute: str) -> None:
    """Raise scikit-learn's ``NotFittedError`` (a ``ValueError`` and ``AttributeError``)
    unless ``estimator`` has ``attribute`` (set by its ``fit``)."""
    check_is_fitted(estimator, attribute)
