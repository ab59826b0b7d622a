"""Each batched search against a plain numpy loop that substitutes every candidate into the
tree and re-evaluates it (validity = no zero denominator anywhere, finite outputs)."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from jaxsr.symbolic import (
    Expression,
    constant_expression_search,
    constant_search,
    constant_variable_search,
    forbidden_sets,
    node_equations,
    node_semantics,
    search_all,
    variable_search,
)
from jaxsr.symbolic.expression import DIV
from jaxsr.symbolic.searches import CE_OPS, CV_OPS, NO_LIMIT

OPS = {3: "+", 4: "-", 5: "*", 6: "/"}
N = 12


def valid_mse(e: Expression, X, y):
    """Re-evaluate ``e``: its MSE, or None if some denominator is 0 or a value not finite."""
    for i in range(e.n_nodes):
        if e.op[i] == DIV and np.any(e.subtree(int(e.right[i])).evaluate(X) == 0):
            return None
    out = e.evaluate(X)
    if not np.all(np.isfinite(out)):
        return None
    return float(np.mean((out - y) ** 2))


def best_k(e_of_k, X, y, k0):
    """Oracle minimum over k of the re-evaluated tree (scipy from several brackets)."""

    def f(k):
        m = valid_mse(e_of_k(k), X, y)
        return 1e300 if m is None else m

    starts = [k0] if np.isfinite(k0) else []
    starts += [-10.0, -1.0, -0.1, 0.1, 1.0, 10.0]
    res = [minimize_scalar(f, bracket=(s, s + 0.01 * (1 + abs(s)))) for s in starts]
    return min(r.fun for r in res)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(7)
    X = rng.uniform(0.5, 3.0, size=(N, 3))
    X[4, 2] = 0.0  # x3 has a zero: k/x3 and x3 in a denominator are excluded
    y = 1.5 * X[:, 0] / (X[:, 1] + 0.3) - X[:, 2] + rng.normal(size=N) * 0.1
    e = Expression.parse("((x1 + 0.7) / (x2 - 0.2)) * 1.3")
    tree = e.padded(16)
    XT = jnp.asarray(X.T)
    sem = node_semantics(tree, XT)
    eqs = node_equations(tree, sem, jnp.asarray(y))
    S = forbidden_sets(tree, sem, 2)
    base = valid_mse(e, X, y)
    below_denominator = {5, 6, 7}  # nodes with c != 0 (x2 - 0.2 and its children)
    return e, X, y, tree, XT, sem, eqs, S, base, below_denominator


def test_constant_search_matches_re_evaluation(problem):
    e, X, y, tree, XT, sem, eqs, S, base, below = problem
    red, k = constant_search(tree, sem, eqs, S, jnp.ones(16, bool))
    red, k = np.asarray(red), np.asarray(k)
    assert np.all(red[e.n_nodes :] == -np.inf)
    for j in range(e.n_nodes):
        new = e.replace(j, Expression.constant(float(k[j])))
        mse = valid_mse(new, X, y)
        if mse is None:
            assert red[j] == -np.inf
            continue
        assert np.isfinite(red[j]), f"node {j}"
        np.testing.assert_allclose(base - red[j], mse, rtol=1e-9)
        oracle = best_k(lambda c, j=j: e.replace(j, Expression.constant(c)), X, y, k[j])
        assert mse <= oracle * (1 + 1e-7), f"node {j}: {mse} > oracle {oracle}"


def test_variable_search_matches_re_evaluation(problem):
    e, X, y, tree, XT, sem, eqs, S, base, _ = problem
    pool = np.array([True, True, True])
    (red,) = variable_search(tree, sem, eqs, S, XT, jnp.ones(16, bool), jnp.asarray(pool))
    red = np.asarray(red)
    n_invalid = 0
    for j in range(e.n_nodes):
        for m in range(3):
            same = e.op[j] == 2 and e.feature[j] == m
            mse = valid_mse(e.replace(j, Expression.variable(m)), X, y)
            if same or mse is None:
                assert red[j, m] == -np.inf, (j, m)
                n_invalid += mse is None
            else:
                np.testing.assert_allclose(base - red[j, m], mse, rtol=1e-9)
    assert n_invalid >= 2  # x3 (with a zero) at the denominator nodes 4 and 5
    # the pool mask removes a variable everywhere
    (red2,) = variable_search(
        tree, sem, eqs, S, XT, jnp.ones(16, bool), jnp.asarray([True, False, True])
    )
    assert np.all(np.asarray(red2)[:, 1] == -np.inf)
    np.testing.assert_array_equal(np.asarray(red2)[:, [0, 2]], red[:, [0, 2]])


def test_constant_variable_search_matches_re_evaluation(problem):
    e, X, y, tree, XT, sem, eqs, S, base, _ = problem
    red, k = constant_variable_search(
        tree, sem, eqs, S, XT, jnp.ones(16, bool), jnp.ones(3, bool), NO_LIMIT, NO_LIMIT
    )
    red, k = np.asarray(red), np.asarray(k)
    assert red.shape == (16, 3, 4)
    for j in range(e.n_nodes):
        for m in range(3):
            for o, op in enumerate(CV_OPS):

                def sub(c, j=j, m=m, op=op):
                    return e.replace(
                        j, Expression.binary(op, Expression.constant(c), Expression.variable(m))
                    )

                if op == DIV and np.any(X[:, m] == 0):
                    assert red[j, m, o] == -np.inf  # k/x with a zero in x
                    continue
                mse = valid_mse(sub(float(k[j, m, o])), X, y) if np.isfinite(k[j, m, o]) else None
                if mse is None:
                    assert red[j, m, o] == -np.inf, (j, m, o)
                    continue
                np.testing.assert_allclose(base - red[j, m, o], mse, rtol=1e-9)
                oracle = best_k(sub, X, y, k[j, m, o])
                assert mse <= oracle * (1 + 1e-6) + 1e-12, (j, m, OPS[op], mse, oracle)


def test_constant_variable_search_limits_and_exclusions():
    X = np.linspace(1.0, 2.0, N)[:, None] * np.array([1.0, 0.5])
    X[:, 1] += np.linspace(0, 1, N) ** 2
    y = 3.0 + X[:, 0] + 0.1 * X[:, 1]
    e = Expression.parse("(2.5 + x1) * x2")  # node 1 is "k + x1": k+x1 there is excluded
    tree = e.padded(16)
    XT = jnp.asarray(X.T)
    sem = node_semantics(tree, XT)
    eqs = node_equations(tree, sem, jnp.asarray(y))
    S = forbidden_sets(tree, sem, 2)
    args = (tree, sem, eqs, S, XT, jnp.ones(16, bool), jnp.ones(2, bool))
    red, _ = constant_variable_search(*args, NO_LIMIT, NO_LIMIT)
    red = np.asarray(red)
    assert red[1, 0, 0] == -np.inf and np.isfinite(red[1, 1, 0]) and np.isfinite(red[1, 0, 1])
    # node limit n - r + s >= 3: with n = r = 5 only subtrees of >= 3 nodes (0 and 1)
    red5, _ = constant_variable_search(*args, 5, NO_LIMIT)
    allowed = np.any(np.isfinite(np.asarray(red5)), axis=(1, 2))
    np.testing.assert_array_equal(np.flatnonzero(allowed), [0, 1])
    # height limit: depth + 2 <= 3 only at the root and its children
    redh, _ = constant_variable_search(*args, NO_LIMIT, 3)
    allowed = np.any(np.isfinite(np.asarray(redh)), axis=(1, 2))
    assert set(np.flatnonzero(allowed)) <= {0, 1, 4}


def test_constant_expression_search_matches_re_evaluation(problem):
    e, X, y, tree, XT, sem, eqs, S, base, _ = problem
    red, k = constant_expression_search(tree, sem, eqs, S, jnp.ones(16, bool), NO_LIMIT, NO_LIMIT)
    red, k = np.asarray(red), np.asarray(k)
    assert red.shape == (16, 2)
    for j in range(e.n_nodes):
        for o, op in enumerate(CE_OPS):
            terminal = e.op[j] <= 2
            child_const = any(e.op[c] == 1 for c in (e.left[j], e.right[j])) and not terminal
            hides = child_const and (
                (op == 3 and e.op[j] in (3, 4)) or (op == 5 and e.op[j] in (5, 6))
            )
            if terminal or hides:
                assert red[j, o] == -np.inf, (j, o)
                continue

            def sub(c, j=j, op=op):
                return e.replace(j, Expression.binary(op, Expression.constant(c), e.subtree(j)))

            mse = valid_mse(sub(float(k[j, o])), X, y)
            if mse is None:
                assert red[j, o] == -np.inf
                continue
            np.testing.assert_allclose(base - red[j, o], mse, rtol=1e-9)
            assert mse <= best_k(sub, X, y, k[j, o]) * (1 + 1e-6) + 1e-12
    # root is "* 1.3": k*p is excluded there (a * node with a constant child)
    assert red[0, 1] == -np.inf and np.isfinite(red[1, 0])
    # node limit n - r >= 2
    red_lim, _ = constant_expression_search(
        tree, sem, eqs, S, jnp.ones(16, bool), e.n_nodes + 1, NO_LIMIT
    )
    assert np.all(np.asarray(red_lim) == -np.inf)


def test_search_all_in_one_call_equals_the_four_searches(problem):
    """The engine runs the searches of a strategy stage together in one call, with a
    different node mask per search: each result equals its search run alone."""
    e, X, y, tree, XT, sem, eqs, S, base, _ = problem
    rng = np.random.default_rng(3)
    masks = rng.uniform(size=(4, 16)) < 0.6
    pool = jnp.asarray([True, False, True])
    res = search_all(tree, sem, eqs, S, XT, jnp.asarray(masks), pool, NO_LIMIT, NO_LIMIT)
    alone = [
        constant_search(tree, sem, eqs, S, masks[0]),
        variable_search(tree, sem, eqs, S, XT, masks[1], pool),
        constant_variable_search(tree, sem, eqs, S, XT, masks[2], pool, NO_LIMIT, NO_LIMIT),
        constant_expression_search(tree, sem, eqs, S, masks[3], NO_LIMIT, NO_LIMIT),
    ]
    together = [
        (res.constant, res.constant_k),
        (res.variable,),
        (res.constant_variable, res.constant_variable_k),
        (res.constant_expression, res.constant_expression_k),
    ]
    for one, both, mask in zip(alone, together, masks, strict=True):
        red = np.asarray(both[0])
        assert np.all(red[~mask] == -np.inf)  # nothing outside the search's own mask
        assert np.isfinite(red[mask]).any()
        for a, b in zip(one, both, strict=True):
            # alone, a constant or k op p search solves its rows one by one; together with
            # k op x rows the closed-form nodes take the batched sums: equal up to rounding
            np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
            fin = np.isfinite(np.asarray(a))
            np.testing.assert_allclose(np.asarray(a)[fin], np.asarray(b)[fin], rtol=1e-10)


def test_top_candidates_is_the_papers_order_on_the_host():
    """The device's masked top-k against a plain numpy order of every entry: reduction
    descending, then the search (constant, variable, constant-variable,
    constant-expression), then the flat index; ties, ``-inf``, NaN and the threshold."""
    from jaxsr.symbolic.searches import SearchResults, top_candidates

    rng = np.random.default_rng(5)
    cap, m = 8, 3
    shapes = {
        "constant": (cap,),
        "variable": (cap, m),
        "constant_variable": (cap, m, 4),
        "constant_expression": (cap, 2),
    }
    parts = {}
    for name, shape in shapes.items():
        r = rng.choice([0.5, 1.0, 2.0, -1.0, -np.inf, np.nan], size=shape)  # many ties
        parts[name] = r
        if name != "variable":
            parts[name + "_k"] = rng.normal(size=shape)
    res = SearchResults(**{k: jnp.asarray(v) for k, v in parts.items()})
    red = np.concatenate([parts[n].ravel() for n in shapes])
    const = np.concatenate(
        [
            parts["constant_k"],
            np.full(cap * m, np.nan),
            parts["constant_variable_k"].ravel(),
            parts["constant_expression_k"].ravel(),
        ]
    )
    for thr in (0.0, 0.75, -5.0):
        ok = np.flatnonzero(red > thr)
        want = ok[np.lexsort((ok, -red[ok]))]  # stable: the lower index first on ties
        for k in (1, 5, red.size):
            value, index, c = (np.asarray(a) for a in top_candidates(res, thr, k=k))
            n = min(k, want.size)
            np.testing.assert_array_equal(index[:n], want[:n])
            np.testing.assert_array_equal(value[:n], red[want[:n]])
            np.testing.assert_array_equal(c[:n], const[want[:n]])
            assert np.all(value[n:] == -np.inf)
