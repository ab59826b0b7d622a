"""Kernels: node-equation invariant on random trees, closed forms, vmap == loop, printing."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr.symbolic import (
    Expression,
    constant_expression_search,
    constant_search,
    constant_variable_search,
    forbidden_sets,
    node_equations,
    node_semantics,
    optimal_constant,
    variable_search,
)
from jaxsr.symbolic.expression import ADD, CONST, DIV, MUL, SUB, VAR


def random_tree(rng, n_features, max_ops=7):
    """A random pre-order tree with up to ``max_ops`` operators (<= 15 nodes)."""
    n_ops = int(rng.integers(0, max_ops + 1))

    def build(n):
        if n == 0:
            if rng.uniform() < 0.5:
                return Expression.constant(float(np.round(rng.uniform(-3, 3), 2)) or 1.5)
            return Expression.variable(int(rng.integers(n_features)))
        k = int(rng.integers(0, n))
        op = int(rng.choice([ADD, SUB, MUL, DIV]))
        return Expression.binary(op, build(k), build(n - 1 - k))

    return build(n_ops)


def test_node_equation_invariant_on_random_trees():
    rng = np.random.default_rng(1)
    n_checked = 0
    for _ in range(40):
        X = rng.uniform(0.5, 3.0, size=(20, 3))
        y = rng.normal(size=20) * 2.0
        e = random_tree(rng, 3)
        sem = np.asarray(node_semantics(e.padded(16), jnp.asarray(X.T)))
        if not np.all(np.isfinite(sem)) or np.any(np.abs(sem[: e.n_nodes]) < 1e-3):
            continue  # near-zero denominators make the test ill-conditioned, not wrong
        eqs = node_equations(e.padded(16), jnp.asarray(sem), jnp.asarray(y))
        a, b, c, d = (np.asarray(v)[: e.n_nodes] for v in eqs)
        o = sem[: e.n_nodes]
        per_node = np.mean(((a * o - b) / (c * o - d)) ** 2, axis=1)
        root = np.mean((e.evaluate(X) - y) ** 2)
        np.testing.assert_allclose(per_node, root, rtol=1e-9)
        np.testing.assert_allclose(sem[0], e.evaluate(X), rtol=1e-14)
        n_checked += 1
    assert n_checked >= 25


def test_optimal_constant_closed_forms():
    rng = np.random.default_rng(2)
    n = 9
    a, b = rng.normal(size=n), rng.normal(size=n)
    d = rng.uniform(0.5, 2.0, size=n)
    # eq. 29 (c = 0): weighted least squares
    k, mse, ok = optimal_constant(*map(jnp.asarray, (a, b, np.zeros(n), d)))
    k_ref = np.sum(a * b / d**2) / np.sum(a**2 / d**2)
    assert bool(ok)
    np.testing.assert_allclose(float(k), k_ref, rtol=1e-13)
    np.testing.assert_allclose(float(mse), np.mean(((a * k_ref - b) / d) ** 2), rtol=1e-13)
    # eq. 33 (d = 0, c != 0)
    c = rng.uniform(0.5, 2.0, size=n)
    k, _, ok = optimal_constant(*map(jnp.asarray, (a, b, c, np.zeros(n))))
    assert bool(ok)
    np.testing.assert_allclose(float(k), np.sum(b**2 / c**2) / np.sum(a * b / c**2), rtol=1e-12)
    # eq. 34 (c, d constant)
    k, _, ok = optimal_constant(*map(jnp.asarray, (a, b, np.full(n, 2.0), np.full(n, -3.0))))
    g = b * 2.0 - a * -3.0
    np.testing.assert_allclose(float(k), np.sum(b * g) / np.sum(a * g), rtol=1e-12)
    # no minimum: a = c = 0; undefined: c = d = 0 somewhere
    assert not bool(optimal_constant(*map(jnp.asarray, (0 * a, b, 0 * a, d)))[2])
    d0 = d.copy()
    d0[3] = 0.0
    assert not bool(optimal_constant(*map(jnp.asarray, (a, b, np.zeros(n), d0)))[2])


def test_optimal_constant_general_case_beats_every_zero():
    """General case (c, d vectors): at least as good as the paper's best zero b_i/a_i."""
    rng = np.random.default_rng(3)
    for n in (7, 40):  # all zeros (n <= 16) and the bounded candidate set
        a, b = rng.normal(size=n), rng.normal(size=n)
        c, d = rng.normal(size=n) * 0.3, rng.uniform(1.0, 2.0, size=n)
        k, mse, ok = optimal_constant(*map(jnp.asarray, (a, b, c, d)))
        assert bool(ok)

        def f(k, a=a, b=b, c=c, d=d):
            return np.mean(((a * k - b) / (c * k - d)) ** 2)

        zeros = b / a
        best_zero = min(f(z) for z in zeros if np.all(np.abs(c * z - d) > 1e-9))
        np.testing.assert_allclose(float(mse), f(float(k)), rtol=1e-12)
        if n <= 16:
            assert float(mse) <= best_zero * (1 + 1e-12)
        else:  # bounded candidates + safeguarded Newton: within 1% of the best zero
            assert float(mse) <= best_zero * 1.01
        # a local minimum: no pole between k and nearby values, derivative ~ 0
        h = 1e-6 * max(1.0, abs(float(k)))
        assert f(float(k)) <= min(f(float(k) + h), f(float(k) - h)) * (1 + 1e-9)


