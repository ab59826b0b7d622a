"""Beam search over many trees on the paper's node equations (beyond the paper).

The paper's method (section 2.8) is greedy: one tree, one change per iteration, the change
of largest predicted MSE reduction that is accepted. A beam of width ``B`` keeps the ``B``
best *distinct* trees instead:

1. every tree of the beam runs the searches of its strategy (stage by stage for strategies
   3 and 4: a tree moves to the next stage only if no candidate of the previous one is
   accepted, exactly as in :class:`~jaxsr.symbolic.strategies.DomeSearch`), all trees in
   one call per stage where it pays (:func:`search_many`);
2. each tree offers up to ``B`` accepted children: its candidates in the paper's order
   (largest predicted reduction first), the first ``B + MAX_TRIES - 1`` checked by their
   true MSE with the acceptance rule of ``DomeSearch`` (lower by more than
   ``max(min_improvement * MSE, floor)``, no zero denominator, no pole, finite);
3. the next beam is the ``B`` best distinct children of the union (on a search sample,
   :mod:`jaxsr.symbolic.sampling`, only those that beat their parent on all rows too),
   ordered by (true MSE to :data:`ORDER_DIGITS` significant digits, nodes, canonical
   text); for strategies 2
   and 3 the constants of each chosen child are then optimised (section 2.6 and the
   joint polish, as ``DomeSearch``) and the beam is de-duplicated and re-ordered once
   more.

Two trees are the same if their canonical text is equal (``+`` and ``*`` operands sorted)
or if their root semantics agree on every training pattern to 12 significant digits of
the target's scale: such trees are one point of the semantic space (e.g.
``(x1 * x2) / x3`` and ``x1 * (x2 / x3)``) and would only waste beam slots.

With ``B = 1`` every step is the paper's: one tree, its first accepted candidate, then the
strategy's constant optimisation (tested against ``DomeSearch`` in
``tests/symbolic/test_sr_beam.py``); the estimator does not even enter this module then.
Every tree that enters the beam is a model of the fit's Pareto front (``equations_`` is
built from their union). The best tree met so far is the fit's result; it never gets
worse, although the beam's best may (when the best tree is stuck and others are not).

State and loop follow the library's init / step / terminate shape: :class:`BeamState`
(NamedTuple), :func:`beam_init`, :func:`beam_step`, :func:`beam_terminate` (a
:class:`BeamStatus`); :class:`BeamSearch` adapts them to the one fit loop of the
estimator (:func:`jaxsr.symbolic.search.run`, which owns every stop rule).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import jax
import numpy as np

from .._config import program, to_device
from .._sharding import device_get, to_host
from .expression import ADD, CONST, MUL, UNARY_NAMES, Expression, capacity_bucket
from .front import FrontModel
from .searches import search_all
from .semantics import node_semantics, tree_output
from .strategies import MAX_TRIES, Candidate, DomeSearch, _analyse, _check

__all__ = [
    "BeamStatus",
    "BeamMember",
    "BeamState",
    "BeamSearch",
    "beam_init",
    "beam_step",
    "beam_terminate",
    "strategy_stages",
    "canonical_text",
    "search_many",
    "BATCH_TREES",
]

BATCH_TREES = None
"""Run the searches of all trees of a stage as one vmapped call (``True``), one call per
tree (``False``), or choose by backend (``None``: batched on accelerators; on a CPU one
tree already fills the core and ``jax.vmap`` turns the searches' branches (``lax.cond``)
into selects that evaluate every branch, so trees run one after the other, and no new
kernels are compiled)."""

MIN_WIDTH = 2
"""The estimator runs the beam for ``beam_width >= MIN_WIDTH``; below, the paper's loop
itself (the tests set it to 1 to check that the beam of width 1 is that loop)."""

CHECK_CHUNK = 16  # candidate trees checked per call (one compiled kernel per capacity)
SEMANTIC_DIGITS = 12  # root semantics equal to this many digits of the target scale: same tree


class BeamStatus(IntEnum):
    """Why the beam stops: ``RUNNING`` (not yet), ``STUCK`` (no tree of the beam has an
    accepted change)."""

    RUNNING = 0
    STUCK = 1


class BeamMember(NamedTuple):
    """One tree of the beam."""

    expression: Expression
    mse: float  # true training MSE (the search's units)
    record: dict | None  # the change that made it (as DomeSearch.step's record)


class BeamState(NamedTuple):
    """State of a beam search (host side)."""

    members: tuple[BeamMember, ...]  # the beam, best first (at most ``width``)
    best: BeamMember  # best tree met so far (the fit's result)
    iteration: int  # steps taken
    status: BeamStatus
    front: tuple[FrontModel, ...]  # every tree that entered the beam after the start


def strategy_stages(strategy: int):
    """``(stages, optimise)`` of a strategy (section 2.8): the search specs of each stage
    (a tree goes to the next stage only if the previous one accepted nothing; strategy 4's
    stage 0 is its constant refinement, whose change ends the iteration) and whether the
    constants are optimised after a change (strategies 2, 3). Mirrors
    :meth:`DomeSearch.step`."""
    s3 = [
        [("variable", "const")],
        [("constant-expression", "nonterminal")],
        [("constant-variable", "terminal")],
        [
            ("constant", "var_nonterminal"),
            ("variable", "var_nonterminal"),
            ("constant-variable", "nonterminal"),
        ],
    ]
    if strategy == 1:
        return [
            [
                ("constant", "all"),
                ("variable", "all"),
                ("constant-variable", "all"),
                ("constant-expression", "nonterminal"),
            ]
        ], False
    if strategy == 2:
        return [
            [
                ("constant", "var_nonterminal"),
                ("variable", "all"),
                ("constant-variable", "all"),
                ("constant-expression", "nonterminal"),
            ]
        ], True
    if strategy == 3:
        return s3, True
    if strategy == 4:
        return [[("constant", "const")]] + s3, False
    raise ValueError(f"strategy must be 1, 2, 3 or 4; got {strategy!r}")


def canonical_text(expr: Expression) -> str:
    """Fully parenthesised text with the operands of ``+`` and ``*`` sorted (constants by
    ``repr``): equal for trees that differ only by commuting operands. Built bottom-up
    without recursion (:meth:`Expression._fold`), so any height works."""

    def leaf(i, code):
        if code == CONST:
            return repr(float(expr.value[i]))
        return f"x{int(expr.feature[i]) + 1}"

    def binary(code, a, b):
        if code in (ADD, MUL) and b < a:
            a, b = b, a
        return f"({a} {code} {b})"

    return expr._fold(leaf, lambda code, a: f"{UNARY_NAMES[code]}({a})", binary)


# ------------------------------------------------------------------------- batched kernels
@program(static_argnames=("n_slots",))
def _search_batch(trees, XT, y, weights, masks, var_mask, max_nodes, max_height, n_slots):
    def one(tree, m):
        sem, eqs, S = _analyse(tree, XT, y, n_slots, weights)
        return search_all(tree, sem, eqs, S, XT, m, var_mask, max_nodes, max_height)

    return jax.vmap(one)(trees, masks)


@program(static_argnames=("vmap",))
def _check_batch(trees, XT, y, weights, vmap=True):
    def one(tree):
        mse, ok = _check(tree, XT, y, weights)
        return mse, ok, node_semantics(tree, XT)[0]

    # the semantics kernel branches on unary nodes (lax.cond); jax.vmap would turn that
    # into a select evaluating every unary function at every node, so on a CPU the trees
    # go one after the other (lax.map: the branches stay branches)
    return jax.vmap(one)(trees) if vmap else jax.lax.map(one, trees)


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *trees)


def _batch_bucket(n: int) -> int:
    b = 1
    while b < n:
        b *= 2
    return b


def _use_batch() -> bool:
    return BATCH_TREES if BATCH_TREES is not None else jax.default_backend() != "cpu"


def search_many(
    engine: DomeSearch, exprs, mses, specs, k: int | None = None
) -> list[list[Candidate]]:
    """The ``k`` best successful candidates of ``specs`` for each tree of ``exprs`` (best
    first, as :meth:`DomeSearch.candidates`; ``None``: all). With :data:`BATCH_TREES` the
    trees, padded to one capacity bucket and the batch to a power of two, are searched by
    one vmapped call of the existing kernels (analysis + :func:`~jaxsr.symbolic.search_all`);
    otherwise one call per tree. ``engine`` is left holding the last tree."""
    out = []
    if not _use_batch() or len(exprs) == 1:
        for e, m in zip(exprs, mses, strict=True):
            _load(engine, e, m)
            out.append(engine.candidates(specs, k))
        return out
    for e in exprs:
        engine._fit_capacity(e)
    cap = engine.capacity
    trees, masks = [], []
    for e, m in zip(exprs, mses, strict=True):
        _load(engine, e, m)
        trees.append(engine._tree(e))
        masks.append(engine.search_masks(specs, cap))
    nb = _batch_bucket(len(trees))
    trees += [trees[-1]] * (nb - len(trees))
    masks += [np.zeros_like(masks[-1])] * (nb - len(masks))
    mn, mh = engine.limits()
    res = _search_batch(
        _stack(trees),
        engine.XT,
        engine.y,
        engine.weights,
        to_device(np.stack(masks)),
        engine.var_mask,
        mn,
        mh,
        n_slots=engine.n_slots,
    )
    for i, (e, m) in enumerate(zip(exprs, mses, strict=True)):
        _load(engine, e, m)
        found = engine.best_of(jax.tree_util.tree_map(lambda a, i=i: a[i], res), k)
        if engine.unary_search is not None:  # the move p -> u(p) (unary.py), per tree
            found = engine.unary_search.merge(engine, found, masks[i], engine.analyse())
        out.append(found)
    return out


def check_many(engine: DomeSearch, trees):
    """True MSE, validity (``DomeSearch``'s ``_check``) and root semantic of padded trees
    of one capacity, in chunks of :data:`CHECK_CHUNK` trees (the last one padded, so
    one kernel per capacity serves every beam width): ``(mse (T,), ok (T,), out (T, N))``
    host arrays."""
    T = len(trees)
    res = []
    for i in range(0, T, CHECK_CHUNK):
        part = trees[i : i + CHECK_CHUNK]
        part = part + [part[-1]] * (CHECK_CHUNK - len(part))
        res.append(
            device_get(
                _check_batch(_stack(part), engine.XT, engine.y, engine.weights, vmap=_use_batch())
            )
        )
    return tuple(np.concatenate([r[k] for r in res])[:T] for k in range(3))


def _load(engine: DomeSearch, expr: Expression, mse: float) -> None:
    engine.expr, engine.mse, engine._cache = expr, float(mse), None


def _record(engine: DomeSearch, c: Candidate, new_sub: Expression) -> dict:
    """The record of an accepted candidate, as :meth:`DomeSearch.try_apply` writes it."""
    return {
        "search": c.search,
        "node": c.node,
        "replaced": engine.expr.subtree(c.node).to_string(engine.names),
        "subtree": new_sub.to_string(engine.names),
        "predicted_reduction": c.reduction,
    }


def _children(engine: DomeSearch, member: BeamMember, cands: list[Candidate], width: int):
    """Up to ``width`` accepted children of ``member`` from its ordered candidates.

    ``width == 1``: the paper's :meth:`DomeSearch.try_apply` (the first of the first
    ``MAX_TRIES`` candidates that is accepted, checked one by one). Otherwise the first
    ``width + MAX_TRIES - 1`` candidates are checked together (one batched call) and the
    accepted ones kept in candidate order. Returns ``[(BeamMember, root semantic or None)]``.
    """
    _load(engine, member.expression, member.mse)
    if width == 1:  # DomeSearch.try_apply, without changing the engine's tree
        found = engine.first_accepted(cands)
        if found is None:
            return []
        c, sub, new, mse = found
        return [(BeamMember(new, mse, _record(engine, c, sub)), None)]
    trials = []
    for c in cands[: width + MAX_TRIES - 1]:
        sub = engine.subtree_of(c)
        new = engine.expr.replace(c.node, sub)
        if new.n_nodes > engine.max_nodes and c.search in (
            "constant-variable",
            "constant-expression",
            "unary",
        ):
            continue
        trials.append((c, sub, new))
    if not trials:
        return []
    cap = max(engine.capacity, capacity_bucket(max(t[2].n_nodes for t in trials)))
    trees = [t[2].padded(cap, engine.dtype) for t in trials]
    mse, ok, out = check_many(engine, trees)
    kids = []
    for i, (c, sub, new) in enumerate(trials):
        # the batched check covers the training rows; the domain proof (domain="box")
        # runs only for a tree that passes everything else
        if engine.accepts(float(mse[i]), bool(ok[i])) and engine.in_domain(new):
            kids.append(
                (BeamMember(new, float(mse[i]), _record(engine, c, sub)), np.asarray(out[i]))
            )
            if len(kids) == width:
                break
    return kids


class _Distinct:
    """Keys of the trees already taken: canonical text and rounded root semantics."""

    def __init__(self, scale: float, n: int):
        self.texts: set[str] = set()
        self.sems: set[bytes] = set()
        self.q = 10.0**SEMANTIC_DIGITS / max(scale, np.finfo(np.float64).tiny)
        self.n = n

    def add(self, expr: Expression, sem) -> bool:
        """True (and remembered) if ``expr`` is new."""
        text = canonical_text(expr)
        key = None
        if sem is not None:
            with np.errstate(all="ignore"):
                key = np.round(np.asarray(sem, np.float64)[: self.n] * self.q).tobytes()
        if text in self.texts or (key is not None and key in self.sems):
            return False
        self.texts.add(text)
        if key is not None:
            self.sems.add(key)
        return True


ORDER_DIGITS = 12
"""Significant digits of the MSE that order the beam: trees whose MSEs agree to these
digits (``x1*x2`` and ``x2*x1``, whose sums differ only in the order of summation, which
a mesh of devices changes) are ordered by nodes, then canonical text, so the beam is the
same on one device and on several."""


def _order_key(m: BeamMember):
    mse = float(f"{m.mse:.{ORDER_DIGITS - 1}e}") if np.isfinite(m.mse) else m.mse
    return (mse, m.expression.n_nodes, canonical_text(m.expression))


# ------------------------------------------------------------------------- init/step/terminate
def beam_init(engine: DomeSearch, width: int) -> BeamState:
    """A beam holding the engine's current tree (its starting tree)."""
    if int(width) < 1:
        raise ValueError(f"beam_width must be an integer >= 1; got {width!r}")
    m = BeamMember(engine.expr, float(engine.mse), None)
    return BeamState((m,), m, 0, BeamStatus.RUNNING, ())


