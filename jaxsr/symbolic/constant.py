"""Optimal constant of a node equation (paper, section 2.1, equations 27-34).

Given a node equation ``a, b, c, d`` (each ``(N,)``), find the constant ``k`` minimising

    f(k) = mean(((a*k - b) / (c*k - d)) ** 2)                                  (27)

Closed forms (section 2.1):

* ``c == 0`` everywhere and ``a == 0`` everywhere: ``f`` is constant, no minimum (invalid);
* ``c == 0`` everywhere and some ``d == 0``, or any term with ``c == d == 0``: undefined;
* ``c == 0`` everywhere, ``d != 0``: ``k = sum(a*b/d**2) / sum(a**2/d**2)`` (29; equations
  30-32 are its special cases and give the same value);
* ``c != 0`` and ``d == 0`` everywhere: ``k = sum(b**2/c**2) / sum(a*b/c**2)`` (33);
* ``c == k_c != 0`` and ``d == k_d != 0`` constant: ``k = sum(b*g) / sum(a*g)`` with
  ``g = b*k_c - a*k_d`` (34).

A closed-form minimum that hits the forbidden set ``S`` is no constant (the paper: "this
search is unsuccessful").

General case (any other ``c, d``): the paper's procedure, computed exactly but without
scoring every candidate, then refined:

1. the candidates are all the ``N`` zeros ``z_i = b_i/a_i`` of the terms (``a_i != 0``),
   as in the paper, plus the estimates of equations 29 (over ``d != 0``) and 33 (over
   ``c != 0``);
2. a candidate equal to a value of the forbidden set ``S`` is excluded (step 2 of the
   paper; ``O((K N + N) log)`` by sorting ``S``), and so is one within 1% of a pole
   ``p_j = d_j/c_j`` (``|k - p_j| <= POLE_EXCLUSION * |p_j|``, the reference package's
   tolerance; ``O(N log N)``: the zones ``[p - 0.01|p|, p + 0.01|p|]`` have both ends
   increasing in ``p``, so after sorting the poles a candidate is excluded iff the last
   zone starting at or below it ends at or above it);
3. the admissible candidate with the lowest ``f`` (exact, on all the patterns) is found by
   **branch and bound** over the sorted candidates (:func:`_branch_and_bound`), which
   returns the same candidate as scoring them all (:func:`_score_all`, ``O(N**2)``, kept
   as the test oracle), up to ties within rounding; up to ``N = EXHAUSTIVE_MAX`` (a
   static choice by the shape) every candidate is scored instead: at that size it costs
   about 2x the branch and bound and compiles in a third of its time (about 2 s against
   5-8 s CPU), which the many small shapes of a test suite or a first fit feel;
4. it is refined by ``N_NEWTON`` safeguarded Gauss-Newton steps on all the patterns: each
   step is clipped to stay strictly inside the interval between the exclusion zones of
   the nearest poles on either side (it never crosses a pole nor comes within 1% of
   one) and is only taken if it lowers ``f`` (backtracking ``1, 1/2``); the first refused
   step ends the refinement (a step depends on ``k`` alone, so every later one would be
   the same refused step); a refined ``k`` that is forbidden falls back to the candidate.

So ``f(k)`` is never above the paper's choice (the best non-forbidden zero outside the
poles' 1% zones), ``k`` is never within 1% of a pole nor forbidden.

The bound (why pruning is exact). Write ``t_i(k) = ((a_i k - b_i)/(c_i k - d_i))**2 =
g_i(k)**2`` with the Moebius map ``g_i``; ``g_i'(k) = (b_i c_i - a_i d_i)/(c_i k - d_i)**2``
has one sign, so ``g_i`` is monotone (or constant) on each side of its pole ``d_i/c_i``
and continuous there. Let ``[lo, hi]`` hold a block of consecutive sorted candidates.

* No pole of term ``i`` in ``[lo, hi]``: ``g_i`` is monotone and continuous on it, so its
  values fill the interval between ``g_i(lo)`` and ``g_i(hi)``; ``min t_i`` is ``0`` if
  that interval contains 0, i.e. iff the zero ``z_i`` lies in ``[lo, hi]``, else
  ``min(t_i(lo), t_i(hi))``.
* The pole ``p`` inside: on ``[lo, p)`` ``g_i`` is monotone from ``g_i(lo)`` to
  ``+-inf``: its smallest square there is 0 if ``z_i`` is in ``[lo, p)``, else
  ``t_i(lo)``; likewise on ``(p, hi]`` with ``t_i(hi)``. The same formula results.
* ``a_i = 0`` (no zero) or ``b_i c_i = a_i d_i`` (constant ``g_i``): the same formula with
  "``z_i`` in the interval" false (``z_i = nan``) or harmless.

Hence ``LB = sum_i m_i / N``, ``m_i = 0`` if ``z_i`` is in ``[lo, hi]`` else
``min(t_i(lo), t_i(hi))``, is at most ``f(k)`` for every ``k`` in ``[lo, hi]`` (off the
poles), in particular at every candidate of the block. Terms with ``c_i == 0`` are the
quadratic ``Q(k) = sum((a_i k - b_i)/d_i)**2 = A k**2 - 2 B k + C``; their sum is bounded
as a whole (tighter than term by term): ``Q(k) >= Q(k_q) + A dist(k_q, [lo, hi])**2``
with ``k_q = B/A`` and ``Q(k_q)`` evaluated term by term once, less a slack of
``margin * (C + A max(lo**2, hi**2)) + margin * Q(k_q)`` for the rounding of the
expanded form. A block is pruned when ``LB >= f_best * (1 + margin)``, ``f_best`` the
exact ``f`` of the best candidate evaluated so far, ``margin``
(:func:`_prune_margin`) the relative rounding of a sum of ``N`` terms: a pruned
candidate cannot beat ``f_best`` by more than rounding, and every candidate is either in
a pruned block or evaluated exactly. Each bound also gives the exact ``f`` at the block's
ends (the same ``t_i`` summed), so the incumbent improves at every level.

Smooth terms (neither zero nor pole in ``[lo, hi]``) are bounded a second way, and the
larger bound is used: their sum ``F`` is twice differentiable there, with
``g_i = a_i/c_i + beta_i/(k - p_i)``, ``beta_i = (a_i d_i - b_i c_i)/c_i**2``,
``|t_i''| = |2 g_i'**2 + 2 g_i g_i''| <= 2 beta_i**2/r_i**4 + 4 G_i |beta_i|/r_i**3``
(``r_i`` the distance of the pole to the block, ``G_i = max(|g_i(lo)|, |g_i(hi)|)``, as
``g_i`` is monotone there), so with ``M`` the sum of these, ``F(k) >= F(lo) (1 - u) +
F(hi) u - M/2 (k - lo)(hi - k)`` (the interpolation error of a ``C**2`` function,
``u = (k - lo)/(hi - lo)``); for a block its minimum over ``[lo, hi]`` (a convex
quadratic) is used. This is what prunes near a smooth minimum, where the minima of the
terms are loose.

At the leaf blocks (about ``sqrt(N)/4`` candidates, :func:`_leaf_size`) each candidate
``k_j`` gets its own, much tighter bound: ``f`` is dominated by the few terms whose pole
(or zero) is near ``k_j``, and those are what a block bound drops. With a window
``W = [w_lo, w_hi]`` holding the block (and ``LEAF_REACH`` neighbouring candidates on
each side when their terms fit the gather size, else just the block), the "near" terms,
whose zero or pole lies in ``W``, are found as two contiguous runs of the zeros and
poles sorted once (at most :func:`_near_cap` each; a run that does not fit is not
gathered) and evaluated exactly at ``k_j``; every other term has neither its zero nor its
pole in ``W`` (or is bounded by the block rule if not gathered) and enters with its
bound at ``k_j`` (the smooth interpolation above, or the minimum over the block; the
``c == 0`` quadratic at ``k_j``). A term whose zero and pole are both in ``W`` is counted
once. So ``LB_j <= f(k_j)``, and only candidates with ``LB_j`` below the incumbent are
evaluated exactly, in increasing order of ``LB_j``.

Cost: sorting plus, per level of the block tree, ``2 * FANOUT`` evaluations of ``N``
terms per surviving inner block, 2 per surviving leaf block (plus the near terms at its
candidates), then one per surviving candidate; in the worst case (nothing pruned) about
1.3x scoring every candidate, typically a small fraction: at ``N = 1e4`` with poles among
the data about 40x faster (``benchmarks/bench_constant.py``). Memory: one
``(batch, 2 * FANOUT, N)`` kernel (``batch * 2 * FANOUT * N <= POINT_BUDGET`` unless
``N`` alone exceeds it), on the CPU summed in passes of at most ``TERM_CHUNK`` terms
(:func:`_term_chunks`), and ``O(N)`` bounds. All functions are pure,
jit- and vmap-able, static shapes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .._config import program
from .._sharding import constrain_samples, sample_devices
from . import sorting

__all__ = [
    "optimal_constant",
    "constant_mse",
    "N_NEWTON",
    "POLE_EXCLUSION",
    "POLE_RTOL",
    "SCORE_BUDGET",
    "EXHAUSTIVE_MAX",
    "FANOUT",
    "POINT_BUDGET",
    "LEAF_REACH",
    "LEAF_DIVISOR",
    "NEAR_FACTOR",
    "NEAR_CAP",
    "EXACT_BUDGET",
    "EXACT_WIDTH",
    "EXACT_CAP",
    "TERM_CHUNK",
    "N_QUANTILES",
    "N_SUBSAMPLE",
    "N_POLISH",
]

N_NEWTON = 8
POLE_EXCLUSION = 1e-2  # candidates within 1% of a pole are excluded (section 2.1)
POLE_RTOL = 1e-12  # a closed-form k this close to a pole is invalid
SCORE_BUDGET = 1 << 22  # elements per chunk when scoring all the zeros (the oracle)
FANOUT = 4  # children per block of the branch and bound
POINT_BUDGET = 1 << 15  # term evaluations per branch-and-bound step (sets the batch)
EXHAUSTIVE_MAX = 1024  # up to this N every candidate is scored (cheaper to compile)
LEAF_REACH = 8  # a leaf block's near terms: zero or pole within this many neighbours
LEAF_DIVISOR = 4  # leaf blocks hold about sqrt(N) / LEAF_DIVISOR candidates
NEAR_FACTOR = 8  # zeros (and poles) gathered per leaf block: NEAR_FACTOR * leaf size
NEAR_CAP = 4096  # at most this many
EXACT_BUDGET = 1 << 20  # term evaluations per step of the exact stage (sets its groups)
EXACT_WIDTH = 4  # at most this many candidates per step of the exact stage
EXACT_CAP = 1024  # candidate bounds sorted without the others when at most this many
TERM_CHUNK = 4096  # terms per pass of a block step's sums (its intermediates in cache)
# kept for callers of the earlier bounded solver; the general case no longer uses them
N_QUANTILES = 16
N_SUBSAMPLE = 256
N_POLISH = 0


def constant_mse(a, b, c, d, k):
    """``f(k)`` of equation 27 for scalar ``k``; ``inf`` if not finite."""
    f = jnp.mean(((a * k - b) / (c * k - d)) ** 2)
    return jnp.where(jnp.isfinite(f), f, jnp.inf)


def _near_pole(c, d, k):
    den = c * k - d
    return jnp.any(jnp.abs(den) <= POLE_RTOL * (jnp.abs(c * k) + jnp.abs(d)))


def _safe_ratio(num, den):
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), jnp.nan)


def _case_flags(a, b, c, d):
    """Which closed form applies (section 2.1), from five boolean reductions (the tests
    that are only used together are combined per pattern before reducing)."""
    c0, d0 = c[0], d[0]
    c_zero, d_zero = c == 0, d == 0
    cz = jnp.all(c_zero)
    case33 = jnp.all(~c_zero & d_zero)
    case34 = jnp.all((c == c0) & (d == d0)) & (c0 != 0) & (d0 != 0)
    undefined = ~jnp.all(~(c_zero & d_zero)) | jnp.all(c_zero & (a == 0))
    return cz, case33, case34, undefined


def _closed_form_candidates(a, b, c, d):
    """``k`` of equations 29 (``c == 0``), 33 (``d == 0``) and 34 (``c, d`` constant)."""
    dnz, cnz = d != 0, c != 0
    wd = jnp.where(dnz, 1.0 / jnp.where(dnz, d * d, 1.0), 0.0)
    wc = jnp.where(cnz, 1.0 / jnp.where(cnz, c * c, 1.0), 0.0)
    g = b * c[0] - a * d[0]
    k29 = _safe_ratio(jnp.sum(a * b * wd), jnp.sum(a * a * wd))
    k33 = _safe_ratio(jnp.sum(b * b * wc), jnp.sum(a * b * wc))
    k34 = _safe_ratio(jnp.sum(b * g), jnp.sum(a * g))
    return k29, k33, k34


def _closed_form(a, b, c, d, cz, case33):
    """The closed form that applies: 29 if ``c == 0``, else 33 if ``d == 0``, else 34."""
    k29, k33, k34 = _closed_form_candidates(a, b, c, d)
    return jnp.where(cz, k29, jnp.where(case33, k33, k34))


def _poles(c, d):
    """The pole ``d_j/c_j`` of each term, ``(N,)``; ``+inf`` where ``c_j == 0`` or it is not
    finite."""
    gen = c != 0
    p = jnp.where(gen, d / jnp.where(gen, c, 1.0), jnp.inf)
    return jnp.where(jnp.isfinite(p), p, jnp.inf)


def _pole_order(c, d):
    """``(perm, ps)``: the stable :func:`~.sorting.argsort` of :func:`_poles` and the poles
    in that order (increasing, ``+inf`` last), for :func:`_pole_zones` and the branch and
    bound's near poles (one sort for both)."""
    p = _poles(c, d)
    perm = sorting.argsort(p)
    return perm, p[perm]


