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

import functools
import threading

import numpy as np
import sklearn
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.base import RegressorMixin as _SklearnRegressorMixin
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "BaseEstimator",
    "ConcurrentFitError",
    "RegressorMixin",
    "TransformerMixin",
    "SKLEARN_MIN_VERSION",
    "check_fitted",
    "one_fit_at_a_time",
]

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


class ConcurrentFitError(RuntimeError):
    """``fit`` was called on an estimator object that another thread is fitting.

    Raised at once by the second thread's ``fit`` (:func:`one_fit_at_a_time`); the first
    fit goes on undisturbed. Give each thread its own copy of the estimator
    (``sklearn.base.clone(estimator)``). A ``RuntimeError``; ``jaxsr.ConcurrentFitError``.
    """


_FITTING: dict[int, int] = {}  # id(estimator) -> the thread fitting it
_FITTING_LOCK = threading.Lock()


def one_fit_at_a_time(fit):
    """Wrap an estimator's ``fit`` so that one estimator object is fitted by one thread at
    a time: a second thread calling ``fit`` on the same object while it is being fitted
    gets :class:`ConcurrentFitError` at once (the two fits would otherwise write the fitted
    attributes in turns and leave a mixture of both). Different objects (``clone(est)``
    per thread) fit concurrently; ``predict`` of a fitted object may be called from many
    threads, but not while it is being refitted. ``fit`` calling itself in the same thread
    is allowed."""

    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        key, me = id(self), threading.get_ident()
        with _FITTING_LOCK:
            owner = _FITTING.get(key)
            if owner is not None and owner != me:
                raise ConcurrentFitError(
                    f"this {type(self).__name__} object is being fitted in another thread; "
                    "an estimator object fits in one thread at a time: give each thread "
                    "its own copy (sklearn.base.clone(estimator))"
                )
            _FITTING[key] = me
        try:
            return fit(self, *args, **kwargs)
        finally:
            if owner is None:
                with _FITTING_LOCK:
                    _FITTING.pop(key, None)

    guarded.__wrapped_by_jaxsr__ = True
    return guarded


class RegressorMixin(_SklearnRegressorMixin):
    """scikit-learn's ``RegressorMixin`` whose :meth:`score` holds at any scale of ``y``,
    and whose subclasses' ``fit`` is guarded by :func:`one_fit_at_a_time`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if callable(fit) and not getattr(fit, "__wrapped_by_jaxsr__", False):
            cls.fit = one_fit_at_a_time(fit)

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
            scale = max(
                float(np.max(np.abs(y_true), initial=0.0)),
                float(np.max(np.abs(y_pred), initial=0.0)),
            )
            if np.isfinite(scale) and scale > 0:
                y_true, y_pred = y_true / scale, y_pred / scale
        return float(r2_score(y_true, y_pred, sample_weight=sample_weight))


def check_fitted(estimator, attribute: str) -> None:
    """Raise scikit-learn's ``NotFittedError`` (a ``ValueError`` and ``AttributeError``)
    unless ``estimator`` has ``attribute`` (set by its ``fit``)."""
    check_is_fitted(estimator, attribute)
