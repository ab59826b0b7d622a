"""The shared input checks raise ValueError with an actionable message, never TypeError."""

import numpy as np
import pandas as pd
import pytest

from jaxsr._config import precision, resolve_dtype
from jaxsr._validation import (
    as_2d_float,
    check_sample_weight,
    check_X_predict,
    check_X_y,
)


@pytest.mark.parametrize(
    "column, dtype",
    [(["x", "y", "z"], None), (["x", "y", "z"], "string"), (["u", "v", "u"], "category"),
     ([object(), object(), object()], object)],
)
def test_non_numeric_columns_are_named(column, dtype):
    df = pd.DataFrame({"ok": [1.0, 2.0, 3.0], "bad col": pd.Series(column, dtype=dtype)})
    with pytest.raises(ValueError, match="non-numeric columns \\['bad col'\\]"):
        as_2d_float(df)


def test_nullable_integer_and_bool_columns_are_numeric():
    df = pd.DataFrame({"i": pd.array([1, 2, 3], dtype="Int64"), "b": [True, False, True]})
    X, names = as_2d_float(df)
    np.testing.assert_array_equal(X, [[1, 1], [2, 0], [3, 1]])
    assert names == ["i", "b"]


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.ones((3, 2)), np.ones(4), "different numbers of samples"),
        (np.ones((0, 2)), np.ones(0), "no rows"),
        (np.ones((3, 0)), np.ones(3), "no columns"),
        (np.ones(3), np.ones(3), "1-D array"),
        (np.array([[1.0, np.nan], [2.0, 3.0]]), np.ones(2), "NaN or infinite values \\(in col"),
        (np.array([[1.0, 2.0], [2.0, 3.0]]), np.array([1.0, np.inf]), "y contains NaN"),
        (np.ones((2, 2)), np.ones((2, 2)), "y must be 1-D"),
        (np.array([["a", "b"]]), np.ones(1), "X must be numeric"),
    ],
)
def test_bad_training_input(X, y, message):
    with pytest.raises(ValueError, match=message):
        check_X_y(X, y)


def test_default_names_and_column_vector_target():
    X, y, names = check_X_y(np.arange(6.0).reshape(3, 2), np.arange(3.0).reshape(3, 1))
    assert names == ["x1", "x2"] and y.shape == (3,) and X.dtype == np.float64


def test_predict_reorders_named_columns_and_checks_width():
    df = pd.DataFrame({"b": [1.0, 2.0], "a": [3.0, 4.0]})
    X = check_X_predict(df, 2, ["a", "b"])
    np.testing.assert_array_equal(X, [[3.0, 1.0], [4.0, 2.0]])
    with pytest.raises(ValueError, match="X has 1 features, but the model was fitted with 2"):
        check_X_predict(np.ones((2, 1)), 2)


def test_sample_weight_checks():
    np.testing.assert_array_equal(check_sample_weight(None, 3), np.ones(3))
    for bad, message in [([1.0, -1.0, 1.0], "non-negative"), ([0.0, 0.0, 0.0], "sums to zero"),
                         ([1.0, 1.0], "shape"), ([1.0, np.nan, 1.0], "NaN")]:
        with pytest.raises(ValueError, match=message):
            check_sample_weight(bad, 3)


def test_dtype_option():
    assert resolve_dtype(None) == np.float64 and resolve_dtype("float32") == np.float32
    with pytest.raises(ValueError, match="float64 or float32"):
        resolve_dtype("int32")
    import jax.numpy as jnp

    with precision("float64") as dt:
        assert jnp.zeros(1, dt).dtype == np.float64