def _zero_order(a, b, c):
    """``(perm, zs)``: the stable :func:`~.sorting.argsort` of the zeros ``b_i/a_i`` of the
    ``c != 0`` terms (``+inf`` for the other terms and where not finite) and the zeros in
    that order (the branch and bound's near zeros; :func:`_sorted_candidates`)."""
    nz = a != 0
    z = jnp.where(nz, b / jnp.where(nz, a, 1.0), jnp.nan)
    zg = jnp.where((c != 0) & jnp.isfinite(z), z, jnp.inf)
    perm = sorting.argsort(zg)
    return perm, zg[perm]


def _sorted_candidates(cands, admissible, c, zero_order):
    """``sorting.sort(where(admissible, cands, inf))`` (``(N + 2,)``), the same array.

    When every term has ``c != 0`` the zeros are already in order (``zero_order``,
    :func:`_zero_order`): the admissible ones are moved to the front in that order (a
    prefix sum) and the two seeds merged in; the sort only runs otherwise, or when an
    admissible candidate is ``-0.0``, ``0.0`` or subnormal (the argsort keeps those in
    index order, the sort by value). Equal values have the same bits, so their order is
    immaterial. On the CPU only (``lax.cond``; a select of both sides under ``vmap``)."""

    def by_sort():
        return sorting.sort(jnp.where(admissible, cands, jnp.inf))

    if jax.default_backend() != "cpu":
        return by_sort()
    n, R = c.shape[0], cands.shape[0]
    perm, zs = zero_order

    def from_zeros():
        adm = admissible[:n][perm]  # the admissible zeros, increasing
        seeds = jnp.where(admissible[n:], cands[n:], jnp.inf)  # (2,)
        # a zero goes after the admissible zeros before it and the seeds below it; a seed
        # after the zeros at or below it and, if equal or larger, the other seed
        z_at = (
            jnp.cumsum(adm, dtype=jnp.int32)
            - 1
            + jnp.sum(seeds[None, :] < zs[:, None], axis=1, dtype=jnp.int32)
        )
        other = seeds[::-1]
        s_at = jnp.sum(adm[None, :] & (zs[None, :] <= seeds[:, None]), axis=1, dtype=jnp.int32) + (
            (other < seeds) | ((other == seeds) & (jnp.arange(2) == 1))
        )
        out = jnp.full((R,), jnp.inf, cands.dtype)
        out = out.at[jnp.where(adm, z_at, R)].set(zs, mode="drop")
        return out.at[jnp.where(admissible[n:], s_at, R)].set(seeds, mode="drop")

    tiny = jnp.finfo(cands.dtype).tiny
    direct = jnp.all(c != 0) & ~jnp.any(admissible & (jnp.abs(cands) < tiny))
    return lax.cond(direct, from_zeros, by_sort)