def _analyse(tree, XT, y):
    sem = node_semantics(tree, XT)
    eqs = node_equations(tree, sem, y)
    S = forbidden_sets(tree, sem, 2)
    return sem, eqs, S


def test_kernels_under_vmap_equal_separate_calls():
    rng = np.random.default_rng(4)
    B, N, M = 8, 12, 3  # the shapes of test_sr_searches: the single calls reuse its kernels
    Xs = rng.uniform(0.5, 3.0, size=(B, M, N))
    ys = rng.normal(size=(B, N))
    tree = Expression.parse("((x1 + 2) / (x2 - 0.25)) * x1").padded(16)
    cap = 16
    nodes = jnp.ones(cap, bool)
    pool = jnp.ones(M, bool)

    def all_kernels(XT, y):
        sem, eqs, S = _analyse(tree, XT, y)
        c = constant_search(tree, sem, eqs, S, nodes)
        v = variable_search(tree, sem, eqs, S, XT, nodes, pool)
        cv = constant_variable_search(tree, sem, eqs, S, XT, nodes, pool, 99, 99)
        ce = constant_expression_search(tree, sem, eqs, S, nodes, 99, 99)
        k = optimal_constant(eqs.a[3], eqs.b[3], eqs.c[3], eqs.d[3])
        return (sem, *eqs, S, *c, *v, *cv, *ce, *k)

    # compiled with the options of the single calls (jaxsr's programs at the top level),
    # so that only the batching differs: the expanded closed-form sums of ill-conditioned
    # candidates (huge k) round differently under other LLVM optimisation levels
    from jaxsr._config import COMPILE_OPTIONS

    batched = jax.jit(jax.vmap(all_kernels), compiler_options=COMPILE_OPTIONS)(
        jnp.asarray(Xs), jnp.asarray(ys)
    )
    for i in range(B):
        single = all_kernels(jnp.asarray(Xs[i]), jnp.asarray(ys[i]))
        for n_out, (got, want) in enumerate(zip(batched, single, strict=True)):
            # the searches' closed-form scores come from a matrix product whose summation
            # order differs when batched: rounding of the expanded sums (1e-8), values
            # that do not win; the per-sample kernels and the solver are bitwise close
            rtol = 1e-8 if 6 <= n_out < 6 + 7 else 1e-12
            np.testing.assert_allclose(np.asarray(got[i]), np.asarray(want), rtol=rtol)


def test_expression_printing_parsing_and_exports():
    names = ["mass 1", "m2", "d"]
    e = Expression.parse("((6.673919999999998e-11 / d) * `mass 1`) * m2 / d", names)
    s = e.to_string(names)
    assert s == "((((6.673919999999998e-11 / d) * [mass 1]) * m2) / d)"
    assert Expression.parse(s, names) == e
    X = np.array([[1e24, 2e24, 1e10], [3e23, 1e25, 5e8]])
    f = jax.jit(e.to_jax())
    np.testing.assert_allclose(np.asarray(f(jnp.asarray(X))), e.evaluate(X), rtol=1e-15)
    import sympy

    expr = e.sympy(names)
    sym = {str(v): v for v in expr.free_symbols}
    assert set(sym) == set(names)
    val = float(expr.subs({sym["mass 1"]: X[0, 0], sym["m2"]: X[0, 1], sym["d"]: X[0, 2]}))
    np.testing.assert_allclose(val, e.evaluate(X)[0], rtol=1e-14)
    assert (
        sympy.simplify(expr - 6.673919999999998e-11 * sym["mass 1"] * sym["m2"] / sym["d"] ** 2)
        == 0
    )
    assert Expression.from_dict(e.to_dict()) == e
    with pytest.raises(ValueError, match="unknown variable"):
        Expression.parse("x1 + zz", ["x1"])
    with pytest.raises(ValueError):
        Expression.parse("(x1 + ", None)
    # edits
    r = e.replace(1, Expression.constant(2.0))
    assert r.n_nodes == e.n_nodes - e.subtree_sizes[1] + 1
    assert r.op[0] == DIV and r.op[1] == CONST and e.op[1] == MUL and e.op[-1] == VAR
    assert e.with_constant(4, 1.0).value[4] == 1.0 and SUB not in e.op


