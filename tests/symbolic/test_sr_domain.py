"""The proof that a model has no pole in the box of the data (jaxsr.symbolic.domain) and the
estimator's ``domain`` option: the interval kernel against plain numpy, the proof against
dense sampling, and fits whose exact law has a pole in an empty corner of the box."""

import itertools

import numpy as np
import pytest

from jaxsr.symbolic import Expression, SymbolicRegressor
from jaxsr.symbolic.domain import (
    MAX_BOXES,
    DomainProof,
    _scalar_intervals,
    data_box,
    node_intervals,
    prove_box,
)
from jaxsr.symbolic.expression import (
    ADD,
    COS,
    DIV,
    EXP,
    LOG,
    MUL,
    SIN,
    SQRT,
    SUB,
    UNARY_NAMES,
)
from jaxsr.symbolic.refine import refine_constants
from jaxsr.symbolic.strategies import DomeSearch

_BINARY = {ADD: np.add, SUB: np.subtract, MUL: np.multiply, DIV: np.divide}
_UNARY = {SQRT: np.sqrt, EXP: np.exp, LOG: np.log, SIN: np.sin, COS: np.cos}


# ------------------------------------------------------------------------- oracles
def node_values(expr: Expression, P) -> np.ndarray:
    """Plain numpy: ``(n_nodes, n_points)`` values of every node at the points ``P``."""
    P = np.asarray(P, np.float64)
    out = np.empty((expr.n_nodes, P.shape[0]))
    with np.errstate(all="ignore"):
        for i in range(expr.n_nodes - 1, -1, -1):
            code = int(expr.op[i])
            if code == 1:
                out[i] = expr.value[i]
            elif code == 2:
                out[i] = P[:, expr.feature[i]]
            elif code in _UNARY:
                out[i] = _UNARY[code](out[expr.left[i]])
            else:
                out[i] = _BINARY[code](out[expr.left[i]], out[expr.right[i]])
    return out


def defined_everywhere(expr: Expression, P) -> bool:
    """At the sample ``P``: every node finite, no denominator zero or of both signs, every
    ``sqrt`` argument >= 0 and ``log`` argument > 0."""
    v = node_values(expr, P)
    if not np.all(np.isfinite(v)):
        return False
    for i in range(expr.n_nodes):
        code = int(expr.op[i])
        c = v[expr.right[i]] if code == DIV else v[expr.left[i]]
        if code == DIV and not (np.all(c > 0) or np.all(c < 0)):
            return False
        if code == SQRT and np.any(c < 0):
            return False
        if code == LOG and np.any(c <= 0):
            return False
    return True


def dense_sample(lo, hi, rng, n_random=3000, grid=5) -> np.ndarray:
    """Random points, every corner and a regular grid of the box ``[lo, hi]``."""
    m = lo.shape[0]
    pts = [rng.uniform(lo, hi, size=(n_random, m))]
    pts.append(np.array(list(itertools.product(*zip(lo, hi, strict=True)))))
    axes = [np.linspace(a, b, grid) for a, b in zip(lo, hi, strict=True)]
    pts.append(np.array(list(itertools.product(*axes))))
    return np.concatenate(pts)


def random_tree(rng, n_leaves: int, m: int, unary: bool = True) -> Expression:
    if n_leaves == 1:
        if rng.random() < 0.6:
            return Expression.variable(int(rng.integers(m)))
        return Expression.constant(float(np.round(rng.uniform(-3.0, 3.0), 2)))
    if unary and rng.random() < 0.12:
        code = int(rng.choice(list(UNARY_NAMES)))
        return Expression.unary(code, random_tree(rng, n_leaves, m, unary))
    k = int(rng.integers(1, n_leaves))
    op = int(rng.choice([ADD, SUB, MUL, DIV, DIV]))
    return Expression.binary(
        op, random_tree(rng, k, m, unary), random_tree(rng, n_leaves - k, m, unary)
    )


