"""The one search loop (jaxsr/symbolic/search.py): each stop rule on a scripted fake
engine, the order of the rules, the status -> ``stop_reason_`` table, and the loop driven
by hand on a real engine against ``SymbolicRegressor.fit``."""

import re
import time
from types import SimpleNamespace

import numpy as np
import pytest

from jaxsr import SymbolicRegressor
from jaxsr.symbolic import search
from jaxsr.symbolic.front import information_criterion
from jaxsr.symbolic.search import Status


class FakeEngine:
    """The surface the loop uses, scripted: ``steps`` and ``unsticks`` are lists of
    ``(record, mse after)`` or ``None`` (nothing accepted), consumed one per call."""

    def __init__(
        self, mse=1.0, floor=1e-20, n_nodes=1, steps=(), unsticks=(), timed_out=False, removes=0
    ):
        self.mse, self.floor = mse, floor
        self.expr = SimpleNamespace(n_nodes=n_nodes)
        self.steps, self.unsticks = list(steps), list(unsticks)
        self.timed = timed_out
        self.removes = removes
        self.calls = []

    def timed_out(self):
        return self.timed

    def _apply(self, script, name):
        self.calls.append(name)
        move = script.pop(0) if script else None
        if move is None:
            return None
        rec, self.mse = move
        self.expr = SimpleNamespace(n_nodes=self.expr.n_nodes + 2)
        return dict(rec)

    def step(self, strategy):
        return self._apply(self.steps, "step")

    def unstick(self, strategy):
        return self._apply(self.unsticks, "unstick")

    def prune(self):
        self.calls.append("prune")
        self.expr = SimpleNamespace(n_nodes=self.expr.n_nodes - self.removes)
        return self.removes


def _state(engine, **kw):
    args = dict(
        goal=0.0,
        max_iterations=None,
        max_nodes=None,
        deadline=None,
        n_pool=2,
        stopped=lambda: False,
    )
    return search.init(engine, **{**args, **kw})


def _rec(i):
    return {"search": "constant", "node": i, "replaced": "", "subtree": ""}


# ------------------------------------------------------------------ terminate: each rule
def test_a_fresh_search_is_running():
    e = FakeEngine()
    s = _state(e)
    assert (s.iteration, s.status, s.record, s.stuck) == (0, Status.RUNNING, None, False)
    assert search.terminate(e, s) is Status.RUNNING


@pytest.mark.parametrize(
    "engine, kw, status",
    [
        (FakeEngine(mse=1e-3), dict(goal=1e-3), Status.GOAL),  # at the goal counts
        (FakeEngine(mse=1e-3, floor=1e-3), {}, Status.ROUNDING_LEVEL),
        (FakeEngine(), dict(max_iterations=0), Status.MAX_ITERATIONS),
        (FakeEngine(), dict(deadline=time.perf_counter() - 1.0), Status.MAX_TIME),
        (FakeEngine(), dict(stopped=lambda: True), Status.MAX_TIME),
    ],
)
def test_each_stop_rule(engine, kw, status):
    assert search.terminate(engine, _state(engine, **kw)) is status


def test_the_information_criterion_stops_patience_nodes_past_its_lowest_tree():
    n = 100.0
    # each change adds 2 nodes; the MSE falls steeply, then only by noise-sized amounts
    mses = [1e-1, 1e-2, 0.99e-2, 0.98e-2, 0.97e-2, 0.96e-2, 0.95e-2, 1e-3, 0.9e-3]
    e = FakeEngine(mse=1.0, n_nodes=1, steps=[(_rec(i), m) for i, m in enumerate(mses)])
    seen = []
    state = search.run(
        e,
        _state(e, n_samples=n, patience=6),
        1,
        lambda rec, st: seen.append((e.expr.n_nodes, e.mse)),
    )
    # lowest criterion at 5 nodes (MSE 1e-2); each later change lowers the MSE by 1%,
    # less than a node's log(n) / n = 4.6%: stopped at 5 + 6 = 11 nodes
    assert state.status is Status.INFORMATION_CRITERION and e.expr.n_nodes == 11
    assert state.best_bic == (pytest.approx(information_criterion(1e-2, 5, n, 1e-20)), 5)
    assert seen[-1] == (11, 0.97e-2)
    # a steep drop inside the patience keeps the search going (and moves the best tree)
    e2 = FakeEngine(
        mse=1.0,
        n_nodes=1,
        steps=[
            (_rec(i), m)
            for i, m in enumerate([1e-1, 1e-2, 0.99e-2, 1e-4, 0.99e-4, 0.98e-4, 0.97e-4, 0.96e-4])
        ],
    )
    s2 = search.run(e2, _state(e2, n_samples=n, patience=6), 1)
    assert s2.status is Status.INFORMATION_CRITERION and s2.best_bic[1] == 9
    assert e2.expr.n_nodes == 15
    # off without patience or n
    for kw in (dict(n_samples=n), dict(patience=6), {}):
        e3 = FakeEngine(mse=1.0, steps=[(_rec(i), m) for i, m in enumerate(mses)])
        assert search.run(e3, _state(e3, **kw), 1).status is Status.NO_IMPROVEMENT


