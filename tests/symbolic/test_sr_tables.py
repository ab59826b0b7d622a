"""The paper's worked examples: Table 1 (semantics, equations, S) and Table 2 (Inf/NaN in S)."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr.symbolic import Expression, forbidden_sets, node_equations, node_semantics

INF, NAN = np.inf, np.nan


def _data(cols, n_features=3):
    X = np.zeros((3, n_features))
    for j, v in cols.items():
        X[:, j] = v
    return X


@pytest.fixture(scope="module")
def table1():
    e = Expression.parse("2/((3/(1-2/x3))+1)")
    X = _data({2: [1.0, 4.0, -2.0]})
    t = np.array([5.0, 4.0, 1.0])
    tree = e.padded()
    sem = node_semantics(tree, jnp.asarray(X.T))
    eqs = node_equations(tree, sem, jnp.asarray(t))
    S = forbidden_sets(tree, sem, 4)
    return e, tree, np.asarray(sem), eqs, np.asarray(S)


TABLE1_SEMANTICS = [
    (-1, 0.286, 0.8),
    (2, 2, 2),
    (-2, 7, 2.5),
    (-3, 6, 1.5),
    (3, 3, 3),
    (-1, 0.5, 2),
    (1, 1, 1),
    (2, 0.5, -1),
    (2, 2, 2),
    (1, 4, -2),
    (1, 1, 1),
]

# Table 1, third column: per node and pattern, (A, B, C, D) of (A*o + B) / (C*o + D).
TABLE1_EQUATIONS = [
    [(1, -5, 0, 1), (1, -4, 0, 1), (1, -1, 0, 1)],
    [(1, 10, 0, 2), (1, -28, 0, -7), (1, -2.5, 0, -2.5)],
    [(-5, 2, 1, 0), (-4, 2, 1, 0), (-1, 2, 1, 0)],
    [(-5, -3, 1, 1), (-4, -2, 1, 1), (-1, 1, 1, 1)],
    [(-5, 3, 1, -1), (-4, -1, 1, 0.5), (-1, 2, 1, 2)],
    [(-3, -15, 1, 3), (-2, -12, 1, 3), (1, -3, 1, 3)],
    [(-3, -9, 1, 1), (-2, -11, 1, 2.5), (1, -2, 1, 4)],
    [(3, -18, -1, 4), (2, -14, -1, 4), (-1, -2, -1, 4)],
    [(3, -18, -1, 4), (2, -56, -1, 16), (-1, 4, -1, -8)],
    [(-18, 6, 4, -2), (-14, 4, 4, -2), (-2, -2, 4, -2)],
    [(-5, 17, 1, -3), (-4, -22, 1, 6), (-1, 0.5, 1, 1.5)],
]

TABLE1_S = [
    [],
    [],
    [(0, 0, 0)],
    [(-1, -1, -1)],
    [(1, -0.5, -2)],
    [(0, 0, 0), (-3, -3, -3)],
    [(2, 0.5, -1), (-1, -2.5, -4)],
    [(1, 1, 1), (4, 4, 4)],
    [(1, 4, -2), (4, 16, -8)],
    [(0, 0, 0), (2, 2, 2), (0.5, 0.5, 0.5)],
    [(3, -6, -1.5)],
]


def _as_set(rows):
    return sorted(tuple("nan" if np.isnan(v) else float(v) for v in r) for r in rows)


def test_table1_structure(table1):
    e, tree, *_ = table1
    assert e.n_nodes == 11
    # pre-order numbering of Figure 1: non-terminals 1, 3, 4, 6, 8
    assert [i + 1 for i in range(11) if e.op[i] > 2] == [1, 3, 4, 6, 8]


def test_table1_semantics(table1):
    _, _, sem, _, _ = table1
    np.testing.assert_allclose(sem[:11], np.array(TABLE1_SEMANTICS), atol=1e-3)
    np.testing.assert_allclose(sem[0], [-1.0, 2 / 7, 0.8], rtol=1e-15)


def test_table1_equations_up_to_sign(table1):
    _, _, _, eqs, _ = table1
    a, b, c, d = (np.asarray(v)[:11] for v in eqs)
    for j, rows in enumerate(TABLE1_EQUATIONS):
        P = np.array(rows, dtype=float)  # (3 patterns, 4)
        num_ours = np.stack([a[j], -b[j]], 1)
        den_ours = np.stack([c[j], -d[j]], 1)
        num_ok = any(np.allclose(num_ours, s * P[:, :2]) for s in (1, -1))
        den_ok = any(np.allclose(den_ours, s * P[:, 2:]) for s in (1, -1))
        assert num_ok and den_ok, f"node {j + 1}: ours a={a[j]} b={b[j]} c={c[j]} d={d[j]}"
    # root: a = 1, b = t, c = 0, d = -1
    np.testing.assert_array_equal(
        np.stack([a[0], b[0], c[0], d[0]]), [[1, 1, 1], [5, 4, 1], [0, 0, 0], [-1, -1, -1]]
    )


def test_table1_every_equation_gives_the_mse(table1):
    _, _, sem, eqs, _ = table1
    a, b, c, d = (np.asarray(v)[:11] for v in eqs)
    mse = np.mean((sem[0] - np.array([5.0, 4.0, 1.0])) ** 2)
    per_node = np.mean(((a * sem[:11] - b) / (c * sem[:11] - d)) ** 2, axis=1)
    np.testing.assert_allclose(per_node, mse, rtol=1e-12)


def test_table1_forbidden_sets(table1):
    _, tree, _, _, S = table1
    for j, expected in enumerate(TABLE1_S):
        n = int(tree.n_slots[j])
        assert n == len(expected), f"node {j + 1}"
        assert _as_set(S[j, :n]) == _as_set(expected), f"node {j + 1}: {S[j, :n]}"
        assert np.all(np.isinf(S[j, n:]))  # unused slots allow any value


def test_table2_semantics_and_forbidden_sets():
    e = Expression.parse("2/((x1/2)+x2*((x3*2)-1))")
    X = _data({0: [3.0, 2.0, 0.0], 1: [0.0, 1.0, 0.0], 2: [1.0, 0.0, 3.0]})
    tree = e.padded()
    sem = np.asarray(node_semantics(tree, jnp.asarray(X.T)))
    S = np.asarray(forbidden_sets(tree, jnp.asarray(sem), 4))
    expected_sem = [
        (1.33, INF, INF),
        (2, 2, 2),
        (1.5, 0, 0),
        (1.5, 1, 0),
        (3, 2, 0),
        (2, 2, 2),
        (0, -1, 0),
        (0, 1, 0),
        (1, -1, 5),
        (2, 0, 6),
        (1, 0, 3),
        (2, 2, 2),
        (1, 1, 1),
    ]
    np.testing.assert_allclose(sem[:13], np.array(expected_sem), atol=5e-3)
    expected_S = [
        [],
        [],
        [(0, 0, 0)],
        [(0, 1, 0)],
        [(0, 2, 0)],
        [(0, 0, 0), (INF, 2, NAN)],
        [(-1.5, -1, 0)],
        [(-1.5, 1, 0)],
        [(INF, -1, NAN)],
        [(INF, 0, NAN)],
        [(INF, 0, NAN)],
        # Table 2 prints (Inf, Inf, NaN) for node 12; the paper's own rule gives NaN in the
        # second pattern: node 12 is the second child of x3*2 with x3 = 0 there and the
        # forbidden value 0, so x3 * anything = 0 is always forbidden (0/0 = NaN).
        [(INF, NAN, NAN)],
        [(INF, 1, NAN)],
    ]
    for j, expected in enumerate(expected_S):
        n = int(tree.n_slots[j])
        assert n == len(expected), f"node {j + 1}"
        assert _as_set(S[j, :n]) == _as_set(expected), f"node {j + 1}: {S[j, :n]}"