def random_box(rng, m: int):
    lo = np.round(rng.uniform(-2.0, 2.0, m), 3)
    return lo, lo + np.round(rng.uniform(0.1, 3.0, m), 3)


# ------------------------------------------------------------------------- the kernel
def test_intervals_hold_every_sampled_value():
    """Every node's interval, where it is defined, holds the node's numpy value at every
    sampled point of its box, for one box and for a batch of boxes, and the scalar first
    pass gives intervals that hold them too."""
    rng = np.random.default_rng(0)
    m = 3
    checked = scalar_checked = 0
    for _ in range(150):
        e = random_tree(rng, int(rng.integers(1, 12)), m)
        lo, hi = random_box(rng, m)
        # a batch: the box, two random sub-boxes, a degenerate box (a point)
        a, b = rng.uniform(lo, hi, (2, 2, m))
        p = rng.uniform(lo, hi)
        blo = np.vstack([lo, np.minimum(a, b), p])
        bhi = np.vstack([hi, np.maximum(a, b), p])
        L, H, ok = node_intervals(e, blo, bhi)
        assert L.shape == H.shape == ok.shape == (e.n_nodes, 4)
        assert L.dtype == H.dtype == np.float64 and ok.dtype == bool
        for k in range(4):
            P = rng.uniform(blo[k], bhi[k], (400, m))
            P = np.vstack([P, blo[k], bhi[k]])
            v = node_values(e, P)
            for i in np.flatnonzero(ok[:, k]):
                assert np.all(np.isfinite(v[i])), e
                assert np.all((L[i, k] <= v[i]) & (v[i] <= H[i, k])), (e, i)
                checked += 1
            assert np.all(L[~ok[:, k], k] == -np.inf) and np.all(H[~ok[:, k], k] == np.inf)
        got = _scalar_intervals(
            e.op.tolist(),
            e.value.tolist(),
            e.feature.tolist(),
            e.left.tolist(),
            e.right.tolist(),
            lo.tolist(),
            hi.tolist(),
        )
        assert (got is not None) == bool(ok[0, 0])  # the same rules on the whole box
        if got is not None:
            v = node_values(e, rng.uniform(lo, hi, (400, m)))
            assert np.all((np.array(got[0])[:, None] <= v) & (v <= np.array(got[1])[:, None]))
            scalar_checked += 1
    assert checked > 500 and scalar_checked > 30


@pytest.mark.parametrize(
    "text, lo, hi, want",
    [
        ("x1 - x1 * 0.5", [1.0], [2.0], (0.0, 1.5)),  # the dependency problem
        ("x1 * x2", [-1.0, 2.0], [3.0, 4.0], (-4.0, 12.0)),
        ("x1 / x2", [1.0, 2.0], [3.0, 4.0], (0.25, 1.5)),
        ("sin(x1)", [0.0], [3.0], (0.0, 1.0)),  # the maximum at pi/2 inside
        ("cos(x1)", [0.5], [4.0], (-1.0, np.cos(0.5))),  # the minimum at pi inside
        ("sin(x1)", [0.0], [7.0], (-1.0, 1.0)),  # a whole period
        ("sqrt(x1)", [4.0], [9.0], (2.0, 3.0)),
        ("exp(x1)", [0.0], [1.0], (1.0, np.e)),
        ("log(x1)", [1.0], [np.e], (0.0, 1.0)),
    ],
)
def test_interval_rules(text, lo, hi, want):
    L, H, ok = node_intervals(Expression.parse(text), np.array(lo), np.array(hi))
    assert ok[0, 0]
    # outward rounded: a few ulps around the exact ends, never inside them
    assert L[0, 0] <= want[0] and H[0, 0] >= want[1]
    np.testing.assert_allclose([L[0, 0], H[0, 0]], want, rtol=1e-13, atol=1e-14)