def _semantic(engine: DomeSearch, expr: Expression):
    cap = max(engine.capacity, capacity_bucket(expr.n_nodes))
    return to_host(tree_output(expr.padded(cap, engine.dtype), engine.XT))


def beam_step(engine: DomeSearch, state: BeamState, strategy: int, width: int):
    """One iteration of the beam: ``(new state, record of the new best-of-beam or None)``.

    The record is :meth:`DomeSearch.step`'s for that tree (search, node, replaced,
    subtree, predicted_reduction, and the constant-optimisation fields), plus
    ``beam_parent`` (rank of its parent in the previous beam) and ``beam_size`` when
    ``width > 1``. A state whose ``status`` is not ``RUNNING`` is returned unchanged.
    """
    if state.status != BeamStatus.RUNNING:
        return state, None
    width = int(width)
    stages, optimise = strategy_stages(strategy)
    pending = list(range(len(state.members)))
    kids: list[tuple[int, BeamMember, object]] = []  # parent rank, child, root semantic
    for specs in stages:
        if not pending or engine.timed_out():
            break
        members = [state.members[i] for i in pending]
        cands = search_many(
            engine,
            [m.expression for m in members],
            [m.mse for m in members],
            specs,
            width + MAX_TRIES - 1,
        )
        still = []
        for rank, m, cs in zip(pending, members, cands, strict=True):
            got = _children(engine, m, cs, width)
            if got:
                kids += [(rank, k, sem) for k, sem in got]
            else:
                still.append(rank)
            if engine.timed_out():
                break
        pending = still
    if not kids:
        _load(engine, state.best.expression, state.best.mse)
        return state._replace(status=BeamStatus.STUCK), None

    n = int(engine.y.shape[0])
    scale = float(np.sqrt(np.mean(np.asarray(to_host(engine.y), np.float64) ** 2)))
    seen = _Distinct(scale, n)
    kids.sort(key=lambda t: (*_order_key(t[1]), t[0]))
    chosen = []
    for rank, k, sem in kids:
        # on a search sample, a child enters only if it beats its parent on all rows too
        if seen.add(k.expression, sem) and engine.verified(
            k.expression, state.members[rank].expression
        ):
            chosen.append((rank, k))
        if len(chosen) == width:
            break
    if not chosen:  # every child failed on all rows (search sample)
        _load(engine, state.best.expression, state.best.mse)
        return state._replace(status=BeamStatus.STUCK), None

    if optimise:
        done, seen = [], _Distinct(scale, n)
        for rank, k in chosen:
            if engine.timed_out():
                done.append((rank, k))
                continue
            _load(engine, k.expression, k.mse)
            rec = dict(k.record)
            engine._optimise_into(rec)
            k = BeamMember(engine.expr, float(engine.mse), rec)
            sem = _semantic(engine, k.expression) if width > 1 else None
            if width == 1 or seen.add(k.expression, sem):
                done.append((rank, k))
        done.sort(key=lambda t: (*_order_key(t[1]), t[0]))
    else:
        done = list(chosen)

    members = []
    for rank, k in done:
        rec = dict(k.record)
        if width > 1:
            rec["beam_parent"] = rank
            rec["beam_size"] = len(done)
        members.append(k._replace(record=rec))
    it = state.iteration + 1
    best = members[0] if members[0].mse < state.best.mse else state.best
    front = state.front + tuple(FrontModel(m.expression, m.mse, it) for m in members)
    _load(engine, best.expression, best.mse)
    new = BeamState(tuple(members), best, it, BeamStatus.RUNNING, front)
    return new, members[0].record