def test_the_iteration_cap_counts_accepted_changes():
    e = FakeEngine()
    s = _state(e, max_iterations=2)
    assert search.terminate(e, s._replace(iteration=1)) is Status.RUNNING
    assert search.terminate(e, s._replace(iteration=2)) is Status.MAX_ITERATIONS


@pytest.mark.parametrize(
    "n_nodes, max_nodes, timed_out, status",
    [
        (5, None, False, Status.NO_IMPROVEMENT),
        (5, 50, False, Status.NO_IMPROVEMENT),  # 5 + 4*2 nodes fit under 50
        (5, 12, False, Status.MAX_NODES),  # the fallback's zero terms do not fit
        (5, 12, True, Status.MAX_TIME),  # the clock, not the cap, ended the fallback
    ],
)
def test_a_stuck_search_names_why(n_nodes, max_nodes, timed_out, status):
    e = FakeEngine(n_nodes=n_nodes, timed_out=timed_out)
    s = _state(e, max_nodes=max_nodes)._replace(stuck=True)
    assert search.terminate(e, s) is status


def test_a_decided_status_stays():
    e = FakeEngine(mse=0.0)
    s = _state(e, stopped=lambda: True)._replace(status=Status.NO_IMPROVEMENT)
    assert search.terminate(e, s) is Status.NO_IMPROVEMENT


# ------------------------------------------------------------------ terminate: the order
@pytest.mark.parametrize(
    "engine, kw, status",
    [
        # the stop by another thread first, whatever else holds
        (FakeEngine(mse=0.0), dict(stopped=lambda: True, max_iterations=0), Status.MAX_TIME),
        # goal before the rounding level, the iteration cap and the deadline
        (FakeEngine(mse=0.0, floor=1.0), dict(max_iterations=0, deadline=0.0), Status.GOAL),
        # the rounding level before the iteration cap and the deadline
        (
            FakeEngine(mse=1.0, floor=1.0),
            dict(max_iterations=0, deadline=0.0),
            Status.ROUNDING_LEVEL,
        ),
        # the iteration cap before the deadline
        (FakeEngine(), dict(max_iterations=0, deadline=0.0), Status.MAX_ITERATIONS),
    ],
)
def test_the_order_of_the_rules(engine, kw, status):
    assert search.terminate(engine, _state(engine, **kw)) is status


def test_after_a_stuck_step_the_stop_by_another_thread_comes_first():
    e = FakeEngine(n_nodes=5, timed_out=True)
    s = _state(e, max_nodes=12, stopped=lambda: True)._replace(stuck=True)
    assert search.terminate(e, s) is Status.MAX_TIME


# ------------------------------------------------------------------ step
def test_step_counts_an_accepted_change():
    e = FakeEngine(steps=[(_rec(3), 0.5)])
    s, rec = search.step(e, _state(e), 1)
    assert rec == _rec(3) and s.record == rec and s.iteration == 1
    assert s.status is Status.RUNNING and not s.stuck and e.calls == ["step"]


def test_step_falls_back_to_unstick_and_stops_when_both_find_nothing():
    e = FakeEngine(steps=[None], unsticks=[(_rec(0), 0.5)])
    s, rec = search.step(e, _state(e), 3)
    assert rec == _rec(0) and s.iteration == 1 and e.calls == ["step", "unstick"]
    s, rec = search.step(e, s, 3)
    assert rec is None and s.stuck and s.iteration == 1
    assert s.status is Status.NO_IMPROVEMENT and e.calls[-2:] == ["step", "unstick"]


def test_step_skips_the_fallback_once_timed_out():
    e = FakeEngine(steps=[None], unsticks=[(_rec(0), 0.5)], timed_out=True)
    s, rec = search.step(e, _state(e), 3)
    assert rec is None and s.status is Status.MAX_TIME and e.calls == ["step"]


def test_a_change_made_after_a_stop_by_another_thread_is_not_counted():
    e = FakeEngine(steps=[(_rec(1), 0.5)])
    s, rec = search.step(e, _state(e, stopped=lambda: True), 1)
    assert rec is None and s.iteration == 0 and s.status is Status.MAX_TIME