def test_rounding_is_outward():
    """A product whose exact value is not a float: the interval of a point still holds it,
    on both sides."""
    L, H, ok = node_intervals(
        Expression.parse("x1 * x2"), np.array([0.1, 0.3]), np.array([0.1, 0.3])
    )
    assert ok[0, 0] and L[0, 0] < 0.1 * 0.3 < H[0, 0]
    from fractions import Fraction

    exact = Fraction(0.1) * Fraction(0.3)
    assert Fraction(L[0, 0]) < exact < Fraction(H[0, 0])


# ------------------------------------------------------------------------- the proof
def test_proved_trees_have_no_pole_on_a_dense_sample():
    """The oracle: a tree the proof accepts is defined everywhere on thousands of points of
    the box (random points, every corner, a grid); the proof decides most random trees."""
    rng = np.random.default_rng(1)
    m = 3
    tally = {"proved": 0, "refuted": 0, "cap": 0}
    for _ in range(300):
        e = random_tree(rng, int(rng.integers(2, 14)), m)
        lo, hi = random_box(rng, m)
        r = prove_box(e, lo, hi)
        assert isinstance(r, DomainProof) and 1 <= r.boxes <= MAX_BOXES
        tally[r.reason] += 1
        assert r.proved == (r.reason == "proved")
        P = dense_sample(lo, hi, rng)
        if r.proved:
            assert defined_everywhere(e, P), (e, lo, hi)
        elif r.reason == "refuted":
            # a refutation is a certainty: a dense enough sample finds the bad point
            assert not defined_everywhere(
                e, np.vstack([P, dense_sample(lo, hi, rng, 20000, 12)])
            ), (e, lo, hi)
    assert tally["proved"] >= 60 and tally["refuted"] >= 30, tally


def test_trees_with_a_zero_inside_the_box_are_never_proved():
    """Denominators built to vanish at a point inside the box (``(x_a - p_a) * Q + (x_b -
    p_b) * R``), and ``sqrt`` / ``log`` of an argument negative somewhere in it."""
    rng = np.random.default_rng(2)
    m = 3
    for _ in range(150):
        lo, hi = random_box(rng, m)
        p = np.round(rng.uniform(lo, hi), 3)  # exactly representable, strictly inside
        p = np.clip(p, np.nextafter(lo, np.inf), np.nextafter(hi, -np.inf))
        a, b = (int(j) for j in rng.choice(m, 2, replace=False))

        def shifted(j, p=p):
            return Expression.binary(SUB, Expression.variable(j), Expression.constant(p[j]))

        Q = random_tree(rng, int(rng.integers(1, 5)), m, unary=False)
        R = random_tree(rng, int(rng.integers(1, 5)), m, unary=False)
        den = Expression.binary(
            ADD, Expression.binary(MUL, shifted(a), Q), Expression.binary(MUL, shifted(b), R)
        )
        num = random_tree(rng, int(rng.integers(1, 4)), m, unary=False)
        for e in (
            Expression.binary(DIV, num, den),
            Expression.binary(DIV, num, shifted(a)),
            Expression.binary(ADD, num, Expression.unary(SQRT, shifted(a))),
            Expression.binary(MUL, num, Expression.unary(LOG, shifted(b))),
        ):
            assert not prove_box(e, lo, hi).proved, (e, lo, hi, p)


def test_bisection_beats_the_dependency_problem():
    e = Expression.parse("1 / (x1 - x1 * 0.5)")
    lo, hi = np.array([1.0]), np.array([2.0])
    assert not node_intervals(e, lo, hi)[2][0, 0]  # plain intervals: [0, 1.5] holds 0
    r = prove_box(e, lo, hi)
    assert r.proved and r.boxes > 1
    # (x-1)**2 + 1e-4 > 0 needs many levels near x = 1; within the caps
    r = prove_box(Expression.parse("1 / (x1*x1 - 2*x1 + 1.0001)"), np.array([0.0]), np.array([2.0]))
    assert r.proved and r.boxes > 100
    assert prove_box(e, lo, hi, max_rounds=0) == DomainProof(False, "cap", 1)
    assert prove_box(e, lo, hi, max_boxes=1) == DomainProof(False, "cap", 1)


