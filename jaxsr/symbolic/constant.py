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

General case (any other ``c, d``). The paper evaluates ``f`` at the ``N`` zeros
``z_i = b_i/a_i`` of the terms, skipping zeros near a pole ``d_j/c_j``, which costs
``O(N**2)``. Here the candidate set is bounded deterministically:

1. all zeros when ``N <= N_QUANTILES`` (the paper's procedure); otherwise
   ``N_QUANTILES`` quantiles of the sorted valid zeros of the patterns, or of a fixed
   strided subsample of ``N_SUBSAMPLE`` patterns when ``N > N_SUBSAMPLE``;
2. plus the estimates of equation 29 (over terms with ``d != 0``) and 33 (over ``c != 0``);
3. the candidates are ranked by ``f`` on those patterns, excluding any that puts a
   denominator ``c_i*k - d_i`` within relative precision ``POLE_RTOL`` of zero;
4. the best one is refined by ``N_NEWTON`` safeguarded Gauss-Newton steps on those
   patterns, then (when subsampled) by ``N_POLISH`` more on all patterns: a step is clipped
   to stay strictly inside the interval between the nearest poles on either side of ``k``
   (it never crosses a pole) and is only taken if it lowers ``f`` (backtracking ``1, 1/2``
   on the ranking patterns). The final ``k`` is checked on all patterns (not on a pole,
   ``f`` finite). The cost is ``O(N)`` per equation, not the paper's ``O(N**2)``.

The forbidden sets ``S`` are checked by the caller (:mod:`.searches`) on the final ``k``.
All functions are pure, jit- and vmap-able.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["optimal_constant", "constant_mse", "N_QUANTILES", "N_SUBSAMPLE", "N_NEWTON",
           "N_POLISH", "POLE_RTOL"]

N_QUANTILES = 16
N_SUBSAMPLE = 256
N_NEWTON = 6
N_POLISH = 2
POLE_RTOL = 1e-12


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


def _general(a, b, c, d):
    """Bounded candidate zeros + safeguarded Gauss-Newton (module docstring)."""
    n = a.shape[-1]
    if n <= N_SUBSAMPLE:
        a_s, b_s, c_s, d_s = a, b, c, d
    else:  # a fixed strided subsample ranks the candidates
        idx = (np.arange(N_SUBSAMPLE) * n) // N_SUBSAMPLE
        a_s, b_s, c_s, d_s = a[idx], b[idx], c[idx], d[idx]
    nz = a_s != 0
    z = jnp.where(nz, b_s / jnp.where(nz, a_s, 1.0), jnp.nan)
    if z.shape[-1] <= N_QUANTILES:
        cands = z  # all the zeros b_i / a_i, as in the paper
    else:
        zs = jnp.sort(z)  # NaN last
        m = jnp.sum(~jnp.isnan(zs))
        pos = jnp.round(jnp.linspace(0.0, 1.0, N_QUANTILES) * jnp.maximum(m - 1, 0))
        cands = zs[pos.astype(jnp.int32)]
    k29, k33, _ = _closed_form_candidates(a_s, b_s, c_s, d_s)
    cands = jnp.concatenate([cands, jnp.stack([k29, k33])])

    def score(k, a, b, c, d):
        bad = ~jnp.isfinite(k) | _near_pole(c, d, k)
        return jnp.where(bad, jnp.inf, constant_mse(a, b, c, d, k))

    f = jax.vmap(lambda k: score(k, a_s, b_s, c_s, d_s))(cands)
    i = jnp.argmin(f)
    k, fk = cands[i], f[i]
    # refine on the ranking patterns, then polish on all of them
    step = _gauss_newton_step(a_s, b_s, c_s, d_s, (1.0, 0.5), k)
    k, fk = jax.lax.fori_loop(0, N_NEWTON, step, (k, fk))
    if n > N_SUBSAMPLE:
        step = _gauss_newton_step(a, b, c, d, (1.0,), k)
        k, fk = jax.lax.fori_loop(0, N_POLISH, step, (k, constant_mse(a, b, c, d, k)))
    return k, fk


def _gauss_newton_step(a, b, c, d, steps, k_start):
    """Safeguarded Gauss-Newton steps on ``f`` that never cross a pole ``d_i/c_i``.

    Every step stays strictly inside the interval between the poles nearest to
    ``k_start`` on either side, so that interval is computed once.
    """
    cnz = c != 0
    poles = jnp.where(cnz, d / jnp.where(cnz, c, 1.0), jnp.nan)
    lo = jnp.max(jnp.where(poles < k_start, poles, -jnp.inf))
    hi = jnp.min(jnp.where(poles > k_start, poles, jnp.inf))

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
            better = jnp.isfinite(kn) & (fn < best_f)
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

    Uses the closed forms (29, 33, 34) where they apply, else the bounded candidate zeros
    with safeguarded Gauss-Newton refinement (module docstring). Jit- and vmap-able.

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
