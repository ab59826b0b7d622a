"""The shared input and hyperparameter checks raise ValueError with an actionable message
(TypeError only for values of a type that cannot be a number, as scikit-learn does)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator

from jaxsr._config import precision, resolve_dtype
from jaxsr._validation import (
    as_2d_float,
    check_choice,
    check_int,
    check_numeric_column,
    check_real,
    check_sample_weight,
    check_X_y,
    validate_X,
)


@pytest.mark.parametrize(
    "column, dtype",
    [
        (["x", "y", "z"], None),
        (["x", "y", "z"], "string"),
        (["u", "v", "u"], "category"),
        ([object(), object(), object()], object),
    ],
)
def test_non_numeric_columns_are_named(column, dtype):
    df = pd.DataFrame({"ok": [1.0, 2.0, 3.0], "bad col": pd.Series(column, dtype=dtype)})
    with pytest.raises(ValueError, match="non-numeric column\\(s\\) 'bad col'; encode"):
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
        (
            np.array([[1.0, np.nan], [2.0, 3.0]]),
            np.ones(2),
            "NaN or infinite values in 1 row\\(s\\), in column 1;",
        ),
        (np.array([[1.0, 2.0], [2.0, 3.0]]), np.array([1.0, np.inf]), "y contains NaN"),
        (np.ones((2, 2)), np.ones((2, 2)), "y must be 1-D"),
        (np.array([["a", "b"]]), np.ones(1), "X must be numeric"),
    ],
)
def test_bad_training_input(X, y, message):
    with pytest.raises(ValueError, match=message):
        check_X_y(X, y)


def test_default_names_and_column_vector_target():
    from sklearn.exceptions import DataConversionWarning

    with pytest.warns(DataConversionWarning, match="column-vector y"):
        X, y, names = check_X_y(np.arange(6.0).reshape(3, 2), np.arange(3.0).reshape(3, 1))
    assert names == ["x1", "x2"] and y.shape == (3,) and X.dtype == np.float64
    with pytest.raises(ValueError, match="requires y to be passed"):
        check_X_y(np.ones((3, 2)), None)


def test_messages_name_columns_and_count_rows():
    df = pd.DataFrame({"a": [1.0, np.nan, np.inf], "b c": [np.nan, 1.0, 2.0], "d": 1.0})
    with pytest.raises(ValueError, match=r"in 3 row\(s\), in 'a', 'b c'; impute"):
        as_2d_float(df)
    y = pd.Series([1.0, np.nan, 2.0, np.inf], name="sales")
    with pytest.raises(
        ValueError,
        match=r"y \(column 'sales'\) contains NaN or infinite "
        r"values in 2 row\(s\)",
    ):
        check_X_y(np.ones((4, 1)), y)
    with pytest.raises(ValueError, match=r"column 'u' contains NaN or infinite values in 1 "):
        check_numeric_column(pd.array([1, None, 3], dtype="Int64").to_numpy(), "u")
    with pytest.raises(ValueError, match="column 'u' has non-numeric values; hint"):
        check_numeric_column(np.array(["x", "1"], dtype=object), "u", hint="; hint")


def test_sparse_complex_and_object_values():
    import scipy.sparse

    with pytest.raises(ValueError, match="sparse input is not supported"):
        as_2d_float(scipy.sparse.csr_matrix(np.eye(3)))
    with pytest.raises(ValueError, match="Complex data not supported"):
        as_2d_float(np.ones((2, 2)) * 1j)
    bad = np.ones((2, 2), dtype=object)
    bad[0, 0] = {"a": 1}
    with pytest.raises(TypeError, match="X must be numeric"):
        as_2d_float(bad)


class _Fitted(BaseEstimator):
    """Stands for an estimator in validate_X (it only holds attributes)."""


def test_predict_reorders_named_columns_and_checks_width():
    est = _Fitted()
    fit_frame = pd.DataFrame({"a": [0.0, 1.0], "b": [5.0, 6.0]})
    validate_X(est, fit_frame, reset=True)
    assert list(est.feature_names_in_) == ["a", "b"] and est.n_features_in_ == 2
    df = pd.DataFrame({"b": [1.0, 2.0], "a": [3.0, 4.0]})
    X = validate_X(est, df, reset=False)
    np.testing.assert_array_equal(X, [[3.0, 1.0], [4.0, 2.0]])
    with pytest.raises(ValueError, match=r"missing the columns \['b'\].*columns \['c'\]"):
        validate_X(est, pd.DataFrame({"a": [1.0], "c": [2.0]}), reset=False)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        validate_X(est, np.ones((2, 2)), reset=False)
    # fitted on an array: no feature_names_in_, and a frame is used by position with a warning
    validate_X(est, np.ones((2, 2)), reset=True)
    assert not hasattr(est, "feature_names_in_") and est.n_features_in_ == 2
    with pytest.raises(ValueError, match="X has 1 features, but _Fitted is expecting 2"):
        validate_X(est, np.ones((2, 1)), reset=False)
    with pytest.warns(UserWarning, match="fitted without feature names"):
        validate_X(est, df, reset=False)


def test_hyperparameter_checks():
    assert check_int(3, "n") == 3 and check_int(np.int64(2), "n", min_value=1) == 2
    assert check_int(None, "n", allow_none=True) is None
    for bad in (0, 2.0, True, "3", None):
        with pytest.raises(ValueError, match="n must be an integer >= 1; got"):
            check_int(bad, "n", min_value=1)
    with pytest.raises(ValueError, match="k must be an integer in 0..3 or None; got 4"):
        check_int(4, "k", min_value=0, max_value=3, allow_none=True)
    assert check_real(0, "lam", min_value=0) == 0.0
    for bad in (-1.0, np.nan, np.inf, True, "1"):
        with pytest.raises(ValueError, match="lam must be a finite number >= 0; got"):
            check_real(bad, "lam", min_value=0)
    with pytest.raises(ValueError, match="t must be a finite number > 0 or None"):
        check_real(0.0, "t", min_value=0, strict=True, allow_none=True)
    assert check_choice("a", "loss", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"Unknown loss 'c'; choose one of \['a', 'b'\]"):
        check_choice("c", "loss", ("a", "b"))
    with pytest.raises(ValueError, match="Unknown loss"):
        check_choice([1], "loss", ("a", "b"))


def test_sample_weight_checks():
    np.testing.assert_array_equal(check_sample_weight(None, 3), np.ones(3))
    for bad, message in [
        ([1.0, -1.0, 1.0], "non-negative"),
        ([0.0, 0.0, 0.0], "sums to zero"),
        ([1.0, 1.0], "shape"),
        ([1.0, np.nan, 1.0], "NaN"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_sample_weight(bad, 3)


def test_dtype_option():
    assert resolve_dtype(None) == np.float64 and resolve_dtype("float32") == np.float32
    with pytest.raises(ValueError, match="float64 or float32"):
        resolve_dtype("int32")
    import jax.numpy as jnp

    with precision("float64") as dt:
        assert jnp.zeros(1, dt).dtype == np.float64


def test_to_device_matches_jnp_asarray_and_compiles_nothing():
    import sys
    from pathlib import Path

    import jax
    import jax.numpy as jnp

    sys.path.insert(0, str(Path(__file__).parent / "symbolic"))
    from compile_log import count_compilations

    from jaxsr._config import to_device

    rng = np.random.default_rng(0)
    cases = [
        (rng.normal(size=(3, 7)), None),
        (rng.normal(size=5).astype(np.float32), None),
        (np.arange(6).reshape(2, 3) > 2, None),
        (2.5, np.float32),
        (7, np.int32),
        (False, None),
        ([1.0, 2.0], np.float64),
        (rng.normal(size=(2, 4)).T, None),
    ]
    for x64 in (True, False):
        with jax.enable_x64(x64):
            for x, dt in cases:
                if dt == np.float64 and not x64:
                    continue  # jnp.asarray warns there (float64 not available)
                with count_compilations() as n:
                    got = to_device(x, dt)
                assert n["compile"] == 0, (x, dt)
                want = jnp.asarray(x, dt)
                assert isinstance(got, jax.Array) and not got.weak_type
                assert got.dtype == want.dtype and got.shape == want.shape, (x, dt, x64)
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # a JAX array is returned as it is, or cast on the device
    a = jnp.arange(4, dtype=jnp.int32)
    assert to_device(a) is a and to_device(a, np.int32) is a
    assert to_device(a, np.float32).dtype == np.float32
    with pytest.raises((TypeError, ValueError)):
        to_device(["a", "b"], np.float64)
