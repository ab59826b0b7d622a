"""Checks of the fields of a saved model's dictionary, for the ``from_dict`` readers.

A model file is edited by hand or damaged on the way more often than one would like; a
bad field must not load into a model that predicts wrong values (a constant turned
``inf``, an unknown binarizer operator) or fails later with a bare ``IndexError``. Each
check here names the field by its path in the dictionary (``tree.value[3]``,
``certificate.lower_bound``, ``front.trees[2].op[0]``) and raises a ``ValueError`` that
says what the field must hold. Every message starts with the path, so a reader one level
up can put its own prefix in front (:func:`nested`).
"""

from __future__ import annotations

import contextlib
import math
import numbers

import numpy as np

__all__ = [
    "boolean",
    "field",
    "int_array",
    "mapping",
    "nested",
    "real",
    "real_array",
    "scalar",
    "string",
    "string_list",
    "build_estimator",
    "integer",
]


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _what(value) -> str:
    """A short description of a wrong value for a message."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def mapping(value, path: str) -> dict:
    """``value`` if it is a dict (a JSON object), else ``ValueError``."""
    if not isinstance(value, dict):
        raise ValueError(f"{path} must be a JSON object; got {_what(value)}")
    return value


def field(d: dict, key: str, path: str = ""):
    """``d[key]``; ``ValueError`` naming the field when the key is absent."""
    if key not in d:
        raise ValueError(
            f"the field {_join(path, key)} is missing; the file was not written "
            "by save_model / to_dict or was cut"
        )
    return d[key]


def _as_float(value) -> float | None:
    """A JSON number as a float (``inf`` for an integer beyond the float range), ``None``
    for anything else (``bool`` is not a number here)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def real(
    value,
    path: str,
    *,
    min_value: float | None = None,
    allow_inf: bool = False,
    what: str = "a finite number",
) -> float:
    """``value`` as a float, a number (not NaN; finite unless ``allow_inf``) ``>= min_value``.

    ``what`` says what the field holds, e.g. ``"constants must be finite"``."""
    v = _as_float(value)
    if v is None:
        raise ValueError(f"{path} must be a number; got {_what(value)}")
    if math.isnan(v) or (not allow_inf and math.isinf(v)):
        raise ValueError(f"{path} is {v!r}; {what}")
    if min_value is not None and v < min_value:
        raise ValueError(f"{path} is {v!r}; it must be >= {min_value:g}")
    return v


def integer(value, path: str, *, min_value: int | None = None, max_value: int | None = None) -> int:
    """``value`` if it is an integer (not ``bool``) in ``[min_value, max_value]``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{path} must be an integer; got {_what(value)}")
    v = int(value)
    if (min_value is not None and v < min_value) or (max_value is not None and v > max_value):
        lo = "" if min_value is None else f"{min_value}"
        hi = "" if max_value is None else f"{max_value}"
        rng = f"in {lo}..{hi}" if lo and hi else (f">= {lo}" if lo else f"<= {hi}")
        raise ValueError(f"{path} is {v}; it must be {rng}")
    return v


def boolean(value, path: str) -> bool:
    """``value`` if it is ``true`` or ``false``."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{path} must be true or false; got {_what(value)}")
    return bool(value)


def string(value, path: str) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        raise ValueError(f"{path} must be a string; got {_what(value)}")
    return value


def scalar(value, path: str):
    """``value`` if it is a JSON scalar (string, number, true/false or null): no nesting."""
    if value is None or isinstance(value, str | bool | numbers.Real):
        return value
    raise ValueError(f"{path} must be a string, a number, true/false or null; got {_what(value)}")


def _list(value, path: str, length: int | None, min_length: int) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{path} must be a list; got {_what(value)}")
    if length is not None and len(value) != length:
        raise ValueError(f"{path} has {len(value)} entries; it must have {length}")
    if len(value) < min_length:
        raise ValueError(f"{path} has {len(value)} entries; it must have at least {min_length}")
    return value


def string_list(value, path: str, *, length: int | None = None) -> list[str]:
    """``value`` if it is a list of strings (of ``length`` entries when given)."""
    for i, v in enumerate(_list(value, path, length, 0)):
        string(v, _join(path, i))
    return list(value)


def int_array(
    value,
    path: str,
    *,
    length: int | None = None,
    min_length: int = 0,
    min_value: int | None = None,
    max_value: int | None = None,
) -> np.ndarray:
    """``value`` (a list of integers in ``[min_value, max_value]``, and in the int32 range
    the arrays are stored in) as an int64 array."""
    lo = _INT32_MIN if min_value is None else max(min_value, _INT32_MIN)
    hi = _INT32_MAX if max_value is None else min(max_value, _INT32_MAX)
    for i, v in enumerate(_list(value, path, length, min_length)):
        integer(v, _join(path, i), min_value=lo, max_value=hi)
    return np.asarray(value, dtype=np.int64).reshape(len(value))


def real_array(
    value,
    path: str,
    *,
    length: int | None = None,
    min_length: int = 0,
    min_value: float | None = None,
    allow_inf: bool = False,
    what: str = "the values must be finite",
) -> np.ndarray:
    """``value`` (a list of numbers, see :func:`real`) as a float64 array."""
    out = [
        real(v, _join(path, i), min_value=min_value, allow_inf=allow_inf, what=what)
        for i, v in enumerate(_list(value, path, length, min_length))
    ]
    return np.asarray(out, dtype=np.float64).reshape(len(out))


@contextlib.contextmanager
def nested(path: str):
    """Put ``path`` in front of the message of a ``ValueError`` raised inside, for checks
    that do not know the field they check (an estimator's ``_check_params``: ``params:
    max_nodes must be an integer >= 1 ...``)."""
    try:
        yield
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def build_estimator(cls, params, path: str = "params"):
    """``cls(**params)`` after checking that ``params`` is an object of ``cls``'s parameter
    names, then the estimator's own hyperparameter checks (``_check_params``), each error
    naming the field.

    Raises:
      ValueError: ``params`` not an object, an unknown parameter name, or a value that
        ``cls`` refuses.
    """
    params = dict(mapping(params, path))
    known = cls._get_param_names()
    unknown = sorted(k for k in params if k not in known)
    if unknown:
        raise ValueError(
            f"{path} has the unknown parameter(s) {unknown}; {cls.__name__} takes {known}"
        )
    est = cls(**params)
    check = getattr(est, "_check_params", None)
    if check is not None:
        with nested(path):
            check()
    return est
