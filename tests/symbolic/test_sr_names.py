"""Feature names that are not plain identifiers print unambiguously: bracketed in the text
forms (``3*[T/R]/[Node Number]``), ``\\text{...}`` in LaTeX, the real name in sympy, and
read back by :meth:`Expression.parse`; plain identifiers print as before."""

import numpy as np
import pytest
import sympy

from jaxsr.symbolic import Expression, SymbolicRegressor
from jaxsr.symbolic.expression import (
    RESERVED_NAMES,
    format_name,
    latex_name,
    name_is_plain,
    sympy_latex,
    sympy_text,
)

pd = pytest.importorskip("pandas")

NAMES = ["T/R", "Node Number"]


def ratio_tree():
    """``(3 * T/R) / Node Number`` over columns 0 and 1."""
    return Expression.binary(
        "/",
        Expression.binary("*", Expression.constant(3.0), Expression.variable(0)),
        Expression.variable(1),
    )


def ratio_frame(n=40):
    t = np.linspace(0.5, 4.0, n)
    nodes = np.arange(1.0, n + 1.0) % 7 + 1.0
    return pd.DataFrame({"T/R": t, "Node Number": nodes}), 3.0 * t / nodes


@pytest.fixture(scope="module")
def fitted():
    X, y = ratio_frame()
    return SymbolicRegressor(max_nodes=7, progress=False).fit(X, y), X, y


@pytest.mark.parametrize(
    "name, text",
    [
        ("x1", "x1"),
        ("mass", "mass"),
        ("T_R", "T_R"),
        ("α", "α"),
        ("info", "info"),
        ("T/R", "[T/R]"),
        ("Node Number", "[Node Number]"),
        ("2theta", "[2theta]"),
        ("f(x)", "[f(x)]"),
        ("a-b", "[a-b]"),
        ("sqrt", "[sqrt]"),
        ("exp", "[exp]"),
        ("log", "[log]"),
        ("sin", "[sin]"),
        ("cos", "[cos]"),
        ("E", "[E]"),
        ("pi", "[pi]"),
        ("inf", "[inf]"),
        ("a]b", "[a]]b]"),
        ("[x]", "[[x]]]"),
        ("", "[]"),
    ],
)
def test_format_name(name, text):
    assert format_name(name) == text
    assert name_is_plain(name) == (text == name)


def test_reserved_names_cover_the_unary_operators():
    assert {"sqrt", "exp", "log", "sin", "cos"} <= RESERVED_NAMES


def test_to_string_and_parse_round_trip():
    e = ratio_tree()
    s = e.to_string(NAMES)
    assert s == "((3.0 * [T/R]) / [Node Number])"
    assert Expression.parse(s, NAMES) == e
    # bracketed names in any form the rule allows, backquotes of older files too
    assert Expression.parse("3*[T/R]/[Node Number]", NAMES) == e
    assert Expression.parse("3 * `T/R` / `Node Number`", NAMES) == e
    assert Expression.parse("[x1] + x2", None) == Expression.parse("x1 + x2", None)


@pytest.mark.parametrize(
    "names",
    [
        ["a]b", "]"],
        ["[x]", "x]]"],
        ["sqrt", "inf"],
        ["info", "nan value"],
        ["a`b", " c "],
        ["%_&#$", "{x}^~\\"],
    ],
)
def test_every_name_reads_back(names):
    e = Expression.parse("sqrt(x1 * x2) - x1 / (x2 + 1.5)", None)
    s = e.to_string(names)
    assert Expression.parse(s, names) == e, s


def test_unterminated_bracket_is_a_clear_error():
    for text in ["[T/R", "3 * [a]] + 1", "[T/R]] * 2"]:
        with pytest.raises(ValueError, match="unterminated bracketed name"):
            Expression.parse(text, ["T/R", "a]"])
    with pytest.raises(ValueError, match="unknown variable"):
        Expression.parse("[T/R ]", NAMES)