def beam_terminate(state: BeamState) -> BeamStatus:
    """The state's status (``RUNNING`` while some tree of the beam can still change)."""
    return state.status


class BeamSearch:
    """The beam behind the estimator's fit loop: the interface of
    :class:`DomeSearch` that loop uses (``step``, ``unstick``, ``prune``, ``expr``,
    ``mse``, ``floor``, ``timed_out``, ``stop``), with ``expr``/``mse`` the best tree met.

    Args:
      engine: the fit's :class:`DomeSearch` (holding the starting tree); it is reused
        for every tree of the beam.
      width: the beam width ``B >= 1``.
    """

    def __init__(self, engine: DomeSearch, width: int):
        self.engine = engine
        self.width = int(width)
        self.state = beam_init(engine, self.width)

    # the loop reads and writes these on the engine
    @property
    def expr(self) -> Expression:
        return self.state.best.expression

    @property
    def mse(self) -> float:
        return self.state.best.mse

    @property
    def floor(self) -> float:
        return self.engine.floor

    @property
    def stop(self) -> bool:
        return self.engine.stop

    @stop.setter
    def stop(self, value: bool) -> None:
        self.engine.stop = value

    @property
    def front_models(self) -> tuple[FrontModel, ...]:
        return self.state.front

    def timed_out(self) -> bool:
        return self.engine.timed_out()

    def step(self, strategy: int):
        """One beam iteration; the record of the change that made the new beam's best
        tree (with ``beam_mse``, that tree's MSE, when ``width > 1``: ``expr``/``mse``
        stay the best tree met, which that tree may not beat), or ``None`` when stuck."""
        self.state, rec = beam_step(self.engine, self.state, strategy, self.width)
        if rec is not None and self.width > 1:
            rec = dict(rec, beam_mse=float(self.state.members[0].mse))
        return rec

    def unstick(self, strategy: int):
        """The stuck-tree fallback of :meth:`DomeSearch.unstick` on the best tree; the
        beam restarts from its result."""
        _load(self.engine, self.state.best.expression, self.state.best.mse)
        rec = self.engine.unstick(strategy)
        if rec is None:
            return None
        if self.width > 1:  # the beam restarts from this one tree: its record says so
            rec = dict(rec, beam_parent=0, beam_size=1, beam_mse=float(self.engine.mse))
        m = BeamMember(self.engine.expr, float(self.engine.mse), rec)
        it = self.state.iteration + 1
        self.state = BeamState(
            (m,),
            m,
            it,
            BeamStatus.RUNNING,
            self.state.front + (FrontModel(m.expression, m.mse, it),),
        )
        return rec

    def prune(self) -> int:
        _load(self.engine, self.state.best.expression, self.state.best.mse)
        removed = self.engine.prune()
        if removed:
            m = BeamMember(self.engine.expr, float(self.engine.mse), None)
            self.state = self.state._replace(best=m)
        return removed
