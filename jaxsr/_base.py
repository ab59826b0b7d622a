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

import sklearn
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
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


def check_fitted(estimator, attribute: str) -> None:
    """Raise scikit-learn's ``NotFittedError`` (a ``ValueError`` and ``AttributeError``)
    unless ``estimator`` has ``attribute`` (set by its ``fit``)."""
    check_is_fitted(estimator, attribute)
