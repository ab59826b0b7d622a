"""Input checks shared by both estimators, raised at the API boundary.

Every check raises ``ValueError`` with a sentence a user can act on; nothing invalid
reaches a jitted kernel (where it would turn into NaN or a crash).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_2d_float",
    "check_X_y",
    "check_X_predict",
    "check_sample_weight",
    "check_target",
    "default_feature_names",
]


def default_feature_names(n_features: int) -> list[str]:
    """Names ``x1 .. xM`` (1-based, as in the papers) for arrays without column names."""
    return [f"x{j + 1}" for j in range(n_features)]


def _is_numeric_dtype(dt) -> bool:
    """True for numpy numeric/bool dtypes and pandas' numeric extension dtypes (Int64, ...).

    pandas' string, categorical and object dtypes are not numeric; ``np.dtype`` cannot even
    interpret the extension ones, so they are checked through their ``kind``.
    """
    kind = getattr(dt, "kind", None)
    if kind is None:
        try:
            kind = np.dtype(dt).kind
        except TypeError:
            return False
    if isinstance(dt, np.dtype):
        return kind in "biuf"
    # pandas extension dtypes: nullable integers/floats/booleans have kind i/u/f/b;
    # StringDtype has kind 'O', CategoricalDtype 'O'
    return kind in "biuf" and type(dt).__name__ != "CategoricalDtype"


def _is_dataframe(X) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "to_numpy")


def as_2d_float(X, *, dtype=np.float64, name: str = "X") -> tuple[np.ndarray, list[str] | None]:
    """Convert an array-like or pandas DataFrame to a finite 2-D float array.

    Args:
      X: array-like of shape ``(n_samples, n_features)`` or a pandas DataFrame.
      dtype: numpy float dtype of the result.
      name: the argument's name, used in error messages.

    Returns:
      ``(array, feature_names)``: ``array`` has shape ``(n_samples, n_features)`` and the
      given dtype; ``feature_names`` is the list of column names (as ``str``) for a
      DataFrame, else ``None``.

    Raises:
      ValueError: non-numeric columns, not 2-D, no rows, no columns, NaN or infinite values.
    """
    names = None
    if _is_dataframe(X):
        names = [str(c) for c in X.columns]
        bad = [str(c) for c, dt in zip(X.columns, X.dtypes, strict=True)
               if not _is_numeric_dtype(dt)]
        if bad:
            raise ValueError(
                f"{name} has non-numeric columns {bad}; encode them first "
                "(e.g. pandas.get_dummies, or jaxsr.Binarizer for trees)"
            )
        X = X.to_numpy()
    try:
        arr = np.asarray(X)
    except Exception as err:  # ragged lists and the like
        raise ValueError(f"{name} could not be converted to a numeric array: {err}") from err
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be numeric; got values of dtype {arr.dtype}") from err
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real-valued; got complex values")
    if arr.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D of shape (n_samples, n_features); got a 1-D array of shape "
            f"{arr.shape}. Use X.reshape(-1, 1) for a single feature."
        )
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features); got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has no rows (n_samples=0); at least one sample is needed")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no columns (n_features=0); at least one feature is needed")
    arr = arr.astype(dtype, copy=False)
    if not np.all(np.isfinite(arr)):
        bad_cols = np.where(~np.all(np.isfinite(arr), axis=0))[0]
        labels = [names[j] if names else f"column {j}" for j in bad_cols[:5]]
        raise ValueError(
            f"{name} contains NaN or infinite values (in {', '.join(labels)}); "
            "impute or drop them first"
        )
    return arr, names


def check_target(y, *, dtype=np.float64, n_samples: int | None = None) -> np.ndarray:
    """Convert ``y`` to a finite 1-D float array of length ``n_samples``.

    Raises:
      ValueError: not 1-D (a single column is accepted), NaN/inf, non-numeric, wrong length.
    """
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    try:
        arr = np.asarray(y)
    except Exception as err:
        raise ValueError(f"y could not be converted to a numeric array: {err}") from err
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D of shape (n_samples,); got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"y must be numeric; got values of dtype {arr.dtype}") from err
    if np.iscomplexobj(arr):
        raise ValueError("y must be real-valued; got complex values")
    arr = arr.astype(dtype, copy=False)
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"X and y have different numbers of samples: X has {n_samples} rows, "
            f"y has {arr.shape[0]}"
        )
    if arr.shape[0] == 0:
        raise ValueError("y is empty (n_samples=0); at least one sample is needed")
    if not np.all(np.isfinite(arr)):
        raise ValueError("y contains NaN or infinite values; drop those samples first")
    return arr


def check_X_y(X, y, *, dtype=np.float64) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Validate a training pair.

    Args:
      X: ``(n_samples, n_features)`` array-like or DataFrame.
      y: ``(n_samples,)`` array-like or Series.
      dtype: float dtype of the results.

    Returns:
      ``(X, y, feature_names)`` with ``X`` of shape ``(n_samples, n_features)``, ``y`` of
      shape ``(n_samples,)``, both finite of ``dtype``, and one name per column (the
      DataFrame's column names, else ``x1 .. xM``).

    Raises:
      ValueError: see :func:`as_2d_float` and :func:`check_target`.
    """
    Xa, names = as_2d_float(X, dtype=dtype)
    ya = check_target(y, dtype=dtype, n_samples=Xa.shape[0])
    if names is None:
        names = default_feature_names(Xa.shape[1])
    return Xa, ya, names


def check_X_predict(X, n_features: int, feature_names: list[str] | None = None, *,
                    dtype=np.float64) -> np.ndarray:
    """Validate ``X`` at predict time: same number of features as seen in ``fit``.

    A DataFrame whose columns are the fitted feature names (in any order) is reordered.

    Raises:
      ValueError: wrong number of features, missing named columns, or the checks of
        :func:`as_2d_float`.
    """
    if _is_dataframe(X) and feature_names is not None:
        cols = [str(c) for c in X.columns]
        if set(feature_names) <= set(cols) and cols != list(feature_names):
            X = X[[X.columns[cols.index(n)] for n in feature_names]]
    Xa, _ = as_2d_float(X, dtype=dtype)
    if Xa.shape[1] != n_features:
        raise ValueError(
            f"X has {Xa.shape[1]} features, but the model was fitted with {n_features}"
        )
    return Xa


def check_sample_weight(sample_weight, n_samples: int, *, dtype=np.float64) -> np.ndarray:
    """Return non-negative finite sample weights of shape ``(n_samples,)`` (ones if ``None``).

    Raises:
      ValueError: wrong shape, negative, NaN/inf, or all weights zero.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=dtype)
    if isinstance(sample_weight, numbers.Number):
        return np.full(n_samples, float(sample_weight), dtype=dtype)
    w = np.asarray(sample_weight, dtype=dtype)
    if w.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},); got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinite values")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative")
    if not np.any(w > 0):
        raise ValueError("sample_weight sums to zero; at least one sample needs a positive weight")
    return w
