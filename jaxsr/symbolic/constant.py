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

General case (any other ``c, d``), the paper's procedure made exact and then refined:

1. the candidates are all the ``N`` zeros ``z_i = b_i/a_i`` of the terms (``a_i != 0``),
   as in the paper, plus the estimates of equations 29 (over ``d != 0``) and 33 (over
   ``c != 0``);
2. a candidate within 1% of a pole ``p_j = d_j/c_j`` (``|k - p_j| <= POLE_EXCLUSION *
   |p_j|``, the reference package's tolerance) is excluded. The test is ``O(N log N)``:
   the exclusion intervals ``[p - 0.01|p|, p + 0.01|p|]`` have both ends increasing in
   ``p``, so after sorting the poles a candidate is excluded iff the last pole whose
   interval starts at or below it has an interval ending at or above it;
3. every remaining candidate is scored by ``f`` on all the patterns (``f = inf`` where a
   denominator is zero), in chunks of at most ``SCORE_BUDGET`` elements (``O(N**2)``
   work, ``O(SCORE_BUDGET)`` memory, one jitted ``lax.map`` over the chunks: this is the
   batched work accelerators are for), and the best one is kept;
4. it is refined by ``N_NEWTON`` safeguarded Gauss-Newton steps on all the patterns: each
   step is clipped to stay strictly inside the interval between the exclusion zones of
   the nearest poles on either side (it never crosses a pole nor comes within 1% of
   one) and is only taken if it lowers ``f`` (backtracking ``1, 1/2``).

So ``f(k)`` is never above the paper's choice (the best zero outside the poles' 1%
zones), and ``k`` is never within 1% of a pole. The forbidden sets ``S`` are checked by
the caller (:mod:`.searches`) on the final ``k``. All functions are pure, jit- and
vmap-able.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["optimal_constant", "constant_mse", "N_NEWTON", "POLE_EXCLUSION", "POLE_RTOL",
           "SCORE_BUDGET", "N_QUANTILES", "N_SUBSAMPLE", "N_POLISH"]

N_NEWTON = 8
POLE_EXCLUSION = 1e-2  # candidates within 1% of a pole are excluded (section 2.1)
POLE_RTOL = 1e-12  # a closed-form k this close to a pole is invalid
SCORE_BUDGET = 1 << 22  # elements per chunk when scoring all the zeros (32 MiB in f64)
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


def _pole_zones(c, d):
    """Sorted poles ``d_j/c_j`` (``+inf`` padding where ``c_j == 0``) and the ends of
    their exclusion zones ``lo = p - 0.01|p|``, ``hi = p + 0.01|p|`` (both increasing)."""
    cnz = c != 0
    p = jnp.sort(jnp.where(cnz, d / jnp.where(cnz, c, 1.0), jnp.inf))
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
    ks = jnp.concatenate([cands, jnp.full((pad,), jnp.nan, cands.dtype)]).reshape(
        n_chunks, chunk)

    def one(k):  # (chunk,) -> (chunk,)
        num = a[None, :] * k[:, None] - b[None, :]
        den = c[None, :] * k[:, None] - d[None, :]
        f = jnp.mean((num / den) ** 2, axis=-1)
        bad = jnp.any(den == 0, axis=-1) | ~jnp.isfinite(f) | ~jnp.isfinite(k)
        return jnp.where(bad, jnp.inf, f)

    return lax.map(one, ks).reshape(-1)[:r]


def _general(a, b, c, d):
    """All zeros outside the poles' 1% zones, scored exactly, then refined (module
    docstring). Returns ``(k, f(k))``; ``f = inf`` when no candidate is admissible."""
    nz = a != 0
    z = jnp.where(nz, b / jnp.where(nz, a, 1.0), jnp.nan)
    k29, k33, _ = _closed_form_candidates(a, b, c, d)
    cands = jnp.concatenate([z, jnp.stack([k29, k33])])
    lo, hi = _pole_zones(c, d)
    admissible = jnp.isfinite(cands) & ~_near_pole_zone(lo, hi, cands)
    f = jnp.where(admissible, _score_all(a, b, c, d, cands), jnp.inf)
    i = jnp.argmin(f)
    k, fk = cands[i], f[i]
    step = _gauss_newton_step(a, b, c, d, (1.0, 0.5), k, lo, hi)
    k, fk = jax.lax.fori_loop(0, N_NEWTON, step, (k, fk))
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
            better = (jnp.isfinite(kn) & jnp.isfinite(fk) & (fn < best_f) & (kn > lo)
                      & (kn < hi))
            best_k = jnp.where(better, kn, best_k)
            best_f = jnp.where(better, fn, best_f)
        return best_k, best_f

    return step


def _solve(a, b, c, d, general: bool):
    """``(k, f(k), ok)``; ``general=False`` assumes ``c == 0`` everywhere (eq. 29 only)."""
    if general:
        cz, case33, case34, undefined = _case_flags(a, b, c, d)
        k = jax.lax.cond(cz | case33 | case34,
                         lambda: _closed_form(a, b, c, d, cz, case33),
                         lambda: _general(a, b, c, d)[0])
        f = jnp.mean(((a * k - b) / (c * k - d)) ** 2)
        ok = ~undefined & jnp.isfinite(k) & jnp.isfinite(f) & ~_near_pole(c, d, k)
    else:  # c == 0: f(k) = mean(((a*k - b)/d)**2), eq. 29
        w = 1.0 / d**2
        k = _safe_ratio(jnp.sum(a * b * w), jnp.sum(a * a * w))
        f = jnp.mean(((a * k - b) / d) ** 2)
        ok = jnp.all(d != 0) & jnp.any(a != 0) & jnp.isfinite(k) & jnp.isfinite(f)
    return k, jnp.where(ok, f, jnp.inf), ok


@jax.jit
def optimal_constant(a, b, c, d):
    """Constant ``k`` minimising equation 27 for one node equation.

    Args:
      a, b, c, d: ``(N,)`` float arrays, a node equation (e.g. one row of
        :func:`~jaxsr.symbolic.node_equations`, or one transformed by
        :func:`~jaxsr.symbolic.child_equation` for ``k op x``).

    Returns:
      ``(k, mse, valid)``: scalar constant, the MSE ``f(k)`` it gives (``inf`` if invalid)
      and a bool, False where no minimum exists (``a == c == 0``), the equation is
      undefined (``c_i == d_i == 0``) or ``k`` is not finite / on a pole.

    Uses the closed forms (29, 33, 34) where they apply, else all the zeros ``b_i/a_i``
    outside the poles' 1% zones scored exactly (``O(N**2)`` work in chunks of
    ``SCORE_BUDGET``), then safeguarded Gauss-Newton refinement (module docstring): never
    worse than the paper's procedure. Jit- and vmap-able.

    Example:
      >>> import jax.numpy as jnp
      >>> t = jnp.array([5.0, 4.0, 1.0])
      >>> k, mse, ok = optimal_constant(jnp.ones(3), t, jnp.zeros(3), -jnp.ones(3))
      >>> float(k), bool(ok)   # equation 30: the mean of the target
      (3.3333333333333335, True)
    """
    return jax.lax.cond(
        jnp.all(c == 0),
        lambda: _solve(a, b, c, d, general=False),
        lambda: _solve(a, b, c, d, general=True),
    )
