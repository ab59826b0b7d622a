"""The four searches of the paper, each scoring all its candidates in one jitted call.

* :func:`constant_search` (section 2.1): the best constant at every node.
* :func:`variable_search` (section 2.2): every (node, variable).
* :func:`constant_variable_search` (section 2.3): every (node, variable, ``k+x, k-x, k*x,
  k/x``) with its optimal ``k``.
* :func:`constant_expression_search` (section 2.4): every non-terminal node ``p`` and
  ``k+p, k*p`` with its optimal ``k``.

Each returns ``(reduction, constant)`` arrays: ``reduction`` is the MSE reduction of
equation 26 measured on the node's own equation (its value at the node's current
semantic minus its value at the candidate), ``-inf`` for invalid or excluded candidates;
``constant`` is the optimal ``k`` (``nan`` where there is none). Validity includes the
forbidden sets ``S`` (no candidate that makes a division by zero anywhere above the node),
the paper's exclusions and the node / height limits of section 2.7.

All four run in one jitted call, :func:`search_all` (the four functions above call it with
only their own node mask switched on), as a few large batched kernels, never a loop over
single nodes or rows:

* nodes whose equation has ``c == 0`` everywhere and no forbidden set (no division's
  denominator above them) take the closed form of equation 29: with ``u = a/d, v = b/d``
  the optimal ``k`` and the MSE of every ``k+x, k-x, k*x, k/x`` and of every variable are
  ratios of the weighted sums ``sum(u v phi(x))`` and ``sum(u^2 phi(x))``,
  ``phi in {x, x^2, 1/x, 1/x^2}``: one ``(2C, N) @ (N, 4M)`` matrix product scores them all
  (the best :data:`N_REFINE` are then re-scored from the rows, free of cancellation);
* the other (general-case) nodes send every searched (node, candidate row) pair through
  :func:`~jaxsr.symbolic.optimal_constant` and the forbidden-set check, ``jax.vmap``-ed
  over chunks of :func:`chunk_rows` pairs sized to the memory budget :data:`CHUNK_BYTES`.

Every function is pure, jit- and vmap-able; under ``jax.vmap`` over datasets pass the tree
unbatched (``in_axes=None``). Sample weights need no argument: they are folded into the
root equation (``a = sqrt(w), b = sqrt(w) * t``, :func:`~jaxsr.symbolic.node_equations`)
and carry through every node equation unchanged in form.

Selection (:func:`best_candidate`) is a deterministic masked argmax over the flattened
scores in (node, variable, operator) order: ties go to the lowest node, then variable,
then operator.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._config import program
from .._sharding import sample_chunk
from .constant import optimal_constant
from .equations import (
    Equations,
    child_equation,
    child_forbidden,
    equation_mse,
    is_forbidden,
    node_equations,
    path_equation,
)
from .expression import ADD, CONST, DIV, MUL, SUB, VAR, TreeArrays

__all__ = [
    "CV_OPS",
    "CE_OPS",
    "NO_LIMIT",
    "node_base_mse",
    "constant_search",
    "variable_search",
    "constant_variable_search",
    "constant_expression_search",
    "best_candidate",
    "search_all",
    "search_lean",
    "top_candidates",
    "SearchResults",
    "variable_features",
    "chunk_rows",
    "sample_chunks",
    "CHUNK_BYTES",
    "N_REFINE",
]

CV_OPS = (ADD, SUB, MUL, DIV)  # k+x, k-x, k*x, k/x (constant first, section 2.3)
CE_OPS = (ADD, MUL)  # k+p, k*p (section 2.4)
NO_LIMIT = 2**30  # max_nodes / max_height meaning "no limit"


def node_base_mse(eqs: Equations, sem: jax.Array) -> jax.Array:
    """Each node's equation at its own semantic, ``(capacity,)`` (all equal the MSE)."""
    return equation_mse(eqs.a, eqs.b, eqs.c, eqs.d, sem)


# Row kinds of the candidate table of one node (see :func:`search_all`).
_K_CONST, _K_CV, _K_CE = 0, 1, 2


def _row_table(M: int):
    """Static ``(kind, op, var)`` of the ``1 + 4*M + 2`` candidate rows of a node: the
    constant ``k`` (as ``k + 0``), ``k op x_m`` variable-major, then ``k+p, k*p``."""
    kind = [_K_CONST] + [_K_CV] * (len(CV_OPS) * M) + [_K_CE] * len(CE_OPS)
    ops = [ADD] + list(CV_OPS) * M + list(CE_OPS)
    var = [0] + list(np.repeat(np.arange(M), len(CV_OPS))) + [0] * len(CE_OPS)
    return (np.asarray(kind, np.int32), np.asarray(ops, np.int32), np.asarray(var, np.int32))