def _compare_searches(new, ref, base):
    """Batched search results equal the one-by-one oracle: same candidates, the same MSE
    after the change (``base - reduction``) and the same constants, up to rounding."""
    for name in ("constant", "variable", "constant_variable", "constant_expression"):
        got, want = np.asarray(getattr(new, name)), ref[name]
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want), err_msg=name)
        fin = np.isfinite(want)
        b = np.broadcast_to(base.reshape((-1,) + (1,) * (want.ndim - 1)), want.shape)
        np.testing.assert_allclose(
            b[fin] - got[fin],
            b[fin] - want[fin],
            rtol=1e-9,
            atol=1e-12 * float(np.max(base)),
            err_msg=name,
        )
        if name != "variable":
            gk, wk = np.asarray(getattr(new, name + "_k"))[fin], ref[name + "_k"][fin]
            np.testing.assert_allclose(gk, wk, rtol=1e-7, atol=1e-9, err_msg=name + "_k")


def _assert_same_results(got, want):
    """Two :class:`SearchResults`: the same candidates (finite entries), the same
    reductions to 1e-12 (the node base MSEs may be summed in another order, and XLA may
    contract other products into FMAs) and constants to 1e-7 (a flat minimum fixes ``k``
    only to about the square root of the rounding, as in :func:`_compare_searches`)."""
    for name in got._fields:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        np.testing.assert_array_equal(np.isfinite(g), np.isfinite(w), err_msg=name)
        fin = np.isfinite(w)
        tol = dict(rtol=1e-7, atol=1e-9) if name.endswith("_k") else dict(rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[fin], w[fin], err_msg=name, **tol)


def test_batched_searches_equal_one_by_one_oracle_on_random_trees():
    from reference_searches import reference_search_all

    from jaxsr.symbolic import search_all, searches
    from jaxsr.symbolic.searches import NO_LIMIT, search_lean

    rng = np.random.default_rng(12)
    n_checked = n_general = 0
    N, M = 20, 3
    budget = 16 * (3 * 16 + M) * 8 * 5  # 5 samples per chunk
    assert searches.sample_chunks(N, 3 * 16 + M, 8, budget) == 4
    for trial in range(12):
        X = rng.uniform(0.5, 3.0, size=(N, M))
        if trial % 3 == 0:
            X[3, 1] = 0.0  # k/x2 excluded, x2 forbidden in denominators
        y = rng.normal(size=N) * 2.0 + X[:, 0]
        e = random_tree(rng, M)
        tree = e.padded(16)
        XT = jnp.asarray(X.T)
        sem, eqs, S = _analyse(tree, XT, jnp.asarray(y))
        if not np.all(np.isfinite(np.asarray(sem))):
            continue
        masks = np.ones((4, 16), bool) if trial % 2 else rng.uniform(size=(4, 16)) < 0.7
        pool = np.ones(M, bool) if trial % 4 else np.array([True, False, True])
        limits = (NO_LIMIT, NO_LIMIT) if trial % 5 else (e.n_nodes + 2, 6)
        new = search_all(
            tree,
            sem,
            eqs,
            S,
            XT,
            jnp.asarray(masks),
            jnp.asarray(pool),
            jnp.int32(limits[0]),
            jnp.int32(limits[1]),
        )
        ref = reference_search_all(tree, sem, eqs, S, XT, masks, pool, *limits)
        base = np.asarray(jnp.mean(((eqs.a * sem - eqs.b) / (eqs.c * sem - eqs.d)) ** 2, -1))
        _compare_searches(new, ref, base)
        # the same searches from the semantics alone (equations per chunk of 5
        # samples and per node along its path): the same candidates, the same numbers
        # (every call at these shapes patches the budget: one compiled program, 4 chunks)
        old, searches.CHUNK_BYTES = searches.CHUNK_BYTES, budget
        try:
            lean = search_lean(
                tree,
                sem,
                XT,
                jnp.asarray(y),
                None,
                jnp.asarray(masks),
                jnp.asarray(pool),
                jnp.int32(limits[0]),
                jnp.int32(limits[1]),
                n_slots=2,
            )
        finally:
            searches.CHUNK_BYTES = old
        _assert_same_results(lean, new)
        if trial == 1:  # the closed-form sums in 4 chunks of samples: the same numbers
            old, searches.CHUNK_BYTES = searches.CHUNK_BYTES, budget
            try:
                chunked = jax.jit(search_all.__wrapped__)(
                    tree,
                    sem,
                    eqs,
                    S,
                    XT,
                    jnp.asarray(masks),
                    jnp.asarray(pool),
                    jnp.int32(limits[0]),
                    jnp.int32(limits[1]),
                )
            finally:
                searches.CHUNK_BYTES = old
            for got, want in zip(chunked, new, strict=True):
                np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
        n_checked += 1
        n_general += int(np.any(np.asarray(tree.n_slots) > 0))
    assert n_checked >= 10 and n_general >= 3


