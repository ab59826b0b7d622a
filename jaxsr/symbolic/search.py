"""The one search loop of the symbolic regression: every stop rule, in one place.

A fit is a loop of iterations of an *engine*, the stateful solver that holds the tree and
its arrays on the device and makes one change per iteration: the paper's greedy search
(:class:`~jaxsr.symbolic.strategies.DomeSearch`, section 2.8) or the beam over many
trees (:class:`~jaxsr.symbolic.beam.BeamSearch`). This module is the loop around it,
shaped as init / step / terminate: :class:`SearchState` (a NamedTuple) is what the loop
knows besides the engine, :func:`init` builds it, :func:`step` runs one iteration,
:func:`terminate` decides whether to go on (a :class:`Status`), and :func:`run` drives
them and prunes the final tree. The engine is passed to every function by reference; it
is the only part that changes in place.

Stop rules (paper section 2.8 proposes the first three, SymDoME's limits add the rest),
checked by :func:`terminate` in this order:

1. ``MAX_TIME``: another thread stopped the fit (``max_time`` ran out while an iteration
   was running); the tree is kept as it is, not pruned.
2. Only after an iteration that accepted no change (the strategy's searches and the
   stuck-tree fallback, :meth:`~jaxsr.symbolic.strategies.DomeSearch.unstick`, found
   nothing): ``MAX_TIME`` when the engine timed out inside it, else ``MAX_NODES`` when the
   node cap left no room for the fallback's zero terms (:func:`blocked_by_max_nodes`), else
   ``NO_IMPROVEMENT`` (paper: "the tree could not be improved in the last iteration", with
   ``min_improvement`` the smallest relative reduction that counts).
3. ``GOAL``: the MSE is at or below ``goal_mse`` (paper: "the MSE in the current tree
   reaches the goal value").
4. ``ROUNDING_LEVEL``: the MSE is at or below the engine's rounding floor
   (:func:`~jaxsr.symbolic.front.loss_floor`): no change can be told from rounding.
5. ``MAX_ITERATIONS``: ``max_iterations`` changes were accepted (paper: "the number of
   iterations exceeds a fixed value").
6. ``INFORMATION_CRITERION`` (beyond the paper; off unless ``patience`` is given): the
   tree has grown ``patience`` nodes past the tree of lowest Bayesian information
   criterion ``n log(max(MSE, floor)) + nodes log(n)``
   (:func:`~jaxsr.symbolic.front.information_criterion`) met so far (the criterion of
   ``model_selection="bic"``), which it has not lowered since: on noisy data the law is
   found early and every further node only fits the noise, so the search stops instead of
   running to ``max_nodes`` (the selection would not take those trees anyway).
7. ``MAX_TIME``: the clock passed the deadline (``max_time``) between iterations.

``CONSTANT_TARGET`` (a target with one value: its constant is the exact model) is decided
by the estimator before the loop starts; it is a :class:`Status` so that every stop reason
the estimator reports (``stop_reason_``) is one, read by :attr:`Status.reason`.

Example: the estimator's fit loop by hand (``engine`` a ``DomeSearch`` holding the
starting tree; ``run`` prunes the final tree and reports the pruning as a record)::

    state = init(engine, goal=0.0, max_iterations=None, max_nodes=50, deadline=None,
                 n_pool=3, stopped=lambda: False)
    history = []
    state = run(engine, state, strategy=3, on_record=lambda rec, st: history.append(rec))
    state.status.reason                     # e.g. "rounding level"
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from .front import information_criterion

__all__ = [
    "Status",
    "SearchState",
    "Engine",
    "init",
    "step",
    "terminate",
    "run",
    "blocked_by_max_nodes",
]

Record = dict[str, Any]


class Status(enum.Enum):
    """Why the search loop ended (``RUNNING``: it has not); the value of each stop is the
    estimator's ``stop_reason_`` (:attr:`reason`), and ``Status(reason)`` reads it back."""

    RUNNING = None
    GOAL = "goal"  # MSE <= goal_mse
    ROUNDING_LEVEL = "rounding level"  # MSE <= the rounding floor of the target
    NO_IMPROVEMENT = "no improvement"  # no change passed the acceptance rule
    MAX_NODES = "max_nodes"  # as NO_IMPROVEMENT, but the node cap blocked the fallback
    MAX_ITERATIONS = "max_iterations"  # max_iterations changes accepted
    INFORMATION_CRITERION = "information criterion"  # patience nodes past the lowest BIC
    MAX_TIME = "max_time"  # the deadline passed, or another thread stopped the fit
    CONSTANT_TARGET = "constant target"  # y has one value (decided before the loop)

    @property
    def reason(self) -> str | None:
        """The estimator's ``stop_reason_`` for this status (``None`` for ``RUNNING``)."""
        return self.value


