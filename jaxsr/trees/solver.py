"""The explicit branch-and-bound solver over subproblems: state, init / step / terminate.

The search of :mod:`jaxsr.trees.search` (OSRT section 4, in the depth-first style of
GOSDT / MurTree) written as a loop over an explicit frontier instead of recursion:

* a memo entry (:class:`Entry`) per subproblem ``(support, levels)``: proven lower bound,
  best objective found (upper bound), root split of that tree, whether it is solved, and
  the shallow-kernel bookkeeping;
* the frontier is the stack of subproblems being expanded (:class:`Expansion`): each
  holds the children of all its splits, their lower bounds (tightened as children are
  solved), the order in which its splits are tried and the split being worked on;
* :func:`init` builds the root, :func:`step` advances the top expansion until it needs a
  child expanded (push) or is finished (pop, its entry handed to its parent), and
  :func:`terminate` says whether the search is over and why (:class:`Status`).

``max_steps`` bounds the number of steps (subproblem visits), ``time_limit`` the wall time;
either stops the search with a valid lower bound (the root's children's bounds) and the
best tree found so far.
"""

from __future__ import annotations

import enum
import time
from typing import NamedTuple

import numpy as np

__all__ = ["Status", "Entry", "Expansion", "SolverState", "init", "step", "terminate",
           "reaches", "improves", "live_lower_bound", "RTOL"]

RTOL = 1e-12  # relative tolerance of every prune / solved test (rounding of the sums)
NEXT, TRUE, FALSE = range(3)  # Expansion.phase: start the next split / await a child


def reaches(a, b) -> bool:
    """``a >= b`` up to the relative rounding tolerance :data:`RTOL` (``b`` may be inf)."""
    return a >= (b * (1.0 - RTOL) if b > 0 else b * (1.0 + RTOL))


def improves(a, b) -> bool:
    """``a < b`` by more than the rounding tolerance: near-ties keep the tree found first,
    so the answer does not depend on rounding (e.g. a uniform rescaling of the weights)."""
    return a < b * (1.0 - RTOL) if b > 0 else a < b


class Status(enum.Enum):
    """Why the search ended."""

    OPTIMAL = "optimal"  # the root is solved: lower bound = objective
    TIME_LIMIT = "time_limit"  # time_limit reached
    NODE_LIMIT = "node_limit"  # max_steps reached


class Entry(NamedTuple):
    """Memo entry of a subproblem ``(support, levels)`` (objective units).

    Attributes:
      lb: proven lower bound of every tree on the subproblem.
      ub: objective of the best tree found (the leaf at first).
      feat: root split of that tree (-1: a leaf).
      solved: ``lb == ub`` is proven (or the subproblem cannot beat its cap).
      klev: ``L >= 1``: the best tree is the shallow kernel's with ``L`` split levels;
        ``-2``: the kernel bound is still to be computed; ``-1``: neither.
      deep: lower bound of the trees with at least ``exact_levels + 2`` leaves.
    """

    lb: float
    ub: float
    feat: int
    solved: bool
    klev: int
    deep: float


class Expansion(NamedTuple):
    """A subproblem being expanded (one element of the frontier stack).

    Split arrays have one entry per admissible split ``k`` (feature ``F[k]``): the "true"
    child takes the classes with the feature set, the "false" child the others.

    Attributes:
      key: memo key ``(packed support, levels)``. mask: ``(U,)`` bool support.
      cap: the search only needs to know whether the subproblem beats ``cap``.
      is_root: the root subproblem (its live lower bound is reported).
      F: ``(k,)`` int features. a, comp: ``(k, 6)`` children statistics.
      leafT, leafF: ``(k,)`` float leaf costs of the children.
      dT, dF: ``(k,)`` int children's levels. maskT, maskF: ``(k, U)`` bool supports.
      keysT, keysF: children's memo keys (``None``: a leaf, nothing to solve).
      lbT, lbF, lbsum: ``(k,)`` float lower bounds, tightened in place.
      order: ``(k,)`` int, the order in which splits are tried.
      pos: index into ``order`` of the split being worked on (-1 while the root is
        best-first: its splits are chosen by bound sum). phase: NEXT/TRUE/FALSE.
      bound: ``min(incumbent, cap)`` when the current split was started.
      t_ub: objective of the current split's solved true child.
      completed: every split was tried or pruned (False once the search stopped inside).
      cur: the split being worked on (``order[pos]``, or the best-first choice).
      tries: ``(k,)`` int, best-first attempts per split (root only; None until used).
    """

    key: tuple
    mask: np.ndarray
    cap: float
    is_root: bool
    F: np.ndarray
    a: np.ndarray
    comp: np.ndarray
    leafT: np.ndarray
    leafF: np.ndarray
    dT: np.ndarray
    dF: np.ndarray
    maskT: np.ndarray
    maskF: np.ndarray
    keysT: list
    keysF: list
    lbT: np.ndarray
    lbF: np.ndarray
    lbsum: np.ndarray
    order: np.ndarray
    pos: int = 0
    phase: int = NEXT
    bound: float = np.inf
    t_ub: float = np.inf
    completed: bool = True
    cur: int = -1
    tries: np.ndarray | None = None