def test_engine_candidates_from_the_semantics_alone_are_the_same(monkeypatch):
    """Above LEAN_BYTES the engine keeps only the semantics and runs search_lean;
    its candidates (order, reductions, constants) equal those of the full analysis."""
    from jaxsr.symbolic import searches, strategies
    from jaxsr.symbolic.strategies import DomeSearch

    rng = np.random.default_rng(3)
    X = rng.uniform(0.5, 3.0, size=(20, 3))  # the shapes of the random-trees test above
    y = X[:, 0] / (X[:, 1] + 0.5) + 0.1 * rng.normal(size=20)
    e = Expression.parse("(x1 + 1.5) / ((x2 * 0.75) - (x3 / 4.0))")
    specs = [
        ("constant", "all"),
        ("variable", "all"),
        ("constant-variable", "all"),
        ("constant-expression", "nonterminal"),
    ]
    found = {}
    # the budget of the random-trees test above (5 samples a chunk): the same program
    monkeypatch.setattr(searches, "CHUNK_BYTES", 16 * (3 * 16 + 3) * 8 * 5)
    for lean_bytes in (2**62, 0):
        monkeypatch.setattr(strategies, "LEAN_BYTES", lean_bytes)
        eng = DomeSearch(
            jnp.asarray(X.T),
            jnp.asarray(y),
            np.ones(3, bool),
            max_nodes=15,
            max_height=None,
            min_improvement=1e-6,
            feature_names=None,
        )
        eng.expr, eng._cache = e, None
        eng.mse = eng._true_mse(e)[0]
        assert eng.lean() == (lean_bytes == 0)
        assert (eng.analyse()[2] is None) == (lean_bytes == 0)
        found[lean_bytes] = eng.candidates(specs)
    full, lean = (
        {(c.search, c.node, c.variable, c.op): c for c in found[key]} for key in (2**62, 0)
    )
    # the same candidates; their order too, except among ties within rounding (the base
    # MSEs are summed by sample chunks here)
    assert len(full) > 10 and lean.keys() == full.keys()
    best = [(c.search, c.node, c.variable, c.op) for c in (found[0][0], found[2**62][0])]
    assert best[0] == best[1]
    keys = list(full)
    np.testing.assert_allclose(
        [lean[k].reduction for k in keys], [full[k].reduction for k in keys], rtol=1e-9, atol=1e-13
    )
    np.testing.assert_allclose(
        [lean[k].constant for k in keys], [full[k].constant for k in keys], rtol=1e-7, atol=1e-9
    )


def _grow_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 2.0, size=(n, 2))
    return X, 1.7 * X[:, 0] * X[:, 1] + 0.3 / X[:, 1] - 0.2 * X[:, 0]


