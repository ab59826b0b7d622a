"""jaxsr.io: JSON model files round-trip to identical predictions; bad files are refused."""

import json
import re

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
    doc = {
        "format": "jaxsr-model",
        "format_version": FORMAT_VERSION + 1,
        "kind": "SymbolicRegressor",
        "model": {},
    }
    with pytest.raises(ValueError, match="Upgrade jaxsr"):
        model_from_dict(doc)
    doc["format_version"] = FORMAT_VERSION
    doc["kind"] = "NeuralNet"
    with pytest.raises(ValueError, match="unknown model kind 'NeuralNet'"):
        model_from_dict(doc)
    del doc["model"]
    with pytest.raises(ValueError, match='no "model"'):
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
    model = OptimalTreeRegressor(
        regularization=0.02, depth_budget=3, binarizer=Binarizer(n_thresholds=3)
    ).fit(X, y)
    path = save_model(model, tmp_path / "tree.json")
    loaded = load_model(path)
    assert type(loaded) is OptimalTreeRegressor
    X_new, _ = datasets.make_newton_gravitation(100, seed=3, as_frame=True, physical_names=True)
    np.testing.assert_array_equal(
        np.asarray(loaded.predict(X_new)), np.asarray(model.predict(X_new))
    )
    assert loaded.export_text() == model.export_text()
    assert loaded.objective_ == model.objective_ and loaded.optimal_ == model.optimal_


def test_binarizer_round_trip(tmp_path):
    X, _ = datasets.make_newton_gravitation(50, seed=0, as_frame=True)
    b = Binarizer(n_thresholds=3).fit(X)
    loaded = load_model(save_model(b, tmp_path / "b.json"))
    assert loaded.feature_names_out_ == b.feature_names_out_
    np.testing.assert_array_equal(loaded.transform(X), b.transform(X))


@pytest.mark.parametrize("dtype", [np.float64, "float64", np.dtype("float32"), "float32", None])
def test_save_model_accepts_every_form_of_dtype(tmp_path, dtype):
    import jax.numpy as jnp

    X = np.arange(1.0, 201.0).reshape(100, 2)  # the shape of the round trip above
    y = 3.0 * X[:, 0] + 2.0
    Xb = (np.arange(100)[:, None] % np.array([2, 3]) == 0).astype(float)
    for model in (
        SymbolicRegressor(max_iterations=2, dtype=dtype).fit(X, y),
        OptimalTreeRegressor(depth_budget=2, dtype=dtype).fit(Xb, y),
    ):
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


# --------------------------------------------------------------------------------------
# deep input and damaged files

from jaxsr.io import MAX_JSON_DEPTH  # noqa: E402
from jaxsr.symbolic.expression import ADD, CONST, MUL, SUB, VAR, Expression  # noqa: E402
from jaxsr.symbolic.regressor import _FORMAT as _SR_FORMAT  # noqa: E402
from jaxsr.symbolic.regressor import _VERSION as _SR_VERSION  # noqa: E402

_CHAIN_OPS = (ADD, MUL, SUB)
_CHAIN_CONST = {ADD: 0.001, MUL: 0.999, SUB: 0.002}


def _chain(levels):
    """``((((x1 + c) * c) - c) ...)``, ``levels`` operators deep, as pre-order arrays."""
    ops = [_CHAIN_OPS[k % 3] for k in range(levels)][::-1]  # the root is the last operator
    op = ops + [VAR] + [CONST] * levels
    value = [0.0] * (levels + 1) + [_CHAIN_CONST[o] for o in ops[::-1]]
    return Expression(op, value, [0] * len(op))


def _chain_numpy(levels, x1):
    """The chain evaluated level by level (a loop, no tree walk)."""
    v = np.asarray(x1, dtype=np.float64).copy()
    for k in range(levels):
        o = _CHAIN_OPS[k % 3]
        c = _CHAIN_CONST[o]
        v = v + c if o == ADD else (v * c if o == MUL else v - c)
    return v


def _sr_document(tree, n_features=2):
    """A SymbolicRegressor model document around ``tree`` (no fit: the loader builds the
    front from the tree)."""
    minimal = {
        "format": _SR_FORMAT,
        "version": _SR_VERSION,
        "params": {},
        "tree": tree.to_dict(),
        "feature_names": [f"x{j + 1}" for j in range(n_features)],
        "n_features_in_": n_features,
        "mse_": 0.0,
        "n_iterations_": 1,
    }
    return json.loads(json.dumps(model_to_dict(SymbolicRegressor.from_dict(minimal))))