class SolverState(NamedTuple):
    """The whole solver state besides the memo (which lives with the problem).

    Attributes:
      stack: list of :class:`Expansion`, the depth-first frontier (root first).
      root_key: memo key of the root.
      root_lb: live lower bound of the root (tightens as its splits are solved).
      status: ``None`` while running, else a :class:`Status`.
      steps: subproblem visits so far. t0: start (``time.perf_counter``).
      deadline: ``t0 + time_limit`` or None. max_steps: or None.
      stopped: the limit that was hit (the stack is being unwound), or None.
    """

    stack: list
    root_key: tuple
    root_lb: float
    status: Status | None
    steps: int
    t0: float
    deadline: float | None
    max_steps: int | None
    stopped: Status | None = None


def init(problem, root, time_limit=None, max_steps=None, t0=None):
    """The solver state for a root whose memo entry is ``root_entry``.

    ``root``: ``(key, mask, tot, leaf)`` of the root subproblem, whose memo entry the
    problem holds. The root is solved at once when its bounds already meet (status
    OPTIMAL); a deadline (``t0 + time_limit``) already past stops before anything is
    expanded.
    """
    root_key, mask, tot, leaf = root
    root_entry = problem.memo[root_key]
    t0 = time.perf_counter() if t0 is None else t0
    deadline = None if time_limit is None else t0 + float(time_limit)
    state = SolverState(stack=[], root_key=root_key, root_lb=float(root_entry.lb),
                        status=None, steps=0, t0=t0, deadline=deadline,
                        max_steps=None if max_steps is None else int(max_steps))
    if root_entry.solved:
        return state._replace(status=Status.OPTIMAL)
    if deadline is not None and (time_limit <= 0 or time.perf_counter() > deadline):
        return state._replace(status=Status.TIME_LIMIT)
    ent, exp = problem.visit(root_key, mask, tot, leaf, np.inf, is_root=True)
    if exp is None:
        return state._replace(status=Status.OPTIMAL, root_lb=float(ent.lb))
    state.stack.append(exp)
    return state


def terminate(state) -> Status | None:
    """``None`` while the search goes on, else why it ended."""
    return state.status


def _limit(state):
    """The status a limit imposes now, or None."""
    if state.deadline is not None and time.perf_counter() > state.deadline:
        return Status.TIME_LIMIT
    if state.max_steps is not None and state.steps >= state.max_steps:
        return Status.NODE_LIMIT
    return None