def test_growing_in_a_bucket_and_refitting_in_a_size_bucket_compile_nothing():
    from compile_log import compiled_names, count_compilations, jaxsr_programs

    from jaxsr import SymbolicRegressor
    from jaxsr._config import feature_bucket, sample_bucket

    # every dataset of up to 256 rows shares one bucket, then 4 buckets per octave
    assert sample_bucket(1) == sample_bucket(37) == sample_bucket(256) == 256
    assert [sample_bucket(n) for n in (257, 321, 442, 513, 5000)] == [320, 384, 448, 640, 5120]
    assert sample_bucket(257, multiple=3) == 321
    assert [feature_bucket(m) for m in (0, 1, 4, 5, 10, 17, 21, 33)] == [4, 4, 4, 8, 16, 20, 24, 40]
    params = dict(max_nodes=13, strategy=1, max_iterations=12, rational_start=False)
    X, y = _grow_data(37, 11)  # sizes no other test uses
    with count_compilations() as first, compiled_names() as names:
        sr = SymbolicRegressor(**params).fit(X, y)
        sr.predict(X)
    sizes = [h["n_nodes"] for h in sr.history_]
    assert max(sizes) >= 7 and len(set(sizes)) >= 3  # the tree really grew (capacity 16)
    # one compilation per kernel and input shape (the kernels: check, analysis, searches,
    # prediction), not one per iteration: the 12 iterations grew the tree inside its
    # capacity bucket
    # (fewer when an earlier test compiled them: every small dataset shares its buckets)
    assert first["compile"] <= 8, first
    # and only jaxsr's programs: the data goes to the device without compiling anything
    # (``jaxsr._config.to_device``, not ``jnp.asarray`` / ``jnp.zeros``)
    assert set(names) <= jaxsr_programs(), names
    # a new number of samples in the same size bucket, new data, weights, a third
    # column (the same feature bucket): nothing new
    for n, seed in ((39, 12), (40, 13), (200, 14)):
        X2, y2 = _grow_data(n, seed)
        if n == 200:
            X2 = np.column_stack([X2, np.linspace(1.0, 2.0, n)])
        w = np.random.default_rng(seed).uniform(0.5, 2.0, size=n)
        with count_compilations() as again:
            sr2 = SymbolicRegressor(**params).fit(X2, y2, sample_weight=w)
            sr2.predict(X2)
        assert again["compile"] == 0, (n, again)
        assert len(sr2.history_) >= 3


def test_sample_weight_integer_weights_equal_repeated_rows():
    from jaxsr import SymbolicRegressor

    rng = np.random.default_rng(5)
    X, y = _grow_data(37, 5)
    y = y + rng.normal(size=37) * 0.1
    w = np.ones(37, int)
    w[:4], w[4:7], w[7] = 0, 2, 3  # 38 repeated rows: the same size bucket (256) as 37
    # the search from the mean: the rational start ranks its candidates by an information
    # criterion whose n is Kish's effective size under weights, not the repeated row count
    params = dict(max_nodes=13, strategy=1, max_iterations=6, rational_start=False)
    a = SymbolicRegressor(**params).fit(X, y, sample_weight=w)
    b = SymbolicRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_array_equal(a.expression_tree_.op, b.expression_tree_.op)
    np.testing.assert_array_equal(a.expression_tree_.feature, b.expression_tree_.feature)
    # the same optimum: the constants to the convergence of the constant optimisation
    # (the weighted sums run over the rows in other places, so they round differently)
    np.testing.assert_allclose(a.expression_tree_.value, b.expression_tree_.value, rtol=1e-7)
    np.testing.assert_allclose(a.mse_, b.mse_, rtol=1e-10)
    # mse_ is the weighted MSE of the returned expression, and the weights matter
    pred = a.predict(X)
    np.testing.assert_allclose(a.mse_, np.sum(w * (pred - y) ** 2) / np.sum(w), rtol=1e-10)
    c = SymbolicRegressor(**params).fit(X, y)
    assert c.expression_ != a.expression_
    # weights 1 (or any constant) are the unweighted fit
    d = SymbolicRegressor(**params).fit(X, y, sample_weight=np.full(37, 3.0))
    assert d.expression_ == c.expression_ and d.mse_ == pytest.approx(c.mse_, rel=1e-12)
    with pytest.raises(ValueError, match="non-negative"):
        SymbolicRegressor(**params).fit(X, y, sample_weight=-np.ones(37))