# Memory budget of one chunk of general-case rows (bytes); a row of the constant solver
# holds about ``_ROW_ARRAYS`` arrays of ``N`` floats at once.
CHUNK_BYTES = 2**28
_ROW_ARRAYS = 32
# Number of closed-form candidates (``k op x`` and variables) re-scored exactly after the
# matrix product (the product's expanded sums lose digits when a candidate fits almost
# exactly; the best ones are recomputed from the rows).
N_REFINE = 32


# Pairs of general-case rows solved side by side (``jax.vmap``) inside a chunk: ``None``
# chooses by backend. On a CPU one row already is a large kernel and ``jax.vmap`` turns
# the solver's branches (``lax.cond``) into selects that evaluate every branch, so rows
# run one after the other (1); on an accelerator a whole chunk runs at once.
GENERAL_VMAP = None


def chunk_rows(
    n_samples: int, itemsize: int = 8, budget: int | None = None, vmap: bool | None = None
) -> int:
    """Rows scored together in one chunk: as many as fit ``budget`` bytes (default
    :data:`CHUNK_BYTES`), between 1 and 512; 1 if ``vmap`` is False (default: the
    general-case choice :data:`GENERAL_VMAP`)."""
    if vmap is None:
        vmap = GENERAL_VMAP if GENERAL_VMAP is not None else jax.default_backend() != "cpu"
    if not vmap:
        return 1
    budget = CHUNK_BYTES if budget is None else int(budget)
    per_row = _ROW_ARRAYS * max(int(n_samples), 1) * int(itemsize)
    return int(min(512, max(1, budget // per_row)))


def _chunked_map(fn, active, outs, chunk):
    """``outs[i] = fn(i)`` for every flat index ``i`` with ``active[i]``, in chunks.

    Args:
      fn: maps one int index to a tuple of scalars.
      active: bool ``(T,)``; only these entries are computed.
      outs: tuple of ``(T,)`` arrays holding the values of inactive entries.
      chunk: static int ``B``: ``fn`` is ``jax.vmap``-ed over ``B`` indices at a time
        (``B == 1``: called on one index, its branches stay branches).

    The active indices are compacted (a stable ``argsort`` of ``~active``) and processed
    ``B`` at a time by a loop whose trip count is ``ceil(n_active / B)``: the work is
    proportional to the number of active entries and memory to ``B``.
    """
    T = active.shape[0]
    B = max(1, min(int(chunk), T))
    n_pad = -(-T // B) * B
    # active indices first, in order (a stable sort compiles faster than jnp.nonzero)
    idx = jnp.argsort(~active, stable=True).astype(jnp.int32)
    idx = jnp.where(jnp.arange(T) < jnp.sum(active.astype(jnp.int32)), idx, T)
    idx = jnp.concatenate([idx, jnp.full((n_pad - T,), T, jnp.int32)])
    count = jnp.sum(active.astype(jnp.int32))
    n_chunks = (count + B - 1) // B

    def body(i, outs):
        ids = lax.dynamic_slice(idx, (i * B,), (B,))
        safe = jnp.minimum(ids, T - 1)
        if B == 1:
            vals = tuple(jnp.reshape(v, (1,)) for v in fn(safe[0]))
        else:
            vals = jax.vmap(fn)(safe)
        return tuple(
            o.at[ids].set(v.astype(o.dtype), mode="drop") for o, v in zip(outs, vals, strict=True)
        )

    # the loop only when there is work: XLA may hoist loop-invariant parts of a large
    # body out of the loop, and a call with nothing to do must not pay for them
    return lax.cond(count > 0, lambda: lax.fori_loop(0, n_chunks, body, outs), lambda: outs)


def _finish(base, f, ok):
    red = base - f
    return jnp.where(ok & jnp.isfinite(red), red, -jnp.inf)


def _real(tree):
    return jnp.arange(tree.op.shape[0]) < tree.n_nodes


class SearchResults(NamedTuple):
    """All four searches of one tree (:func:`search_all`); ``-inf`` = not a candidate."""

    constant: jax.Array  # (capacity,) reduction of the best constant at each node
    constant_k: jax.Array  # (capacity,) that constant
    variable: jax.Array  # (capacity, M) reduction of each variable at each node
    constant_variable: jax.Array  # (capacity, M, 4) reduction of k+x, k-x, k*x, k/x
    constant_variable_k: jax.Array  # (capacity, M, 4) their constants
    constant_expression: jax.Array  # (capacity, 2) reduction of k+p, k*p
    constant_expression_k: jax.Array  # (capacity, 2) their constants


def variable_features(XT: jax.Array) -> jax.Array:
    """Features ``[x, x**2, 1/x, 1/x**2]`` of every variable, ``(N, 4*M)``.

    Column ``p*M + m`` is power ``p`` (in that order) of variable ``m``; ``1/x`` is 0 where
    ``x == 0`` (``k/x`` is never a candidate for such a variable). With the node weights of
    equation 29 they give every ``k op x`` and variable score in one matrix product.
    """
    nz = XT != 0
    inv = jnp.where(nz, 1.0 / jnp.where(nz, XT, 1.0), 0.0)
    return jnp.concatenate([XT, XT * XT, inv, inv * inv], axis=0).T


def sample_chunks(n_samples: int, n_rows: int, itemsize: int = 8, budget: int | None = None) -> int:
    """Number of equal chunks the samples are split into for the closed-form sums: each
    chunk's ``(n_rows, N / chunks)`` temporaries fit ``budget`` bytes (default
    :data:`CHUNK_BYTES`). A divisor of ``n_samples`` (1 when none is close)."""
    budget = CHUNK_BYTES if budget is None else int(budget)
    per = max(1, budget // (16 * max(int(n_rows), 1) * int(itemsize)))
    n = int(n_samples)
    if n <= per:
        return 1
    k = -(-n // per)
    for c in range(k, min(n, 4 * k) + 1):
        if n % c == 0:
            return c
    return 1


def _closed_form_scores(chunk_eqs, node_eq, sem, XT, closed, cv_rows, v_rows, row_c, row_ce):
    """Every candidate of the nodes whose equation has ``c == 0`` (equation 29).

    With ``u = a/d`` and ``v = b/d`` a candidate ``u' k - v'`` has ``k = sum(u'v')/sum(u'^2)``
    and ``f = (sum(v'^2) - k*sum(u'v')) / N``; for ``k+x, k-x, k*x, k/x`` and the variable
    ``x`` itself (``u' = u, v' = v -+ u*x``; ``u' = u*x``; ``u' = u/x``) these sums are
    ``sum(u v phi(x))`` and ``sum(u^2 phi(x))`` for ``phi`` in ``x, x^2, 1/x, 1/x^2``: one
    product ``[u v; u^2] (2C, N) @ features (N, 4M)``. The constant and ``k+p, k*p`` rows
    are computed directly from the rows (``O(C N)``, two passes: ``k``, then ``f``). The
    ``N_REFINE`` best ``k op x`` / variable candidates are recomputed from the rows (no
    cancellation). Every sum runs over :func:`sample_chunks` chunks of the samples, so the
    temporaries stay within :data:`CHUNK_BYTES`.

    The equations come from two providers (:func:`_array_equations` or
    :func:`_lean_equations`): ``chunk_eqs(i, n_chunks)`` gives ``a, b, d`` ``(C, Nc)`` of every
    node on sample chunk ``i``; ``node_eq(j)`` gives node ``j``'s ``a, b, c, d`` ``(N,)`` and
    forbidden set (the re-scored rows).

    Returns ``k, f, ok`` of shape ``(C, R)`` (rows as :func:`_row_table`) and ``f_var, ok_var``
    of shape ``(C, M)``.
    """
    C, N = sem.shape
    M = XT.shape[0]
    dt = sem.dtype
    n = jnp.asarray(N, dt)
    n_chunks = sample_chunks(N, 3 * C + M, jnp.dtype(dt).itemsize)

    def chunk(i):  # the samples of chunk i: u, v, p (C, Nc), x (M, Nc)
        def sl(z):
            return sample_chunk(z, i, n_chunks, axis=1)

        ac, bc, dc = chunk_eqs(i, n_chunks)
        ds = jnp.where(dc != 0, dc, 1.0)
        u = jnp.where(closed[:, None], ac / ds, 0.0)
        v = jnp.where(closed[:, None], bc / ds, 0.0)
        return u, v, sl(sem), sl(XT), jnp.all(dc != 0, axis=-1)

    def sums(i, acc):
        u, v, p, x, dnz = chunk(i)
        up = u * p
        part = [
            jnp.sum(u * v, -1),
            jnp.sum(u * u, -1),
            jnp.sum(v * v, -1),
            jnp.sum(u * up, -1),
            jnp.sum(up * v, -1),
            jnp.sum(up * up, -1),
        ]
        G = jnp.concatenate([u * v, u * u], axis=0) @ variable_features(x)
        *s6, G0, ok0 = acc
        return (*[s0 + s1 for s0, s1 in zip(s6, part, strict=True)], G0 + G, ok0 & dnz)

    zc = jnp.zeros((C,), dt)
    SP, SQ, V2, SQp, SPp, SQpp, G, d_all = lax.fori_loop(
        0,
        n_chunks,
        sums,
        (zc, zc, zc, zc, zc, zc, jnp.zeros((2 * C, 4 * M), dt), jnp.ones((C,), bool)),
    )
    d_ok = d_all & closed

    def ratio(num, den):
        pos = den > 0
        return jnp.where(pos, num / jnp.where(pos, den, 1.0), jnp.nan)

    # constant (k + 0), k+p (u' = u, v' = v - u p) and k*p (u' = u p): k from the sums,
    # f in a second pass over the rows
    k_c, k_ce_add, k_ce_mul = ratio(SP, SQ), ratio(SP - SQp, SQ), ratio(SPp, SQpp)

    def residuals(i, acc):
        u, v, p, _, _ = chunk(i)
        return (
            acc[0] + jnp.sum((u * k_c[:, None] - v) ** 2, -1),
            acc[1] + jnp.sum((u * (k_ce_add[:, None] + p) - v) ** 2, -1),
            acc[2] + jnp.sum((u * p * k_ce_mul[:, None] - v) ** 2, -1),
        )

    f_c, f_ce_add, f_ce_mul = (r / n for r in lax.fori_loop(0, n_chunks, residuals, (zc, zc, zc)))

    # k op x and the variables from the product
    GP, GQ = G[:C], G[C:]
    SPx, SPi = GP[:, :M], GP[:, 2 * M : 3 * M]
    SQx, SQxx, SQii = GQ[:, :M], GQ[:, M : 2 * M], GQ[:, 3 * M :]
    SPb, SQb, V2b = SP[:, None], SQ[:, None], V2[:, None]
    num = jnp.stack([SPb - SQx, SPb + SQx, SPx, SPi], axis=-1)  # (C, M, 4)
    den = jnp.stack([jnp.broadcast_to(SQb, SQx.shape)] * 2 + [SQxx, SQii], axis=-1)
    vv = jnp.stack(
        [
            V2b - 2 * SPx + SQxx,
            V2b + 2 * SPx + SQxx,
            jnp.broadcast_to(V2b, SQx.shape),
            jnp.broadcast_to(V2b, SQx.shape),
        ],
        axis=-1,
    )
    k_cv = ratio(num, den)
    f_cv = jnp.maximum((vv - k_cv * num) / n, 0.0)
    f_var = jnp.maximum((SQxx - 2 * SPx + V2b) / n, 0.0)

    # re-score the best N_REFINE closed-form candidates from their rows
    ok_cv = cv_rows & d_ok[:, None, None] & jnp.isfinite(k_cv) & jnp.isfinite(f_cv)
    ok_v = v_rows & d_ok[:, None] & jnp.isfinite(f_var)
    pool = jnp.concatenate(
        [jnp.where(ok_cv, f_cv, jnp.inf).reshape(C, 4 * M), jnp.where(ok_v, f_var, jnp.inf)], axis=1
    ).reshape(-1)
    T = min(N_REFINE, pool.shape[0])
    _, pick = lax.top_k(-pool, T)
    j, col = pick // (5 * M), pick % (5 * M)
    is_cv = col < 4 * M
    m = jnp.where(is_cv, col // 4, col - 4 * M)
    o = col % 4

    def rescore(args):
        j, m, o, is_cv = args
        aj, bj, _, dj, _ = node_eq(j)
        dsj = jnp.where(dj != 0, dj, 1.0)
        uj, vj, x = aj / dsj, bj / dsj, XT[m]
        xs = jnp.where(x != 0, x, 1.0)
        up = jnp.where(o == 2, uj * x, jnp.where(o == 3, uj / xs, uj))
        vp = jnp.where(o == 0, vj - uj * x, jnp.where(o == 1, vj + uj * x, vj))
        k = ratio(jnp.sum(up * vp), jnp.sum(up * up))
        f = jnp.mean((up * k - vp) ** 2)
        f_v = jnp.mean((uj * x - vj) ** 2)
        return jnp.where(is_cv, k, jnp.nan), jnp.where(is_cv, f, f_v)

    width = int(max(1, min(T, CHUNK_BYTES // (_ROW_ARRAYS * N * jnp.dtype(dt).itemsize))))
    k_r, f_r = lax.map(rescore, (j, m, o, is_cv), batch_size=width)
    k_cv_flat = k_cv.reshape(C, 4 * M)
    f_cv_flat = f_cv.reshape(C, 4 * M)
    jc, cc = jnp.where(is_cv, j, C), jnp.where(is_cv, col, 0)
    k_cv_flat = k_cv_flat.at[jc, cc].set(k_r, mode="drop")
    f_cv_flat = f_cv_flat.at[jc, cc].set(f_r, mode="drop")
    jv, mv = jnp.where(is_cv, C, j), jnp.where(is_cv, 0, m)
    f_var = f_var.at[jv, mv].set(f_r, mode="drop")

    k = jnp.concatenate([k_c[:, None], k_cv_flat, k_ce_add[:, None], k_ce_mul[:, None]], 1)
    f = jnp.concatenate([f_c[:, None], f_cv_flat, f_ce_add[:, None], f_ce_mul[:, None]], 1)
    ok_rows = jnp.concatenate(
        [jnp.broadcast_to(row_c[:, None], (C, 1)), cv_rows.reshape(C, 4 * M), row_ce], axis=1
    )
    ok = ok_rows & d_ok[:, None] & jnp.isfinite(k) & jnp.isfinite(f)
    ok_var = v_rows & d_ok[:, None] & jnp.isfinite(f_var)
    return k, jnp.where(ok, f, jnp.inf), ok, jnp.where(ok_var, f_var, jnp.inf), ok_var


@program
def search_all(
    tree: TreeArrays, sem, eqs: Equations, S, XT, masks, var_mask, max_nodes, max_height
) -> SearchResults:
    """The four searches (sections 2.1-2.4) of one tree in one jitted call.

    Args:
      tree: :class:`TreeArrays`, ``capacity`` nodes.
      sem: ``(capacity, N)`` semantics; eqs: :class:`Equations` ``(capacity, N)`` each;
      S: ``(capacity, K, N)`` forbidden sets (:func:`forbidden_sets`).
      XT: ``(M, N)`` variables.
      masks: bool ``(4, capacity)``: the nodes where the constant, variable,
        constant-variable and constant-expression searches run (an all-False row skips
        that search; its results are ``-inf``).
      var_mask: bool ``(M,)`` variables in the pool (constant columns excluded).
      max_nodes, max_height: int scalars, the limits of section 2.7 (``NO_LIMIT``: none):
        constant-variable search only where ``max_nodes - n_nodes + size >= 3`` and
        ``depth + 2 <= max_height``; constant-expression search only where
        ``max_nodes - n_nodes >= 2`` and ``depth + height + 1 <= max_height``.

    Returns:
      :class:`SearchResults`. The results of each search equal the separate functions
      :func:`constant_search`, :func:`variable_search`, :func:`constant_variable_search`
      and :func:`constant_expression_search` (which call this one).

    Two batched paths, no loop over single nodes or rows:

    * nodes whose equation has ``c == 0`` and no forbidden set (no division's denominator
      above them): closed form of equation 29 for every candidate, the ``k op x`` and
      variable scores of all these nodes from one ``(2C, N) @ (N, 4M)`` matrix product
      (:func:`_closed_form_scores`);
    * the other nodes (general case): every searched (node, candidate row) pair goes
      through :func:`~jaxsr.symbolic.optimal_constant` and the forbidden-set check,
      ``jax.vmap``-ed over chunks of :func:`chunk_rows` pairs (a loop over
      ``ceil(pairs / chunk)`` chunks: memory bounded by :data:`CHUNK_BYTES`).
    """
    return _search(
        tree, sem, XT, masks, var_mask, max_nodes, max_height, _array_equations(sem, eqs, S)
    )


@program(static_argnames=("n_slots",))
def search_lean(
    tree: TreeArrays, sem, XT, y, weights, masks, var_mask, max_nodes, max_height, n_slots: int
) -> SearchResults:
    """:func:`search_all` from the semantics alone, in bounded memory.

    The same results as ``search_all(tree, sem, node_equations(tree, sem, y, weights),
    forbidden_sets(tree, sem, n_slots), XT, ...)`` (the same numbers up to the rounding of
    the node base MSEs, summed by sample chunks here) without holding the ``4`` equation
    arrays ``(capacity, N)`` and the forbidden sets ``(capacity, K, N)``: the closed-form
    sums take each sample chunk's equations of every node (:func:`node_equations` on the
    chunk, top-down), and each general-case row its node's equation and forbidden set
    computed along the node's path from the root (:func:`path_equation`, ``O(depth N)``).
    Memory: ``sem`` plus ``O(CHUNK_BYTES)`` temporaries plus the solver's ``O(K N)``.

    Args:
      y: ``(N,)`` target; weights: ``(N,)`` sample weights (mean 1) or ``None``;
      n_slots: static int ``K``, the forbidden-set slots (``>= max(tree.n_slots)``);
      the other arguments and the result as :func:`search_all`.
    """
    return _search(
        tree,
        sem,
        XT,
        masks,
        var_mask,
        max_nodes,
        max_height,
        _lean_equations(tree, sem, y, weights, n_slots, XT.shape[0]),
    )


def _array_equations(sem, eqs: Equations, S):
    """The equation providers of :func:`_search` from the held arrays: ``(base (C,), any_c
    (C,) bool: some c != 0, chunk_eqs(i, n_chunks) -> a, b, d (C, N / n_chunks) (sample
    chunk i, :func:`~jaxsr._sharding.sample_chunk`), node_eq(j) -> a, b, c, d
    (N,), S (K, N))``."""

    def chunk_eqs(i, n_chunks):
        return tuple(sample_chunk(z, i, n_chunks, axis=1) for z in (eqs.a, eqs.b, eqs.d))

    def node_eq(j):
        return eqs.a[j], eqs.b[j], eqs.c[j], eqs.d[j], S[j]

    return (node_base_mse(eqs, sem), jnp.any(eqs.c != 0, axis=-1), chunk_eqs, node_eq)


def _lean_equations(tree, sem, y, weights, n_slots, M):
    """The providers of :func:`_search` (as :func:`_array_equations`) computed from the
    semantics: per sample chunk (every node, top-down) and per node (along its path)."""
    C, N = sem.shape
    dt = sem.dtype

    def chunk_all(i, n_chunks):
        def sl(z):
            return sample_chunk(z, i, n_chunks, axis=-1)

        w = None if weights is None else sl(weights)
        return node_equations(tree, sl(sem), sl(y), w), sl(sem)

    def chunk_eqs(i, n_chunks):
        e, _ = chunk_all(i, n_chunks)
        return e.a, e.b, e.d

    def node_eq(j):
        return path_equation(tree, sem, y, weights, n_slots, j)

    n_chunks = sample_chunks(N, 3 * C + M, jnp.dtype(dt).itemsize)

    def sums(i, acc):
        e, s = chunk_all(i, n_chunks)
        t = ((e.a * s - e.b) / (e.c * s - e.d)) ** 2
        return acc[0] + jnp.sum(t, axis=-1), acc[1] | jnp.any(e.c != 0, axis=-1)

    tot, any_c = lax.fori_loop(0, n_chunks, sums, (jnp.zeros((C,), dt), jnp.zeros((C,), bool)))
    return tot / jnp.asarray(N, dt), any_c, chunk_eqs, node_eq


def _search(tree, sem, XT, masks, var_mask, max_nodes, max_height, providers):
    """The body of :func:`search_all` and :func:`search_lean`; ``providers`` as
    :func:`_array_equations`."""
    cap = tree.op.shape[0]
    M, N = XT.shape
    dt = sem.dtype
    base, any_c, chunk_eqs, node_eq = providers
    real = _real(tree)
    masks = jnp.asarray(masks, bool)
    var_mask = jnp.asarray(var_mask, bool)
    c_act = masks[0] & real
    v_act = masks[1] & real
    room_cv = (max_nodes - tree.n_nodes + tree.size >= 3) & (tree.depth + 2 <= max_height)
    cv_act = masks[2] & real & room_cv
    room_ce = (max_nodes - tree.n_nodes >= 2) & (tree.depth + tree.height + 1 <= max_height)
    ce_act = masks[3] & real & (tree.op >= ADD) & room_ce

    kind_np, op_np, var_np = _row_table(M)
    R = kind_np.shape[0]
    n_cv = len(CV_OPS) * M
    kind, row_op, row_var = jnp.asarray(kind_np), jnp.asarray(op_np), jnp.asarray(var_np)
    x_zero = jnp.any(XT == 0, axis=-1)  # (M,): k/x excluded for these variables

    # exclusions known before scoring (a k op x row that is never a candidate is not solved)
    l, r = tree.left, tree.right
    ops = jnp.asarray(CV_OPS, jnp.int32)
    hides = (
        (tree.op[:, None, None] == ops[None, None, :])
        & (tree.op[l] == CONST)[:, None, None]
        & (tree.op[r] == VAR)[:, None, None]
        & (tree.feature[r][:, None, None] == jnp.arange(M)[None, :, None])
    )
    div_zero = (ops == DIV)[None, None, :] & x_zero[None, :, None]
    cv_rows = cv_act[:, None, None] & var_mask[None, :, None] & ~hides & ~div_zero
    const_child = (tree.op[l] == CONST) | (tree.op[r] == CONST)
    hide_add = ((tree.op == ADD) | (tree.op == SUB)) & const_child
    hide_mul = ((tree.op == MUL) | (tree.op == DIV)) & const_child
    ce_rows = ce_act[:, None] & ~jnp.stack([hide_add, hide_mul], axis=1)
    same = (tree.op == VAR)[:, None] & (jnp.arange(M)[None, :] == tree.feature[:, None])
    v_rows = v_act[:, None] & var_mask[None, :] & ~same
    rows = jnp.concatenate([c_act[:, None], cv_rows.reshape(cap, n_cv), ce_rows], axis=1)

    # which path: the closed form needs c == 0 on every pattern and no forbidden set
    general = real & (any_c | (tree.n_slots > 0))
    closed = real & ~general

    # The closed form pays off when k op x / variable rows are searched there (the matrix
    # product); a call with only constant / k op p rows at closed-form nodes (e.g. one
    # constant of the constant optimisation) solves just those rows one by one instead,
    # so its cost follows the rows searched, not the tree.
    cv_closed, v_closed = cv_rows & closed[:, None, None], v_rows & closed[:, None]
    want_product = jnp.any(cv_closed) | jnp.any(v_closed)

    def no_closed():
        return (
            jnp.full((cap, R), jnp.nan, dt),
            jnp.full((cap, R), jnp.inf, dt),
            jnp.zeros((cap, R), bool),
            jnp.full((cap, M), jnp.inf, dt),
            jnp.zeros((cap, M), bool),
        )

    k, f, ok, f_var, ok_var = lax.cond(
        want_product,
        lambda: _closed_form_scores(
            chunk_eqs,
            node_eq,
            sem,
            XT,
            closed,
            cv_closed,
            v_closed,
            c_act & closed,
            ce_rows & closed[:, None],
        ),
        no_closed,
    )

    # general case: (node, row) pairs in chunks
    B = chunk_rows(N, jnp.dtype(dt).itemsize)
    zero = jnp.zeros((N,), dt)

    def general_row(i):
        j, rr = i // R, i % R
        kd, op, m = kind[rr], row_op[rr], row_var[rr]
        w = jnp.where(kd == _K_CE, sem[j], jnp.where(kd == _K_CV, XT[m], zero))
        aj, bj, cj, dj, Sj = node_eq(j)
        a2, b2, c2, d2 = child_equation(op, True, aj, bj, cj, dj, w)
        S2 = child_forbidden(op, True, Sj, w[None, :])
        # the solver drops forbidden zeros before choosing (section 2.1, step 2)
        kk, ff, okk = optimal_constant(a2, b2, c2, d2, S2, tree.n_slots[j])
        return kk, jnp.where(okk, ff, jnp.inf), okk

    by_row = general[:, None] | (
        ~want_product & closed[:, None] & jnp.asarray(kind_np != _K_CV)[None, :]
    )
    gen_rows = (rows & by_row).reshape(-1)
    kg, fg, okg = _chunked_map(
        general_row,
        gen_rows,
        (
            jnp.full((cap * R,), jnp.nan, dt),
            jnp.full((cap * R,), jnp.inf, dt),
            jnp.zeros((cap * R,), bool),
        ),
        B,
    )
    k = jnp.where(by_row, kg.reshape(cap, R), k)
    f = jnp.where(by_row, fg.reshape(cap, R), f)
    ok = jnp.where(by_row, okg.reshape(cap, R), ok)
    gsel = general[:, None]

    def general_var(i):
        j, m = i // M, i % M
        x = XT[m]
        aj, bj, cj, dj, Sj = node_eq(j)
        fv = equation_mse(aj, bj, cj, dj, x)
        okv = jnp.isfinite(fv) & ~is_forbidden(Sj, tree.n_slots[j], x)
        return jnp.where(okv, fv, jnp.inf), okv

    gen_v = (v_rows & general[:, None]).reshape(-1)
    fgv, okgv = _chunked_map(
        general_var, gen_v, (jnp.full((cap * M,), jnp.inf, dt), jnp.zeros((cap * M,), bool)), B
    )
    f_var = jnp.where(gsel, fgv.reshape(cap, M), f_var)
    ok_var = jnp.where(gsel, okgv.reshape(cap, M), ok_var)

    # constant search: row 0
    c_red = _finish(base, f[:, 0], ok[:, 0])
    # constant-variable search: rows 1 .. 4M, variable-major
    cv_k = k[:, 1 : 1 + n_cv].reshape(cap, M, len(CV_OPS))
    cv_f = f[:, 1 : 1 + n_cv].reshape(cap, M, len(CV_OPS))
    cv_ok = ok[:, 1 : 1 + n_cv].reshape(cap, M, len(CV_OPS)) & cv_rows
    cv_red = _finish(base[:, None, None], cv_f, cv_ok)
    # constant-expression search: the last two rows
    ce_k, ce_f, ce_ok = k[:, 1 + n_cv :], f[:, 1 + n_cv :], ok[:, 1 + n_cv :] & ce_rows
    ce_red = _finish(base[:, None], ce_f, ce_ok)
    # variable search
    v_red = _finish(base[:, None], f_var, ok_var & v_rows)
    return SearchResults(
        c_red,
        jnp.where(c_act, k[:, 0], jnp.nan),
        v_red,
        cv_red,
        jnp.where(cv_rows, cv_k, jnp.nan),
        ce_red,
        jnp.where(ce_rows, ce_k, jnp.nan),
    )


def _masks(node_mask, which):
    node_mask = jnp.asarray(node_mask, bool)
    off = jnp.zeros_like(node_mask)
    return jnp.stack([node_mask if i == which else off for i in range(4)])


def _int(v):
    return jnp.asarray(v, jnp.int32)


def _no_vars(sem):
    """A one-variable placeholder for the searches that use no variable."""
    return jnp.zeros((1, sem.shape[-1]), sem.dtype), jnp.zeros((1,), bool)


def constant_search(tree: TreeArrays, sem, eqs: Equations, S, node_mask):
    """Constant search (section 2.1) at every node of ``node_mask``.

    Args:
      tree: :class:`TreeArrays`, ``capacity`` nodes.
      sem: ``(capacity, N)`` semantics; eqs: :class:`Equations` ``(capacity, N)`` each;
      S: ``(capacity, K, N)`` forbidden sets (:func:`forbidden_sets`).
      node_mask: bool ``(capacity,)``, the nodes to search.

    Returns:
      ``(reduction, constant)``, each ``(capacity,)``.
    """
    XT, pool = _no_vars(sem)
    res = search_all(
        tree, sem, eqs, S, XT, _masks(node_mask, 0), pool, _int(NO_LIMIT), _int(NO_LIMIT)
    )
    return res.constant, res.constant_k


def variable_search(tree: TreeArrays, sem, eqs: Equations, S, XT, node_mask, var_mask):
    """Variable search (section 2.2): every (node, variable).

    Args:
      XT: ``(M, N)`` variables; var_mask: bool ``(M,)`` variables in the pool (constant
        columns excluded); other arguments as :func:`constant_search`.

    Returns:
      ``(reduction,)`` of shape ``(capacity, M)``; a variable node is not replaced by
      itself.
    """
    res = search_all(
        tree, sem, eqs, S, XT, _masks(node_mask, 1), var_mask, _int(NO_LIMIT), _int(NO_LIMIT)
    )
    return (res.variable,)


def constant_variable_search(
    tree: TreeArrays, sem, eqs: Equations, S, XT, node_mask, var_mask, max_nodes, max_height
):
    """Constant-variable search (section 2.3): every (node, variable, ``k op x``).

    Args:
      max_nodes: int scalar ``n``; a node with subtree size ``s`` is searched only if
        ``n - r + s >= 3`` (``r`` = current nodes, section 2.7). ``NO_LIMIT`` for none.
      max_height: int scalar; the node is searched only if ``depth + 2 <= max_height``.
      other arguments as :func:`variable_search`.

    Returns:
      ``(reduction, constant)`` of shape ``(capacity, M, 4)``, operators in the order
      ``k+x, k-x, k*x, k/x``. Excluded (besides invalid ones): a node that already is
      ``k op x`` with a constant first child and the same variable and operator.
    """
    res = search_all(
        tree, sem, eqs, S, XT, _masks(node_mask, 2), var_mask, _int(max_nodes), _int(max_height)
    )
    return res.constant_variable, res.constant_variable_k


def constant_expression_search(
    tree: TreeArrays, sem, eqs: Equations, S, node_mask, max_nodes, max_height
):
    """Constant-expression search (section 2.4): ``k+p`` and ``k*p`` on non-terminals.

    Args:
      max_nodes: searched only if ``max_nodes - n_nodes >= 2`` (section 2.7);
      max_height: only if ``depth + height(p) + 1 <= max_height``;
      other arguments as :func:`constant_search`.

    Returns:
      ``(reduction, constant)`` of shape ``(capacity, 2)`` (``k+p, k*p``). Excluded:
      ``k+p`` on a ``+``/``-`` node with a constant child and ``k*p`` on a ``*``/``/`` node
      with a constant child (they would hide a constant search).
    """
    XT, pool = _no_vars(sem)
    res = search_all(
        tree, sem, eqs, S, XT, _masks(node_mask, 3), pool, _int(max_nodes), _int(max_height)
    )
    return res.constant_expression, res.constant_expression_k


def best_candidate(reduction) -> tuple[int, ...] | None:
    """Deterministic argmax of a score array (``-inf`` = invalid): the index tuple of the
    largest finite entry, ties to the lowest flat index (node, then variable, then
    operator), or ``None`` if every entry is ``-inf``."""
    r = np.asarray(reduction)
    if r.size == 0 or not np.any(np.isfinite(r)):
        return None
    flat = int(np.argmax(np.where(np.isfinite(r), r, -np.inf)))
    return tuple(int(i) for i in np.unravel_index(flat, r.shape))


@program(static_argnames=("k",))
def top_candidates(res: SearchResults, threshold, k: int):
    """The ``k`` best candidates of the searches' results ``res`` of one tree, chosen on
    the device (a masked top-k): reductions at or below ``threshold`` (and ``-inf``, not a
    candidate; NaN) are masked out, the rest ordered by reduction, ties by the order of
    the searches (constant, variable, constant-variable, constant-expression), then by
    the flat index within a search (node, variable, operator): the paper's order of
    section 2.8 and the deterministic argmax of :func:`best_candidate`. One stable sort
    of the ``C * (5 M + 3)`` entries on the device.

    Args:
      res: :class:`SearchResults` of a tree of capacity ``C`` over ``M`` variables.
      threshold: float scalar, the smallest reduction that is not a candidate.
      k: static int, ``1 <= k <= C * (1 + M + 4 M + 2)`` (the number of entries).

    Returns:
      ``(reduction (k,), index (k,) int32, constant (k,))``: best first; ``index`` into the
      searches' flattened results concatenated in the order above; ``reduction`` is
      ``-inf`` past the last candidate; ``constant`` is the candidate's constant (NaN for
      the variable search, which has none).
    """
    red = jnp.concatenate(
        [
            res.constant,
            res.variable.ravel(),
            res.constant_variable.ravel(),
            res.constant_expression.ravel(),
        ]
    )
    const = jnp.concatenate(
        [
            res.constant_k,
            jnp.full(res.variable.size, jnp.nan, res.constant_k.dtype),
            res.constant_variable_k.ravel(),
            res.constant_expression_k.ravel(),
        ]
    )
    red = jnp.where(red > threshold, red, -jnp.inf)
    # a stable sort (lax.top_k's ties are documented too, but not its cost on every
    # backend)
    neg, index = lax.sort(
        (-red, jnp.arange(red.shape[0], dtype=jnp.int32)), num_keys=1, is_stable=True
    )
    index = index[:k]
    return -neg[:k], index, const[index]