class Engine(Protocol):
    """What the loop uses of an engine (``DomeSearch``, ``BeamSearch``, a test's fake)."""

    expr: Any  # Expression: the current (for a beam: the best) tree; .n_nodes read
    mse: float  # its MSE, in the engine's (scaled) units
    floor: float  # the rounding floor of the MSE, same units

    def timed_out(self) -> bool: ...  # the engine's stop flag or its deadline
    def step(self, strategy: int) -> Record | None: ...  # one change, or None
    def unstick(self, strategy: int) -> Record | None: ...  # the stuck-tree fallback
    def prune(self) -> int: ...  # nodes removed at no cost in MSE


class SearchState(NamedTuple):
    """What the loop knows besides the engine (host scalars; the engine, held by the
    caller and passed by reference, is the stateful device-side solver).

    Attributes:
      iteration: int, the number of changes accepted so far.
      status: :class:`Status`; ``RUNNING`` until a stop rule holds.
      record: dict | None, the record of the last iteration's change (``None`` before the
        first iteration and after one that accepted nothing).
      stuck: bool, the last iteration accepted no change.
      n_pool: int, the variables the search may use (the fallback adds ``4 * n_pool``
        nodes: :func:`blocked_by_max_nodes`).
      goal: float, ``goal_mse`` in the engine's (scaled) units.
      max_iterations: int | None, the cap on accepted changes (``None``: none).
      max_nodes: int | None, the node cap (``None``: none).
      deadline: float | None, the ``time.perf_counter()`` at which ``max_time`` ends.
      stopped: () -> bool, whether another thread stopped the fit.
      n_samples: float | None, the ``n`` of the information criterion (``None``: that
        stop rule is off).
      patience: int | None, nodes past the tree of lowest criterion before the search
        stops (``None``: that stop rule is off).
      best_bic: ``(criterion, nodes)`` of the tree of lowest criterion so far.
    """

    iteration: int
    status: Status
    record: Record | None
    stuck: bool
    n_pool: int
    goal: float
    max_iterations: int | None
    max_nodes: int | None
    deadline: float | None
    stopped: Callable[[], bool]
    n_samples: float | None = None
    patience: int | None = None
    best_bic: tuple[float, int] = (math.inf, 0)


def blocked_by_max_nodes(n_nodes: int, n_pool: int, max_nodes) -> bool:
    """Whether the node cap, not the data, ended a search that found no improvement: the
    stuck-tree fallback's first order of zero terms (``tree + (0*x1 + ... + 0*xp)``,
    ``4 p`` more nodes for ``p`` pool variables) no longer fits ``max_nodes``."""
    return max_nodes is not None and n_pool > 0 and n_nodes + 4 * n_pool > int(max_nodes)


def _track(engine: Engine, state: SearchState) -> SearchState:
    """``state`` with ``best_bic`` updated by the engine's current tree."""
    if state.n_samples is None or state.patience is None:
        return state
    bic = float(
        information_criterion(engine.mse, engine.expr.n_nodes, state.n_samples, engine.floor)
    )
    if bic < state.best_bic[0]:
        return state._replace(best_bic=(bic, int(engine.expr.n_nodes)))
    return state