def test_initial_expression_warm_start():
    from jaxsr import SymbolicRegressor

    X, y = _grow_data(37, 11)
    params = dict(
        max_nodes=13,
        strategy=1,
        beam_width=1,  # the greedy search
        model_selection="accuracy",  # the last tree
        rational_start=False,
    )  # from the mean
    full = SymbolicRegressor(max_iterations=6, **params).fit(X, y)
    # resume: 3 iterations, then 3 more from where it stopped, equal 6 at once
    part = SymbolicRegressor(max_iterations=3, **params).fit(X, y)
    rest = SymbolicRegressor(
        max_iterations=3, initial_expression=part.expression_tree_, **params
    ).fit(X, y)
    assert rest.expression_ == full.expression_
    assert [h["mse"] for h in part.history_ + rest.history_] == pytest.approx(
        [h["mse"] for h in full.history_], rel=1e-12
    )
    # a string over the feature names; max_iterations=0 keeps it and reports its MSE
    sr = SymbolicRegressor(max_iterations=0, initial_expression="(1.5 * x1) * x2", **params).fit(
        X, y
    )
    assert sr.expression_ == "((1.5 * x1) * x2)"
    np.testing.assert_allclose(sr.mse_, np.mean((1.5 * X[:, 0] * X[:, 1] - y) ** 2), rtol=1e-12)
    with pytest.raises(ValueError, match="not defined"):
        SymbolicRegressor(initial_expression="x1 / (x2 - x2)", **params).fit(X, y)
    with pytest.raises(ValueError, match="unknown variable"):
        SymbolicRegressor(initial_expression="x1 + x9", **params).fit(X, y)
    with pytest.raises(ValueError, match="initial_expression"):
        SymbolicRegressor(initial_expression=3.0, **params).fit(X, y)


def test_fast_compilation_is_opt_in_scoped_to_jaxsr_and_agrees_to_rounding():
    import os

    from compile_log import count_compilations

    import jaxsr
    from jaxsr import SymbolicRegressor
    from jaxsr._config import _FAST

    assert not _FAST["on"] or os.environ.get("JAXSR_FAST_COMPILE")  # opt-in
    flags = os.environ.get("XLA_FLAGS")
    params = dict(max_nodes=13, strategy=1, max_iterations=12, rational_start=False)
    X, y = _grow_data(37, 11)  # the fit of the growing test above: compiled already
    ref = SymbolicRegressor(**params).fit(X, y)
    previous = jaxsr.fast_compilation(True)
    try:
        with count_compilations() as n:
            fast = SymbolicRegressor(**params).fit(X, y)
        # inside a user's own jit a jaxsr program is inlined (the outer options apply)
        e = Expression.binary(MUL, Expression.variable(0), Expression.variable(1))
        inner = jax.jit(lambda t, x: node_semantics(t, x)[0])
        np.testing.assert_allclose(
            inner(e.padded(16), jnp.asarray(X.T)), X[:, 0] * X[:, 1], rtol=1e-15
        )
    finally:
        assert jaxsr.fast_compilation(previous) is True
    assert n["compile"] >= 3, n  # check, analysis, searches: compiled again (fast options)
    assert os.environ.get("XLA_FLAGS") == flags  # the user's XLA flags untouched
    # the same fit, up to the rounding of sums vectorised differently
    assert [(h["search"], h["node"]) for h in fast.history_] == [
        (h["search"], h["node"]) for h in ref.history_
    ]
    assert fast.n_nodes_ == ref.n_nodes_
    np.testing.assert_allclose(fast.predict(X), ref.predict(X), rtol=1e-9, atol=1e-12)


def _host_constant_optimisation(eng):
    """Section 2.6 on the host, one constant search and one check per visit (the engine's
    procedure before it ran on the device): the oracle of the device pass."""
    changes = 0
    while True:
        changed = False
        for j in np.flatnonzero(eng.expr.op == CONST):
            if eng.mse <= eng.floor:
                return changes
            mask = np.zeros(eng.expr.n_nodes, bool)
            mask[j] = True
            (cand,) = eng.candidates([("constant", mask)]) or (None,)
            if cand is not None:
                new = eng.expr.with_constant(int(j), cand.constant)
                mse, ok = eng._true_mse(new)
                if eng.accepts(mse, ok):
                    eng.expr, eng.mse, eng._cache = new, mse, None
                    changed, changes = True, changes + 1
        if not changed:
            return changes


def _host_polish(eng, max_steps=20):
    from jaxsr.symbolic.strategies import _joint_constant_step

    kept, lam = 0, 1e-3
    for _ in range(max_steps):
        tree = eng.expr.padded(eng.capacity, eng.dtype)
        v = np.asarray(_joint_constant_step(tree, eng.XT, eng.y, lam, eng.weights))
        new = Expression(eng.expr.op, v[: eng.expr.n_nodes], eng.expr.feature)
        mse, ok = eng._true_mse(new)
        if ok and mse < eng.mse:
            eng.expr, eng.mse, kept, lam = new, mse, kept + 1, max(lam / 10, 1e-12)
            if eng.mse <= eng.floor:
                break
        else:
            lam *= 100
            if lam > 1e6:
                break
    return kept