def test_a_1200_level_expression_loads_and_predicts(tmp_path):
    tree = _chain(1200)
    assert tree.height == 1201
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(_sr_document(tree)))
    model = load_model(path)
    X = np.column_stack([np.linspace(1.0, 2.0, 37), np.linspace(-1.0, 1.0, 37)])
    expected = _chain_numpy(1200, X[:, 0])
    np.testing.assert_allclose(np.asarray(model.predict(X)), expected, rtol=1e-12)
    np.testing.assert_allclose(tree.evaluate(X), expected, rtol=1e-12)
    # the printed form parses back to the same tree; str() falls back to it (beyond sympy)
    assert Expression.parse(model.expression_) == tree
    assert str(model) == "y = " + model.expression_
    assert (
        model_to_dict(load_model(save_model(model, tmp_path / "again.json")))["model"]["tree"]
        == tree.to_dict()
    )


def test_json_nested_too_deep_is_refused(tmp_path):
    path = tmp_path / "nested.json"
    path.write_text(
        '{"format": "jaxsr-model", "format_version": 1, "model": ' + "[" * 5000 + "]" * 5000 + "}"
    )
    with pytest.raises(
        ValueError,
        match=f"nests JSON arrays and objects 5001 levels deep; a "
        f"model file nests at most MAX_JSON_DEPTH = {MAX_JSON_DEPTH} levels",
    ):
        load_model(path)
    # brackets inside strings do not count
    path.write_text(json.dumps({"format": "x", "note": "[" * 500}))
    with pytest.raises(ValueError, match="not a jaxsr model file"):
        load_model(path)


def _set(doc, dotted, value):
    """``doc["a"]["b"][3] = value`` for ``dotted = "a.b.3"`` (``value`` ``...`` deletes)."""
    keys = [int(k) if k.lstrip("-").isdigit() else k for k in dotted.split(".")]
    target = doc
    for k in keys[:-1]:
        target = target[k]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value


# tree of the symbolic document below: (x2 * 2.5) + x1, pre-order [+, *, x2, 2.5, x1]
_SR_DAMAGE = [
    ("tree.value.3", float("inf"), "tree.value[3] is inf; constants must be finite"),
    ("tree.value.3", float("nan"), "tree.value[3] is nan; constants must be finite"),
    ("tree.value.3", "2.5", "tree.value[3] must be a number; got '2.5'"),
    ("tree.op.0", 42, "tree.op[0] is 42, not an operator code"),
    ("tree.op.1", 1, "tree is not one expression tree in pre-order"),
    (
        "tree.feature.2",
        7,
        "tree.feature[2] is 7; a variable indexes one of the 2 input columns (0..1)",
    ),
    ("tree.feature.2", -1, "tree.feature[2] is -1; it must be in 0..2147483647"),
    ("tree.feature", [0, 0], "tree.feature has 2 entries; it must have 5"),
    ("tree.op", ..., "the field tree.op is missing"),
    ("n_features_in_", 0, "n_features_in_ is 0; it must be >= 1"),
    ("params.max_nodes", -1, "params: max_nodes must be an integer >= 1"),
    ("params.max_noodles", 5, "params has the unknown parameter(s) ['max_noodles']"),
    ("feature_names", ["x1"], "feature_names has 1 entries; it must have 2"),
    ("feature_names.1", 3, "feature_names[1] must be a string; got 3"),
    ("mse_", -1.0, "mse_ is -1.0; it must be >= 0"),
    ("mse_", ..., "the field mse_ is missing"),
    ("n_iterations_", 1.5, "n_iterations_ must be an integer; got 1.5"),
    (
        "history_",
        [{"a": {"b": 1}}],
        "history_[0].a must be a string, a number, true/false or null; got an object",
    ),
    (
        "front.trees.0.value.3",
        float("-inf"),
        "front.trees[0].value[3] is -inf; constants must be finite",
    ),
    ("front.selected_index_", 5, "front.selected_index_ is 5; it must be in 0..0"),
    (
        "front.equations_.complexity.0",
        99,
        "front.equations_.complexity[0] is 99, but front.trees[0] has 5 nodes",
    ),
    ("front.equations_.loss", [], "front.equations_.loss must be a list of 1 entries"),
    ("front.loss_floor", float("nan"), "front.loss_floor is nan"),
    ("front.readable_X", [[1.0, float("inf")]], "front.readable_X[0][1] is inf"),
    ("front.readable_X", [[1.0]], "front.readable_X[0] has 1 entries; it must have 2"),
]