def _pole_zones(c, d, ps=None):
    """Sorted poles ``d_j/c_j`` (``+inf`` padding where ``c_j == 0`` or not finite) and the
    ends of their exclusion zones ``lo = p - 0.01|p|``, ``hi = p + 0.01|p|`` (both
    increasing). ``ps``: the poles already sorted (:func:`_pole_order`), else sorted here.
    (Either order: the same values, except that :func:`~.sorting.argsort` keeps poles
    below the smallest normal float, ``|p| < tiny``, in index order.)"""
    p = sorting.sort(_poles(c, d)) if ps is None else ps
    w = POLE_EXCLUSION * jnp.abs(p)
    lo = jnp.where(jnp.isfinite(p), p - w, jnp.inf)
    hi = jnp.where(jnp.isfinite(p), p + w, jnp.inf)
    return lo, hi


def _near_pole_zone(lo, hi, k):
    """True where ``k`` (any shape) lies in some pole's exclusion zone (sorted zones)."""
    i = jnp.searchsorted(lo, k, side="right") - 1
    return (i >= 0) & (hi[jnp.clip(i, 0, lo.shape[0] - 1)] >= k)


def _score_all(a, b, c, d, cands):
    """``f`` at every candidate, ``(R,)``, in chunks of ``SCORE_BUDGET`` elements."""
    n, r = a.shape[-1], cands.shape[-1]
    chunk = int(max(1, min(r, SCORE_BUDGET // max(n, 1))))
    n_chunks = -(-r // chunk)
    pad = n_chunks * chunk - r
    ks = jnp.concatenate([cands, jnp.full((pad,), jnp.nan, cands.dtype)]).reshape(n_chunks, chunk)

    def one(k):  # (chunk,) -> (chunk,)
        # (chunk, N): split over the samples on a mesh (each device its own terms, the
        # mean an all-reduce), not gathered
        num = constrain_samples(a[None, :] * k[:, None] - b[None, :])
        den = constrain_samples(c[None, :] * k[:, None] - d[None, :])
        f = jnp.mean((num / den) ** 2, axis=-1)
        # a zero denominator needs no test of its own: x/0 is +-inf or nan in IEEE
        # arithmetic, so such an f is not finite (the per-pair test cost 3x the scoring)
        return jnp.where(jnp.isfinite(f) & jnp.isfinite(k), f, jnp.inf)

    return lax.map(one, ks).reshape(-1)[:r]


def _prepare(a, b, c, d, S, n_used, forbidden=True, ps=None):
    """Candidates (``(N + 2,)``: the zeros, then the seeds of equations 29 and 33), whether
    each is admissible (finite, not within 1% of a pole and, with ``S`` and
    ``forbidden=True``, not forbidden) and the sorted pole zones (from ``ps``, the sorted
    poles, if given)."""
    nz = a != 0
    z = jnp.where(nz, b / jnp.where(nz, a, 1.0), jnp.nan)
    k29, k33, _ = _closed_form_candidates(a, b, c, d)
    cands = jnp.concatenate([z, jnp.stack([k29, k33])])
    lo, hi = _pole_zones(c, d, ps)
    admissible = jnp.isfinite(cands) & ~_near_pole_zone(lo, hi, cands)
    if S is not None and forbidden:
        admissible = admissible & ~_forbidden_values(S, n_used, cands)
    return cands, admissible, lo, hi


def _batch(n: int, fanout: int) -> int:
    """Blocks per branch-and-bound step: about ``POINT_BUDGET`` term evaluations."""
    return int(max(1, min(16, POINT_BUDGET // (2 * fanout * max(n, 1)))))


def _select(a, b, c, d, S, n_used, exhaustive, fanout=None, leaf_size=None, near_cap=None):
    """:func:`_best_candidate` and the sorted pole zones: ``(k, f, n_points, lo, hi)``.

    Exhaustive: every candidate outside the pole zones is scored, then the forbidden set
    is applied to the best one only, the next best taken while it is forbidden (each
    test ``O(K N)``, no sort of the ``K N`` forbidden values): the first-index minimum
    over the admissible candidates, the same candidate as filtering them all first
    (forbidden values are usually poles, already excluded, so this loop rarely runs)."""
    # the branch and bound sorts the poles and zeros (its near terms): the zones reuse the
    # poles' order, the sorted candidates the zeros'
    perm_p, ps = (None, None) if exhaustive else _pole_order(c, d)
    cands, admissible, lo, hi = _prepare(a, b, c, d, S, n_used, forbidden=not exhaustive, ps=ps)
    if exhaustive:
        f = jnp.where(admissible, _score_all(a, b, c, d, cands), jnp.inf)
        n_points = jnp.sum(admissible, dtype=jnp.int32)
        if S is None:
            i = jnp.argmin(f)
        else:

            def blocked(carry):
                f, i = carry
                return jnp.isfinite(f[i]) & _forbidden_scalar(S, n_used, cands[i])

            def drop(carry):
                f, i = carry
                f = f.at[i].set(jnp.inf)
                return f, jnp.argmin(f)

            f, i = lax.while_loop(blocked, drop, (f, jnp.argmin(f)))
        return (jnp.where(jnp.isfinite(f[i]), cands[i], jnp.nan), f[i], n_points, lo, hi)
    fanout = FANOUT if fanout is None else int(fanout)
    zero_order = _zero_order(a, b, c)
    ks = _sorted_candidates(cands, admissible, c, zero_order)
    n_adm = jnp.sum(admissible, dtype=jnp.int32)
    k, f, n_points = _branch_and_bound(
        a,
        b,
        c,
        d,
        ks,
        n_adm,
        fanout,
        _batch(a.shape[0], fanout),
        leaf_size,
        near_cap,
        (perm_p, ps),
        zero_order=zero_order,
    )
    return k, f, n_points, lo, hi


def _best_candidate(
    a, b, c, d, S=None, n_used=None, exhaustive=False, fanout=None, leaf_size=None, near_cap=None
):
    """The admissible candidate of lowest ``f`` (steps 1-3 of the module docstring):
    ``(k, f(k), n_points)``, ``n_points`` the number of exact evaluations of ``f``
    (exhaustive: the candidates outside the pole zones); ``(nan, inf, .)`` when none is
    admissible. ``exhaustive=True`` scores every candidate (:func:`_score_all`, the
    oracle) instead of the branch and bound."""
    return _select(a, b, c, d, S, n_used, exhaustive, fanout, leaf_size, near_cap)[:3]


def _general(a, b, c, d, S=None, n_used=None, exhaustive=None):
    """The best admissible zero (exact branch and bound; ``exhaustive=True``: every
    candidate scored, the earlier solver; ``None``: by the shape, up to
    :data:`EXHAUSTIVE_MAX` patterns), then refined (module docstring). Returns
    ``(k, f(k))``; ``f = inf`` when no candidate is admissible."""
    if exhaustive is None:  # static: by the shape
        exhaustive = a.shape[0] <= EXHAUSTIVE_MAX
    k0, f0, _, lo, hi = _select(a, b, c, d, S, n_used, exhaustive)
    step = _gauss_newton_step(a, b, c, d, (1.0, 0.5), k0, lo, hi)

    # a step depends on (k, f(k)) only, so once one is refused every later one would be
    # the same refused step: stop there (the result of all N_NEWTON steps, fewer passes)
    def moving(s):
        return (s[0] < N_NEWTON) & s[3]

    def newton(s):
        i, k, fk, _ = s
        k2, f2 = step(i, (k, fk))
        return i + 1, k2, f2, f2 < fk

    _, k, fk, _ = lax.while_loop(
        moving, newton, (jnp.asarray(0, jnp.int32), k0, f0, jnp.asarray(True))
    )
    if S is not None:  # a refined k on a forbidden value: keep the candidate
        hit = _forbidden_scalar(S, n_used, k)
        k, fk = jnp.where(hit, k0, k), jnp.where(hit, f0, fk)
    # no admissible candidate (e.g. every zero within 1% of a pole): no constant, as in
    # the paper
    return jnp.where(jnp.isfinite(fk), k, jnp.nan), fk


def _gauss_newton_step(a, b, c, d, steps, k_start, lo_zone, hi_zone):
    """Safeguarded Gauss-Newton steps on ``f`` that never enter a pole's exclusion zone.

    Every step stays strictly inside the interval between the zones nearest to
    ``k_start`` on either side, so that interval is computed once.
    """
    finite = jnp.isfinite(lo_zone)
    lo = jnp.max(jnp.where(finite & (hi_zone < k_start), hi_zone, -jnp.inf))
    hi = jnp.min(jnp.where(finite & (lo_zone > k_start), lo_zone, jnp.inf))

    def step(_, state):
        k, fk = state
        den = c * k - d
        r = (a * k - b) / den
        J = (b * c - a * d) / den**2
        delta = -jnp.sum(r * J) / jnp.sum(J * J)
        best_k, best_f = k, fk
        for t in steps:
            kn = k + t * delta
            kn = jnp.where(kn <= lo, 0.5 * (k + lo), kn)
            kn = jnp.where(kn >= hi, 0.5 * (k + hi), kn)
            fn = constant_mse(a, b, c, d, kn)
            better = jnp.isfinite(kn) & jnp.isfinite(fk) & (fn < best_f) & (kn > lo) & (kn < hi)
            best_k = jnp.where(better, kn, best_k)
            best_f = jnp.where(better, fn, best_f)
        return best_k, best_f

    return step


# ---------------------------------------------------------------------------------------
# General case: the best admissible zero by branch and bound (exact, module docstring)
# ---------------------------------------------------------------------------------------


class _Level(NamedTuple):
    """State of one level of the branch and bound (a ``lax.while_loop``)."""

    pos: jax.Array  # () int32, next position in this level's blocks sorted by bound
    best_f: jax.Array  # () exact f of the incumbent (inf: none yet)
    best_k: jax.Array  # () the incumbent candidate
    child_lb: jax.Array  # (n_children,) lower bounds of the next level's blocks
    n_points: jax.Array  # () int32, exact evaluations of f so far


def _forbidden_values(S, n_used, k):
    """True where ``k`` (any shape) equals a value of a used slot of ``S`` ``(K, N)``, or
    everywhere if a used slot holds ``nan`` (as :func:`~.equations.is_forbidden`). Sorts
    the ``K*N`` values once (the first ``K/2`` rows only when at most half the slots are
    used): ``O((K*N + R) log(K*N))``."""
    K = S.shape[0]
    used = (jnp.arange(K) < n_used)[:, None]
    any_nan = jnp.any(jnp.isnan(S) & used)

    def member(S):  # k equals a value of the used slots among the rows of S
        used = (jnp.arange(S.shape[0]) < n_used)[:, None]
        vals = sorting.sort(jnp.where(used & ~jnp.isnan(S), S, jnp.inf).reshape(-1))
        i = jnp.clip(jnp.searchsorted(vals, k, side="left"), 0, vals.shape[0] - 1)
        return vals[i] == k

    if K >= 2 and K % 2 == 0 and jax.default_backend() == "cpu":
        # at most half the slots in use (e.g. 1 of 2): sort only those rows, the same
        # test (on the CPU, where a branch is a branch; vmap-ed elsewhere it would be a
        # select of both)
        return any_nan | lax.cond(n_used <= K // 2, lambda: member(S[: K // 2]), lambda: member(S))
    return any_nan | member(S)


def _forbidden_scalar(S, n_used, k):
    """:func:`_forbidden_values` for one scalar ``k``: a direct ``O(K N)`` comparison,
    no sort."""
    used = (jnp.arange(S.shape[0]) < n_used)[:, None]
    return jnp.any(used & (jnp.isnan(S) | (S == k)))


def _leaf_size(n: int) -> int:
    """Candidates per leaf block (a static int): ``sqrt(N) / LEAF_DIVISOR`` rounded up to a
    power of two, at least 16. A leaf costs 2 evaluations of ``N`` terms plus its
    candidates times the near terms (about ``leaf**2`` when zeros are dense), so about
    ``sqrt(N)`` balances the two: ``O(N**1.5)`` for all the leaves."""
    g = 16
    while g < n**0.5 / LEAF_DIVISOR:
        g *= 2
    return g


def _near_cap(leaf: int) -> int:
    """Zeros (and as many poles) gathered per leaf block: ``NEAR_FACTOR * leaf``, at most
    :data:`NEAR_CAP` (a static int)."""
    return int(min(NEAR_CAP, NEAR_FACTOR * leaf))


def _exact_groups(n: int, point_batch: int) -> int:
    """Groups of ``point_batch`` candidates evaluated together per step of the exact stage
    (a static int): about ``EXACT_BUDGET`` term evaluations, at most ``EXACT_WIDTH``
    candidates, at least one group. Measured (one core, float64, the benchmark's rows at
    N = 1e5, one candidate per step of the earlier loop): one candidate per kernel 2.1 ns
    per term, 10 at once 1.5 ns; the row 3.4% faster with 4 per kernel than 16, 2.3% than
    2, 1.1% than 8 (a kernel past the stopping point is wasted). At N = 1e4 (3 per step)
    4 means one step per kernel, as before (16: 2% slower)."""
    width = max(point_batch, min(EXACT_WIDTH, EXACT_BUDGET // max(n, 1)))
    return int(max(1, width // point_batch))


def _term_chunks(n: int) -> tuple[int, int]:
    """``(chunks, width)`` (static ints): on the CPU a block step sums its terms in
    ``chunks`` passes of ``width`` terms (``chunks * width >= n``, at most ``TERM_CHUNK``
    wide), so each pass's intermediates stay in cache (measured at ``N = 1e5``, one core:
    a general-case row 1.4-1.6x faster than one pass over all ``n``); one pass when ``n``
    fits, and on accelerators (which stream the intermediates; a loop of small passes
    would only add launches)."""
    # over a mesh one pass too: the terms are split over the devices (a pass over a
    # chunk of contiguous terms would gather them from the device holding them)
    if n <= TERM_CHUNK or jax.default_backend() != "cpu" or sample_devices() > 1:
        return 1, max(n, 1)
    chunks = -(-n // TERM_CHUNK)
    return chunks, -(-n // chunks)


def _prune_margin(n: int, dtype) -> float:
    """Relative slack of the pruning test (a static float): bounds and exact values are
    sums of ``n`` rounded terms; a block is pruned only if its bound exceeds the
    incumbent by more than their rounding, so no pruned candidate can beat the incumbent
    by more than rounding."""
    eps = float(jnp.finfo(dtype).eps)
    return min(4.0 * n * eps, 1e-4) + 16.0 * eps


def _point_f(total, k, n):
    """The exact ``f`` at points ``k`` from the sum ``total`` of their ``n`` terms:
    ``total / n``, ``inf`` where that or ``k`` is not finite (a zero denominator makes its
    term +-inf or nan, so ``f`` is not finite: no test needed; as :func:`_score_all`)."""
    f = total / n
    return jnp.where(~jnp.isfinite(f) | ~jnp.isfinite(k), jnp.inf, f)


def _f_at(a, b, c, d, k):
    """The exact ``f`` at points ``k`` ``(..., 1)``, ``(...)``: one pass over the terms
    ``t_i(k) = ((a_i k - b_i)/(c_i k - d_i))**2`` (:func:`_point_f`)."""
    t = ((a * k - b) / (c * k - d)) ** 2
    return _point_f(jnp.sum(t, axis=-1), k[..., 0], a.shape[-1])


def _branch_and_bound(
    a,
    b,
    c,
    d,
    ks,
    n_adm,
    fanout,
    batch,
    leaf_size=None,
    near_cap=None,
    pole_order=None,
    point_batch=None,
    groups=None,
    zero_order=None,
):
    """Best ``f`` over the sorted admissible candidates ``ks[:n_adm]`` (``ks`` ``(R,)``,
    ``+inf`` after them): ``(k, f(k), n_points)``, ``n_points`` the number of exact
    evaluations of ``f`` (``N`` terms each); ``(nan, inf, .)`` when ``n_adm == 0``.

    Blocks of consecutive candidates form a ``fanout``-ary tree over positions: leaf
    blocks of ``L = leaf_size`` candidates (default :func:`_leaf_size`), level sizes
    ``L * fanout**(T - l)``. Each level is a ``lax.while_loop`` over its surviving
    blocks in increasing order of their bound, ``batch`` blocks per step, and stops at
    the first block whose bound is at least the incumbent (they are sorted, so every
    later block is pruned too):

    * an inner block: the two ends of each child are evaluated on all ``N`` terms (a
      ``(batch, 2*fanout, N)`` kernel), giving their exact ``f`` (incumbent) and the
      child's bound;
    * a leaf block: its two ends are evaluated, and every candidate ``k_j`` in it gets
      its own bound: the terms whose zero or pole lies in the window of the block and
      ``LEAF_REACH`` neighbours on each side (at most ``NEAR_CAP`` of each, found in the
      sorted zeros and poles) are evaluated exactly at ``k_j``, the other terms have
      neither in the block and enter with their minimum over it or, if larger, the
      interpolation between the ends less the curvature bound;
    * last, the candidates whose own bound is below the incumbent are evaluated exactly,
      in increasing order of that bound, ``POINT_BUDGET // N`` at a time (several such
      steps per kernel, replayed one step at a time: the result of one step per kernel).

    ``pole_order``, ``zero_order``: :func:`_pole_order` of ``c, d`` and :func:`_zero_order`
    of ``a, b, c`` when the caller has them (else computed).
    ``point_batch``, ``groups`` (static ints, default by ``N``): the exact stage's step of
    the earlier loop (``POINT_BUDGET // N`` candidates) and how many such steps one kernel
    evaluates (:func:`_exact_groups`); any ``groups`` gives the same result.
    """
    n, dt = a.shape[0], a.dtype
    R = ks.shape[0]
    L = _leaf_size(n) if leaf_size is None else max(1, int(leaf_size))
    T = 0
    while L * fanout**T < R:
        T += 1
    margin = _prune_margin(n, dt)
    z = jnp.where(a != 0, b / jnp.where(a != 0, a, 1.0), jnp.nan)  # zero of each term
    gen = c != 0
    # zeros and poles of the c != 0 terms, sorted (the near terms of a leaf block)
    zg = jnp.where(gen & jnp.isfinite(z), z, jnp.inf)
    pg = _poles(c, d)
    perm_z, zs = _zero_order(a, b, c) if zero_order is None else zero_order
    perm_p, ps = _pole_order(c, d) if pole_order is None else pole_order
    G = _near_cap(L) if near_cap is None else int(near_cap)
    # g_i(k) = a_i/c_i + beta_i / (k - p_i): the curvature of the smooth far terms
    beta = jnp.abs(jnp.where(gen, (a * d - b * c) / jnp.where(gen, c * c, 1.0), 0.0))
    # c == 0 terms: Q(k) = sum(((a k - b)/d)**2) = A k^2 - 2 B k + C, bounded on an interval
    # by its value at the vertex plus A * distance^2, made safe for the cancellation of the
    # expanded form (module docstring, "bound")
    dq = jnp.where(gen | (d == 0), 1.0, d)
    aq = jnp.where(gen, 0.0, a / dq)
    bq = jnp.where(gen, 0.0, b / dq)
    qa, qb, qc = jnp.sum(aq * aq), jnp.sum(aq * bq), jnp.sum(bq * bq)
    kq = jnp.where(qa > 0, qb / jnp.where(qa > 0, qa, 1.0), 0.0)
    q0 = jnp.sum((aq * kq - bq) ** 2)

    def quad_bound(lo, hi):
        dist = jnp.maximum(jnp.maximum(lo - kq, kq - hi), 0.0)
        scale = qc + qa * jnp.maximum(lo * lo, hi * hi)
        lb = (1 - margin) * (q0 + qa * dist * dist) - margin * scale
        return jnp.where(jnp.isfinite(lb), jnp.maximum(lb, 0.0), 0.0)

    def take(f_pts, k_pts, best_f, best_k):
        f_pts, k_pts = f_pts.reshape(-1), k_pts.reshape(-1)
        i = jnp.argmin(f_pts)
        better = f_pts[i] < best_f
        return jnp.where(better, f_pts[i], best_f), jnp.where(better, k_pts[i], best_k)

    def at(idx):
        return ks[jnp.clip(idx, 0, R - 1)]

    # the per-term arrays of the block sums, in chunks of TERM_CHUNK terms (padded with
    # terms that add nothing: a = b = c = 0, d = 1), so that a block step's intermediates
    # stay in cache: one pass over a chunk for all its sums, not one pass over all N
    # terms per intermediate
    n_chunks, width = _term_chunks(n)
    pad = n_chunks * width - n
    fill = (0.0, 0.0, 0.0, 1.0, jnp.nan, jnp.inf, 0.0, jnp.inf)
    chunks = jnp.stack(
        [
            jnp.pad(v, (0, pad), constant_values=f).reshape(n_chunks, width)
            for v, f in zip((a, b, c, d, z, pg, beta, zg), fill, strict=True)
        ],
        axis=1,
    )  # (n_chunks, 8, width)
    chunks = constrain_samples(chunks)  # a mesh: one pass, its width split over devices

    def block_sums(kp, lo, hi, far=None):
        """Sums over the terms for the points ``kp`` (``(..., 2)``: a block's two ends)
        and the blocks ``[lo, hi]`` (``(..., 1)``), chunk by chunk: ``f`` at the points
        (``inf`` where not finite) and, over the ``c != 0`` terms that ``far`` keeps
        (``far(zg, pg)``: bool ``(..., width)``, default all), ``rough_sum``: the terms
        with a zero or pole in the block, by their minimum; over the "smooth" others
        (neither in the block): the sum of minima, the sums at the two ends and a bound
        on the curvature of their sum (module docstring)."""
        k = kp[..., None]  # (..., 2, 1)
        shape = kp.shape[:-1]

        def body(i, acc):
            a_, b_, c_, d_, z_, pg_, beta_, zg_ = chunks[i]
            terms = c_ != 0
            if far is not None:
                terms = terms & far(zg_, pg_)
            t_raw = ((a_ * k - b_) / (c_ * k - d_)) ** 2  # (..., 2, width)
            t = jnp.where(jnp.isfinite(t_raw), t_raw, 0.0)
            inside = (z_ >= lo) & (z_ <= hi)
            pin = (pg_ >= lo) & (pg_ <= hi)
            tlo, thi = t[..., 0, :], t[..., 1, :]
            tmin = jnp.minimum(tlo, thi)
            rough = terms & (inside | pin)
            smooth = terms & ~inside & ~pin
            r = jnp.maximum(lo - pg_, pg_ - hi)  # > 0: the pole is off the block
            g_max = jnp.sqrt(jnp.maximum(t_raw[..., 0, :], t_raw[..., 1, :]))
            curv = 2 * (beta_**2 / r**4 + 2 * g_max * beta_ / r**3)  # >= |t_i''| there
            f_raw, rough_sum, min_sum, f_lo, f_hi, c_sum = acc
            return (
                f_raw + jnp.sum(t_raw, axis=-1),
                rough_sum + jnp.sum(jnp.where(rough & ~inside, tmin, 0.0), axis=-1),
                min_sum + jnp.sum(jnp.where(smooth, tmin, 0.0), axis=-1),
                f_lo + jnp.sum(jnp.where(smooth, tlo, 0.0), axis=-1),
                f_hi + jnp.sum(jnp.where(smooth, thi, 0.0), axis=-1),
                c_sum + jnp.sum(jnp.where(smooth, curv, 0.0), axis=-1),
            )

        zero = jnp.zeros(shape, dt)
        f_raw, rough_sum, min_sum, f_lo, f_hi, curv = lax.fori_loop(
            0, n_chunks, body, (jnp.zeros(kp.shape, dt), zero, zero, zero, zero, zero)
        )
        f_pts = _point_f(f_raw, kp, n)
        curv = curv * (1 + margin)
        curv = jnp.where(jnp.isfinite(curv), curv, jnp.inf)
        return f_pts, rough_sum, min_sum, f_lo, f_hi, curv

    def inner(s, blk, live, size, n_children):
        csize = size // fanout
        child = blk[:, None] * fanout + jnp.arange(fanout)[None, :]  # (batch, F)
        start = child * csize
        valid = live[:, None] & (start < n_adm)
        end = jnp.minimum(start + csize, n_adm) - 1
        kp = jnp.where(valid[..., None], at(jnp.stack([start, end], axis=-1)), jnp.nan)
        lo, hi = kp[..., 0], kp[..., 1]
        f_pts, rough_sum, min_sum, f_lo, f_hi, curv = block_sums(kp, lo[..., None], hi[..., None])
        # min over [lo, hi] of the interpolation less the curvature term, a convex
        # quadratic q(k) = f_lo + slope (k - lo) + curv/2 (k - lo)(k - hi)
        width = hi - lo
        slope = jnp.where(width > 0, (f_hi - f_lo) / jnp.where(width > 0, width, 1.0), 0.0)
        kv = jnp.clip(0.5 * (lo + hi) - slope / jnp.where(curv > 0, curv, jnp.inf), lo, hi)
        q = f_lo + slope * (kv - lo) + 0.5 * curv * (kv - lo) * (kv - hi)
        q = jnp.where(jnp.isnan(q), -jnp.inf, q)
        bound = (rough_sum + jnp.maximum(min_sum, q) + quad_bound(lo, hi)) / n
        bound = jnp.where(valid, bound, jnp.inf)
        best_f, best_k = take(jnp.where(valid[..., None], f_pts, jnp.inf), kp, s.best_f, s.best_k)
        target = jnp.where(live[:, None], child, n_children)  # dropped if not live
        child_lb = s.child_lb.at[target.reshape(-1)].set(bound.reshape(-1), mode="drop")
        return best_f, best_k, child_lb, 2 * jnp.sum(valid, dtype=jnp.int32)

    def leaf(s, blk, live, size):
        start = blk * size  # (batch,)
        valid = live & (start < n_adm)
        end = jnp.minimum(start + size, n_adm) - 1
        kp = jnp.where(valid[:, None], at(jnp.stack([start, end], axis=-1)), jnp.nan)
        lo, hi = kp[:, 0:1], kp[:, 1:2]

        def counts(i, j):  # zeros and poles in [ks[i], ks[j]]: first and how many
            # (searched for these few window ends only, not for every candidate)
            ki, kj = ks[jnp.clip(i, 0, R - 1)], ks[jnp.clip(j, 0, R - 1)]
            z_left, p_left = (jnp.searchsorted(v, ki, side="left") for v in (zs, ps))
            z_right, p_right = (jnp.searchsorted(v, kj, side="right") for v in (zs, ps))
            return z_left, z_right - z_left, p_left, p_right - p_left

        # the near terms: zero or pole in a window [wlo, whi] around [lo, hi], the block
        # and LEAF_REACH neighbours on each side if their terms fit G, else the block
        wide = counts(jnp.maximum(start - LEAF_REACH, 0), jnp.minimum(end + LEAF_REACH, n_adm - 1))
        tight = counts(start, end)
        use_wide = (wide[1] <= G) & (wide[3] <= G)
        z0, nzw, p0, npw = (jnp.where(use_wide, w, t) for w, t in zip(wide, tight, strict=True))
        wlo = jnp.where(use_wide, at(jnp.maximum(start - LEAF_REACH, 0)), lo[:, 0])[:, None]
        whi = jnp.where(use_wide, at(jnp.minimum(end + LEAF_REACH, n_adm - 1)), hi[:, 0])[:, None]
        capz, capp = (nzw <= G)[:, None], (npw <= G)[:, None]  # all of them gathered

        def far(zg_, pg_):  # not a near term (those are evaluated at each candidate)
            return ~((capz & (zg_ >= wlo) & (zg_ <= whi)) | (capp & (pg_ >= wlo) & (pg_ <= whi)))

        f_pts, rough_sum, min_sum, f_lo, f_hi, curv = block_sums(kp, lo, hi, far)
        best_f, best_k = take(jnp.where(valid[:, None], f_pts, jnp.inf), kp, s.best_f, s.best_k)
        g = jnp.arange(G)
        zi = perm_z[jnp.clip(z0[:, None] + g, 0, n - 1)]
        pi = perm_p[jnp.clip(p0[:, None] + g, 0, n - 1)]
        zm = capz & (g < nzw[:, None])
        # a term with its zero in the window is counted once, with the zeros if gathered
        pm = capp & (g < npw[:, None]) & ~(capz & (zg[pi] >= wlo) & (zg[pi] <= whi))
        idx = jnp.concatenate([zi, pi], axis=1)  # (batch, 2G)
        m = jnp.concatenate([zm, pm], axis=1)
        pos = start[:, None] + jnp.arange(size)[None, :]  # (batch, L)
        kj = at(pos)[..., None]
        tn = (
            (a[idx][:, None, :] * kj - b[idx][:, None, :])
            / (c[idx][:, None, :] * kj - d[idx][:, None, :])
        ) ** 2  # (batch, L, 2G)
        tn = jnp.where(m[:, None, :] & jnp.isfinite(tn), tn, 0.0)
        width = hi - lo
        u = jnp.where(width > 0, (kj[..., 0] - lo) / jnp.where(width > 0, width, 1.0), 0.0)
        interp = (
            f_lo[:, None] * (1 - u)
            + f_hi[:, None] * u
            - 0.5 * curv[:, None] * (kj[..., 0] - lo) * (hi - kj[..., 0])
        )
        interp = jnp.where(jnp.isnan(interp), -jnp.inf, interp)
        smooth_j = jnp.maximum(min_sum[:, None], interp)
        lb_j = (
            rough_sum[:, None]
            + smooth_j
            + quad_bound(kj[..., 0], kj[..., 0])
            + jnp.sum(tn, axis=-1)
        ) / n
        todo = (
            valid[:, None] & (pos < n_adm) & (pos != start[:, None]) & (pos != end[:, None])
        )  # the ends are evaluated already
        target = jnp.where(todo, pos, R)
        cand_lb = s.child_lb.at[target.reshape(-1)].set(lb_j.reshape(-1), mode="drop")
        return best_f, best_k, cand_lb, 2 * jnp.sum(valid, dtype=jnp.int32)

    def run_level(lb, best_f, best_k, n_points, n_out, process, per_step):
        order = sorting.argsort(lb)
        lb_sorted = lb[order]
        n_in = lb.shape[0]

        def cond(s):
            p = jnp.minimum(s.pos, n_in - 1)
            return (s.pos < n_in) & (lb_sorted[p] < s.best_f * (1 + margin))

        def body(s):
            slot = s.pos + jnp.arange(per_step)
            blk = order[jnp.minimum(slot, n_in - 1)]
            # a block past the stopping point of this level (or its end) does nothing
            live = (slot < n_in) & (
                lb_sorted[jnp.minimum(slot, n_in - 1)] < s.best_f * (1 + margin)
            )
            bf, bk, out, used = process(s, blk, live)
            return _Level(s.pos + per_step, bf, bk, out, s.n_points + used)

        s = lax.while_loop(
            cond,
            body,
            _Level(
                jnp.asarray(0, jnp.int32), best_f, best_k, jnp.full((n_out,), jnp.inf, dt), n_points
            ),
        )
        return s.child_lb, s.best_f, s.best_k, s.n_points

    best_f = jnp.asarray(jnp.inf, dt)
    best_k = jnp.asarray(jnp.nan, dt)
    n_points = jnp.asarray(0, jnp.int32)
    # the bounds of one level's blocks, in a buffer of the leaf level's size (the widest);
    # all inner levels run in one loop (one compiled body)
    n_leaves = -(-R // L)
    lb = jnp.full((n_leaves,), jnp.inf, dt).at[0].set(-jnp.inf)  # the root, never pruned
    if T > 0:
        sizes = jnp.asarray([L * fanout ** (T - lv) for lv in range(T)], jnp.int32)

        def level_body(level, carry):
            size = sizes[level]
            return run_level(
                *carry, n_leaves, lambda s, blk, live: inner(s, blk, live, size, n_leaves), batch
            )

        lb, best_f, best_k, n_points = lax.fori_loop(
            0, T, level_body, (lb, best_f, best_k, n_points)
        )
    leaf_batch = int(max(1, min(16, POINT_BUDGET // (2 * max(n, 1)))))
    lb, best_f, best_k, n_points = run_level(
        lb, best_f, best_k, n_points, R, lambda s, blk, live: leaf(s, blk, live, L), leaf_batch
    )

    # the exact stage: the candidates whose own bound is below the incumbent, in increasing
    # order of it, ``point_batch`` at a time (the order of the earlier loop, whose results
    # this reproduces), ``groups`` of them evaluated in one kernel: one pass over the
    # terms for several points costs much less than one pass each (memory-bound); a group
    # past the stopping point is evaluated but discarded
    if point_batch is None:
        point_batch = int(max(1, min(64, POINT_BUDGET // max(n, 1))))
    groups = _exact_groups(n, point_batch) if groups is None else max(1, int(groups))
    order, lb_sorted = sorting.argsort_below_inf(lb, EXACT_CAP)
    n_in = order.shape[0]

    def below(slot, bf):  # the earlier loop's test: this slot is evaluated
        return (slot < n_in) & (lb_sorted[jnp.minimum(slot, n_in - 1)] < bf * (1 + margin))

    def exact_cond(s):
        return below(s[0], s[1])

    def exact_body(s):
        pos, bf, bk, npts = s
        slot = (pos + jnp.arange(groups * point_batch)).reshape(groups, point_batch)
        # the incumbent only decreases: a superset of the slots the replay evaluates
        maybe = below(slot, bf)
        kp = jnp.where(maybe, at(order[jnp.minimum(slot, n_in - 1)]), jnp.nan)
        f_all = _f_at(a, b, c, d, kp[..., None])  # (groups, point_batch)

        def replay(q, carry):  # group q as one step of the earlier loop
            bf, bk, npts = carry
            live = below(slot[q], bf)
            bf, bk = take(jnp.where(live, f_all[q], jnp.inf), kp[q], bf, bk)
            return bf, bk, npts + jnp.sum(live, dtype=jnp.int32)

        bf, bk, npts = lax.fori_loop(0, groups, replay, (bf, bk, npts))
        return pos + groups * point_batch, bf, bk, npts

    _, best_f, best_k, n_points = lax.while_loop(
        exact_cond, exact_body, (jnp.asarray(0, jnp.int32), best_f, best_k, n_points)
    )
    return best_k, best_f, n_points


def _solve(a, b, c, d, S, n_used, general: bool):
    """``(k, f(k), ok)``; ``general=False`` assumes ``c == 0`` everywhere (eq. 29 only)."""
    if general:
        cz, case33, case34, undefined = _case_flags(a, b, c, d)
        k = jax.lax.cond(
            cz | case33 | case34,
            lambda: _closed_form(a, b, c, d, cz, case33),
            lambda: _general(a, b, c, d, S, n_used)[0],
        )
        f = jnp.mean(((a * k - b) / (c * k - d)) ** 2)
        ok = ~undefined & jnp.isfinite(k) & jnp.isfinite(f) & ~_near_pole(c, d, k)
    else:  # c == 0: f(k) = mean(((a*k - b)/d)**2), eq. 29
        w = 1.0 / d**2
        k = _safe_ratio(jnp.sum(a * b * w), jnp.sum(a * a * w))
        f = jnp.mean(((a * k - b) / d) ** 2)
        ok = jnp.all(d != 0) & jnp.any(a != 0) & jnp.isfinite(k) & jnp.isfinite(f)
    if S is not None:
        ok = ok & ~_forbidden_scalar(S, n_used, k)
    return k, jnp.where(ok, f, jnp.inf), ok


@program
def optimal_constant(a, b, c, d, S=None, n_used=None):
    """Constant ``k`` minimising equation 27 for one node equation.

    Args:
      a, b, c, d: ``(N,)`` float arrays (float64 or float32), a node equation (e.g. one
        row of :func:`~jaxsr.symbolic.node_equations`, or one transformed by
        :func:`~jaxsr.symbolic.child_equation` for ``k op x``). Sample weights are
        already folded in (``a = sqrt(w)``, ``b = sqrt(w) t`` at the root).
      S: optional ``(K, N)`` forbidden values of the equation's node (e.g.
        :func:`~jaxsr.symbolic.child_forbidden` of a node's forbidden set); ``None``: no
        forbidden values.
      n_used: int scalar, the slots of ``S`` in use (the first ``n_used`` rows); a used
        slot holding ``nan`` forbids every constant (as
        :func:`~jaxsr.symbolic.equations.is_forbidden`). Required with ``S``.

    Returns:
      ``(k, mse, valid)``: scalar constant, the MSE ``f(k)`` it gives (``inf`` if invalid)
      and a bool, False where no minimum exists (``a == c == 0``), the equation is
      undefined (``c_i == d_i == 0``), ``k`` is not finite / on a pole, or ``k`` is
      forbidden.

    Uses the closed forms (29, 33, 34) where they apply (a forbidden closed-form minimum
    is invalid, as the paper), else the best non-forbidden zero ``b_i/a_i`` outside the
    poles' 1% zones, found exactly by branch and bound, then safeguarded Gauss-Newton
    refinement (module docstring): never worse than the paper's procedure. Jit- and
    vmap-able.

    Example:
      >>> import jax.numpy as jnp
      >>> t = jnp.array([5.0, 4.0, 1.0])
      >>> k, mse, ok = optimal_constant(jnp.ones(3), t, jnp.zeros(3), -jnp.ones(3))
      >>> float(k), bool(ok)   # equation 30: the mean of the target
      (3.3333333333333335, True)
    """
    if (S is None) != (n_used is None):
        raise ValueError("optimal_constant: pass S and n_used together (or neither).")
    return jax.lax.cond(
        jnp.all(c == 0),
        lambda: _solve(a, b, c, d, S, n_used, general=False),
        lambda: _solve(a, b, c, d, S, n_used, general=True),
    )
