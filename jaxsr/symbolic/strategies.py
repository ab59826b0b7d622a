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
the passes until one changes nothing.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .equations import forbidden_sets, node_equations
from .expression import CONST, DIV, VAR, Expression, capacity_bucket
from .searches import CE_OPS, CV_OPS, NO_LIMIT, search_all
from .semantics import _count, node_semantics

__all__ = ["DomeSearch", "SEARCH_NAMES", "MAX_TRIES", "slot_bucket"]

SEARCH_NAMES = ("constant", "variable", "constant-variable", "constant-expression")
MAX_TRIES = 8
_MAX_OPT_PASSES = 100


def slot_bucket(n: int) -> int:
    """Number of forbidden-set slots for ``n`` needed ones: a power of two ``>= 2``."""
    k = 2
    while k < n:
        k *= 2
    return k


@functools.partial(jax.jit, static_argnames=("n_slots",))
def _analyse(tree, XT, y, n_slots):
    _count("analyse")
    sem = node_semantics(tree, XT)
    eqs = node_equations(tree, sem, y)
    S = forbidden_sets(tree, sem, n_slots)
    return sem, eqs, S


@jax.jit
def _check(tree, XT, y):
    """MSE of a tree and whether it is valid: finite everywhere, no zero denominator."""
    _count("check")
    sem = node_semantics(tree, XT)
    real = jnp.arange(tree.op.shape[0]) < tree.n_nodes
    finite = jnp.all(jnp.isfinite(sem) | ~real[:, None])
    den_zero = jnp.any((sem[tree.right] == 0) & ((tree.op == DIV) & real)[:, None])
    mse = jnp.mean((sem[0] - y) ** 2)
    return mse, finite & ~den_zero & jnp.isfinite(mse)


@dataclass
class Candidate:
    reduction: float
    search: str
    node: int
    variable: int = -1
    op: int = -1
    constant: float = float("nan")


