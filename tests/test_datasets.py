"""jaxsr.datasets: generators checked against their formulas, ranges and the benchmark CSV."""

import math

import numpy as np
import pandas as pd
import pytest

from jaxsr import datasets

# --------------------------------------------------------------------------------------
# Newton's law of gravitation (paper, section 3)


def test_newton_ranges_formula_and_dtype():
    X, y = datasets.make_newton_gravitation(1000, seed=0)
    assert X.shape == (1000, 3) and y.shape == (1000,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert np.all((X[:, :2] >= 1e23) & (X[:, :2] <= 1e25))
    assert np.all((X[:, 2] >= 1e8) & (X[:, 2] <= 1e12))
    # eq. 36 with G = 6.67392e-11, recomputed in a different order of operations
    F = 6.67392e-11 * (X[:, 0] / X[:, 2]) * (X[:, 1] / X[:, 2])
    np.testing.assert_allclose(y, F, rtol=1e-14)
    # the paper: targets from about 1e12 N up (6.7e11 is the smallest possible force)
    assert y.min() > 6.6e11 and y.max() < 6.7e23


def test_newton_is_log_uniform():
    X, _ = datasets.make_newton_gravitation(4000, seed=3)
    e = np.log10(X)
    # each decade holds its share: masses 2 decades, distance 4 decades
    for j, (lo, hi) in enumerate([(23, 25), (23, 25), (8, 12)]):
        counts = np.histogram(e[:, j], bins=np.arange(lo, hi + 1))[0]
        share = counts / len(e)
        np.testing.assert_allclose(share, 1.0 / (hi - lo), atol=0.035)
    # a linear-uniform draw would put ~99% of the masses in the top decade
    assert np.mean(e[:, 0] < 24) > 0.4


def test_newton_deterministic_and_frames():
    X1, y1 = datasets.make_newton_gravitation(50, seed=7)
    X2, y2 = datasets.make_newton_gravitation(50, seed=7)
    X3, _ = datasets.make_newton_gravitation(50, seed=8)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(X1, X3)
    Xf, yf = datasets.make_newton_gravitation(50, seed=7, as_frame=True)
    assert list(Xf.columns) == ["x1", "x2", "x3"] and yf.name == "target"
    np.testing.assert_array_equal(Xf.to_numpy(), X1)
    Xp, yp = datasets.make_newton_gravitation(50, seed=7, as_frame=True, physical_names=True)
    assert list(Xp.columns) == ["m1", "m2", "d"] and yp.name == "F"
    np.testing.assert_array_equal(yp.to_numpy(), y1)


@pytest.mark.parametrize("n", [0, -1, 2.5, True])
def test_newton_bad_n_samples(n):
    with pytest.raises(ValueError, match="n_samples"):
        datasets.make_newton_gravitation(n)


def test_newton_physical_names_need_frame():
    with pytest.raises(ValueError, match="as_frame"):
        datasets.make_newton_gravitation(10, physical_names=True)


# --------------------------------------------------------------------------------------
# Feynman equations


def _feynman_rows():
    root = datasets.shared_data_dir(required=False)
    path = None if root is None else root / "feynman" / "FeynmanEquations.csv"
    if path is None or not path.is_file():
        pytest.skip("shared data folder with feynman/FeynmanEquations.csv not found")
    df = pd.read_csv(path)
    return {r["Filename"]: r for _, r in df.iterrows() if isinstance(r["Filename"], str)}


def _csv_function(row):
    """The CSV's formula turned into a numpy function by sympy (independent of jaxsr)."""
    sympy = pytest.importorskip("sympy")
    n = int(row["# variables"])
    names = [row[f"v{k}_name"] for k in range(1, n + 1)]
    symbols = sympy.symbols(names)
    local = {nm: s for nm, s in zip(names, symbols, strict=True)}
    local["pi"] = sympy.pi
    local.update(ln=sympy.log, arcsin=sympy.asin, arccos=sympy.acos, arctan=sympy.atan)
    expr = sympy.sympify(row["Formula"], locals=local)
    return names, sympy.lambdify(symbols, expr, "numpy"), expr, local


@pytest.mark.parametrize("name", datasets.feynman_equation_names())
def test_builtin_feynman_matches_csv(name):
    rows = _feynman_rows()
    row = rows[name]
    eq = datasets.get_feynman_equation(name, source="builtin")
    n = int(row["# variables"])
    csv_vars = [
        (row[f"v{k}_name"], float(row[f"v{k}_low"]), float(row[f"v{k}_high"]))
        for k in range(1, n + 1)
    ]
    assert list(eq.variables) == csv_vars
    assert eq.formula == row["Formula"]
    names, f, expr, local = _csv_function(row)
    X, y = datasets.feynman_equation(name, 400, seed=1, source="builtin")
    for j, (_, lo, hi) in enumerate(csv_vars):
        assert X[:, j].min() >= lo and X[:, j].max() <= hi
        assert X[:, j].max() - X[:, j].min() > 0.8 * (hi - lo)  # spread over the range
    np.testing.assert_allclose(y, f(*X.T), rtol=1e-12)
    # the rational expression is +-*/ only and equals the formula
    assert "**" not in eq.expression
    sympy = pytest.importorskip("sympy")
    assert sympy.simplify(sympy.sympify(eq.expression, locals=local) - expr) == 0


def test_csv_source_covers_every_rational_equation():
    rows = _feynman_rows()
    names = datasets.feynman_equation_names(include_csv=True)
    assert set(datasets.feynman_equation_names()) <= set(names)
    # I.44.4 uses ln, I.6.2a exp/sqrt: not rational
    assert "I.44.4" not in names and "I.6.2a" not in names
    for name in ["I.39.1", "II.11.28", "III.19.51", "I.32.17"]:
        assert name in names
        _, f, _, _ = _csv_function(rows[name])
        X, y = datasets.feynman_equation(name, 200, seed=2)
        np.testing.assert_allclose(y, f(*X.T), rtol=1e-12)
        assert "**" not in datasets.get_feynman_equation(name).expression


def test_every_csv_equation_with_rational_only_false():
    """All 100 equations of the benchmark (AI Feynman set): each samples inside
    its ranges, finite, equal to sympy's evaluation of the CSV formula; the non-rational
    ones say so and the rational ones are the default list."""
    rows = _feynman_rows()
    names = datasets.feynman_equation_names(include_csv=True, rational_only=False)
    assert sorted(names) == sorted(rows) and len(names) == 100
    rational = set(datasets.feynman_equation_names(include_csv=True))
    for name in names:
        eq = datasets.get_feynman_equation(name, rational_only=False)
        assert eq.rational == (name in rational), name
        _, f, _, _ = _csv_function(rows[name])
        X, y = eq.sample(64, seed=3)
        assert np.all(np.isfinite(y)), name
        np.testing.assert_allclose(y, f(*X.T), rtol=1e-12, err_msg=name)
    assert not datasets.get_feynman_equation("I.44.4", rational_only=False).rational  # ln
    X, y = datasets.feynman_equation("I.6.2a", 5, seed=0, rational_only=False)
    np.testing.assert_allclose(y, np.exp(-(X[:, 0] ** 2) / 2) / np.sqrt(2 * np.pi), rtol=1e-14)


def test_feynman_non_rational_and_unknown():
    _feynman_rows()
    with pytest.raises(ValueError, match=r"\+ - \* /"):
        datasets.get_feynman_equation("I.6.2a")
    with pytest.raises(ValueError, match="no equation named"):
        datasets.get_feynman_equation("I.0.0")
    with pytest.raises(ValueError, match="source"):
        datasets.get_feynman_equation("I.27.6", source="web")


def test_feynman_builtin_works_without_shared_data(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXSR_SHARED_DATA", str(tmp_path))  # an empty folder
    X, y = datasets.feynman_equation("I.27.6", 100, seed=0, as_frame=True)
    assert list(X.columns) == ["d1", "d2", "n"]
    d1, d2, n = X.to_numpy().T
    np.testing.assert_allclose(y.to_numpy(), 1 / (1 / d1 + n / d2), rtol=1e-14)
    with pytest.raises(ValueError, match="unknown Feynman equation"):
        datasets.feynman_equation("I.39.1")
    with pytest.raises(FileNotFoundError):
        datasets.feynman_equation("I.39.1", source="csv")


def test_feynman_i_9_18_squares_as_products_and_determinism():
    eq = datasets.get_feynman_equation("I.9.18", source="builtin")
    assert eq.expression == "G*m1*m2/((x2-x1)*(x2-x1)+(y2-y1)*(y2-y1)+(z2-z1)*(z2-z1))"
    X1, y1 = datasets.feynman_equation("I.9.18", 30, seed=5)
    X2, y2 = datasets.feynman_equation("I.9.18", 30, seed=5)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    m1, m2, G, x1, x2, y1_, y2_, z1, z2 = X1.T
    r2 = (x2 - x1) ** 2 + (y2_ - y1_) ** 2 + (z2 - z1) ** 2
    np.testing.assert_allclose(y1, G * m1 * m2 / r2, rtol=1e-14)


# --------------------------------------------------------------------------------------
# diabetes and the shared folder


def test_load_diabetes_real_measurements():
    pytest.importorskip("sklearn")
    X, y = datasets.load_diabetes()
    assert X.shape == (442, 10) and y.shape == (442,)
    assert list(X.columns) == ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    assert X["age"].min() == 19 and X["age"].max() == 79  # years
    assert set(np.unique(X["sex"])) == {1.0, 2.0}
    assert y.min() == 25 and y.max() == 346
    Xs, ys = datasets.load_diabetes(scaled=True, as_frame=False)
    assert isinstance(Xs, np.ndarray) and Xs.shape == (442, 10)
    np.testing.assert_allclose(Xs.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(Xs, axis=0), 1, rtol=1e-6)
    np.testing.assert_array_equal(ys, y.to_numpy())


def test_shared_data_dir_env_override(monkeypatch, tmp_path):
    (tmp_path / "sub").mkdir()
    monkeypatch.setenv("JAXSR_SHARED_DATA", str(tmp_path))
    assert datasets.shared_data_dir() == tmp_path.resolve()
    monkeypatch.setenv("JAXSR_SHARED_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="JAXSR_SHARED_DATA"):
        datasets.shared_data_dir()
    assert datasets.shared_data_dir(required=False) is None
    with pytest.raises(FileNotFoundError):
        datasets.load_shared_csv("osrt/binarized/servo.csv")


def test_load_shared_csv_reads_in_place(monkeypatch, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "t.csv").write_text("a b,c,y\n1,0,2.5\n0,1,-1\n")
    monkeypatch.setenv("JAXSR_SHARED_DATA", str(tmp_path))
    X, y = datasets.load_shared_csv("d/t.csv")
    assert list(X.columns) == ["a b", "c"] and y.name == "y"
    np.testing.assert_array_equal(y.to_numpy(), [2.5, -1.0])
    X, y = datasets.load_shared_csv("d/t.csv", target="a b")
    assert list(X.columns) == ["c", "y"]
    with pytest.raises(ValueError, match="target column"):
        datasets.load_shared_csv("d/t.csv", target="zz")
    with pytest.raises(FileNotFoundError, match="not found"):
        datasets.load_shared_csv("d/none.csv")


def test_load_shared_osrt_binarized():
    if datasets.shared_data_dir(required=False) is None:
        pytest.skip("shared data folder not found")
    X, y = datasets.load_shared_csv("osrt/binarized/servo.csv")
    assert X.shape == (167, 15) and y.shape == (167,)
    assert np.isin(X.to_numpy(), (0, 1)).all()
    assert math.isfinite(float(y.sum()))