def test_sympy_keeps_the_real_names_and_the_printers_bracket_them():
    e = ratio_tree()
    expr = e.sympy(NAMES)
    assert expr.free_symbols == {sympy.Symbol("T/R"), sympy.Symbol("Node Number")}
    assert e.readable_string(NAMES) == "3*[T/R]/[Node Number]"
    assert sympy_text(e.readable(NAMES)) == "3*[T/R]/[Node Number]"
    assert sympy_latex(e.readable(NAMES)) == r"\frac{3 \text{T/R}}{\text{Node Number}}"
    # plain names: exactly sympy's own printing
    for names in (None, ["mass", "d"]):
        r = e.readable(names)
        assert sympy_text(r) == sympy.sstr(r) and sympy_latex(r) == sympy.latex(r)
    assert e.readable_string() == "3*x1/x2"


def test_latex_escapes():
    assert latex_name("T/R") == r"\text{T/R}"
    assert latex_name("a_b 100% & #1 $ {x}") == r"\text{a\_b 100\% \& \#1 \$ \{x\}}"
    assert latex_name("a\\b^c~") == r"\text{a\textbackslash{}b\textasciicircum{}c\textasciitilde{}}"
    # a reserved identifier is text, not sympy's function or constant
    x = sympy.Symbol("sin") * sympy.Symbol("pi")
    assert sympy_latex(x) == r"\text{pi} \text{sin}"
    assert sympy_text(x) == "[pi]*[sin]"


def test_fitted_regressor_prints_and_reads_back(fitted):
    sr, X, y = fitted
    np.testing.assert_allclose(sr.predict(X), y, rtol=1e-12)
    assert "[T/R]" in sr.expression_ and "[Node Number]" in sr.expression_
    tree = Expression.parse(sr.expression_, NAMES)
    np.testing.assert_array_equal(
        tree.evaluate(X.to_numpy()), sr.expression_tree_.evaluate(X.to_numpy())
    )
    assert str(sr) == "y = 3*[T/R]/[Node Number]"
    assert sr.latex() == r"\frac{3 \text{T/R}}{\text{Node Number}}"
    assert r"$y = \frac{3 \text{T/R}}{\text{Node Number}}$" in sr.latex_table()
    assert sr.sympy().free_symbols == {sympy.Symbol("T/R"), sympy.Symbol("Node Number")}
    eq = sr.equations_
    row = eq.iloc[sr.selected_index_]
    assert row["equation"] == "3*[T/R]/[Node Number]"
    assert row["expression"] == sr.expression_
    for text in eq["expression"]:
        assert Expression.parse(text, NAMES).to_string(NAMES) == text


def test_save_load_round_trip(fitted, tmp_path):
    from jaxsr.io import load_model, save_model

    sr, X, _ = fitted
    loaded = load_model(save_model(sr, tmp_path / "names.json"))
    assert loaded.expression_ == sr.expression_
    assert str(loaded) == str(sr) and loaded.latex() == sr.latex()
    np.testing.assert_array_equal(loaded.predict(X), sr.predict(X))
    again = SymbolicRegressor.from_dict(sr.to_dict())
    assert again.expression_ == sr.expression_
    assert list(again.equations_["expression"]) == list(sr.equations_["expression"])


def test_warm_start_from_the_bracketed_expression(fitted):
    sr, X, y = fitted
    warm = SymbolicRegressor(max_nodes=7, progress=False, initial_expression=sr.expression_).fit(
        X, y
    )
    assert warm.expression_ == sr.expression_


def test_plain_identifiers_print_as_before():
    X, y = ratio_frame()
    X = X.rename(columns={"T/R": "t", "Node Number": "n_nodes"})
    sr = SymbolicRegressor(max_nodes=7, progress=False).fit(X, y)
    assert "[" not in sr.expression_ and "[" not in str(sr)
    assert str(sr) == "y = 3*t/n_nodes"
    assert sr.latex() == sympy.latex(sr.readable()) == r"\frac{3 t}{n_{nodes}}"