class DomeSearch:
    """Host-side driver of one fit (not part of the public API).

    Args:
      XT: ``(M, N)`` float array (device), y: ``(N,)``.
      var_mask: bool ``(M,)``, variables in the pool.
      max_nodes, max_height: ints or ``None``; min_improvement: float.
    """

    def __init__(self, XT, y, var_mask, *, max_nodes, max_height, min_improvement,
                 feature_names, deadline=None):
        self.XT = XT
        self.y = y
        self.var_mask = jnp.asarray(var_mask)
        self.max_nodes = NO_LIMIT if max_nodes is None else int(max_nodes)
        self.max_height = NO_LIMIT if max_height is None else int(max_height)
        self.min_improvement = float(min_improvement)
        self.names = feature_names
        self.deadline = deadline
        self.dtype = np.dtype(y.dtype)
        self.expr = Expression.constant(float(np.mean(np.asarray(y, np.float64))))
        self.capacity = capacity_bucket(3)
        self.n_slots = 2
        self._cache = None
        self.mse = self._true_mse(self.expr)[0]
        self.n_const_updates = 0

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
        # the current tree never meet arrays of another bucket (issue 7, item 5)
        cap = max(self.capacity, capacity_bucket(expr.n_nodes))
        mse, ok = _check(expr.padded(cap, self.dtype), self.XT, self.y)
        return float(mse), bool(ok)

    def analyse(self):
        if self._cache is None:
            self._fit_capacity(self.expr)
            tree = self._tree(self.expr)
            sem, eqs, S = _analyse(tree, self.XT, self.y, self.n_slots)
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
        return {
            "all": real,
            "const": op == CONST,
            "var": op == VAR,
            "nonterminal": op > VAR,
            "terminal": (op == CONST) | (op == VAR),
            "var_nonterminal": (op == VAR) | (op > VAR),
        }

    def threshold(self) -> float:
        return max(self.min_improvement * self.mse, 0.0)

    # ---------------------------------------------------------------- searches
    def candidates(self, specs) -> list[Candidate]:
        """Run the searches ``specs`` (list of ``(search name, node mask)``; a mask is a
        name of :meth:`masks` or a bool array over the nodes of the current tree) and
        return the successful candidates, best first (deterministic order). Masks are
        built here, at the capacity of the analysis they are used with."""
        tree, sem, eqs, S = self.analyse()
        cap = tree.op.shape[0]
        named = self.masks(cap)
        mn, mh = jnp.int32(min(self.max_nodes, NO_LIMIT)), jnp.int32(min(self.max_height,
                                                                        NO_LIMIT))
        thr = self.threshold()
        masks = np.zeros((len(SEARCH_NAMES), cap), bool)
        for name, mask in specs:
            if name not in SEARCH_NAMES:
                raise ValueError(f"unknown search {name!r}")
            if isinstance(mask, str):
                mask = named[mask]
            mask = np.asarray(mask, bool)
            masks[SEARCH_NAMES.index(name), : mask.shape[0]] = mask[:cap]
        res = jax.device_get(search_all(tree, sem, eqs, S, self.XT, jnp.asarray(masks),
                                        self.var_mask, mn, mh))
        found: list[tuple] = []
        for name, _ in specs:
            order = SEARCH_NAMES.index(name)
            if name == "constant":
                red, k = res.constant, res.constant_k
                for j in np.flatnonzero(red > thr):
                    found.append((red[j], order, j, Candidate(float(red[j]), name, int(j),
                                                              constant=float(k[j]))))
            elif name == "variable":
                red = res.variable
                for flat in np.flatnonzero(red.ravel() > thr):
                    j, m = np.unravel_index(flat, red.shape)
                    found.append((red[j, m], order, flat,
                                  Candidate(float(red[j, m]), name, int(j), variable=int(m))))
            elif name == "constant-variable":
                red, k = res.constant_variable, res.constant_variable_k
                for flat in np.flatnonzero(red.ravel() > thr):
                    j, m, o = np.unravel_index(flat, red.shape)
                    found.append((red[j, m, o], order, flat,
                                  Candidate(float(red[j, m, o]), name, int(j), int(m),
                                            CV_OPS[o], float(k[j, m, o]))))
            else:
                red, k = res.constant_expression, res.constant_expression_k
                for flat in np.flatnonzero(red.ravel() > thr):
                    j, o = np.unravel_index(flat, red.shape)
                    found.append((red[j, o], order, flat,
                                  Candidate(float(red[j, o]), name, int(j), op=CE_OPS[o],
                                            constant=float(k[j, o]))))
        found.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [t[3] for t in found]

    def subtree_of(self, c: Candidate) -> Expression:
        if c.search == "constant":
            return Expression.constant(c.constant)
        if c.search == "variable":
            return Expression.variable(c.variable)
        if c.search == "constant-variable":
            return Expression.binary(c.op, Expression.constant(c.constant),
                                     Expression.variable(c.variable))
        return Expression.binary(c.op, Expression.constant(c.constant),
                                 self.expr.subtree(c.node))

    def try_apply(self, cands: list[Candidate]):
        """Apply the first candidate whose true MSE is lower; return a record or None."""
        for c in cands[:MAX_TRIES]:
            new_sub = self.subtree_of(c)
            new = self.expr.replace(c.node, new_sub)
            if new.n_nodes > self.max_nodes and c.search in ("constant-variable",
                                                             "constant-expression"):
                continue
            mse, ok = self._true_mse(new)
            if ok and mse < self.mse:
                old = self.expr.subtree(c.node).to_string(self.names)
                self.expr, self.mse, self._cache = new, mse, None
                return {
                    "search": c.search,
                    "node": c.node,
                    "replaced": old,
                    "subtree": new_sub.to_string(self.names),
                    "predicted_reduction": c.reduction,
                }
        return None

    def search_and_apply(self, specs):
        return self.try_apply(self.candidates(specs))

    def timed_out(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    # ---------------------------------------------------------------- section 2.6
    def optimise_constants(self) -> int:
        """Cyclic constant optimisation; returns the number of constants changed."""
        changes = 0
        for _ in range(_MAX_OPT_PASSES):
            changed = False
            const_nodes = np.flatnonzero(self.expr.op == CONST)
            for j in const_nodes:
                if self.mse <= 0.0 or self.timed_out():
                    return changes
                mask = np.zeros(self.expr.n_nodes, bool)
                mask[j] = True
                (cand,) = self.candidates([("constant", mask)]) or (None,)
                red_j = -np.inf if cand is None else cand.reduction
                k_j = np.nan if cand is None else cand.constant
                if red_j > self.threshold():
                    new = self.expr.with_constant(int(j), k_j)
                    mse, ok = self._true_mse(new)
                    if ok and mse < self.mse:
                        self.expr, self.mse, self._cache = new, mse, None
                        changed = True
                        changes += 1
            if not changed:
                break
        self.n_const_updates += changes
        return changes

    # ---------------------------------------------------------------- section 2.8
    def step(self, strategy: int):
        """One iteration of ``strategy`` (1-4); a record dict or ``None`` (no change)."""
        if strategy == 1:
            return self.search_and_apply([
                ("constant", "all"), ("variable", "all"),
                ("constant-variable", "all"), ("constant-expression", "nonterminal"),
            ])
        if strategy == 2:
            rec = self.search_and_apply([
                ("constant", "var_nonterminal"), ("variable", "all"),
                ("constant-variable", "all"), ("constant-expression", "nonterminal"),
            ])
            if rec is not None:
                rec["constants_optimised"] = self.optimise_constants()
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
            [("constant", "var_nonterminal"), ("variable", "var_nonterminal"),
             ("constant-variable", "nonterminal")],
        )
        rec = None
        for specs in stages:
            rec = self.search_and_apply(specs)
            if rec is not None:
                break
        if rec is not None and optimise:
            rec["constants_optimised"] = self.optimise_constants()
        return rec
