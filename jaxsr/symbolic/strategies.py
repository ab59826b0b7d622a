"""Strategies 1-4, constant optimisation and the search loop (paper, sections 2.6-2.8).

The host keeps the :class:`~jaxsr.symbolic.Expression` and edits it; each numeric pass is a
jitted kernel on the tree padded to its capacity bucket. One iteration:

1. ``analyse``: semantics, node equations and forbidden sets of every node (one call);
2. the searches of the strategy (or of one stage of strategies 3 and 4) in one jitted
   call, :func:`~jaxsr.symbolic.search_all`, scoring all their candidates;
3. the best candidate whose reduction exceeds ``min_improvement * MSE`` (ties: earlier
   search in the order constant, variable, constant-variable, constant-expression, then
   lowest node / variable / operator) is applied, and the true MSE of the new tree is
   recomputed: a change that makes any node non-finite, any denominator zero, or does not
   lower the MSE (rounding) is undone and the next candidate is tried (at most
   ``MAX_TRIES``).

Strategies (section 2.8):

1. all four searches on all nodes (constant-expression on non-terminals), best one wins;
2. as 1 but the constant search skips constant nodes; constant optimisation after a change;
3. variable search on constants; else constant-expression search; else constant-variable
   search on terminals; else constant + variable search on variables and non-terminals
   together with constant-variable search on non-terminals; constant optimisation after a
   change;
4. constant search on constants (a change ends the iteration); else strategy 3 without
   the constant optimisation.

Constant optimisation (section 2.6): visit the constant nodes in pre-order, set each to its
optimal value when that lowers the MSE by more than ``min_improvement * MSE``, and repeat
the passes until one changes nothing. Strategies 2 and 3 add a joint polish of all the
constants (damped Gauss-Newton on the true MSE, each step kept only if it lowers it) after
every pass that changed a constant and at the end (:meth:`DomeSearch.optimise_and_polish`):
the passes alone crawl along valleys of the MSE one constant at a time.
"""

from __future__ import annotations

import functools
import itertools
import time
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._config import program, to_device
from .._sharding import device_get, to_host
from .constant import optimal_constant
from .domain import DOMAINS, data_box, prove_box
from .equations import (
    child_equation,
    child_forbidden,
    equation_mse,
    forbidden_sets,
    node_equations,
)
from .expression import ADD, CONST, DIV, MUL, SQRT, SUB, VAR, Expression, capacity_bucket
from .front import ROUNDING_ULPS, loss_floor
from .searches import CE_OPS, CV_OPS, NO_LIMIT, search_all, search_lean, top_candidates
from .semantics import combine, node_semantics, tree_mse

__all__ = [
    "DomeSearch",
    "SEARCH_NAMES",
    "MAX_TRIES",
    "ROUNDING_ULPS",
    "LEAN_BYTES",
    "slot_bucket",
    "scale_output",
    "ConstantPasses",
    "constant_passes",
    "Polish",
    "polish_steps",
]

SEARCH_NAMES = ("constant", "variable", "constant-variable", "constant-expression")
MAX_TRIES = 8
MIN_TOP_K = 16
"""The smallest ``k`` :func:`~jaxsr.symbolic.searches.top_candidates` is compiled for
(counts are rounded up to a power of two at least this, and the result cut)."""
START_CAPACITY_MAX = 64
"""A fit with ``max_nodes`` up to this runs at the capacity bucket of ``max_nodes`` from
its first iteration (one compilation per kernel); larger or unlimited trees start at 16
and move up a bucket as they grow."""
BATCH_CHECKS = None
"""How :meth:`DomeSearch.first_accepted` checks its candidates: all of its up to
:data:`MAX_TRIES` candidate trees in one device call whose results come back in one
transfer (``True``), or one call per candidate until one is accepted (``False``); ``None``:
batched on accelerators, where every transfer waits for the device, one by one on a CPU,
where the first candidate is usually accepted and checking the others is wasted work.
With the batch a greedy iteration of strategy 1 makes two device-to-host transfers: the
searches' scores and the candidates' checks (``tests/symbolic/test_sr_transfers.py``)."""
PROOF_CACHE = 4096
"""Most trees whose domain proof :meth:`DomeSearch.in_domain` keeps (then it starts over)."""
LEAN_BYTES = 2**30
"""Above this size of the full analysis (node equations and forbidden sets, bytes)
:class:`DomeSearch` runs the searches from the semantics alone
(:func:`~jaxsr.symbolic.searches.search_lean`, the same results in bounded memory).
At 128 nodes of capacity and 2-4 forbidden-set slots, from N of about
1.3e5-1.7e5 on (float64)."""


def slot_bucket(n: int) -> int:
    """Number of forbidden-set slots for ``n`` needed ones: a power of two ``>= 2``."""
    k = 2
    while k < n:
        k *= 2
    return k


