"""The general-case constant of section 2.1 against the paper's procedure written plainly
in numpy: never worse, never within 1% of a pole."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsr.symbolic.constant import (
    POLE_EXCLUSION,
    _best_candidate,
    _score_all,
    optimal_constant,
)


def f_numpy(a, b, c, d, k):
    """Equation 27 at ``k``; ``inf`` where a denominator is zero."""
    den = c * k - d
    if np.any(den == 0):
        return np.inf
    with np.errstate(all="ignore"):
        f = np.mean(((a * k - b) / den) ** 2)
    return f if np.isfinite(f) else np.inf


def near_pole(c, d, k):
    """``k`` within 1% of a pole ``d_j/c_j`` (the reference package's tolerance)."""
    nz = c != 0
    p = d[nz] / c[nz]
    return bool(np.any(np.abs(k - p) <= POLE_EXCLUSION * np.abs(p)))


def paper_constant(a, b, c, d, forbidden=()):
    """The paper's general case (section 2.1), plainly: take the zeros b_i/a_i, drop the
    forbidden values and those within 1% of a pole, evaluate equation 27 at every
    remaining one, keep the best. Returns ``(k, f(k))`` (``(nan, inf)`` when no zero is
    admissible)."""
    nz = a != 0
    zeros = np.unique(b[nz] / a[nz])
    zeros = zeros[~np.isin(zeros, forbidden)]
    p = d[c != 0] / c[c != 0]
    keep = ~np.any(np.abs(zeros[:, None] - p[None, :]) <= POLE_EXCLUSION * np.abs(p), axis=1)
    zeros = zeros[keep]
    f = np.full(zeros.shape, np.inf)
    for s in range(0, zeros.size, 256):  # equation 27 at every zero, 256 at a time
        z = zeros[s : s + 256, None]
        den = c * z - d
        with np.errstate(all="ignore"):
            fz = np.mean(((a * z - b) / den) ** 2, axis=1)
        f[s : s + 256] = np.where(np.any(den == 0, axis=1) | ~np.isfinite(fz), np.inf, fz)
    if zeros.size == 0 or not np.isfinite(f.min()):
        return np.nan, np.inf
    return zeros[np.argmin(f)], f.min()


def random_equation(rng, n):
    """A general-case node equation with poles d_j/c_j among the zeros b_i/a_i."""
    a = rng.normal(size=n)
    b = rng.normal(size=n) * rng.uniform(0.5, 3)
    c = rng.normal(size=n)
    d = rng.normal(size=n)
    return a, b, c, d


_N_PAD = 3000
_solve = jax.jit(optimal_constant)


def _padded(v, fill):
    return jnp.asarray(np.r_[v, np.full(_N_PAD - v.shape[0], fill)])


def compare(eqs):
    """Per equation: (f_jaxsr / f_paper, jaxsr's k near a pole). Equations are padded to
    3000 rows with terms ``(0*k - 0)/(0*k - 1) = 0`` (no zero, no pole, same argmin), so
    the solver compiles once for every N."""
    out = []
    for a, b, c, d in eqs:
        assert a.shape[0] <= _N_PAD
        k, f, ok = _solve(_padded(a, 0.0), _padded(b, 0.0), _padded(c, 0.0), _padded(d, 1.0))
        k = float(k)
        _, f_paper = paper_constant(a, b, c, d)
        f_ours = f_numpy(a, b, c, d, k) if bool(ok) else np.inf
        if np.isinf(f_paper):  # no admissible zero: anything finite is better
            r = 1.0 if np.isinf(f_ours) else 0.0
        else:
            r = f_ours / f_paper if f_paper > 0 else (1.0 if f_ours == 0 else np.inf)
        out.append((r, bool(ok) and near_pole(c, d, k)))
    return np.array([r for r, _ in out]), np.array([p for _, p in out])


@pytest.mark.parametrize("n", [300, 1000, 3000])
def test_general_case_never_worse_than_the_paper(n):
    rng = np.random.default_rng(n)
    eqs = [random_equation(rng, n) for _ in range(60)]
    ratio, near = compare(eqs)
    # floating-point ties only: never worse than the paper's best admissible zero
    assert np.all(ratio <= 1 + 1e-12), np.sort(ratio)[-5:]
    assert not near.any()
    assert np.median(ratio) < 1.0  # the refinement usually improves on the best zero


def test_chunked_scoring_equals_the_plain_loop():
    rng = np.random.default_rng(5)
    a, b, c, d = random_equation(rng, 257)
    c[:3] = 1.0
    ks = np.r_[rng.normal(size=40), d[:3]]  # three candidates exactly on a pole
    got = np.asarray(_score_all(*(jnp.asarray(v) for v in (a, b, c, d)), jnp.asarray(ks)))
    want = np.array([f_numpy(a, b, c, d, k) for k in ks])
    np.testing.assert_allclose(got[:40], want[:40], rtol=1e-12)
    assert np.all(np.isinf(got[40:]))


def test_on_the_equations_met_while_fitting_real_data():
    """The general-case node equations (and their ``k op x`` child equations) of trees
    that fits of diabetes and of a rational Feynman law build (a division whose
    denominator holds constants and variables): never worse than the paper."""
    from jaxsr.datasets import feynman_equation, load_diabetes
    from jaxsr.symbolic import Expression, node_equations, node_semantics
    from jaxsr.symbolic.equations import child_equation
    from jaxsr.symbolic.expression import ADD, DIV, MUL, SUB

    Xd, yd = load_diabetes(as_frame=False)
    cases = [
        (
            Xd[:1000],
            yd[:1000],
            [
                "152.1 + (2.5 * x3) / (1.3 + (0.01 * x4))",
                "(x3 * (x9 - 4.2)) / (x4 - (0.2 * x5)) + 99.0",
            ],
        ),
        (
            *feynman_equation("I.27.6", 1000, seed=0),
            ["1.5 / (0.3 + (x3 / x2))", "(x1 * x2) / ((2.0 * x2) + (x1 * x3))"],
        ),
    ]
    eqs = []
    for X, y, texts in cases:
        for text in texts:
            tree = Expression.parse(text).padded(dtype=np.float64)
            sem = node_semantics(tree, jnp.asarray(X.T))
            e = node_equations(tree, sem, jnp.asarray(y))
            for j in range(int(tree.n_nodes)):
                row = [np.asarray(v[j]) for v in e]
                if np.all(row[2] == 0) or (
                    np.all(row[2] == row[2][0]) and np.all(row[3] == row[3][0])
                ):
                    continue  # a closed form applies
                eqs.append(row)
                for op in (ADD, SUB, MUL, DIV):
                    for m in (0, 1):
                        ch = child_equation(op, True, *row, X[:, m])
                        eqs.append([np.asarray(v) for v in ch])
    eqs = [q for q in eqs if not np.all(q[2] == 0)]
    assert len(eqs) >= 20
    ratio, near = compare(eqs)
    assert np.all(ratio <= 1 + 1e-12), np.sort(ratio)[-5:]
    assert not near.any()


# --- the branch and bound against the exhaustive scorer (the oracle) on hard cases -----

_M = 512  # every stress equation is padded to this size (one compile per dtype)
_bb = jax.jit(lambda a, b, c, d: _best_candidate(a, b, c, d)[:2])
_ex = jax.jit(lambda a, b, c, d: _best_candidate(a, b, c, d, exhaustive=True)[:2])


def _pad_to(v, fill, dtype):
    return jnp.asarray(np.r_[v, np.full(_M - v.shape[0], fill)], dtype)


def _both(a, b, c, d, dtype=jnp.float64):
    """(f of the branch and bound's candidate, the exhaustive best f) as floats, and the
    chosen candidate; padding terms (0*k - 0)/(0*k - 1) change neither."""
    args = [_pad_to(v, f, dtype) for v, f in ((a, 0), (b, 0), (c, 0), (d, 1))]
    k, f = _bb(*args)
    _, f_ex = _ex(*args)
    return float(f), float(f_ex), float(k)


def stress_equations(rng):
    """Equations that make pruning hard, each ``(name, a, b, c, d)``."""
    out = []
    n = 500
    out.append(("poles among the data", *(rng.normal(size=n) for _ in range(4))))
    a, b, c, d = (rng.normal(size=n) for _ in range(4))
    d[:200] = c[:200] * (0.3 + 1e-9 * rng.normal(size=200))  # 200 poles in one cluster
    out.append(("clustered poles", a, b, c, d))
    a, c, d = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    b = a * rng.choice([-1.0, 0.5, 2.0], size=n)  # ties: 3 distinct zeros
    out.append(("ties", a, b, c, d))
    a, b, c = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    d = c * (b / a) * (1 + 1e-3 * rng.uniform(-1, 1, n))  # every zero near a pole
    out.append(("all zeros near poles", a, b, c, d))
    a, b, c, d = (rng.normal(size=n) for _ in range(4))
    c[rng.uniform(size=n) < 0.6] = 0.0  # c == 0 terms mixed in
    out.append(("c == 0 mixed", a, b, c, d))
    a, b, c, d = (rng.normal(size=n) for _ in range(4))
    c[:-3] = 0.0  # a quadratic with three poles
    out.append(("almost quadratic", a, b, c, d))
    a, c, d = rng.normal(size=n), rng.uniform(0.1, 0.3, size=n), rng.uniform(1, 2, size=n)
    out.append(("exact fit", a, a * 1.75, c, d))  # poles in [3.3, 20]
    a, b, c, d = (rng.normal(size=n) for _ in range(4))
    out.append(("huge", a * 1e150, b * 1e150, c * 1e-100, d * 1e-100))
    out.append(("tiny", a * 1e-150, b * 1e-140, c * 1e100, d * 1e110))
    out.append(("zeros at 1e200", a, b * 1e200, c, d * 1e200))
    w = rng.uniform(0, 2, size=n) * (rng.uniform(size=n) < 0.7)  # weights, 30% zero
    a, b, c, d = (rng.normal(size=n) for _ in range(4))
    out.append(("weighted", np.sqrt(w) * a, np.sqrt(w) * b, c, d))
    for m in (1, 2, 3, 17):
        out.append((f"N = {m}", *(rng.normal(size=m) for _ in range(4))))
    return out


def test_branch_and_bound_equals_the_exhaustive_scorer():
    rng = np.random.default_rng(11)
    for name, a, b, c, d in stress_equations(rng):
        f, f_ex, k = _both(a, b, c, d)
        if np.isinf(f_ex):
            assert np.isinf(f) and np.isnan(k), name
            continue
        np.testing.assert_allclose(f, f_ex, rtol=1e-12, atol=0, err_msg=name)
        # the padded mean is over _M terms
        np.testing.assert_allclose(
            f, f_numpy(a, b, c, d, k) * a.shape[0] / _M, rtol=1e-12, err_msg=name
        )
        assert not near_pole(c, d, k), name
    # "all zeros near poles" has no admissible zero (only the seeds of equations 29 and
    # 33 remain), "exact fit" is 0 at its common zero
    eqs = {name: (a, b, c, d) for name, a, b, c, d in stress_equations(rng)}
    a, b, c, d = eqs["all zeros near poles"]
    assert not np.isin(_both(a, b, c, d)[2], b / a)
    f, _, k = _both(*eqs["exact fit"])
    assert f == 0.0 and k == 1.75


def test_block_sums_in_chunks_equal_the_exhaustive_scorer(monkeypatch):
    """The block steps sum their terms in chunks of ``TERM_CHUNK`` (padded with terms that
    add nothing): with chunks of 100 terms (6 passes of 86, 4 padding terms, over the
    512-term stress equations) the branch and bound still finds the exhaustive best."""
    from jaxsr.symbolic import constant as C

    monkeypatch.setattr(C, "TERM_CHUNK", 100)
    assert C._term_chunks(_M) == (6, 86)
    bb = jax.jit(lambda a, b, c, d: _best_candidate(a, b, c, d)[:2])
    rng = np.random.default_rng(11)
    for name, a, b, c, d in stress_equations(rng):
        args = [_pad_to(v, f, jnp.float64) for v, f in ((a, 0), (b, 0), (c, 0), (d, 1))]
        k, f = (float(v) for v in bb(*args))
        _, f_ex = (float(v) for v in _ex(*args))
        if np.isinf(f_ex):
            assert np.isinf(f) and np.isnan(k), name
            continue
        np.testing.assert_allclose(f, f_ex, rtol=1e-12, atol=0, err_msg=name)
        assert not near_pole(c, d, k), name


def test_branch_and_bound_float32():
    rng = np.random.default_rng(12)
    for name, a, b, c, d in stress_equations(rng):
        if name in ("huge", "tiny", "zeros at 1e200"):
            continue  # beyond float32's range: the estimator rejects such data
        f, f_ex, k = _both(a, b, c, d, jnp.float32)
        if np.isinf(f_ex):
            assert np.isinf(f), name
            continue
        # equal up to float32 rounding (an exact fit ends at the rounding level)
        np.testing.assert_allclose(f, f_ex, rtol=1e-3, atol=1e-12, err_msg=name)
        assert not near_pole(c.astype(np.float32), d.astype(np.float32), k), name


def test_forbidden_best_zero_gives_the_next_admissible_one():
    """Paper, section 2.1 step 2: a zero equal to a forbidden value is dropped before
    choosing, so a forbidden best zero yields the best of the others (not no constant).
    N = 3000 > EXHAUSTIVE_MAX: the solver's branch and bound path."""
    rng = np.random.default_rng(13)
    n = 2000
    a, b, c, d = (rng.normal(size=n) for _ in range(4))
    k_best, f_best = paper_constant(a, b, c, d)
    args = [_padded(a, 0.0), _padded(b, 0.0), _padded(c, 0.0), _padded(d, 1.0)]
    solve = jax.jit(optimal_constant)
    S = np.full((2, _N_PAD), np.inf)  # two slots, nothing forbidden yet
    k0, f0, ok0 = solve(*args, jnp.asarray(S), 2)
    scale = n / _N_PAD  # the padded mean
    assert bool(ok0) and float(f0) <= f_best * scale * (1 + 1e-12)
    S[1, 7] = k_best  # the paper's best zero is forbidden (slot 1)
    k1, f1, ok1 = solve(*args, jnp.asarray(S), 2)
    assert bool(ok1) and float(k1) != k_best and float(f1) > float(f0)
    # never worse than the paper's procedure with that value forbidden
    _, f_paper = paper_constant(a, b, c, d, forbidden=[k_best])
    assert np.isfinite(f_paper) and float(f1) <= f_paper * scale * (1 + 1e-12)
    # the slot unused: as if nothing were forbidden; a used slot holding nan forbids all
    k2, f2, _ = solve(*args, jnp.asarray(S), 1)
    assert float(k2) == float(k0) and float(f2) == float(f0)
    S[0, 3] = np.nan
    assert not bool(solve(*args, jnp.asarray(S), 1)[2])
    with pytest.raises(ValueError, match="together"):
        optimal_constant(*args, jnp.asarray(S))


# --- the exact stage evaluated in groups: the same as one step at a time -----

_NG = 6000  # padded size: 5 candidates per step of the exact stage


def _bb_rows(rng):
    """General-case rows ``(name, a, b, c, d, S, n_used)`` of several sizes (padded to
    ``_NG``): poles among the zeros, clustered poles, ties, zeros near poles, c == 0 mixed
    in, and forbidden values (among them the best zero)."""
    rows = []
    for i, n in enumerate((2500, 4000, 6000, 3100, 5200, 6000)):
        a, b, c, d = (rng.normal(size=n) for _ in range(4))
        if i == 1:
            d[: n // 3] = c[: n // 3] * (0.3 + 1e-9 * rng.normal(size=n // 3))
        if i == 2:
            b = a * np.round(rng.normal(size=n), 1)  # many tied zeros
        if i == 3:  # most zeros within 1% of a pole
            m = 3 * n // 4
            d[:m] = c[:m] * (b[:m] / a[:m]) * (1 + 5e-3 * rng.uniform(-1, 1, m))
        if i == 4:
            c[rng.uniform(size=n) < 0.5] = 0.0
        S = np.full((2, _NG), np.inf)
        z = b / a
        S[0, rng.integers(n, size=6)] = z[rng.integers(n, size=6)]
        S[1, :3] = paper_constant(a, b, c, d)[0]  # the best zero, in slot 1
        rows.append((f"row {i}", a, b, c, d, S, 1 + i % 2))
    return rows


def _oracle(a, b, c, d, forbidden):
    """Best admissible candidate by brute force: every zero and the seeds of equations 29
    and 33, less the forbidden ones and those within 1% of a pole. ``f`` over the rows."""
    wd = np.where(d != 0, 1 / np.where(d != 0, d * d, 1), 0)
    wc = np.where(c != 0, 1 / np.where(c != 0, c * c, 1), 0)
    seeds = [np.sum(a * b * wd) / np.sum(a * a * wd), np.sum(b * b * wc) / np.sum(a * b * wc)]
    nz = a != 0
    cands = np.unique(np.r_[b[nz] / a[nz], seeds])
    cands = cands[np.isfinite(cands) & ~np.isin(cands, forbidden)]
    p = d[c != 0] / c[c != 0]
    ps = np.sort(p)
    # within 1% of some pole: the zones [p - 0.01|p|, p + 0.01|p|] have increasing ends
    lo, hi = ps - POLE_EXCLUSION * np.abs(ps), ps + POLE_EXCLUSION * np.abs(ps)
    j = np.searchsorted(lo, cands, side="right") - 1
    cands = cands[~((j >= 0) & (hi[np.clip(j, 0, None)] >= cands))]
    f = np.array([f_numpy(a, b, c, d, k) for k in cands])
    return cands[np.argmin(f)], f.min()


def test_exact_stage_in_groups_equals_one_step_at_a_time_and_the_oracle():
    """The branch and bound's last stage evaluates several steps of candidates per kernel
    and replays them one step at a time: for any number of groups the same candidate,
    f and count of evaluations (bitwise), and that f is the brute-force best."""
    from jaxsr.symbolic import constant as C
    from jaxsr.symbolic import sorting

    def bb(point_batch, groups):
        def run(a, b, c, d, S, n_used):
            cands, adm, _, _ = C._prepare(a, b, c, d, S, n_used)
            ks = sorting.sort(jnp.where(adm, cands, jnp.inf))
            return C._branch_and_bound(
                a,
                b,
                c,
                d,
                ks,
                jnp.sum(adm, dtype=jnp.int32),
                C.FANOUT,
                C._batch(_NG, C.FANOUT),
                point_batch=point_batch,
                groups=groups,
            )

        return jax.jit(run)

    assert C.POINT_BUDGET // _NG == 5  # the default step; 1 is that of N >= 32768
    variants = {
        (pb, g): bb(pb, g)
        for pb, g in ((None, None), (5, 1), (5, 3), (1, 1), (1, C._exact_groups(40000, 1)), (1, 7))
    }
    rng = np.random.default_rng(21)
    for name, a, b, c, d, S, n_used in _bb_rows(rng):
        n = a.shape[0]
        args = [_padded_to(v, fill) for v, fill in ((a, 0.0), (b, 0.0), (c, 0.0), (d, 1.0))]
        args += [jnp.asarray(S), jnp.asarray(n_used, jnp.int32)]
        got = {key: tuple(float(v) for v in fn(*args)) for key, fn in variants.items()}
        # grouped == one step at a time
        assert got[(None, None)] == got[(5, 1)] == got[(5, 3)], name
        assert got[(1, 1)] == got[(1, C._exact_groups(40000, 1))] == got[(1, 7)], name
        forbidden = S[:n_used][np.isfinite(S[:n_used])]
        k_or, f_or = _oracle(a, b, c, d, forbidden)
        scale = n / _NG  # the padded mean
        for key, (k, f, n_points) in got.items():
            np.testing.assert_allclose(f, f_or * scale, rtol=1e-12, err_msg=f"{name} {key}")
            assert not np.isin(k, forbidden) and not near_pole(c, d, k), (name, key)
            assert 0 < n_points < n + 2, (name, key)


def _padded_to(v, fill):
    return jnp.asarray(np.r_[v, np.full(_NG - v.shape[0], fill)])


def test_sorted_candidates_from_the_zeros_order_equal_the_sort():
    """The admissible candidates in increasing order taken from the zeros' argsort (all
    c != 0) are the sorted array itself, bit for bit; with c == 0 terms, -0.0 / 0.0 or
    subnormal candidates it sorts (the same array too)."""
    from jaxsr.symbolic import constant as C
    from jaxsr.symbolic import sorting

    @jax.jit
    def both(a, b, c, d):
        cands, adm, _, _ = C._prepare(a, b, c, d, None, None)
        got = C._sorted_candidates(cands, adm, c, C._zero_order(a, b, c))
        return got, sorting.sort(jnp.where(adm, cands, jnp.inf))

    rng = np.random.default_rng(22)
    n = 1500
    for case in range(9):
        a, b, c, d = (rng.normal(size=n) for _ in range(4))
        if case in (1, 6):  # poles in [17, 100], away from most zeros: the seeds admissible
            c, d = rng.uniform(0.1, 0.3, size=n), rng.uniform(5.0, 10.0, size=n)
        if case == 1:
            b = a * rng.choice([-1.0, 0.5, 2.0], size=n)  # three tied zeros
        if case == 2:
            b[:5] = 0.0
            b[5:9] = -0.0  # zeros at 0.0 and -0.0
        if case == 3:
            b[:3] = 1e-310 * a[:3]  # subnormal zeros
        if case == 4:
            c[::7] = 0.0  # c == 0 terms: sorted
        if case == 5:
            a[::3] = 0.0  # no zero for these terms
        if case == 6:
            b = a * 0.7 + 1e-3 * rng.normal(size=n)  # the seeds among the zeros
        if case == 8:
            b = a * np.round(rng.normal(size=n), 1)  # tied zeros, 0.0 among them
        if case == 7:
            d = c * (b / a) * (1 + 5e-3 * rng.uniform(-1, 1, n))  # little is admissible
        got, want = (np.asarray(v) for v in both(*(jnp.asarray(v) for v in (a, b, c, d))))
        np.testing.assert_array_equal(
            got.view(np.int64), want.view(np.int64), err_msg=f"case {case}"
        )