def step(problem, state):
    """Advance the top expansion until it pushes a child or finishes (one step).

    Returns the new :class:`SolverState`. ``problem`` provides ``memo``, ``hier`` and
    ``visit(key, cap, ...)``, which returns ``(entry, None)`` when the subproblem needs no
    expansion (solved, pruned by its cap, or cut by a limit) or ``(None, Expansion)``.
    """
    stack = state.stack
    fr = stack[-1]
    memo = problem.memo
    child = None  # entry of the child whose solve the top expansion awaits
    while True:
        if fr.phase == NEXT:
            if state.stopped is not None or fr.pos >= fr.order.size:
                if state.stopped is not None:
                    fr = fr._replace(completed=False)
                child = _finish(problem, fr)
                stack.pop()
                if not stack:
                    return _done(state, child)
                fr = stack[-1]
                continue
            lim = _limit(state)
            if lim is not None:
                state = state._replace(stopped=lim)
                continue
            if fr.is_root and problem.hier and _best_first(state):
                fr, i, bound = _best_first_split(fr, memo[fr.key].ub)
                if i < 0:
                    fr = fr._replace(pos=fr.order.size)
                    continue
                fr = fr._replace(pos=-1)  # attempts do not advance ``pos`` (it ends at 0)
            else:
                i = int(fr.order[fr.pos])
                bound = min(memo[fr.key].ub, fr.cap)
                if problem.hier and reaches(fr.lbsum[i], bound):
                    fr = fr._replace(pos=fr.order.size)
                    continue
                if problem.hier and fr.keysF[i] is not None:
                    # the false child's bounds first (its memo entry, k-Means included):
                    # the split may fail on them, else the true child gets a tighter cap
                    lbf = problem.peek(fr.keysF[i], fr.maskF[i], fr.comp[i], fr.leafF[i]).lb
                    if lbf > fr.lbF[i]:
                        fr.lbF[i] = lbf
                        fr.lbsum[i] = fr.lbT[i] + fr.lbF[i]
                        if reaches(fr.lbsum[i], bound):
                            fr = fr._replace(pos=fr.pos + 1)  # this split only
                            continue
            fr = fr._replace(bound=bound, phase=TRUE, cur=i)
            if fr.keysT[i] is None:
                child = Entry(fr.leafT[i], fr.leafT[i], -1, True, -1, np.inf)
                continue
            cap = bound - fr.lbF[i] if problem.hier else np.inf
            state = state._replace(steps=state.steps + 1)
            child, exp = problem.visit(fr.keysT[i], fr.maskT[i], fr.a[i], fr.leafT[i], cap,
                                       stopped=state.stopped is not None)
            if exp is not None:
                stack[-1] = fr
                stack.append(exp)
                return state
            continue
        i = fr.cur
        if child is None:  # resumed after a pushed child finished: its entry is the result
            child = memo[fr.keysT[i] if fr.phase == TRUE else fr.keysF[i]]
        if fr.phase == TRUE:
            fr.lbT[i] = max(fr.lbT[i], child.lb)
            fr.lbsum[i] = fr.lbT[i] + fr.lbF[i]
            t_ub = child.ub
            if not child.solved:
                if state.stopped is not None:
                    _offer(memo, fr.key, t_ub + fr.leafF[i], fr.F[i])
                    fr = fr._replace(completed=False, pos=fr.order.size, phase=NEXT)
                else:
                    fr = fr._replace(pos=fr.pos + 1, phase=NEXT)
                child = None
                continue
            fr = fr._replace(t_ub=t_ub, phase=FALSE)
            if fr.keysF[i] is None:
                child = Entry(fr.leafF[i], fr.leafF[i], -1, True, -1, np.inf)
                continue
            cap = fr.bound - t_ub if problem.hier else np.inf
            if state.stopped is None:
                state = state._replace(steps=state.steps + 1)
            child, exp = problem.visit(fr.keysF[i], fr.maskF[i], fr.comp[i], fr.leafF[i],
                                       cap, stopped=state.stopped is not None)
            if exp is not None:
                stack[-1] = fr
                stack.append(exp)
                return state
            continue
        # phase FALSE: the false child's entry is in
        fr.lbF[i] = max(fr.lbF[i], child.lb)
        fr.lbsum[i] = fr.lbT[i] + fr.lbF[i]
        if child.solved or state.stopped is not None:
            _offer(memo, fr.key, fr.t_ub + child.ub, fr.F[i])
        if fr.is_root:
            e = memo[fr.key]
            state = state._replace(root_lb=max(e.lb, min(e.ub, float(fr.lbsum.min()))))
        if not child.solved and state.stopped is not None:
            fr = fr._replace(completed=False, pos=fr.order.size, phase=NEXT)
        else:
            fr = fr._replace(pos=fr.pos + 1, phase=NEXT)
        child = None


BEST_FIRST_AFTER = 0.5  # fraction of the time limit after which the root goes best-first
_BEST_FIRST_TRIES = 2  # capped attempts per root split before it is solved against the incumbent