def test_a_pole_in_an_empty_corner_is_refuted():
    """``1/(x1 - x2)`` on a box with overlapping ranges: both signs at box centres."""
    e = Expression.parse("1 / (x1 - x2)")
    r = prove_box(e, np.array([0.5, 0.0]), np.array([2.5, 1.0]))
    assert r == DomainProof(False, "refuted", r.boxes) and r.boxes < 100
    assert prove_box(e, np.array([1.5, 0.0]), np.array([2.5, 1.0])).proved
    # a pole only touching a corner (no sign change) is not proved, within the caps
    r = prove_box(Expression.parse("1 / (x1 + x2)"), np.zeros(2), np.ones(2))
    assert r.reason == "cap" and r.boxes <= MAX_BOXES


def test_unary_domains():
    lo, hi = np.array([-1.0, 1.0]), np.array([1.0, 2.0])
    assert prove_box(Expression.parse("sqrt(x2) / log(x2 + 1)"), lo, hi).proved
    assert prove_box(Expression.parse("1 / (2 + sin(x1 * 7))"), lo, hi).proved
    assert prove_box(Expression.parse("1 / exp(x1)"), lo, hi).proved
    assert prove_box(Expression.parse("sqrt(x1)"), lo, hi).reason == "refuted"
    assert prove_box(Expression.parse("log(x1 + 0.5)"), lo, hi).reason == "refuted"
    assert prove_box(Expression.parse("1 / sin(x2 * 3)"), lo, hi).reason == "refuted"
    assert not prove_box(Expression.parse("exp(1000 * x2)"), lo, hi).proved  # overflow


def test_data_box_and_errors():
    X = np.array([[1.0, 5.0], [3.0, -2.0], [100.0, 100.0]])
    lo, hi = data_box(X)
    np.testing.assert_array_equal(lo, [1.0, -2.0])
    np.testing.assert_array_equal(hi, [100.0, 100.0])
    lo, hi = data_box(X, np.array([1.0, 2.0, 0.0]))  # weight 0: not in the box
    np.testing.assert_array_equal(hi, [3.0, 5.0])
    with pytest.raises(ValueError, match="positive weight"):
        data_box(X, np.zeros(3))
    with pytest.raises(ValueError, match="2-D"):
        data_box(np.ones(3))
    e = Expression.parse("x1 / x2")
    with pytest.raises(ValueError, match="lo <= hi"):
        prove_box(e, np.array([1.0, 1.0]), np.array([0.0, 2.0]))
    with pytest.raises(ValueError, match="outside"):
        prove_box(e, np.array([1.0]), np.array([2.0]))
    with pytest.raises(ValueError, match="one box"):
        prove_box(e, np.ones((2, 2)), np.ones((2, 2)))


def test_proof_is_fast():
    """Most trees of 20-50 nodes are proved by the scalar pass on the whole box alone."""
    import time

    rng = np.random.default_rng(3)
    lo, hi = np.array([1.0, 0.5, 2.0, 1.0]), np.array([2.0, 3.0, 4.0, 1.5])
    times = []
    for _ in range(60):
        e = random_tree(rng, int(rng.integers(10, 26)), 4, unary=False)
        t = time.perf_counter()
        prove_box(e, lo, hi)
        times.append(time.perf_counter() - t)
    assert np.median(times) < 2e-3  # ~4e-5 s measured; generous for a busy machine


# ------------------------------------------------------------------------- the fits
def _corner_pole_data(n=100, seed=0):
    """``y = x3 / (x1 - x2)``, ``x1 - x2`` in ``[0.5, 1.5]`` on every row, but the box
    (``x1`` from ~0.53, ``x2`` up to ~1) holds ``x1 = x2``: a pole in an empty corner."""
    rng = np.random.default_rng(seed)
    x2 = rng.uniform(0.0, 1.0, n)
    x1 = x2 + rng.uniform(0.5, 1.5, n)
    x3 = rng.uniform(1.0, 2.0, n)
    X = np.column_stack([x1, x2, x3])
    return X, x3 / (x1 - x2)