def init(
    engine: Engine,
    *,
    goal: float,
    max_iterations: int | None,
    max_nodes: int | None,
    deadline: float | None,
    n_pool: int,
    stopped: Callable[[], bool] = lambda: False,
    n_samples: float | None = None,
    patience: int | None = None,
) -> SearchState:
    """The loop's state before its first iteration (``engine`` holds the starting tree;
    it is read only for the information-criterion stop, whose lowest criterion starts at
    that tree).

    Args:
      engine: the engine (:class:`Engine`).
      goal: ``goal_mse`` in the engine's (scaled) units.
      max_iterations: the cap on accepted changes, or ``None``.
      max_nodes: the node cap of the engine's trees, or ``None``.
      deadline: ``time.perf_counter()`` value at which the time budget ends, or ``None``.
      n_pool: the number of variables the search may use.
      stopped: returns True once another thread has stopped the fit.
      n_samples, patience: the information-criterion stop (both given) or ``None``.
    """
    state = SearchState(
        iteration=0,
        status=Status.RUNNING,
        record=None,
        stuck=False,
        n_pool=int(n_pool),
        goal=float(goal),
        max_iterations=max_iterations,
        max_nodes=max_nodes,
        deadline=deadline,
        stopped=stopped,
        n_samples=None if n_samples is None else float(n_samples),
        patience=None if patience is None else int(patience),
    )
    return _track(engine, state)


def terminate(engine: Engine, state: SearchState) -> Status:
    """Every stop rule, in order (module docstring): the state's status once it is not
    ``RUNNING``, else the first rule that holds, else ``RUNNING``."""
    if state.status is not Status.RUNNING:
        return state.status
    if state.stopped():
        return Status.MAX_TIME
    if state.stuck:
        if engine.timed_out():
            return Status.MAX_TIME
        if blocked_by_max_nodes(engine.expr.n_nodes, state.n_pool, state.max_nodes):
            return Status.MAX_NODES
        return Status.NO_IMPROVEMENT
    if engine.mse <= state.goal:
        return Status.GOAL
    if engine.mse <= engine.floor:
        return Status.ROUNDING_LEVEL
    if state.max_iterations is not None and state.iteration >= state.max_iterations:
        return Status.MAX_ITERATIONS
    if (
        state.patience is not None
        and state.n_samples is not None
        and engine.expr.n_nodes - state.best_bic[1] >= state.patience
    ):
        return Status.INFORMATION_CRITERION
    if state.deadline is not None and time.perf_counter() > state.deadline:
        return Status.MAX_TIME
    return Status.RUNNING


def step(engine: Engine, state: SearchState, strategy: int) -> tuple[SearchState, Record | None]:
    """One iteration: the strategy's step (section 2.8), and when it accepts nothing and
    time is left, the stuck-tree fallback. Returns the new state and the record of the
    accepted change (``None`` when none was accepted); the new state's status is decided
    (by :func:`terminate`) when nothing was accepted or another thread stopped the fit,
    in which case a change made meanwhile is not counted."""
    rec = engine.step(strategy)
    if rec is None and not engine.timed_out():
        rec = engine.unstick(strategy)
    if rec is None or state.stopped():
        new = state._replace(record=None, stuck=rec is None)
        return new._replace(status=terminate(engine, new)), None
    return _track(engine, state._replace(iteration=state.iteration + 1, record=rec)), rec


def run(
    engine: Engine,
    state: SearchState,
    strategy: int,
    on_record: Callable[[Record, SearchState], None] | None = None,
) -> SearchState:
    """Iterate until a stop rule holds, then prune the tree (section 2.5's deletion,
    :meth:`~jaxsr.symbolic.strategies.DomeSearch.prune`) unless another thread stopped
    the fit. Returns the final state (its status is not ``RUNNING``).

    Args:
      engine: the engine, at the starting tree.
      state: from :func:`init`.
      strategy: the strategy (1-4) of every iteration.
      on_record: called as ``on_record(record, state)`` after each accepted change
        (``state.iteration`` counts it) and once for the pruning when it removed nodes,
        with the record ``{"search": "prune", "node": 0, "replaced": "", "subtree": "",
        "removed_nodes", "mse_before", "n_nodes_before"}`` (``mse_before`` in the
        engine's units).
    """
    on_record = on_record or (lambda rec, state: None)
    while (status := terminate(engine, state)) is Status.RUNNING:
        state, rec = step(engine, state, strategy)
        if rec is not None:
            on_record(rec, state)
    state = state._replace(status=status)
    if state.stopped():
        return state
    n0, mse0 = engine.expr.n_nodes, engine.mse
    removed = engine.prune()
    if removed:
        on_record(
            {
                "search": "prune",
                "node": 0,
                "replaced": "",
                "subtree": "",
                "removed_nodes": removed,
                "mse_before": mse0,
                "n_nodes_before": n0,
            },
            state,
        )
    return state