def _best_first(state) -> bool:
    """The root goes best-first once half of the time limit is spent (anytime bound).

    Before that (and without a time limit) the root's splits are tried in the order of
    their bound sums, each against the incumbent, which is fastest to a certificate.
    """
    if state.deadline is None:
        return False
    return time.perf_counter() >= state.t0 + BEST_FIRST_AFTER * (state.deadline - state.t0)


def _best_first_split(fr, ub):
    """The root split of least bound sum and the cap it is solved against.

    Its children are solved only against ``cap = min(ub, max(next least bound sum, its sum
    + half the gap))``: the split either proves its bound sum reaches the cap (and the next
    least split is taken) or is solved exactly. So the root's lower bound, the least bound
    sum over its splits, rises while the search goes, instead of waiting for one split's
    whole subtree. After :data:`_BEST_FIRST_TRIES` capped attempts a split is solved against
    the incumbent (so the loop ends). Every cap only decides what is proven, never what is
    pruned: the optimum is unchanged.

    Returns ``(fr, i, bound)``; ``i = -1`` when every split reaches the incumbent.
    """
    lbsum = fr.lbsum
    live = np.flatnonzero(lbsum < ub * (1.0 - RTOL) if ub > 0 else lbsum < ub)
    if live.size == 0:
        return fr, -1, ub
    tries = fr.tries if fr.tries is not None else np.zeros(lbsum.size, dtype=np.int64)
    i = int(live[np.argmin(lbsum[live])])
    rest = np.delete(lbsum, i)
    second = float(rest.min()) if rest.size else np.inf
    if tries[i] >= _BEST_FIRST_TRIES:
        bound = ub
    else:
        bound = min(ub, max(second, lbsum[i] + 0.5 * (ub - lbsum[i])))
    tries[i] += 1
    return fr._replace(tries=tries), i, float(bound)


def live_lower_bound(problem, state) -> float:
    """The root's proven lower bound now, bottom up through the frontier stack.

    Validity: every ``lbT[i]``, ``lbF[i]`` of an expansion is a lower bound of every tree
    on that child (they only ever rise to the max of valid bounds, whatever cap a child
    was solved against), so the least bound sum over a subproblem's splits bounds every
    tree that splits, and with its best tree found (``ub``, at most its leaf) ``max(lb,
    min(ub, least bound sum))`` bounds every tree on it. The top expansion's bound is
    valid for the child its parent awaits (phase TRUE: the true child, FALSE: the false
    one), so it replaces that child's bound in the parent's sum, and so on down to the
    root. The same arithmetic as the unwinding after a limit (:func:`_finish`), so the
    certificate at a time limit is the best this gives; computed here on demand (for the
    progress lines), O(stack x splits)."""
    memo = problem.memo
    below = None
    for fr in reversed(state.stack):
        e = memo[fr.key]
        lbsum = fr.lbsum
        if below is not None and fr.cur >= 0 and fr.phase in (TRUE, FALSE):
            i = fr.cur
            lbsum = lbsum.copy()
            if fr.phase == TRUE:
                lbsum[i] = max(fr.lbT[i], below) + fr.lbF[i]
            else:
                lbsum[i] = fr.lbT[i] + max(fr.lbF[i], below)
        below = max(e.lb, min(e.ub, float(lbsum.min()))) if lbsum.size else e.lb
    return float(state.root_lb) if below is None else max(float(state.root_lb), below)


def _offer(memo, key, total, feat):
    """A tree of objective ``total`` with root split ``feat`` for subproblem ``key``."""
    e = memo[key]
    if improves(total, e.ub):
        memo[key] = e._replace(ub=float(total), feat=int(feat), klev=-1)


def _finish(problem, fr) -> Entry:
    """Close an expansion: its lower bound is the least of its splits' bound sums."""
    memo = problem.memo
    e = memo[fr.key]
    lb = max(e.lb, min(e.ub, float(fr.lbsum.min())))
    if (fr.completed and e.ub <= fr.cap) or lb >= e.ub:
        e = e._replace(lb=e.ub, solved=True)
    else:
        e = e._replace(lb=lb)
    memo[fr.key] = e
    return e


def _done(state, root_entry):
    status = Status.OPTIMAL if root_entry.solved else (state.stopped or Status.TIME_LIMIT)
    return state._replace(status=status, root_lb=float(root_entry.lb))
