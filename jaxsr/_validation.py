"""Input and hyperparameter checks of every jaxsr estimator and of the command, in one place.

Data checks (:func:`validate_X`, :func:`validate_X_y`, :func:`check_target`,
:func:`check_sample_weight`, :func:`check_feature_names`) raise ``ValueError`` with a sentence
a user can act on (``TypeError`` for values of a type that cannot be a number, as
scikit-learn does); nothing invalid reaches a jitted kernel, where it would turn into NaN or
a crash. Feature names follow scikit-learn (:func:`sklearn.utils.validation.validate_data`):
``feature_names_in_`` exists only after fitting on a DataFrame with string column names,
``n_features_in_`` always; at predict time a frame with the fitted names in another order is
reordered, different names are an error.

Hyperparameter checks (:func:`check_int`, :func:`check_real`, :func:`check_choice`) are
called from each estimator's ``fit`` (never from ``__init__``, scikit-learn's contract).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._fork import check_not_forked
from ._warn import warn_user

__all__ = [
    "PrecisionWarning",
    "as_2d_float",
    "as_pandas_frame",
    "check_integer_precision",
    "check_not_forked",
    "check_choice",
    "check_feature_names",
    "check_int",
    "check_numeric_column",
    "check_real",
    "check_X_y",
    "check_sample_weight",
    "check_shape_2d",
    "check_target",
    "default_feature_names",
    "feature_names",
    "validate_X",
    "validate_X_y",
]


# ------------------------------------------------------------------------ hyperparameters
def check_int(
    value,
    name: str,
    *,
    min_value: int | None = None,
    max_value: int | None = None,
    allow_none: bool = False,
    hint: str = "",
) -> int | None:
    """Return ``value`` as ``int`` after checking it is an integer in ``[min_value, max_value]``.

    ``bool`` is not an integer here; numpy integers are.

    Raises:
      ValueError: ``"<name> must be an integer >= <min_value> [or None]<hint>; got <value>"``.
    """
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
    if ok:
        value = int(value)
        ok = (min_value is None or value >= min_value) and (max_value is None or value <= max_value)
    if not ok:
        rng = ""
        if min_value is not None and max_value is not None:
            rng = f" in {min_value}..{max_value}"
        elif min_value is not None:
            rng = f" >= {min_value}"
        elif max_value is not None:
            rng = f" <= {max_value}"
        raise ValueError(
            f"{name} must be an integer{rng}{' or None' if allow_none else ''}{hint}; got {value!r}"
        )
    return value


def check_real(
    value,
    name: str,
    *,
    min_value: float | None = None,
    strict: bool = False,
    allow_none: bool = False,
    allow_inf: bool = False,
    hint: str = "",
) -> float | None:
    """Return ``value`` as ``float`` after checking it is a real number ``>= min_value``
    (``> min_value`` with ``strict``), finite unless ``allow_inf``.

    Raises:
      ValueError: ``"<name> must be a finite number >= <min_value> [or None]; got <value>"``.
    """
    if value is None and allow_none:
        return None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    if ok:
        value = float(value)
        ok = not math.isnan(value) and (allow_inf or math.isfinite(value))
        if ok and min_value is not None:
            ok = value > min_value if strict else value >= min_value
    if not ok:
        what = "a number" if allow_inf else "a finite number"
        rng = "" if min_value is None else f" {'>' if strict else '>='} {min_value:g}"
        raise ValueError(
            f"{name} must be {what}{rng}{' or None' if allow_none else ''}{hint}; got {value!r}"
        )
    return value


def check_choice(value, name: str, choices) -> object:
    """Return ``value`` if it is one of ``choices``.

    Raises:
      ValueError: ``"Unknown <name> <value>; choose one of [...]"``.
    """
    try:
        ok = value in tuple(choices)
    except TypeError:  # unhashable or incomparable
        ok = False
    if not ok:
        raise ValueError(f"Unknown {name} {value!r}; choose one of {list(choices)}")
    return value


# ------------------------------------------------------------------------ data
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


def _is_pandas(X) -> bool:
    return type(X).__module__.split(".")[0] == "pandas"


def as_pandas_frame(X):
    """``X`` as a pandas DataFrame when it is any other eager dataframe that scikit-learn
    accepts (polars, pyarrow tables, modin, ...; read through narwhals, which scikit-learn
    depends on, or else the dataframe interchange protocol ``__dataframe__``), with its
    column names and one numpy array per column (each column keeps its own dtype, so a text
    column is still reported as non-numeric by name). Anything else is returned as it is.

    Args:
      X: array-like or dataframe of shape ``(n_samples, n_features)``.

    Returns:
      ``X`` unchanged (numpy arrays, lists, pandas frames, lazy frames), or a
      ``pandas.DataFrame`` of the same shape and column names.
    """
    if _is_pandas(X) or isinstance(X, np.ndarray | list | tuple) or _is_sparse(X):
        return X
    import pandas as pd

    try:
        import narwhals as nw

        frame = nw.from_native(X, eager_only=True, pass_through=True)
    except Exception:  # noqa: BLE001 - narwhals absent or the object unknown to it
        frame = X
    if frame is not X and isinstance(frame, nw.DataFrame):
        return pd.DataFrame(
            {name: frame.get_column(name).to_numpy() for name in frame.columns},
            columns=list(frame.columns),
        )
    if hasattr(X, "__dataframe__") and not _is_dataframe(X):
        try:
            return pd.api.interchange.from_dataframe(X, allow_copy=True)
        except Exception:  # noqa: BLE001 - not a dataframe after all: numpy decides
            return X
    return X


def _is_sparse(X) -> bool:
    import scipy.sparse

    return scipy.sparse.issparse(X)


def check_shape_2d(X, *, name: str = "X") -> None:
    """Refuse sparse, complex, non-2-D and empty inputs (array-like or DataFrame).

    The messages use scikit-learn's phrases ("sparse input is not supported", "Complex data
    not supported", "Reshape your data", "0 sample(s) (shape=...) while a minimum of 1 is
    required"), so that its estimator checks recognise them.

    Raises:
      ValueError: as above, or an array-like that numpy cannot convert (ragged lists).
    """
    if _is_sparse(X):
        raise ValueError(
            f"{name} is a sparse matrix; sparse input is not supported. "
            f"Pass a dense array ({name}.toarray())"
        )
    if _is_dataframe(X):
        shape = tuple(X.shape)
        is_complex = any(getattr(dt, "kind", "") == "c" for dt in X.dtypes)
    else:
        try:
            arr = np.asarray(X)
        except Exception as err:  # ragged lists and the like
            raise ValueError(f"{name} could not be converted to a numeric array: {err}") from err
        shape = arr.shape
        is_complex = np.iscomplexobj(arr)
    if is_complex:
        raise ValueError(f"Complex data not supported: {name} must be real-valued")
    if len(shape) == 1:
        raise ValueError(
            f"{name} must be 2-D of shape (n_samples, n_features); got a 1-D array of shape "
            f"{shape}. Reshape your data: {name}.reshape(-1, 1) for a single feature, "
            f"{name}.reshape(1, -1) for a single sample."
        )
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features); got {shape}")
    if shape[0] == 0:
        raise ValueError(
            f"{name} has no rows: 0 sample(s) (shape={shape}) while a minimum of 1 is required"
        )
    if shape[1] == 0:
        raise ValueError(
            f"{name} has no columns: 0 feature(s) (shape={shape}) while a minimum of 1 is required."
        )


def _cast_in_range(arr, dtype, what: str, labels=None) -> np.ndarray:
    """``arr`` (finite) as ``dtype``, refusing a cast that would change its values beyond
    rounding: a value past the dtype's largest (it would become inf), or a column (of a
    2-D ``arr``; the whole of a 1-D one) whose nonzero magnitudes all lie below its
    smallest normal number (they would become zero or subnormal). ``labels``: the columns'
    names for the message.

    Raises:
      ValueError: naming ``what``, the columns, the range and what to do instead.
    """
    with np.errstate(over="ignore", under="ignore"):
        out = arr.astype(dtype, copy=False)
    # integers and booleans always fit a float's range (and are never tiny): no check, so
    # a large 0/1 matrix of the tree estimator is not copied again
    if (
        out.dtype == arr.dtype
        or not np.issubdtype(out.dtype, np.floating)
        or not np.issubdtype(arr.dtype, np.inexact)
        or not arr.size
    ):
        return out
    fi = np.finfo(out.dtype)
    # the largest magnitude per column from its extremes (no |arr| copy)
    amax = np.atleast_1d(
        np.maximum(np.abs(arr.max(axis=0)), np.abs(arr.min(axis=0))).astype(np.float64)
    )
    name = out.dtype.name
    hint = "use dtype='float64' or rescale them" if name != "float64" else "rescale them"
    for bad, desc, why in (
        (
            amax > float(fi.max),
            "magnitudes up to {v:.3g}",
            f"beyond the largest {name} ({float(fi.max):.3g}), they would become inf",
        ),
        (
            (amax > 0) & (amax < float(fi.tiny)),
            "nonzero magnitudes all below {v:.3g}",
            f"under the smallest normal {name} ({float(fi.tiny):.3g}), they would round to zero",
        ),
    ):
        cols = np.flatnonzero(bad)
        if cols.size:
            j = int(cols[0])
            where = (
                ""
                if arr.ndim == 1
                else " in "
                + _shown(
                    [labels[c] for c in cols] if labels else [f"column {c}" for c in cols],
                    quote=bool(labels),
                )
            )
            raise ValueError(
                f"{what} has {desc.format(v=amax[j])}{where}: {why}; {hint} "
                "(divide by a power of ten and put the factor back)"
            )
    return out


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
    X = as_pandas_frame(X)
    check_shape_2d(X, name=name)
    if _is_dataframe(X):
        names = [str(c) for c in X.columns]
        bad = [
            str(c) for c, dt in zip(X.columns, X.dtypes, strict=True) if not _is_numeric_dtype(dt)
        ]
        if bad:
            raise ValueError(
                f"{name} has non-numeric column(s) {_shown(bad)}; encode them as numbers "
                "first (e.g. pandas.get_dummies, or jaxsr.Binarizer for trees)"
            )
        for j, (c, dt) in enumerate(zip(X.columns, X.dtypes, strict=True)):
            if getattr(dt, "kind", "") in "iu":  # before to_numpy() makes them floats
                check_integer_precision(
                    X.iloc[:, j].dropna().to_numpy(), dtype, f"{name} column {str(c)!r}"
                )
        X = X.to_numpy()
    arr = np.asarray(X)
    if arr.dtype.kind in "iu" and arr.ndim == 2:
        for j in range(arr.shape[1]):
            check_integer_precision(arr[:, j], dtype, f"{name} column {j}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        try:
            arr = arr.astype(np.float64)
        except ValueError as err:
            raise ValueError(
                f"{name} must be numeric; got values of dtype {arr.dtype} ({err})"
            ) from err
        except TypeError as err:  # e.g. a dict in an object array: a type, not a value, error
            raise TypeError(f"{name} must be numeric: {err}") from err
    if np.issubdtype(arr.dtype, np.inexact) and not np.all(np.isfinite(arr)):
        bad = ~np.isfinite(arr)
        bad_cols = np.flatnonzero(bad.any(axis=0))
        labels = [names[j] for j in bad_cols] if names else [f"column {j}" for j in bad_cols]
        raise ValueError(
            f"{name} contains NaN or infinite values in {int(bad.any(axis=1).sum())} row(s), "
            f"in {_shown(labels, quote=bool(names))}; impute or drop them first"
        )
    return _cast_in_range(arr, dtype, name, names), names


class PrecisionWarning(UserWarning):
    """Integers of an input that the conversion to the estimator's float dtype rounds.

    Warned by ``fit``, ``predict`` and ``Binarizer`` for integer columns (or an integer
    target) beyond ``2**53`` in float64 (``2**24`` in float32) whose values stay distinct
    after rounding; where rounding would merge different values a ``ValueError`` is raised
    instead (:func:`check_integer_precision`). Subtract an offset (the column's minimum)
    or rescale. A ``UserWarning``; ``jaxsr.PrecisionWarning``.
    """


def check_integer_precision(values, dtype, what: str) -> None:
    """Refuse integers whose differences the conversion to ``dtype`` would lose.

    A float holds every integer up to ``2**(nmant + 1)`` (``2**53`` for float64, ``2**24``
    for float32) exactly; beyond that it rounds to a multiple of a power of two. Nanosecond
    timestamps and 64-bit ids near ``2**62`` become a constant column in float64, and a fit
    on them silently ignores the feature.

    Args:
      values: 1-D integer array (one column, or the target).
      dtype: the float dtype the values are converted to.
      what: the values' name for the messages (``"X column 'time'"``, ``"y"``).

    Raises:
      ValueError: two different integers become the same float (their differences are
        lost), with the fix: subtract an offset (the column's minimum) or rescale.

    Warns:
      PrecisionWarning: the values are rounded but stay distinct.
    """
    values = np.asarray(values)
    if values.dtype.kind not in "iu" or not values.size:
        return
    fdt = np.dtype(dtype)
    exact_max = 2 ** (np.finfo(fdt).nmant + 1)
    lo, hi = int(values.min()), int(values.max())
    if max(-lo, hi) <= exact_max:
        return
    f = values.astype(fdt)
    big = np.abs(f) >= 2.0**63  # past int64: rounded up from the largest values
    back = np.where(big, 0, f).astype(np.int64 if values.dtype.kind == "i" else np.uint64)
    if not big.any() and np.array_equal(back, values):
        return  # multiples of a power of two: exact
    spread = hi - lo
    fix = (
        f"subtract an offset first (e.g. the minimum, {lo}: the values then span "
        f"{spread}, {'exact' if spread <= exact_max else 'still beyond'} in "
        f"{fdt.name})"
        + (
            ""
            if spread <= exact_max
            else " or rescale them (divide by a power of ten and put the factor back)"
        )
    )
    if np.unique(f).size < np.unique(values).size:
        raise ValueError(
            f"{what} holds integers up to {max(-lo, hi)}, beyond {fdt.name}'s exact range "
            f"(2**{np.finfo(fdt).nmant + 1}): different values would become the same number "
            f"and their differences would be lost; {fix}"
        )
    warn_user(
        f"{what} holds integers up to {max(-lo, hi)}, beyond {fdt.name}'s exact range "
        f"(2**{np.finfo(fdt).nmant + 1}): they are rounded to {fdt.name}; {fix}",
        PrecisionWarning,
    )


def _shown(labels, *, quote: bool = True, limit: int = 6) -> str:
    """``'a', 'b' and 3 more``: a readable list of column names for a message."""
    labels = list(labels)
    text = ", ".join(repr(str(c)) if quote else str(c) for c in labels[:limit])
    if len(labels) > limit:
        text += f" and {len(labels) - limit} more"
    return text


def check_numeric_column(values, name: str, *, hint: str = "") -> np.ndarray:
    """One column as finite float64 (pandas' missing values count as NaN).

    Args:
      values: 1-D array (numeric, or object holding numbers and ``pd.NA``).
      name: the column's name, for the messages.
      hint: appended to the non-numeric message (e.g. how to one-hot encode it).

    Raises:
      ValueError: non-numeric values, or NaN/inf (with the number of rows).
    """
    try:
        if values.dtype == object:  # pandas nullable columns hold pd.NA
            import pandas as pd

            values = np.where(pd.isna(values), np.nan, values)
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"column {name!r} has non-numeric values{hint}") from err
    if not np.all(np.isfinite(v)):
        raise ValueError(
            f"column {name!r} contains NaN or infinite values in "
            f"{int(np.sum(~np.isfinite(v)))} row(s); impute or drop them first"
        )
    return v


def check_target(y, *, dtype=np.float64, n_samples: int | None = None) -> np.ndarray:
    """Convert ``y`` to a finite 1-D float array of length ``n_samples``.

    A single column ``(n_samples, 1)`` is accepted with scikit-learn's
    ``DataConversionWarning``.

    Raises:
      ValueError: ``None``, not 1-D, NaN/inf, non-numeric, complex, wrong length, sparse.
    """
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None")
    if _is_sparse(y):
        raise ValueError("y is a sparse matrix; sparse input is not supported")
    label = "y"
    if isinstance(getattr(y, "name", None), str):  # a pandas Series: name its column
        label = f"y (column {y.name!r})"
    if (
        hasattr(y, "dropna")
        and not isinstance(y.dtype, np.dtype)
        and getattr(y.dtype, "kind", "") in "iu"
    ):  # pandas' nullable integers: NA
        check_integer_precision(y.dropna().to_numpy(), dtype, label)  # makes them floats
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    try:
        arr = np.asarray(y)
    except Exception as err:
        raise ValueError(f"y could not be converted to a numeric array: {err}") from err
    if arr.dtype.kind in "iu" and arr.ndim == 1:
        check_integer_precision(arr, dtype, label)
    if arr.ndim == 2 and arr.shape[1] == 1:
        from sklearn.exceptions import DataConversionWarning

        warn_user(
            "A column-vector y was passed when a 1d array was expected. Please "
            "change the shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
        )
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{label} must be 1-D of shape (n_samples,); got shape {arr.shape}")
    if np.iscomplexobj(arr):
        raise ValueError(f"Complex data not supported: {label} must be real-valued")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{label} must be numeric; got values of dtype {arr.dtype}") from err
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"X and y have different numbers of samples: X has {n_samples} rows, "
            f"y has {arr.shape[0]}"
        )
    if arr.shape[0] == 0:
        raise ValueError(
            f"{label} has no rows: 0 sample(s) (shape={arr.shape}) while a minimum of 1 is required"
        )
    if np.issubdtype(arr.dtype, np.inexact) and not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{label} contains NaN or infinite values in "
            f"{int(np.sum(~np.isfinite(arr)))} row(s); drop those samples first"
        )
    return _cast_in_range(arr, dtype, label)


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


def feature_names(estimator) -> list[str]:
    """The names a fitted estimator prints its inputs with: ``feature_names_in_`` when it was
    fitted on a DataFrame with string column names, else ``x1 .. xM``."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(c) for c in names]
    return default_feature_names(int(estimator.n_features_in_))


def check_feature_names(estimator, X, *, reset: bool):
    """Set (``reset=True``, in ``fit``) or check (``reset=False``) the input's feature names.

    ``fit`` sets ``n_features_in_`` and, for a DataFrame with string column names,
    ``feature_names_in_`` (an object array), exactly as
    :func:`sklearn.utils.validation.validate_data` does. Afterwards a DataFrame holding the
    fitted names in another order is reordered to the fitted order; one whose names differ
    is an error; a frame given to an estimator fitted on an array (or the reverse) gives
    scikit-learn's ``UserWarning``.

    Args:
      estimator: the jaxsr estimator being fitted or used.
      X: the caller's ``X`` (array-like or DataFrame), before conversion.
      reset: ``True`` in ``fit``.

    Returns:
      ``X``, reordered when it is a DataFrame with the fitted columns in another order.

    Raises:
      ValueError: a DataFrame whose columns are not the fitted feature names, or (not
        ``reset``) a 2-D ``X`` with another number of features than in ``fit``.
    """
    check_not_forked()
    X = _reorder_columns(estimator, as_pandas_frame(X), reset=reset)
    try:
        two_d = _is_dataframe(X) or np.asarray(X).ndim == 2
    except Exception:  # noqa: BLE001 - ragged nested lists: the conversion reports them
        two_d = False
    if two_d:
        _sklearn_feature_names(estimator, X, reset=reset)
    return X


def _sklearn_feature_names(estimator, X, *, reset: bool) -> None:
    from sklearn.utils.validation import validate_data

    validate_data(estimator, X, reset=reset, skip_check_array=True)


def _reorder_columns(estimator, X, *, reset: bool):
    fitted = getattr(estimator, "feature_names_in_", None)
    if not reset and fitted is not None and _is_dataframe(X):
        cols = [str(c) for c in X.columns]
        want = [str(c) for c in fitted]
        if cols != want:
            missing = [c for c in want if c not in cols]
            unseen = [c for c in cols if c not in want]
            if missing or unseen or len(cols) != len(want):
                parts = []
                if missing:
                    parts.append(f"X is missing the columns {missing} seen in fit")
                if unseen:
                    parts.append(f"X has columns {unseen} not seen in fit")
                if not parts:
                    parts.append(f"X repeats columns: {cols}")
                raise ValueError(
                    "The feature names should match those that were passed during fit "
                    f"(in any order): {'; '.join(parts)}. The fitted names are {want}"
                )
            X = X.iloc[:, [cols.index(c) for c in want]]
    return X


def validate_X(estimator, X, *, reset: bool, dtype=np.float64, name: str = "X") -> np.ndarray:
    """Feature names (:func:`check_feature_names`) and values (:func:`as_2d_float`) of ``X``.

    Returns:
      ``(n_samples, n_features)`` finite array of ``dtype``; columns in the fitted order.

    Raises:
      ValueError: see :func:`check_feature_names` and :func:`as_2d_float`.
      TypeError: values of a type that cannot be a number (e.g. dicts in an object array).
    """
    check_not_forked()
    X = _reorder_columns(estimator, as_pandas_frame(X), reset=reset)
    Xa, _ = as_2d_float(X, dtype=dtype, name=name)  # clear messages for shape, NaN, dtype
    _sklearn_feature_names(estimator, X if _is_dataframe(X) else Xa, reset=reset)
    return Xa


def validate_X_y(estimator, X, y, *, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """:func:`validate_X` with ``reset=True`` and :func:`check_target` of the same length.

    Returns:
      ``(X, y)``: ``(n_samples, n_features)`` and ``(n_samples,)`` finite arrays of ``dtype``.
    """
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None"
        )
    ya = check_target(y, dtype=dtype)  # the target's problems are reported first
    Xa = validate_X(estimator, X, reset=True, dtype=dtype)
    if ya.shape[0] != Xa.shape[0]:
        raise ValueError(
            f"X and y have different numbers of samples: X has {Xa.shape[0]} "
            f"rows, y has {ya.shape[0]}"
        )
    return Xa, ya


def check_sample_weight(sample_weight, n_samples: int, *, dtype=np.float64) -> np.ndarray:
    """Return non-negative finite sample weights of shape ``(n_samples,)``, divided by
    their largest value (ones if ``None``).

    Weights are relative: multiplying them all by one factor never changes a model, its
    objective or its certificate. Dividing by the largest weight makes that hold at any
    scale in floating point too (weights of ``1e308`` would overflow every weighted sum,
    weights of ``5e-324`` underflow to zero in every product): equal weights become
    exactly 1, and the returned weights lie in ``(0, 1]`` with their maximum exactly 1.

    Raises:
      ValueError: wrong shape, negative, NaN/inf, or all weights zero.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=dtype)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, float(sample_weight))
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},); got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinite values")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative")
    if not np.any(w > 0):
        raise ValueError("sample_weight sums to zero; at least one sample needs a positive weight")
    return (w / np.max(w)).astype(dtype)