@pytest.mark.parametrize("strategy", [3, 4])
def test_law_with_a_pole_in_the_box_is_refused(strategy):
    """From a warm start one constant away from the law (``0.2 -> 1``): ``"rows"`` reaches
    the exact law; ``"box"`` refuses it (strategy 4 through the constant search's
    candidates, strategy 3 through the cyclic constant optimisation, undone) and every
    model it keeps is proved on the box (dense sampling agrees)."""
    X, y = _corner_pole_data()
    start = "x3 / (x1 - 0.2 * x2)"
    box = data_box(X)
    rows = SymbolicRegressor(
        progress=False, domain="rows", strategy=strategy, max_nodes=15, initial_expression=start
    ).fit(X, y)
    assert rows.score(X, y) > 1 - 1e-12
    assert not prove_box(rows.expression_tree_, *box).proved
    sr = SymbolicRegressor(
        progress=False, domain="box", strategy=strategy, max_nodes=15, initial_expression=start
    ).fit(X, y)
    assert sr.get_params()["domain"] == "box"
    assert sr.score(X, y) < 0.999
    P = dense_sample(*box, np.random.default_rng(4))
    for text in sr.equations_["expression"]:
        e = Expression.parse(text)
        assert prove_box(e, *box).proved, text
        assert defined_everywhere(e, P), text
    with pytest.raises(ValueError, match="not defined"):  # the law itself as a warm start
        SymbolicRegressor(progress=False, initial_expression="x3 / (x1 - x2)").fit(X, y)


def test_beam_keeps_the_proof():
    X, y = _corner_pole_data(60, seed=1)
    box = data_box(X)
    sr = SymbolicRegressor(
        progress=False,
        strategy=4,
        max_nodes=11,
        beam_width=2,
        initial_expression="x3 / (x1 - 0.2 * x2)",
    ).fit(X, y)
    for text in sr.equations_["expression"]:
        assert prove_box(Expression.parse(text), *box).proved, text


def test_ordinary_rational_law_is_still_found():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.uniform(1.0, 3.0, (80, 2)), rng.uniform(1.0, 3.0, 80)])
    y = X[:, 0] * X[:, 1] / X[:, 2]
    sr = SymbolicRegressor(progress=False).fit(X, y)
    assert sr.score(X, y) > 1 - 1e-12
    assert prove_box(sr.expression_tree_, *data_box(X)).proved


def test_domain_parameter_is_checked():
    X, y = _corner_pole_data(20)
    assert SymbolicRegressor().get_params()["domain"] == "box"
    with pytest.raises(ValueError, match="Unknown domain"):
        SymbolicRegressor(progress=False, domain="everywhere").fit(X, y)
    with pytest.raises(ValueError, match="Unknown domain"):
        DomeSearch(
            X.T,
            y,
            np.ones(3, bool),
            max_nodes=None,
            max_height=None,
            min_improvement=1e-6,
            feature_names=None,
            domain="line",
        )


def test_refine_keeps_the_proof():
    """L-BFGS moves ``0.5 -> 1`` (the exact law): kept under ``"rows"``, undone under
    ``"auto"`` (the input is proved on the box, the result is not) and ``"box"``."""
    X, y = _corner_pole_data(60)
    start = Expression.parse("x3 / (x1 - 0.5 * x2)")
    assert prove_box(start, *data_box(X)).proved
    free = refine_constants(start, X, y, domain="rows")
    assert free.accepted and free.mse < 1e-20
    for domain in ("auto", "box"):
        res = refine_constants(start, X, y, domain=domain)
        assert not res.accepted and res.expression is start
    with pytest.raises(ValueError, match="Unknown domain"):
        refine_constants(start, X, y, domain="corner")