def test_device_constant_optimisation_equals_the_host_procedure():
    """One jitted call per constant optimisation (strategies.constant_passes: the node
    equation and the check rebuilt along the path of each constant) makes the same
    changes, in the same order, as a constant search and a true-MSE check per visit:
    same constants to the last bit, same MSE, same count; the same for the polish. On
    random trees with divisions (general-case constants, forbidden sets), with weights
    and a timed run (the device loop in calls of a few visits)."""
    from jaxsr.symbolic.strategies import DomeSearch

    rng = np.random.default_rng(21)
    n_checked = n_general = n_changed = 0
    for trial in range(14):
        X, _ = _grow_data(40, 100 + trial)
        e = random_tree(rng, 2)
        if not np.any(e.op == CONST) or np.max(e.forbidden_slot_counts()) > 2:
            continue
        y = e.evaluate(X) * 1.3 + 0.5 * X[:, 0] + rng.normal(size=40) * 0.05
        w = rng.uniform(0.5, 2.0, size=40) if trial % 2 else np.ones(40)
        w = w / np.mean(w)
        XT, yj, wj = jnp.asarray(X.T), jnp.asarray(y), jnp.asarray(w)
        engines = []
        for timed in (False, False, True):
            eng = DomeSearch(
                XT,
                yj,
                np.ones(2, bool),
                max_nodes=None,
                max_height=None,
                min_improvement=1e-4,
                feature_names=None,
                weights=wj,
                deadline=1e30 if timed else None,
            )
            mse, ok = eng._true_mse(e)
            if not ok:
                break
            eng.expr, eng.mse, eng._cache = e, mse, None
            engines.append(eng)
        if len(engines) < 3:
            continue
        ref, dev, timed = engines
        n_ref = _host_constant_optimisation(ref)
        n_dev, capped = dev.optimise_constants()
        assert timed.optimise_constants() == (n_dev, False)
        assert (n_dev, capped) == (n_ref, False)
        for got in (dev, timed):
            np.testing.assert_allclose(got.expr.value, ref.expr.value, rtol=1e-13)
            assert got.mse == pytest.approx(ref.mse, rel=1e-12)
        for got in (dev, timed):  # the polish from the same constants
            got.expr, got.mse, got._cache = ref.expr, ref.mse, None
        assert dev.polish_constants() == _host_polish(ref) == timed.polish_constants()
        for got in (dev, timed):
            np.testing.assert_allclose(got.expr.value, ref.expr.value, rtol=1e-13)
            assert got.mse == pytest.approx(ref.mse, rel=1e-12)
        n_checked += 1
        n_changed += n_ref > 0
        n_general += int(np.any(e.forbidden_slot_counts()[e.op == CONST] > 0))
    assert n_checked >= 5 and n_general >= 2 and n_changed >= 4, (n_checked, n_general, n_changed)


def test_polish_jacobian_from_node_equations_equals_forward_mode():
    """The joint polish's Jacobian from the node equations ((b c - a d) / (c v - d)**2 at
    each constant) equals forward-mode differentiation of the semantics, with and without
    weights, on random trees with divisions; one step of either gives the same values."""
    from jaxsr.symbolic.strategies import _equation_jacobian, _joint_constant_step

    rng = np.random.default_rng(5)
    n_checked = 0
    for trial in range(10):
        X, _ = _grow_data(40, 300 + trial)
        e = random_tree(rng, 2)
        if not np.any(e.op == CONST):
            continue
        sem_np = e.evaluate(X)
        if not np.all(np.isfinite(sem_np)):
            continue
        y = sem_np * 1.3 + 0.5 * X[:, 0] + rng.normal(size=40) * 0.05
        w = rng.uniform(0.5, 2.0, size=40) if trial % 2 else np.ones(40)
        w = w / np.mean(w)
        tree = e.padded(16 if e.n_nodes <= 16 else 32, np.float64)
        XT, yj, wj = jnp.asarray(X.T), jnp.asarray(y), jnp.asarray(w)
        sem = node_semantics(tree, XT)
        got = np.asarray(_equation_jacobian(tree, sem, yj, wj))
        want = np.asarray(
            jax.jacfwd(lambda v, t=tree, x=XT: node_semantics(t._replace(value=v), x)[0])(
                tree.value
            )
        )
        want = want * np.sqrt(w)[:, None]
        const = np.flatnonzero(e.op == CONST)
        scale = np.max(np.abs(want[:, const]), axis=0) + 1e-300
        assert np.max(np.abs(got[:, const] - want[:, const]) / scale) < 1e-12
        v_eq = np.asarray(_joint_constant_step(tree, XT, yj, 1e-3, wj))
        v_fw = np.asarray(_joint_constant_step(tree, XT, yj, 1e-3, wj, unary=True))
        np.testing.assert_allclose(v_eq, v_fw, rtol=1e-9, atol=1e-12)
        n_checked += 1
    assert n_checked >= 5