def scale_output(expr: Expression, s: float) -> Expression:
    """An expression equal to ``s * expr`` with the factor put into its constants.

    ``s`` a power of two makes it exact (barring overflow of a constant). Sums scale
    both terms, a product one factor, a quotient its numerator (or divides its
    denominator), whichever needs fewer new nodes; only a variable with no constant to
    absorb the factor becomes ``s * x`` (two nodes more).
    """
    # cost[i, inv]: new nodes to scale the subtree at i by s (inv: by 1/s); children sit
    # after their parent in pre-order, so one backward pass fills it (no recursion: a tree
    # of any height)
    n = expr.n_nodes
    op_, left_, right_ = expr.op, expr.left, expr.right
    cost = np.zeros((n, 2), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        op = int(op_[i])
        if op == CONST:
            continue
        if op == VAR or op >= SQRT:  # a unary node is scaled as a leaf
            cost[i] = 2
            continue
        a, b = int(left_[i]), int(right_[i])
        for inv in (0, 1):
            if op in (ADD, SUB):
                cost[i, inv] = cost[a, inv] + cost[b, inv]
            elif op == MUL:
                cost[i, inv] = min(cost[a, inv], cost[b, inv])
            else:
                cost[i, inv] = min(cost[a, inv], cost[b, 1 - inv])

    # the scaled tree, written in pre-order from a stack of tasks: ("scale", i, inv) or
    # ("copy", i) (the subtree at i as it is)
    ops: list[int] = []
    vals: list[float] = []
    feats: list[int] = []
    sizes = expr.subtree_sizes
    tasks: list[tuple] = [("scale", 0, 0)]
    while tasks:
        task = tasks.pop()
        i = task[1]
        if task[0] == "copy":
            k = int(sizes[i])
            ops.extend(op_[i : i + k].tolist())
            vals.extend(expr.value[i : i + k].tolist())
            feats.extend(expr.feature[i : i + k].tolist())
            continue
        inv = task[2]
        f = 1.0 / s if inv else s
        op = int(op_[i])
        if op == CONST:
            ops.append(CONST)
            vals.append(float(expr.value[i]) * f)
            feats.append(0)
            continue
        if op == VAR or op >= SQRT:
            ops += [MUL, CONST]
            vals += [0.0, f]
            feats += [0, 0]
            tasks.append(("copy", i))
            continue
        a, b = int(left_[i]), int(right_[i])
        ops.append(op)
        vals.append(0.0)
        feats.append(0)
        if op in (ADD, SUB):
            second, first = ("scale", b, inv), ("scale", a, inv)
        elif op == MUL:
            if cost[a, inv] <= cost[b, inv]:
                first, second = ("scale", a, inv), ("copy", b)
            else:
                first, second = ("copy", a), ("scale", b, inv)
        elif cost[a, inv] <= cost[b, 1 - inv]:
            first, second = ("scale", a, inv), ("copy", b)
        else:
            first, second = ("copy", a), ("scale", b, 1 - inv)
        tasks += [second, first]  # the first child is written first
    return Expression(ops, vals, feats)


@program(static_argnames=("n_slots",))
def _analyse(tree, XT, y, n_slots, weights=None):
    sem = node_semantics(tree, XT)
    eqs = node_equations(tree, sem, y, weights)
    S = forbidden_sets(tree, sem, n_slots)
    return sem, eqs, S


@program(static_argnames=("vmap",))
def _checks(trees, XT, y, weights=None, vmap=True):
    """:func:`_check` of a batch of trees of one capacity (stacked on a leading axis):
    ``(mse (T,), ok (T,))``; ``vmap=False`` runs them one after the other (``lax.map``:
    the semantics' branches on unary nodes stay branches on a CPU)."""

    def one(tree):
        return _check(tree, XT, y, weights)

    return jax.vmap(one)(trees) if vmap else lax.map(one, trees)


def _batch_checks() -> bool:
    return BATCH_CHECKS if BATCH_CHECKS is not None else jax.default_backend() != "cpu"


@program
def _check(tree, XT, y, weights=None):
    """MSE of a tree and whether it is valid: finite everywhere, no zero denominator, and
    no pole inside the training range (no denominator takes both signs on the training
    rows: a continuous denominator that changes sign has a zero between them)."""
    sem = node_semantics(tree, XT)
    real = jnp.arange(tree.op.shape[0]) < tree.n_nodes
    finite = jnp.all(jnp.isfinite(sem) | ~real[:, None])
    div = ((tree.op == DIV) & real)[:, None]
    den = sem[tree.right]
    den_zero = jnp.any((den == 0) & div)
    pole = jnp.any(div[:, 0] & jnp.any(den > 0, axis=-1) & jnp.any(den < 0, axis=-1))
    mse = tree_mse(sem, y, weights)
    return mse, finite & ~den_zero & ~pole & jnp.isfinite(mse)


def _equation_jacobian(tree, sem, y, weights=None):
    """``(N, capacity)``: the derivative of the weighted residual ``sqrt(w) (out - y)``
    with respect to the value of each node, from the node equations (equations 6-22):
    at node ``j`` the residual is ``(a v - b) / (c v - d)`` as a function of its value
    ``v``, whose derivative is ``(b c - a d) / (c v - d)**2`` (at the root ``sqrt(w)``).
    One top-down pass instead of ``capacity`` forward-mode tangents of the whole tree.
    Only for trees of binary operators (the node equations stop at a unary node)."""
    eqs = node_equations(tree, sem, y, weights)
    den = eqs.c * sem - eqs.d
    return ((eqs.b * eqs.c - eqs.a * eqs.d) / (den * den)).T


def _normal_equations(tree, XT, y, weights=None, unary=False):
    """``(J^T J, J^T r)``, ``(capacity, capacity)`` and ``(capacity,)``: the Gauss-Newton
    normal equations of the weighted residual ``r = sqrt(w) (out - y)`` in the constants
    of the tree (columns of non-constants zero). The Jacobian comes from the node
    equations (:func:`_equation_jacobian`); ``unary=True`` (static: the tree has a unary
    node) by the chain rule through the unary nodes
    (:func:`~jaxsr.symbolic.unary.chain_jacobian`). They depend on the
    constants only, so a rejected step of :func:`polish_steps` re-uses them."""
    is_const = (tree.op == CONST) & (jnp.arange(tree.op.shape[0]) < tree.n_nodes)
    sw = jnp.ones_like(y) if weights is None else jnp.sqrt(weights)
    sem = node_semantics(tree, XT)
    r = (sem[0] - y) * sw
    if unary:  # the chain rule through unary nodes (no jacfwd program per shape)
        from .unary import chain_jacobian

        J = chain_jacobian(tree, sem, weights)
    else:
        J = _equation_jacobian(tree, sem, y, weights)
    J = J * is_const[None, :]
    return J.T @ J, J.T @ r


def _damped_step(tree, JtJ, Jtr, lam):
    """The constants after one Levenberg-Marquardt step of damping ``lam`` on the normal
    equations ``JtJ, Jtr`` (:func:`_normal_equations`): ``(capacity,)`` (non-constants
    unchanged; a non-finite step leaves a constant unchanged)."""
    is_const = (tree.op == CONST) & (jnp.arange(tree.op.shape[0]) < tree.n_nodes)
    diag = jnp.where(is_const, jnp.diagonal(JtJ), 1.0)
    A = JtJ + lam * jnp.diag(diag) + jnp.diag(jnp.where(is_const, 0.0, 1.0))
    delta = -jnp.linalg.solve(A, Jtr)
    return tree.value + jnp.where(is_const & jnp.isfinite(delta), delta, 0.0)


@program(static_argnames=("unary",))
def _joint_constant_step(tree, XT, y, lam, weights=None, unary=False):
    """One damped Gauss-Newton (Levenberg-Marquardt) step on all the constants of the
    tree at once: ``(capacity,)`` new values (non-constants unchanged). With ``weights``
    (mean 1; 0 on the sample-size padding) on the weighted MSE. The normal equations of
    :func:`_normal_equations`, the step of :func:`_damped_step`."""
    JtJ, Jtr = _normal_equations(tree, XT, y, weights, unary)
    return _damped_step(tree, JtJ, Jtr, lam)


# ------------------------------------------------------------------ section 2.6 on device
# Status of a run of :func:`constant_passes` / :func:`polish_steps`.
RUNNING, CONVERGED, AT_FLOOR, CAPPED = 0, 1, 2, 3


class ConstantPasses(NamedTuple):
    """State of the cyclic constant optimisation (section 2.6), carried between calls of
    :func:`constant_passes` (all scalars but ``value``)."""

    value: jax.Array  # (capacity,) the tree's constants (other entries unchanged)
    mse: jax.Array  # () true MSE of the tree with these constants
    pos: jax.Array  # int32 (): position (in the list of constant nodes) of the next visit
    passes: jax.Array  # int32 (): passes begun
    changed: jax.Array  # bool (): the current pass changed a constant
    changes: jax.Array  # int32 (): constants changed so far
    status: jax.Array  # int32 (): RUNNING, CONVERGED (a pass changed nothing), AT_FLOOR
    #                    (MSE at the rounding floor), CAPPED (max_passes passes ended)

    @classmethod
    def start(cls, value, mse, first):
        """The state before pass ``first``: constants ``value`` ``(capacity,)`` and their
        true MSE (of ``value``'s dtype); nothing visited or changed yet."""
        i32 = functools.partial(to_device, dtype=np.int32)
        return cls(
            value=value,
            mse=to_device(mse, value.dtype),
            pos=i32(0),
            passes=i32(first),
            changed=to_device(False),
            changes=i32(0),
            status=i32(RUNNING),
        )


def _path(tree, j):
    """Pre-order indices from the root to node ``j``: ``(capacity,)`` int32, entries
    ``0 .. depth[j]`` used (``path[0] = 0``, ``path[depth[j]] = j``)."""
    dj = tree.depth[j]

    def up(t, carry):
        node, path = carry
        return tree.parent[node], path.at[dj - t].set(node)

    return lax.fori_loop(0, dj, up, (j, jnp.zeros_like(tree.op)))[1], dj


def _equation_at(tree, sem, y, weights, path, dj):
    """The node equation ``a, b, c, d`` (each ``(N,)``) of ``path[dj]``, top-down along
    the path: the same rules, in the same order, as :func:`node_equations` (equations
    7-20), without the other nodes."""
    n, dt = sem.shape[1], sem.dtype
    sw = jnp.ones((n,), dt) if weights is None else jnp.sqrt(weights.astype(dt))
    root = (sw, sw * y.astype(dt), jnp.zeros((n,), dt), jnp.full((n,), -1.0, dt))

    def down(t, e):
        p, ch = path[t], path[t + 1]
        first = tree.left[p] == ch
        other = jnp.where(first, sem[tree.right[p]], sem[tree.left[p]])
        return child_equation(tree.op[p], first, *e, other)

    return lax.fori_loop(0, dj, down, root)


def _forbidden_at(tree, sem, path, dj, n_slots):
    """Forbidden set ``S`` ``(n_slots, N)`` of ``path[dj]`` (the rules of
    :func:`forbidden_sets` along the path); all ``+inf`` (unused) when it has none."""
    n, dt = sem.shape[1], sem.dtype
    slot = jnp.arange(n_slots)[:, None]
    S0 = jnp.full((n_slots, n), jnp.inf, dt)

    def down(t, S):
        p, ch = path[t], path[t + 1]
        first = tree.left[p] == ch
        op = tree.op[p]
        other = jnp.where(first, sem[tree.right[p]], sem[tree.left[p]])
        new = child_forbidden(op, first, S, other[None, :])
        cp = tree.n_slots[p]
        new = jnp.where(slot < cp, new, jnp.inf)
        return jnp.where((op == DIV) & ~first & (slot == cp), 0.0, new)

    j = path[dj]
    return lax.cond(tree.n_slots[j] > 0, lambda: lax.fori_loop(0, dj, down, S0), lambda: S0)


def _path_rows(tree, sem, path, dj, k):
    """The path's semantics when the constant ``path[dj]`` becomes ``k``, bottom-up (the
    same :func:`combine` as :func:`node_semantics`): the new root row ``(N,)``, whether
    every new row is finite, and whether a division's denominator on the path becomes
    zero or changes sign (the tests of :func:`_check` for the rows that change; the other
    rows are those of the current tree, which passed them)."""
    row = jnp.full((sem.shape[1],), k, sem.dtype)

    def up(t, carry):
        row, fin, bad = carry
        ch, p = path[dj - t], path[dj - 1 - t]
        first = tree.left[p] == ch
        is_den = (tree.op[p] == DIV) & ~first
        bad = bad | (is_den & (jnp.any(row == 0) | (jnp.any(row > 0) & jnp.any(row < 0))))
        left = jnp.where(first, row, sem[tree.left[p]])
        right = jnp.where(first, sem[tree.right[p]], row)
        row = combine(tree.op[p], left, right)
        return row, fin & jnp.all(jnp.isfinite(row)), bad

    return lax.fori_loop(0, dj, up, (row, jnp.all(jnp.isfinite(row)), jnp.zeros((), bool)))


def _write_path(tree, sem, path, dj, k, accept):
    """``sem`` with the path's new rows (as :func:`_path_rows`) written in, if ``accept``
    (else a loop of no step: nothing is computed or copied)."""
    j = path[dj]
    row = jnp.full((sem.shape[1],), k, sem.dtype)
    sem = lax.dynamic_update_index_in_dim(sem, jnp.where(accept, row, sem[j]), j, 0)

    def up(t, sem):
        p = path[dj - 1 - t]
        row = combine(tree.op[p], sem[tree.left[p]], sem[tree.right[p]])
        return lax.dynamic_update_index_in_dim(sem, row, p, 0)

    return lax.fori_loop(0, jnp.where(accept, dj, 0), up, sem)


@program(static_argnames=("n_slots",))
def constant_passes(
    tree,
    XT,
    y,
    weights,
    const_idx,
    n_const,
    state: ConstantPasses,
    min_improvement,
    floor,
    max_passes,
    max_visits,
    n_slots,
):
    """The paper's constant optimisation (section 2.6) in one jitted loop.

    Visits the constant nodes ``const_idx[:n_const]`` in turn (passes over them until one
    changes nothing): at each, the node equation is rebuilt along the path from the root
    (:func:`_equation_at`, the forbidden set likewise), the constant search of section 2.1
    gives ``k`` and its reduction (exactly as :func:`~jaxsr.symbolic.search_all`'s
    constant row), and when that exceeds ``thr = max(min_improvement * MSE, floor)`` the
    new tree is checked as :meth:`DomeSearch.accepts` does (true MSE below
    ``MSE - thr``, nothing non-finite, no zero denominator, no pole in the training range)
    from the semantics of the path only, the rows that change. Accepted changes update the
    semantics in place. So a visit costs ``O(depth * N)`` (plus the constant solver), not
    an analysis of the whole tree and a host round trip.

    Args:
      tree: :class:`TreeArrays` (its ``value`` is ignored: ``state.value`` is used).
      XT: ``(M, N)``; y: ``(N,)``; weights: ``(N,)`` of mean 1 or ``None``.
      const_idx: int32 ``(capacity,)``, pre-order indices of the constant nodes first.
      n_const: int32 (), how many (``>= 1``).
      state: :class:`ConstantPasses` to continue from (``status == RUNNING``).
      min_improvement, floor: the acceptance rule's relative and absolute thresholds.
      max_passes: int32 (), cap on the passes (``2**31 - 1``: none).
      max_visits: int32 (), visits made by this call at most (the host checks its time
        budget between calls).
      n_slots: static, slots of the forbidden sets (as :func:`forbidden_sets`).

    Returns:
      the new :class:`ConstantPasses`; ``status != RUNNING`` when the optimisation ended.
    """
    dt = XT.dtype
    tree = tree._replace(value=state.value)
    sem0 = node_semantics(tree, XT)
    zero = jnp.zeros((XT.shape[1],), dt)

    def cond(carry):
        s, _, visits = carry
        return (s.status == RUNNING) & (visits < max_visits)

    def body(carry):
        s, sem, visits = carry
        at_floor = s.mse <= floor
        j = const_idx[s.pos]
        thr = jnp.maximum(min_improvement * s.mse, floor)
        path, dj = _path(tree, j)
        a, b, c, d = _equation_at(tree, sem, y, weights, path, dj)
        S = _forbidden_at(tree, sem, path, dj, n_slots)
        base = equation_mse(a, b, c, d, sem[j])
        a2, b2, c2, d2 = child_equation(ADD, True, a, b, c, d, zero)
        # the forbidden set goes into the solver, as in search_all's constant row
        k, f, ok = optimal_constant(
            a2, b2, c2, d2, child_forbidden(ADD, True, S, zero[None, :]), tree.n_slots[j]
        )
        red = base - jnp.where(ok, f, jnp.inf)
        found = ok & jnp.isfinite(red) & (red > thr) & ~at_floor
        k = jnp.where(found, k, s.value[j])
        root, fin, bad = _path_rows(tree, sem, path, dj, k)
        r2 = (root - y) ** 2
        mse = jnp.mean(r2 if weights is None else weights * r2)
        accept = found & fin & ~bad & jnp.isfinite(mse) & (mse < s.mse - thr)
        sem = _write_path(tree, sem, path, dj, k, accept)
        value = s.value.at[j].set(jnp.where(accept, k, s.value[j]))
        changed = s.changed | accept
        pos = s.pos + 1
        end = pos >= n_const
        capped = end & changed & (s.passes >= max_passes)
        again = end & changed & ~capped
        status = jnp.where(
            at_floor,
            AT_FLOOR,
            jnp.where(end & ~changed, CONVERGED, jnp.where(capped, CAPPED, RUNNING)),
        )
        new = ConstantPasses(
            value=value,
            mse=jnp.where(accept, mse, s.mse),
            pos=jnp.where(end, 0, pos).astype(jnp.int32),
            passes=(s.passes + again).astype(jnp.int32),
            changed=changed & ~again,
            changes=(s.changes + accept).astype(jnp.int32),
            status=status.astype(jnp.int32),
        )
        # at the floor nothing moves (the old code returned before the visit)
        new = jax.tree.map(
            lambda n_, o_: jnp.where(at_floor, o_, n_), new, s._replace(status=jnp.int32(AT_FLOOR))
        )
        return new, sem, visits + 1

    out, _, _ = lax.while_loop(cond, body, (state, sem0, jnp.int32(0)))
    return out


class Polish(NamedTuple):
    """State of :func:`polish_steps` (the joint Levenberg-Marquardt polish)."""

    value: jax.Array  # (capacity,) constants
    mse: jax.Array  # () true MSE
    lam: jax.Array  # () damping
    kept: jax.Array  # int32 (): steps kept
    steps: jax.Array  # int32 (): steps tried
    status: jax.Array  # int32 (): RUNNING or CONVERGED (ended)
    jtj: jax.Array  # (capacity, capacity): the normal equations at ``value`` ...
    jtr: jax.Array  # (capacity,): ... (:func:`_normal_equations`), valid when ``fresh``
    fresh: jax.Array  # bool (): jtj, jtr are those of ``value``

    @classmethod
    def start(cls, value, mse, lam=1e-3):
        """The state before the first step: constants ``value`` ``(capacity,)``, their
        true MSE, damping ``lam``; the normal equations not yet computed."""
        cap, dt = value.shape[0], value.dtype
        i32 = functools.partial(to_device, dtype=np.int32)
        return cls(
            value=value,
            mse=to_device(mse, dt),
            lam=to_device(lam, dt),
            kept=i32(0),
            steps=i32(0),
            status=i32(RUNNING),
            jtj=to_device(np.zeros((cap, cap), dt)),
            jtr=to_device(np.zeros((cap,), dt)),
            fresh=to_device(False),
        )


# Under a deadline the device loops of the constant optimisation run in slices, so that
# the fit can stop between two calls. A slice starts small and doubles while a call takes
# less than half of its target, the smaller of SLICE_SECONDS and a twentieth of the time
# left, and halves when a call overran it; the size reached is kept for the next loop of
# the fit. The results are those of one call (the same steps in the same order; only the
# host's checks fall between other ones). Measured: one polish step per call cost a third
# of a warm strategy-3 Feynman fit with ``max_time`` set (II.38.3: 0.43 against 0.29 CPU-s).
SLICE_SECONDS = 0.05


def next_slice(units: int, seconds: float, deadline: float, cap: int) -> int:
    """Work units for the next device call of a loop run under ``deadline``
    (``time.perf_counter`` seconds), after a call of ``units`` took ``seconds``: doubled
    (at most ``cap``) below half of the target, halved (at least 1) above it."""
    left = deadline - time.perf_counter()
    target = min(SLICE_SECONDS, 0.05 * max(left, 0.0))
    if seconds < 0.5 * target:
        return int(min(cap, 2 * units))
    if seconds > target:
        return max(1, units // 2)
    return int(units)


@program(static_argnames=("unary",))
def polish_steps(tree, XT, y, weights, state: Polish, floor, max_steps, max_calls, unary=False):
    """Up to ``max_calls`` steps (of ``max_steps`` in all) of the joint constant polish
    of :meth:`DomeSearch.polish_constants` in one jitted loop: a damped Gauss-Newton step
    (:func:`_damped_step` on the normal equations of :func:`_normal_equations`, the
    step of :func:`_joint_constant_step`) is kept when the new tree is valid and its true
    MSE lower (then ``lam / 10``, at least ``1e-12``, and the loop ends at the floor),
    else ``lam * 100`` (ends above ``1e6``). The normal equations are computed once per
    point (carried in the state): after a rejected step the next one re-uses them, the
    same numbers as computing them again."""

    def cond(carry):
        s, calls = carry
        return (s.status == RUNNING) & (s.steps < max_steps) & (calls < max_calls)

    def body(carry):
        s, calls = carry
        t = tree._replace(value=s.value)
        JtJ, Jtr = lax.cond(
            s.fresh, lambda: (s.jtj, s.jtr), lambda: _normal_equations(t, XT, y, weights, unary)
        )
        v = _damped_step(t, JtJ, Jtr, s.lam)
        mse, ok = _check(t._replace(value=v), XT, y, weights)
        good = ok & (mse < s.mse)
        lam = jnp.where(good, jnp.maximum(s.lam / 10, 1e-12), s.lam * 100)
        done = jnp.where(good, mse <= floor, lam > 1e6)
        steps = s.steps + 1
        return Polish(
            value=jnp.where(good, v, s.value),
            mse=jnp.where(good, mse, s.mse),
            lam=lam,
            kept=(s.kept + good).astype(jnp.int32),
            steps=steps.astype(jnp.int32),
            status=jnp.where(done, CONVERGED, RUNNING).astype(jnp.int32),
            jtj=JtJ,
            jtr=Jtr,
            fresh=~good,
        ), calls + 1

    return lax.while_loop(cond, body, (state, jnp.int32(0)))[0]


@dataclass
class Candidate:
    reduction: float
    search: str
    node: int
    variable: int = -1
    op: int = -1
    constant: float = float("nan")


def decode_candidates(value, index, const, cap: int, m: int) -> list[Candidate]:
    """The candidates of :func:`~jaxsr.symbolic.searches.top_candidates`' host arrays
    (``value``, ``index``, ``const``) for a tree of capacity ``cap`` over ``m`` variables,
    up to the first masked (``-inf``) entry."""
    ends = np.cumsum([cap, cap * m, cap * m * 4, cap * 2])
    out = []
    for v, i, c in zip(value, index, const, strict=True):
        if not v > -np.inf:
            break
        i = int(i)
        if i < ends[0]:
            out.append(Candidate(float(v), "constant", i, constant=float(c)))
        elif i < ends[1]:
            j, var = divmod(i - ends[0], m)
            out.append(Candidate(float(v), "variable", int(j), variable=int(var)))
        elif i < ends[2]:
            j, rest = divmod(i - ends[1], m * 4)
            var, o = divmod(rest, 4)
            out.append(
                Candidate(float(v), "constant-variable", int(j), int(var), CV_OPS[o], float(c))
            )
        else:
            j, o = divmod(i - ends[2], 2)
            out.append(
                Candidate(float(v), "constant-expression", int(j), op=CE_OPS[o], constant=float(c))
            )
    return out


class DomeSearch:
    """Host-side driver of one fit (not part of the public API).

    Args:
      XT: ``(M, N)`` float array (device), y: ``(N,)``.
      var_mask: bool ``(M,)``, variables in the pool.
      max_nodes, max_height: ints or ``None``; min_improvement: float.
      max_constant_passes: cap on the passes of one constant optimisation (section 2.6;
        ``None``: none, as in the paper). Hitting it sets ``rec["constant_passes_capped"]``.
      weights: optional ``(N,)`` sample weights (device), mean 1 (see
        :func:`~jaxsr.symbolic.node_equations`); rows of weight 0 (e.g. the sample-size
        padding) only count for the domain of division.
      domain: ``"rows"`` (default: the paper's rule, no zero denominator and no pole on
        the training rows) or ``"box"`` (also no pole anywhere in the box of
        :attr:`box`, proved by :func:`~jaxsr.symbolic.domain.prove_box`; see
        :meth:`in_domain`).
      all_rows: ``None`` (``XT, y, weights`` are every training row), or, when they are
        the search sample (:mod:`jaxsr.symbolic.sampling`), ``(XT, y, weights)`` of every
        row (device): each change kept must then also pass the acceptance rule on them
        (:meth:`verified`).

    Acceptance (section 2.8 and the authors' reference code): a change is accepted only
    if the true MSE of the new tree is below ``MSE - max(min_improvement * MSE, floor)``
    and the tree has no zero denominator and no pole inside the training range. The
    absolute ``floor = (ROUNDING_ULPS * eps)**2 * mean(y**2)`` is the MSE of errors of
    ``ROUNDING_ULPS`` (1024) units in the last place at the target's scale (``eps``
    of the dtype): changes below it are rounding noise, and a tree whose MSE is at or below it
    fits to the rounding level (the fit stops, ``"rounding level"``).

    With ``domain="box"`` every tree the fit keeps is also proved to have no pole in the
    box of the search matrix (per-column minimum and maximum of ``XT`` over the rows of
    positive weight; with unary terminals their columns too, which over-approximates):
    :meth:`_true_mse` refuses a tree without the proof, so the searches' candidates (and
    the beam's, the unary moves'), the stuck-tree fallback and the pruning only ever
    keep proved trees; the constant optimisation and the joint polish, which change
    constants on the device under the rows' rule, are proved afterwards and undone when
    the proof fails (:meth:`_keep_constants`).
    """

    def __init__(
        self,
        XT,
        y,
        var_mask,
        *,
        max_nodes,
        max_height,
        min_improvement,
        feature_names,
        deadline=None,
        max_constant_passes=None,
        weights=None,
        domain="rows",
        all_rows=None,
    ):
        if domain not in DOMAINS:
            raise ValueError(f"Unknown domain {domain!r}; choose one of {list(DOMAINS)}")
        self.XT = XT
        self.y = y
        self.weights = weights
        self.var_mask = to_device(var_mask)
        self.max_nodes = NO_LIMIT if max_nodes is None else int(max_nodes)
        self.max_height = NO_LIMIT if max_height is None else int(max_height)
        self.min_improvement = float(min_improvement)
        self.names = feature_names
        self.deadline = deadline
        self.dtype = np.dtype(y.dtype)
        self.max_constant_passes = max_constant_passes
        y64 = np.asarray(to_host(y), np.float64)  # to_host: a mesh of several processes
        w64 = None if weights is None else np.asarray(to_host(weights), np.float64)
        self.floor = loss_floor(y64, self.dtype, w64)
        self.domain = domain
        # (lo, hi), each (M,) float64: the box the proof of domain="box" covers
        self.box = data_box(np.asarray(to_host(XT), np.float64).T, w64) if domain == "box" else None
        self._proofs: dict[bytes, bool] = {}  # in_domain's answers by tree
        self.all_rows = all_rows
        self._all_rows_checks: dict[bytes, tuple[float, bool]] = {}  # by tree
        self.stop = False  # set by another thread to end the fit at the next check
        self.expr = Expression.constant(
            float(np.mean(y64) if w64 is None else np.sum(w64 * y64) / np.sum(w64))
        )
        # a fit whose max_nodes fits a moderate bucket uses that bucket from the start, so
        # each kernel compiles once per fit, not once per bucket the tree grows through
        self.capacity = capacity_bucket(
            self.max_nodes if self.max_nodes <= START_CAPACITY_MAX else 3
        )
        self.n_slots = 2
        self._cache = None
        self.unary_search = None  # a unary.UnarySearch adds the move p -> u(p)
        self.mse = self._true_mse(self.expr)[0]
        self.n_const_updates = 0
        # work units per device call under a deadline (next_slice), learned during the fit
        self._visits = None
        self._polish_calls = 1

    # ---------------------------------------------------------------- numeric passes
    def _fit_capacity(self, expr: Expression) -> None:
        # room for the two nodes a search may add, but never beyond max_nodes (a larger
        # tree is never built), so a fit with max_nodes=15 stays in the 16 bucket
        need = min(expr.n_nodes + 2, max(self.max_nodes, expr.n_nodes))
        self.capacity = max(self.capacity, capacity_bucket(need))
        need = int(expr.forbidden_slot_counts().max())
        self.n_slots = max(self.n_slots, slot_bucket(need))

    def _tree(self, expr: Expression):
        return expr.padded(self.capacity, self.dtype)

    def _true_mse(self, expr: Expression) -> tuple[float, bool]:
        # pad to the current bucket, or a larger one just for this check: the capacity of
        # the searches only changes in :meth:`analyse`, so masks and cached analyses of
        # the current tree never meet arrays of another bucket
        cap = max(self.capacity, capacity_bucket(expr.n_nodes))
        mse, ok = device_get(_check(expr.padded(cap, self.dtype), self.XT, self.y, self.weights))
        return float(mse), bool(ok) and self.in_domain(expr)

    def in_domain(self, expr: Expression) -> bool:
        """Whether ``expr`` meets the ``domain`` rule beyond the training rows: always
        True for ``"rows"``; for ``"box"``, whether :func:`~jaxsr.symbolic.domain.prove_box`
        proves that no denominator vanishes (and no ``sqrt``/``log``/``exp`` leaves its
        domain) anywhere in :attr:`box`, with the constants as the fit's dtype holds them.
        Answers are cached by tree (pruning and the fallback check the same trees
        again)."""
        if self.box is None:
            return True
        key = self._key(expr)
        got = self._proofs.get(key)
        if got is None:
            if len(self._proofs) >= PROOF_CACHE:
                self._proofs.clear()
            value = expr.value.astype(self.dtype).astype(np.float64)
            got = prove_box(Expression(expr.op, value, expr.feature), *self.box).proved
            self._proofs[key] = got
        return got

    def _keep_constants(self, before: Expression, before_mse: float) -> bool:
        """After the constants moved on the device (the cyclic passes, the polish), under
        the rows' rule only: whether the new tree is :meth:`in_domain` and, on a search
        sample, no worse than ``before`` on all rows (:meth:`all_rows_check`); if not, the
        tree and its MSE go back to ``before``, ``before_mse`` (the move is not kept)."""
        if self.in_domain(self.expr) and self._no_worse(self.expr, before):
            return True
        self.expr, self.mse, self._cache = before, before_mse, None
        return False

    def _key(self, expr: Expression) -> bytes:
        value = expr.value.astype(self.dtype).astype(np.float64)
        return expr.op.tobytes() + value.tobytes() + expr.feature.tobytes()

    def all_rows_check(self, expr: Expression) -> tuple[float, bool]:
        """``(MSE, ok)`` of ``expr`` on every training row: on :attr:`all_rows` when the
        search runs on a sample, else :meth:`_true_mse`. ``ok``: finite, no zero
        denominator and no pole on any row (the rows' rule of ``_check``). Cached by
        tree."""
        if self.all_rows is None:
            return self._true_mse(expr)
        key = self._key(expr)
        got = self._all_rows_checks.get(key)
        if got is None:
            if len(self._all_rows_checks) >= PROOF_CACHE:
                self._all_rows_checks.clear()
            # the tree's own bucket, not the search's: the semantics of every row,
            # (cap, N), are most of the cost, and the search's capacity is max_nodes'
            cap = capacity_bucket(expr.n_nodes)
            mse, ok = device_get(_check(expr.padded(cap, self.dtype), *self.all_rows))
            got = self._all_rows_checks[key] = (float(mse), bool(ok))
        return got

    def verified(self, new: Expression, reference: Expression) -> bool:
        """Whether a change from ``reference`` to ``new``, accepted on the search sample,
        passes the acceptance rule (:meth:`accepts`) on all rows too: always True when
        the search runs on every row (:attr:`all_rows` is ``None``)."""
        if self.all_rows is None:
            return True
        mse, ok = self.all_rows_check(new)
        ref = self.all_rows_check(reference)[0]
        if not np.isfinite(ref):
            return ok and bool(np.isfinite(mse))
        return ok and mse < ref - self.threshold(ref)

    def _no_worse(self, new: Expression, before: Expression) -> bool:
        """On a search sample: ``new`` is valid on all rows and its MSE there is at most
        ``before``'s (True without a sample)."""
        if self.all_rows is None:
            return True
        mse, ok = self.all_rows_check(new)
        return ok and mse <= self.all_rows_check(before)[0]

    def lean(self) -> bool:
        """Whether the searches run from the semantics alone (:func:`search_lean`): when
        the full analysis (4 equation arrays and ``n_slots`` forbidden sets of
        ``(capacity, N)``) would exceed :data:`LEAN_BYTES`, and no unary search needs it."""
        cap, n = self.capacity, int(self.XT.shape[1])
        full = (4 + self.n_slots) * cap * n * self.dtype.itemsize
        return self.unary_search is None and full > LEAN_BYTES

    def analyse(self):
        """``(tree, sem, eqs, S)`` of the current tree (cached); ``eqs, S`` are ``None``
        when :meth:`lean`."""
        if self._cache is None:
            self._fit_capacity(self.expr)
            tree = self._tree(self.expr)
            if self.lean():
                self._cache = (tree, node_semantics(tree, self.XT), None, None)
            else:
                sem, eqs, S = _analyse(tree, self.XT, self.y, self.n_slots, self.weights)
                self._cache = (tree, sem, eqs, S)
        return self._cache

    def masks(self, cap: int | None = None):
        """Node masks of the current tree, padded to ``cap`` (default: the capacity of
        its analysis), by name: ``all, const, var, nonterminal, terminal,
        var_nonterminal``."""
        cap = self.analyse()[0].op.shape[0] if cap is None else int(cap)
        op = np.zeros(cap, np.int32)
        op[: self.expr.n_nodes] = self.expr.op
        real = np.arange(cap) < self.expr.n_nodes
        if self.expr.has_unary:  # no search below a unary node (unary.py)
            real[: self.expr.n_nodes] &= ~self.expr.below_unary()
            op[~real] = 0
        return {
            "all": real,
            "const": op == CONST,
            "var": op == VAR,
            "nonterminal": op > VAR,
            "terminal": (op == CONST) | (op == VAR),
            "var_nonterminal": (op == VAR) | (op > VAR),
        }

    def threshold(self, reference: float | None = None) -> float:
        """Smallest accepted reduction: ``max(min_improvement * MSE, floor)``, of the
        current tree's MSE or of ``reference``."""
        ref = self.mse if reference is None else reference
        return max(self.min_improvement * ref, self.floor)

    def accepts(self, mse: float, ok: bool, reference: float | None = None) -> bool:
        """The acceptance rule (class docstring) for a new tree of true MSE ``mse``,
        against the current tree's MSE or against ``reference`` (the tree a fallback
        started from)."""
        ref = self.mse if reference is None else reference
        return bool(ok) and mse < ref - self.threshold(ref)

    # ---------------------------------------------------------------- searches
    def candidates(self, specs, k: int | None = None) -> list[Candidate]:
        """Run the searches ``specs`` (list of ``(search name, node mask)``; a mask is a
        name of :meth:`masks` or a bool array over the nodes of the current tree) and
        return the successful candidates, best first (deterministic order): the ``k``
        best (``None``: all), chosen on the device (:meth:`best_of`). Masks are built
        here, at the capacity of the analysis they are used with."""
        res, masks = self.search(specs)
        found = self.best_of(res, k)
        if self.unary_search is not None:  # p -> u(p), where k op p is searched
            found = self.unary_search.merge(self, found, masks, self.analyse())
        return found

    def search(self, specs):
        """The searches ``specs`` (see :meth:`candidates`) on the current tree:
        ``(SearchResults`` on the device ``, (4, cap)`` node masks``)``."""
        tree, sem, eqs, S = self.analyse()
        cap = tree.op.shape[0]
        mn, mh = self.limits()
        masks = self.search_masks(specs, cap)
        if eqs is None:  # lean: equations per sample chunk and per node
            res = search_lean(
                tree,
                sem,
                self.XT,
                self.y,
                self.weights,
                to_device(masks),
                self.var_mask,
                mn,
                mh,
                n_slots=self.n_slots,
            )
        else:
            res = search_all(tree, sem, eqs, S, self.XT, to_device(masks), self.var_mask, mn, mh)
        return res, masks

    def results(self, specs):
        """The searches ``specs`` (see :meth:`candidates`) on the current tree, unfiltered:
        ``(SearchResults`` on the host ``, (4, cap)`` node masks``)``; every candidate's
        MSE reduction, including those that raise the MSE (negative)."""
        res, masks = self.search(specs)
        return device_get(res), masks

    def limits(self):
        """``(max_nodes, max_height)`` as the int32 scalars :func:`search_all` takes."""
        return (
            to_device(min(self.max_nodes, NO_LIMIT), np.int32),
            to_device(min(self.max_height, NO_LIMIT), np.int32),
        )

    def search_masks(self, specs, cap: int) -> np.ndarray:
        """The ``(4, cap)`` node masks of ``specs`` (see :meth:`candidates`) for the
        current tree."""
        named = self.masks(cap)
        masks = np.zeros((len(SEARCH_NAMES), cap), bool)
        for name, mask in specs:
            if name not in SEARCH_NAMES:
                raise ValueError(f"unknown search {name!r}")
            if isinstance(mask, str):
                mask = named[mask]
            mask = np.asarray(mask, bool)
            masks[SEARCH_NAMES.index(name), : mask.shape[0]] = mask[:cap]
        return masks

    def best_of(self, res, k: int | None = None, threshold: float | None = None) -> list[Candidate]:
        """The successful candidates of the current tree's searches ``res``
        (:class:`~jaxsr.symbolic.SearchResults` on the device), best first: those whose
        reduction exceeds ``threshold`` (default :meth:`threshold`), the ``k`` best
        (``None``: all), chosen on the device (:func:`~jaxsr.symbolic.searches.
        top_candidates`, the paper's order) and read in one transfer."""
        thr = self.threshold() if threshold is None else threshold
        cap, m = res.variable.shape
        n = cap * (1 + 5 * m + 2)
        k = n if k is None else max(1, min(int(k), n))
        # the program's k in a few buckets (one compilation serves the greedy search's
        # and the beam's counts); the first k of the stable order are the same
        kb = min(n, max(MIN_TOP_K, 1 << (k - 1).bit_length()))
        value, index, const = device_get(top_candidates(res, to_device(thr), k=kb))
        return decode_candidates(value[:k], index[:k], const[:k], cap, m)

    def subtree_of(self, c: Candidate) -> Expression:
        if c.search == "constant":
            return Expression.constant(c.constant)
        if c.search == "variable":
            return Expression.variable(c.variable)
        if c.search == "constant-variable":
            return Expression.binary(
                c.op, Expression.constant(c.constant), Expression.variable(c.variable)
            )
        if c.search == "unary":  # u(p), u(k op p) (unary.move_subtree)
            from .unary import move_subtree

            return move_subtree(self.expr, c)
        return Expression.binary(c.op, Expression.constant(c.constant), self.expr.subtree(c.node))

    def first_accepted(self, cands: list[Candidate]):
        """The first of ``cands[:MAX_TRIES]`` whose tree :meth:`accepts` (and, on a search
        sample, is :meth:`verified` on all rows; a size-limited ``k op x`` / ``k op p``
        over ``max_nodes`` is skipped): ``(candidate, new subtree, new tree, true MSE)``
        or ``None``. The engine's tree is not changed. With :data:`BATCH_CHECKS` the
        candidates' trees are checked in one device call (:meth:`_trial_checks`)."""
        trials = []
        for c in cands[:MAX_TRIES]:
            new_sub = self.subtree_of(c)
            new = self.expr.replace(c.node, new_sub)
            if new.n_nodes > self.max_nodes and c.search in (
                "constant-variable",
                "constant-expression",
                "unary",
            ):
                continue
            trials.append((c, new_sub, new))
        checks = self._trial_checks([t[2] for t in trials])
        for (c, new_sub, new), (mse, ok) in zip(trials, checks, strict=False):
            if self.accepts(mse, ok) and self.verified(new, self.expr):
                return c, new_sub, new, mse
        return None

    def _trial_checks(self, trees: list[Expression]):
        """``(true MSE, ok)`` of each of ``trees`` as :meth:`_true_mse` gives them, as the
        caller asks for them: with :data:`BATCH_CHECKS` all checked in one device call
        first (:meth:`_check_batch`), else one call per tree, so a caller that stops at
        the first it keeps checks no more."""
        if not _batch_checks():
            for tree in trees:
                yield self._true_mse(tree)
            return
        if not trees:
            return
        mse, ok = self._check_batch(trees)
        for tree, m, o in zip(trees, mse, ok, strict=False):
            yield float(m), bool(o) and self.in_domain(tree)

    def _check_batch(self, trees: list[Expression]):
        """``(mse (T,), ok (T,))`` host arrays of :func:`_check` for ``trees`` (the rows'
        rule, without the domain proof), in one device call and one transfer: the trees
        padded to one capacity and the batch to a power of two from :data:`MAX_TRIES` on
        (a few programs per capacity)."""
        if not trees:
            return None
        cap = max(self.capacity, capacity_bucket(max(t.n_nodes for t in trees)))
        padded = [t.padded(cap, self.dtype) for t in trees]
        size = MAX_TRIES  # the batch padded to a power of two from MAX_TRIES on
        while size < len(padded):
            size *= 2
        padded += [padded[-1]] * (size - len(padded))
        stacked = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *padded)
        return device_get(
            _checks(stacked, self.XT, self.y, self.weights, vmap=jax.default_backend() != "cpu")
        )

    def try_apply(self, cands: list[Candidate]):
        """Apply the first candidate that :meth:`accepts`; return a record or None."""
        found = self.first_accepted(cands)
        if found is None:
            return None
        c, new_sub, new, mse = found
        old = self.expr.subtree(c.node).to_string(self.names)
        self.expr, self.mse, self._cache = new, mse, None
        return {
            "search": c.search,
            "node": c.node,
            "replaced": old,
            "subtree": new_sub.to_string(self.names),
            "predicted_reduction": c.reduction,
        }

    def search_and_apply(self, specs):
        return self.try_apply(self.candidates(specs, MAX_TRIES))

    def timed_out(self) -> bool:
        return self.stop or (self.deadline is not None and time.perf_counter() > self.deadline)

    # ---------------------------------------------------------------- section 2.6
    def optimise_constants(self) -> tuple[int, bool]:
        """Cyclic constant optimisation (section 2.6): ``(constants changed, capped)``;
        ``capped`` is True when ``max_constant_passes`` ended it before a pass changed
        nothing. Runs on the device in one call (:func:`constant_passes`); with a time
        budget, in calls of a bounded number of visits with the clock checked between."""
        changes, status, _ = self._constant_passes(1, None)
        return changes, status == CAPPED

    def _max_passes(self) -> int:
        return 2**31 - 1 if self.max_constant_passes is None else self.max_constant_passes

    def _constant_passes(self, first: int, last: int | None) -> tuple[int, int, int]:
        """Passes ``first..last`` (``None``: up to ``max_constant_passes``) of the cyclic
        optimisation: ``(constants changed, status, passes begun)``; status ``CAPPED``
        when pass ``last`` changed a constant, ``CONVERGED`` when a pass changed none."""
        is_const = self.expr.op == CONST
        if self.expr.has_unary:  # no node equation below a unary node
            is_const &= ~self.expr.below_unary()
        const_nodes = np.flatnonzero(is_const).astype(np.int32)
        if self.max_constant_passes is not None and self.max_constant_passes <= 0:
            return 0, CAPPED, 0
        if const_nodes.size == 0:
            return 0, CONVERGED, first
        if self.mse <= self.floor or self.timed_out():
            return 0, CONVERGED, first
        self._fit_capacity(self.expr)
        tree = self._tree(self.expr)
        cap = tree.op.shape[0]
        idx = np.zeros(cap, np.int32)
        idx[: const_nodes.size] = const_nodes
        i32 = functools.partial(to_device, dtype=np.int32)
        state = ConstantPasses.start(to_device(tree.value), self.mse, first)
        max_passes = i32(self._max_passes() if last is None else min(last, self._max_passes()))
        n = int(self.XT.shape[1])
        timed = self.deadline is not None
        if timed and self._visits is None:
            self._visits = max(1, min(1024, 2**17 // max(n, 1)))
        visits = self._visits if timed else 2**31 - 1
        while True:
            t0 = time.perf_counter()
            state = constant_passes(
                tree,
                self.XT,
                self.y,
                self.weights,
                to_device(idx),
                i32(const_nodes.size),
                state,
                self.min_improvement,
                self.floor,
                max_passes,
                i32(visits),
                self.n_slots,
            )
            status, changes, passes = (
                int(v) for v in device_get((state.status, state.changes, state.passes))
            )
            if timed:
                visits = self._visits = next_slice(
                    visits, time.perf_counter() - t0, self.deadline, 2**31 - 1
                )
            if status != RUNNING or self.timed_out():
                break
        if changes:
            before, before_mse = self.expr, self.mse
            value = np.asarray(state.value, np.float64)[: self.expr.n_nodes]
            self.expr = Expression(self.expr.op, value, self.expr.feature)
            self.mse, self._cache = float(state.mse), None
            if not self._keep_constants(before, before_mse):
                # domain="box": the passes moved a pole into the box; none of their
                # changes is kept and the optimisation ends as if they found nothing
                return 0, CONVERGED, passes
        self.n_const_updates += changes
        return changes, status, passes

    def polish_constants(self, max_steps: int = 20) -> int:
        """Between and after the cyclic passes, move all the constants together (damped
        Gauss-Newton on the true MSE; the paper's future work, section 6, proposes
        changing several constants at once): the cyclic passes crawl along valleys such
        as ``k1 * (k2*x1 + x2)``, leaving the constants of an exact structure some 1e-12
        off, and the searches would then grow terms that only absorb that error. Each
        step is kept only if it lowers the true MSE; returns the steps kept. One device
        call (:func:`polish_steps`); with a time budget, calls of a few steps each
        (:func:`next_slice`)."""
        if self.mse <= 0 or not np.any(self.expr.op == CONST) or self.timed_out():
            return 0
        cap = max(self.capacity, capacity_bucket(self.expr.n_nodes))
        tree = self.expr.padded(cap, self.dtype)
        i32 = functools.partial(to_device, dtype=np.int32)
        state = Polish.start(to_device(tree.value), self.mse)
        timed = self.deadline is not None
        calls = min(self._polish_calls, max_steps) if timed else max_steps
        while True:
            t0 = time.perf_counter()
            state = polish_steps(
                tree,
                self.XT,
                self.y,
                self.weights,
                state,
                self.floor,
                i32(max_steps),
                i32(calls),
                unary=bool(self.expr.has_unary),
            )
            status, steps = (int(v) for v in device_get((state.status, state.steps)))
            if timed:
                calls = self._polish_calls = next_slice(
                    calls, time.perf_counter() - t0, self.deadline, max_steps
                )
            if status != RUNNING or steps >= max_steps or self.timed_out():
                break
        kept = int(state.kept)
        if kept:
            before, before_mse = self.expr, self.mse
            value = np.asarray(state.value, np.float64)[: self.expr.n_nodes]
            self.expr = Expression(self.expr.op, value, self.expr.feature)
            self.mse, self._cache = float(state.mse), None
            if not self._keep_constants(before, before_mse):
                return 0  # domain="box": the polish moved a pole into the box
        return kept

    def optimise_and_polish(self) -> tuple[int, int, bool]:
        """The constant optimisation of strategies 2 and 3: the cyclic passes of section
        2.6, with the joint polish (:meth:`polish_constants`) after every pass that
        changed a constant, and once at the end. ``(constants changed, polish steps kept,
        capped)``.

        The passes alone crawl along a valley of the MSE one constant at a time (e.g.
        ``k1 * (k2*x1 + x2)``: thousands of accepted changes, each a global constant
        search); the polish moves the constants together to the bottom of the valley, and
        the next pass then finds nothing or a real jump. It ends as the paper's procedure
        does: when a whole pass changes no constant (or at ``max_constant_passes``)."""
        changes = kept = 0
        first = 1
        while True:
            n, status, passes = self._constant_passes(first, first)
            changes += n
            if status != CAPPED or passes >= self._max_passes() or self.timed_out():
                break
            kept += self.polish_constants()
            first = passes + 1
        kept += self.polish_constants()
        return changes, kept, status == CAPPED

    def _optimise_into(self, rec):
        n, kept, capped = self.optimise_and_polish()
        rec["constants_polished"] = kept
        rec["constants_optimised"] = n
        if capped:
            rec["constant_passes_capped"] = True

    # ---------------------------------------------------------------- section 2.8
    def step(self, strategy: int):
        """One iteration of ``strategy`` (1-4); a record dict or ``None`` (no change)."""
        if strategy == 1:
            return self.search_and_apply(
                [
                    ("constant", "all"),
                    ("variable", "all"),
                    ("constant-variable", "all"),
                    ("constant-expression", "nonterminal"),
                ]
            )
        if strategy == 2:
            rec = self.search_and_apply(
                [
                    ("constant", "var_nonterminal"),
                    ("variable", "all"),
                    ("constant-variable", "all"),
                    ("constant-expression", "nonterminal"),
                ]
            )
            if rec is not None:
                self._optimise_into(rec)
            return rec
        if strategy == 3:
            return self._strategy3(optimise=True)
        if strategy == 4:
            rec = self.search_and_apply([("constant", "const")])
            if rec is not None:
                return rec
            return self._strategy3(optimise=False)
        raise ValueError(f"strategy must be 1, 2, 3 or 4; got {strategy!r}")

    def _strategy3(self, optimise: bool):
        stages = (
            [("variable", "const")],
            [("constant-expression", "nonterminal")],
            [("constant-variable", "terminal")],
            [
                ("constant", "var_nonterminal"),
                ("variable", "var_nonterminal"),
                ("constant-variable", "nonterminal"),
            ],
        )
        rec = None
        for specs in stages:
            rec = self.search_and_apply(specs)
            if rec is not None:
                break
        if rec is not None and optimise:
            self._optimise_into(rec)
        return rec

    # ---------------------------------------------------------------- stuck tree
    def zero_terms(self, order: int, pool=None) -> Expression:
        """The sum of every monomial of degree ``order`` of the pool variables (``pool``, a
        list of columns; default every variable of the search), each with coefficient 0:
        ``0*x1 + 0*x2 + ...`` (order 1), ``(0*x1)*x1 + (0*x1)*x2 + ...`` (order 2); its
        value is 0 everywhere."""
        if pool is None:
            pool = [int(m) for m in np.flatnonzero(np.asarray(self.var_mask))]
        terms = []
        for combo in itertools.combinations_with_replacement(pool, order):
            t = Expression.constant(0.0)
            for m in combo:
                t = Expression.binary(MUL, t, Expression.variable(m))
            terms.append(t)
        out = terms[0]
        for t in terms[1:]:
            out = Expression.binary(ADD, out, t)
        return out

    def unstick(self, strategy: int, max_order: int = 2):
        """The reference package's way out of a stuck tree (its ``Step!``): when no search
        improves the tree, add zero-valued terms (``tree + (0*x1 + 0*x2 + ...)``, then the
        pairwise products, ...) while the tree fits ``max_nodes`` (at most ``max_order``
        orders when there is no limit) and search again; the first order where the
        strategy accepts a change is kept, and the zero terms it did not use are pruned
        (:meth:`prune`). Returns the strategy's record (with ``"extended": order``) or
        ``None`` with the tree unchanged.

        Two extensions of the reference package's rule, both only where it would stop:
        when ``max_nodes`` leaves no room for all first-order terms, the variables most
        correlated with the residual come first and as many as fit are added
        (:meth:`_ranked_pool`; a 15-feature table would otherwise need 60 free nodes); and
        for the strategies that change constants only by optimising them after a search
        (2, 3, 4), when no search takes the extended tree, its constants (the zero
        coefficients among them) are optimised (section 2.6) and the result is kept if it
        passes the acceptance rule (``10 + 0.5*x`` is reached from the mean this way: no
        single ``k op x`` lowers its MSE)."""
        if not np.any(np.asarray(self.var_mask)):
            return None
        base, base_mse = self.expr, self.mse
        limit = self.max_nodes if self.max_nodes < NO_LIMIT else None
        for order in itertools.count(1):
            if limit is None and order > max_order:
                break
            extended = Expression.binary(ADD, base, self.zero_terms(order))
            if limit is not None and extended.n_nodes > limit:
                if order > 1:
                    break
                fit = (limit - base.n_nodes) // 4  # 0*x is 3 nodes, and one + each
                if fit < 1:
                    break
                extended = Expression.binary(
                    ADD, base, self.zero_terms(1, self._ranked_pool(base)[:fit])
                )
            if self.timed_out():
                break
            mse, ok = self._true_mse(extended)
            if not ok:
                break
            self.expr, self.mse, self._cache = extended, mse, None
            rec = self.step(strategy)
            if rec is None and strategy != 1 and not self.timed_out():
                rec = self._optimise_zero_terms(base, base_mse)
            if rec is not None:
                rec["extended"] = order
                rec["pruned"] = self.prune()
                return rec
        self.expr, self.mse, self._cache = base, base_mse, None
        return None

    def _ranked_pool(self, tree: Expression) -> list[int]:
        """The search's variables by decreasing ``|correlation|`` with the residual of
        ``tree`` on the (weighted) training rows; ties, and constant residuals, by column."""
        pool = [int(m) for m in np.flatnonzero(np.asarray(self.var_mask))]
        X = np.asarray(to_host(self.XT), np.float64).T
        w = np.asarray(to_host(self.weights), np.float64) if self.weights is not None else None
        with np.errstate(all="ignore"):
            r = np.asarray(to_host(self.y), np.float64) - tree.evaluate(X)
            cols = X[:, pool]
            wt = np.ones(X.shape[0]) if w is None else w
            wt = wt / np.sum(wt)
            rc = r - np.sum(wt * r)
            xc = cols - np.sum(wt[:, None] * cols, axis=0)
            num = np.abs(np.sum(wt[:, None] * xc * rc[:, None], axis=0))
            den = np.sqrt(np.sum(wt[:, None] * xc * xc, axis=0) * np.sum(wt * rc * rc))
            corr = np.where(den > 0, num / den, 0.0)
        corr = np.where(np.isfinite(corr), corr, 0.0)
        order = sorted(range(len(pool)), key=lambda i: (-corr[i], pool[i]))
        return [pool[i] for i in order]

    def _optimise_zero_terms(self, base: Expression, base_mse: float):
        """The constant optimisation of the extended tree (:meth:`unstick`): a record when
        its MSE passes the acceptance rule against ``base`` (of MSE ``base_mse``), else
        ``None``."""
        changes, _ = self.optimise_constants()
        mse, ok = self._true_mse(self.expr)
        if not (
            changes and self.accepts(mse, ok, reference=base_mse) and self.verified(self.expr, base)
        ):
            return None
        self.mse = mse
        return {
            "search": "constant",
            "node": 0,
            "replaced": "",
            "subtree": self.expr.to_string(self.names),
            "predicted_reduction": base_mse - mse,
            "constants_optimised": int(changes),
        }

    def prune(self) -> int:
        """Remove every branch whose removal changes the true MSE by at most the floor
        (section 2.5's deletion: a binary node is replaced by one of its children),
        keeping the total change within the floor; returns the number of nodes removed.
        Each round takes the first deletion in pre-order (the right child first) that
        passes; with :data:`BATCH_CHECKS` a round's deletions are checked in one device
        call (:meth:`_trial_checks`), else one by one until one passes."""
        start_nodes, start_mse = self.expr.n_nodes, self.mse
        changed = True
        while changed and self.expr.n_nodes > 1:
            changed = False
            trials = []
            for j in range(self.expr.n_nodes):
                if self.expr.op[j] < ADD:
                    continue
                kids = (
                    (int(self.expr.left[j]),)
                    if self.expr.op[j] >= SQRT  # unary
                    else (int(self.expr.right[j]), int(self.expr.left[j]))
                )
                trials += [self.expr.replace(j, self.expr.subtree(child)) for child in kids]
            for new, (mse, ok) in zip(trials, self._trial_checks(trials), strict=False):
                if ok and mse <= start_mse + self.floor:
                    self.expr, self.mse, self._cache = new, mse, None
                    changed = True
                    break
        return start_nodes - self.expr.n_nodes