# ------------------------------------------------------------------ run
def test_run_records_each_change_then_the_pruning():
    e = FakeEngine(mse=1.0, steps=[(_rec(1), 0.5), (_rec(2), 0.25)], removes=2)
    seen = []
    s = search.run(e, _state(e), 1, lambda rec, state: seen.append((rec, state.iteration)))
    assert s.status is Status.NO_IMPROVEMENT and s.iteration == 2
    assert seen[:2] == [(_rec(1), 1), (_rec(2), 2)]
    prune, it = seen[2]
    assert it == 2 and prune == {
        "search": "prune",
        "node": 0,
        "replaced": "",
        "subtree": "",
        "removed_nodes": 2,
        "mse_before": 0.25,
        "n_nodes_before": 5,
    }
    assert e.calls == ["step", "step", "step", "unstick", "prune"]


@pytest.mark.parametrize(
    "kw, status", [(dict(goal=0.5), Status.GOAL), (dict(max_iterations=1), Status.MAX_ITERATIONS)]
)
def test_run_prunes_after_every_rule_but_a_stop_by_another_thread(kw, status):
    e = FakeEngine(steps=[(_rec(1), 0.5)], removes=0)
    seen = []
    s = search.run(e, _state(e, **kw), 1, lambda rec, state: seen.append(rec))
    assert s.status is status and e.calls[-1] == "prune"
    assert seen == [_rec(1)]  # nothing removed: no prune record
    e = FakeEngine(steps=[(_rec(1), 0.5)], removes=2)
    flag = []
    s = search.run(e, _state(e, stopped=lambda: bool(flag)), 1, lambda rec, state: flag.append(1))
    assert s.status is Status.MAX_TIME and "prune" not in e.calls and s.iteration == 1


# ------------------------------------------------------------------ status -> reason
def test_every_documented_stop_reason_is_a_status():
    doc = SymbolicRegressor.__doc__
    block = re.search(r"stop_reason_:(.*?)\n\s*\w+_:", doc, re.S).group(1)
    documented = set(re.findall(r'``"([^"]+)"``', block))
    reasons = {s.reason for s in Status if s is not Status.RUNNING}
    assert documented and documented <= reasons
    assert len(reasons) == len(Status) - 1 and Status.RUNNING.reason is None
    for s in Status:
        assert Status(s.reason) is s
    assert Status.MAX_NODES.reason == "max_nodes"  # reported, see test_sr_user_guards


# ------------------------------------------------------------------ a real fit
@pytest.mark.parametrize("beam_width", [1, 2])
def test_the_loop_by_hand_is_the_estimators_fit(beam_width):
    """``search.run`` on an engine built as the estimator builds it gives the estimator's
    history, tree and stop reason, for the greedy engine and the beam's adapter."""
    from jaxsr.symbolic import beam
    from jaxsr.symbolic.strategies import DomeSearch

    x1 = np.arange(1.0, 101.0)
    x2 = np.arange(200.0, 0.0, -2.0)
    X, y = np.c_[x1, x2], 2.4 * x1 - x2 / x1 - 10
    kw = dict(
        strategy=3,
        max_nodes=13,
        max_iterations=6,
        min_improvement=1e-6,
        max_height=None,
        domain="box",
        beam_width=beam_width,
        progress=False,
        rational_start=False,
    )
    sr = SymbolicRegressor(**kw).fit(X, y)

    XT, yj, wj = sr._device_data(X, y, None, np.float64)
    pool = np.arange(XT.shape[0]) < X.shape[1]  # the padding columns are not variables
    engine = DomeSearch(
        XT,
        yj,
        pool,
        max_nodes=13,
        max_height=None,
        min_improvement=1e-6,
        feature_names=None,
        weights=wj,
        domain="box",
    )
    if beam_width > 1:
        engine = beam.BeamSearch(engine, beam_width)
    rows = []

    def record(rec, state):
        rows.append(
            {
                "iteration": state.iteration,
                **rec,
                "expression": engine.expr.to_string(),
                "n_nodes": engine.expr.n_nodes,
            }
        )

    state = search.init(engine, goal=0.0, max_iterations=6, max_nodes=13, deadline=None, n_pool=2)
    state = search.run(engine, state, 3, record)

    keys = ("iteration", "search", "node", "subtree", "expression", "n_nodes")
    assert [[r[k] for k in keys] for r in rows] == [[h[k] for k in keys] for h in sr.history_]
    assert state.status.reason == sr.stop_reason_
    assert engine.expr.to_string() == sr.history_[-1]["expression"]
    assert state.iteration == sr.n_iterations_