def _nested_chain(levels):
    """``((((x1 + 0.5) * 0.75) - x2) ...)``: ``levels`` operators deep, built node by node."""
    e = Expression.variable(0)
    for k in range(levels):
        o, arg = (
            (ADD, Expression.constant(0.5)),
            (MUL, Expression.constant(0.75)),
            (SUB, Expression.variable(1)),
        )[k % 3]
        e = Expression.binary(o, e, arg)
    return e


def test_parse_print_and_evaluate_trees_of_any_depth():
    from jaxsr.symbolic.expression import SYMPY_MAX_HEIGHT

    # 500 nested parentheses around one expression: the same tree as without them
    assert Expression.parse("(" * 500 + "1.5 * x1" + ")" * 500) == Expression.parse("1.5 * x1")
    assert Expression.parse("-" * 300 + "x1").height == 301  # 0 - (0 - (... x1))
    deep = _nested_chain(1500)
    text = deep.to_string()
    assert text.startswith("(" * 1500 + "x1 + 0.5)")
    assert Expression.parse(text) == deep
    X = np.column_stack([np.linspace(0.1, 1.0, 9), np.linspace(-0.5, 0.5, 9)])
    v = X[:, 0].copy()
    for k in range(1500):
        v = (v + 0.5, v * 0.75, v - X[:, 1])[k % 3]
    np.testing.assert_allclose(deep.evaluate(X), v, rtol=1e-13)
    with jax.enable_x64(True):
        np.testing.assert_allclose(np.asarray(jax.jit(deep.to_jax())(X)), v, rtol=1e-12)
    # the errors of the parser name what is wrong
    for bad, message in (
        ("((x1 + 2)", "missing ')'"),
        ("(x1 x2)", "missing ')'"),
        ("x1))", "unexpected ')'"),
        ("sqrt(x1", "missing ')' after sqrt("),
        ("x1 +", "unexpected None"),
        ("x1 (2)", "unexpected '('"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            Expression.parse(bad)
    # sympy recurses per level: beyond SYMPY_MAX_HEIGHT its form is refused, the readable
    # text is the exact one
    ok = _nested_chain(SYMPY_MAX_HEIGHT - 1)
    point = np.array([[0.3, 0.2]])
    value = float(
        ok.sympy().subs({sym: point[0, int(str(sym)[1:]) - 1] for sym in ok.sympy().free_symbols})
    )
    assert value == pytest.approx(float(ok.evaluate(point)[0]), rel=1e-12)
    tall = _nested_chain(SYMPY_MAX_HEIGHT)
    with pytest.raises(
        ValueError,
        match=f"is {SYMPY_MAX_HEIGHT + 1} levels high; its sympy "
        f"form is limited to SYMPY_MAX_HEIGHT = {SYMPY_MAX_HEIGHT} levels",
    ):
        tall.sympy()
    assert tall.readable_string() == tall.to_string()


def test_initial_expression_with_500_nested_parentheses():
    from jaxsr import SymbolicRegressor

    X, y = _grow_data(37, 11)  # the shapes of the warm-start test: compiled once
    sr = SymbolicRegressor(
        max_iterations=0,
        max_nodes=13,
        strategy=1,
        beam_width=1,
        model_selection="accuracy",
        initial_expression="(" * 500 + "(1.5 * x1) * x2" + ")" * 500,
    ).fit(X, y)
    assert sr.expression_ == "((1.5 * x1) * x2)"
    np.testing.assert_allclose(sr.mse_, np.mean((1.5 * X[:, 0] * X[:, 1] - y) ** 2), rtol=1e-12)
