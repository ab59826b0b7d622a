"""jaxsr.io: JSON model files round-trip to identical predictions; bad files are refused."""

import json

import numpy as np
import pandas as pd
import pytest

from jaxsr import datasets
from jaxsr.io import FORMAT_VERSION, load_model, model_from_dict, model_to_dict, save_model
from jaxsr.symbolic import ExtrapolationWarning, SymbolicRegressor
from jaxsr.trees import Binarizer, OptimalTreeRegressor


def test_refuses_what_is_not_a_model(tmp_path):
    with pytest.raises(TypeError, match="cannot save a dict"):
        save_model({"a": 1}, tmp_path / "m.json")
    with pytest.raises(ValueError, match="not a jaxsr model"):
        model_from_dict({"kind": "SymbolicRegressor", "model": {}})
    doc = {"format": "jaxsr-model", "format_version": FORMAT_VERSION + 1,
           "kind": "SymbolicRegressor", "model": {}}
    with pytest.raises(ValueError, match="Upgrade jaxsr"):
        model_from_dict(doc)
    doc["format_version"] = FORMAT_VERSION
    doc["kind"] = "NeuralNet"
    with pytest.raises(ValueError, match="unknown model kind 'NeuralNet'"):
        model_from_dict(doc)
    del doc["model"]
    with pytest.raises(ValueError, match="no \"model\""):
        model_from_dict(doc)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_model(bad)


def test_symbolic_round_trip(tmp_path):
    # y = 2.4*x1 - x2/x1 - 10 (the shapes of the engine's own tests: compiled once per session)
    x1 = np.arange(1.0, 101.0)
    x2 = np.arange(200.0, 0.0, -2.0)
    X = pd.DataFrame({"x 1": x1, "x/2": x2})
    y = 2.4 * x1 - x2 / x1 - 10
    model = SymbolicRegressor(max_nodes=13, strategy=1).fit(X, y)
    path = save_model(model, tmp_path / "sr.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == "jaxsr-model" and doc["kind"] == "SymbolicRegressor"
    loaded = load_model(path)
    assert type(loaded) is SymbolicRegressor
    assert loaded.expression_ == model.expression_
    X_new = pd.DataFrame({"x 1": np.linspace(0.5, 150, 77), "x/2": np.linspace(-3, 300, 77)})
    with pytest.warns(ExtrapolationWarning):  # X_new reaches beyond the training range
        new = np.asarray(loaded.predict(X_new))
    with pytest.warns(ExtrapolationWarning):
        np.testing.assert_array_equal(new, np.asarray(model.predict(X_new)))
    # the in-memory document equals the file's
    assert model_to_dict(loaded)["model"] == doc["model"]


def test_tree_round_trip_with_binarizer(tmp_path):
    X, y = datasets.make_newton_gravitation(300, seed=2, as_frame=True, physical_names=True)
    y = np.log10(y)  # a tree on the log force: splits on the distance first
    model = OptimalTreeRegressor(regularization=0.02, depth_budget=3,
                                 binarizer=Binarizer(n_thresholds=3)).fit(X, y)
    path = save_model(model, tmp_path / "tree.json")
    loaded = load_model(path)
    assert type(loaded) is OptimalTreeRegressor
    X_new, _ = datasets.make_newton_gravitation(100, seed=3, as_frame=True, physical_names=True)
    np.testing.assert_array_equal(np.asarray(loaded.predict(X_new)),
                                  np.asarray(model.predict(X_new)))
    assert loaded.export_text() == model.export_text()
    assert loaded.objective_ == model.objective_ and loaded.optimal_ == model.optimal_


def test_binarizer_round_trip(tmp_path):
    X, _ = datasets.make_newton_gravitation(50, seed=0, as_frame=True)
    b = Binarizer(n_thresholds=3).fit(X)
    loaded = load_model(save_model(b, tmp_path / "b.json"))
    assert loaded.feature_names_out_ == b.feature_names_out_
    np.testing.assert_array_equal(loaded.transform(X), b.transform(X))


@pytest.mark.parametrize("dtype", [np.float64, "float64", np.dtype("float32"), "float32",
                                   None])
def test_save_model_accepts_every_form_of_dtype(tmp_path, dtype):
    import jax.numpy as jnp

    X = np.arange(1.0, 201.0).reshape(100, 2)  # the shape of the round trip above
    y = 3.0 * X[:, 0] + 2.0
    Xb = (np.arange(100)[:, None] % np.array([2, 3]) == 0).astype(float)
    for model in (SymbolicRegressor(max_iterations=2, dtype=dtype).fit(X, y),
                  OptimalTreeRegressor(depth_budget=2, dtype=dtype).fit(Xb, y)):
        data = Xb if isinstance(model, OptimalTreeRegressor) else X
        loaded = load_model(save_model(model, tmp_path / "m.json"))
        pred = loaded.predict(data)
        np.testing.assert_array_equal(pred, model.predict(data))
        assert pred.dtype == model.predict(data).dtype == np.dtype(dtype or "float64")
    # jnp's scalar types are dtypes too
    model = SymbolicRegressor(max_iterations=1, dtype=jnp.float64).fit(X, y)
    assert load_model(save_model(model, tmp_path / "j.json")).get_params()["dtype"] == "float64"


def test_feature_names_survive_the_round_trip(tmp_path):
    X = pd.DataFrame({"a": np.arange(1.0, 101.0), "b": np.arange(100.0) % 7})
    y = 2.0 * X["a"].to_numpy()
    model = SymbolicRegressor(max_iterations=2).fit(X, y)
    loaded = load_model(save_model(model, tmp_path / "f.json"))
    assert list(loaded.feature_names_in_) == ["a", "b"]
    np.testing.assert_array_equal(loaded.predict(X[["b", "a"]]), model.predict(X))
    arr = SymbolicRegressor(max_iterations=2).fit(X.to_numpy(), y)
    loaded = load_model(save_model(arr, tmp_path / "g.json"))
    assert not hasattr(loaded, "feature_names_in_") and loaded.expression_ == arr.expression_
    assert loaded.n_features_in_ == 2