@pytest.mark.parametrize(
    ("field", "value", "message"), _SR_DAMAGE, ids=[f"{f}={v!r}" for f, v, _ in _SR_DAMAGE]
)
def test_a_damaged_symbolic_model_file_names_the_field(tmp_path, field, value, message):
    doc = _sr_document(Expression.parse("x2 * 2.5 + x1"))
    model = model_from_dict(doc)  # the undamaged document loads
    np.testing.assert_array_equal(model.predict(np.array([[1.0, 2.0]])), [6.0])
    _set(doc["model"], field, value)
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    with pytest.raises(ValueError, match=re.escape(message)):
        load_model(path)


@pytest.fixture(scope="module")
def tree_document():
    X, y = datasets.make_newton_gravitation(200, seed=2, as_frame=True, physical_names=True)
    model = OptimalTreeRegressor(
        regularization=0.05, depth_budget=3, backend="numpy", binarizer=Binarizer(n_thresholds=2)
    ).fit(X, np.log10(y))
    return json.loads(json.dumps(model_to_dict(model))), X


def _tree_damage(doc):
    """(field, value, message) cases for a saved tree model ``doc``."""
    m = doc["model"]
    obj = m["certificate"]["objective"]
    n = len(m["tree"]["feature"])
    M = len(m["binary_feature_names"])
    leaf = m["tree"]["feature"].index(-1)
    return [
        (
            "certificate.lower_bound",
            obj + 1.0,
            f"certificate.lower_bound is {obj + 1.0!r}, above certificate.objective {obj!r}",
        ),
        (
            "certificate.objective",
            float("inf"),
            "certificate.objective is inf; the certificate's numbers must be finite",
        ),
        ("certificate.gap", 0.5, "certificate.gap is 0.5; it must be objective - lower_bound"),
        ("certificate.optimal", "yes", "certificate.optimal must be true or false"),
        (
            f"tree.value.{leaf}",
            float("nan"),
            f"tree.value[{leaf}] is nan; predictions must be finite",
        ),
        ("tree.feature.0", M, f"tree.feature[0] is {M}; it must be in -1..{M - 1}"),
        ("tree.true_child.0", 0, "tree.true_child[0] is 0; a child index must come after its node"),
        ("tree.false_child.0", 10**6, f"tree.false_child[0] is 1000000; it must be in -1..{n - 1}"),
        (f"tree.true_child.{leaf}", 1, f"node {leaf} is a leaf (feature -1)"),
        ("tree.n_samples.0", -3, "tree.n_samples[0] is -3; it must be in 0.."),
        (
            "binarizer.fitted.features.0.1",
            "<",
            "binarizer.fitted.features[0][1] is '<'; the "
            "operator of a binary feature is '<=' (a threshold) or '==' (a category)",
        ),
        (
            "binarizer.fitted.features.0.1",
            "==",
            "binarizer.fitted.features[0][1] is '==' on the numeric column",
        ),
        (
            "binarizer.fitted.features.0.2",
            float("inf"),
            "binarizer.fitted.features[0][2] is inf; thresholds must be finite",
        ),
        (
            "binarizer.fitted.features.0.0",
            50,
            "binarizer.fitted.features[0][0] is 50; it must be in 0..2",
        ),
        (
            "binarizer.params.n_thresholds",
            0,
            "binarizer.params: n_thresholds must be an integer >= 1",
        ),
        (
            "binary_feature_names.0",
            "edited",
            "binary_feature_names differ from the names of the binarizer's features",
        ),
        ("normalizer", 0.0, "normalizer is 0.0; it must be > 0"),
        ("params.regularization", -1.0, "params: regularization must be a finite number >= 0"),
        ("n_features_in", 5, "feature_names_in has 3 names; the model has n_features_in = 5"),
    ]


def test_a_damaged_tree_model_file_names_the_field(tmp_path, tree_document):
    import copy

    doc, X = tree_document
    model = model_from_dict(copy.deepcopy(doc))
    assert model.lower_bound_ <= model.objective_
    cases = _tree_damage(doc)
    for field, value, message in cases:
        bad = copy.deepcopy(doc)
        _set(bad["model"], field, value)
        path = tmp_path / "damaged.json"
        path.write_text(json.dumps(bad, allow_nan=True))
        with pytest.raises(ValueError, match=re.escape(message)):
            load_model(path)
    # a Binarizer document on its own names its fields from its top
    b = copy.deepcopy(doc["model"]["binarizer"])
    b["fitted"]["features"][0][1] = "<"
    with pytest.raises(ValueError, match=re.escape("fitted.features[0][1] is '<'")):
        Binarizer.from_dict(b)
