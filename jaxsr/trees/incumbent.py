"""The greedy incumbent: CART on the binary features, pruned for the objective.

The search (:class:`~jaxsr.trees.search.OptimalTreeSearch`) starts from this tree, so it
never returns a worse one, even when a time limit stops it before the root's bounds are
computed (the anytime behaviour of OSRT section 4): the tree is always grown whole,
whatever the clock says (a few ms: one terminal-solver call per node). It is grown best
first (a heap on the split's gain), each node
with the split of least children's loss while the loss decreases, to at most the node's
levels and its own leaf budget (:func:`~jaxsr.trees.problem.levels`: a subtree with more
leaves than ``(leaf - E / normaliser) / lambda`` cannot beat the node's leaf, so the
pruning would cut it: stopping there gives the same pruned tree). It is then pruned bottom
up at ``lambda`` (cost-complexity pruning: the best subtree of the grown tree).
"""

from __future__ import annotations

import heapq
import time
from typing import NamedTuple

import numpy as np

from . import engine
from .losses import STAT_N, objective
from .problem import TreeProblem, exact_subtree, leaf_cost, levels
from .solver import improves
from .subtrees import kernel_work

__all__ = ["Incumbent", "greedy_tree", "greedy_node", "least_split"]


class Incumbent(NamedTuple):
    """The greedy tree.

    objective: its objective. nodes: one list per node, ``[mask, feature, true, false,
    leaf, levels, klev]`` (``mask`` ``(U,)`` bool its support; ``feature = -1``: a leaf;
    ``true``/``false`` the children's node numbers, after their parent; ``leaf`` its leaf
    cost; ``levels`` its useful levels; ``klev = L >= 1``: the node's tree is the shallow
    kernel's exact subtree with ``L`` split levels). kernel_seconds: node -> seconds of its
    kernel call. n_kernel: kernel calls. kernel_rate: the slowest seconds per element
    operation of a kernel call seen (:func:`~jaxsr.trees.subtrees.kernel_work`).
    """

    objective: float
    nodes: list
    kernel_seconds: dict
    n_kernel: int
    kernel_rate: float


def least_split(c, node_loss):
    """Greedy CART's split among children's losses ``c`` (one per feature, inf where not
    admissible): the lowest feature among those within ``1e-12`` of the node's loss of the
    least (near-ties, which rounding would otherwise decide, go to the lowest feature, as
    in the shallow-subtree kernels). Returns ``(feature, its children's loss)``."""
    cmin = float(np.min(c))
    f = int(np.argmax(c <= cmin + 1e-12 * abs(node_loss)))
    return f, float(c[f])


def greedy_node(P: TreeProblem, m, lev):
    """A node of the greedy tree on support ``m`` with at most ``lev`` levels:
    ``(leaf cost, levels, feature, gain)``.

    ``levels`` is ``lev`` capped by the node's own leaf budget; the split (when ``levels >
    1``) is the one of least children's loss over all features at once (the engine's
    one-split terminal solver with no leaf penalty, or every split's absolute losses),
    kept only when it lowers the loss; ``gain = leaf - (children's loss + lambda)`` in
    objective units. ``feature = -1`` (gain 0) when no split lowers the loss."""
    leaf = leaf_cost(P, m)
    tot = P.stats[m].sum(0)
    lev = levels(P, lev, tot, leaf)
    if lev <= 1:
        return leaf, lev, -1, 0.0
    if P.l1:
        # every feature's two children at once, on the support's samples in y order
        cnt = P.Nc[m] @ P.Xc[m]  # (M,) samples with each feature set
        ok = (cnt >= P.m1) & (tot[STAT_N] - cnt >= P.m1)
        if not ok.any():
            return leaf, lev, -1, 0.0
        lt, lf = engine.absolute_split_losses(P.core, m, np.arange(P.M))
        f, c = least_split(np.where(ok, lt + lf, np.inf), (leaf - P.lam) * P.norm)
    else:
        # the one-split terminal solver with no leaf penalty: the split of least
        # children's loss, or -1 when none decreases the loss
        c, f = engine.subtree(P.core, m, 1, 0.0)
        if f < 0:
            return leaf, lev, -1, 0.0
    c = objective(c, P.norm, P.lam)
    return (leaf, lev, f, leaf - c) if improves(c, leaf) else (leaf, lev, -1, 0.0)


def greedy_tree(
    P: TreeProblem, mask, d, *, deadline=None, polish=False, kernel_rate=3e-8
) -> Incumbent:
    """Greedy CART on the support ``mask`` with at most ``d`` levels, pruned for the
    objective (the module docstring).

    The grown tree does not depend on the growth order nor on the clock: it is always
    greedy CART, so a time-limited fit is never worse than greedy CART. With ``polish``
    (squared loss, ``exact_levels >= 2``) each grown node, root first and while the time
    lasts (``deadline``: ``time.perf_counter()`` seconds), also gets the exact best tree
    with at most ``min(exact_levels, its levels - 1)`` split levels on its support (the
    terminal solver,
    called only when predicted at ``kernel_rate`` to end before the deadline): the pruning
    then keeps, at each node, the least of its leaf, its greedy split's subtrees and that
    exact subtree, a tree never worse than greedy CART's.
    """
    nodes = []
    heap = []  # (-gain, node, feature, levels)

    def add(m, lev, parent, side):
        i = len(nodes)
        leaf, lev, f, gain = greedy_node(P, m, lev)
        nodes.append([m, -1, -1, -1, leaf, lev, 0])
        if parent >= 0:
            nodes[parent][side] = i
        if f >= 0:
            heapq.heappush(heap, (-gain, i, f, lev))

    add(mask, d, -1, 0)
    while heap:
        _, i, f, lev = heapq.heappop(heap)
        m = nodes[i][0]
        nodes[i][1] = f
        add(m & P.Xc_bool[:, f], lev - 1, i, 2)
        add(m & ~P.Xc_bool[:, f], lev - 1, i, 3)
    kern, seconds, n_kernel = {}, {}, 0
    if polish and P.kl >= 2 and not P.l1:
        for i, nd in enumerate(nodes):
            L = min(P.kl, nd[5] - 1)
            if deadline is not None and time.perf_counter() > deadline:
                break
            n_cls = int(nd[0].sum())
            if L < 2 or n_cls < 3:
                continue
            work = kernel_work(P.M, n_cls, L)
            if deadline is not None and kernel_rate * work >= deadline - time.perf_counter():
                continue
            t_k = time.perf_counter()
            kern[i] = (exact_subtree(P, nd[0], L)[0], L)
            dt = time.perf_counter() - t_k
            kernel_rate = max(kernel_rate, dt / work)
            seconds[i] = dt
            n_kernel += 1
    cost = np.empty(len(nodes))
    for i in range(len(nodes) - 1, -1, -1):
        _, f, t, fl, leaf, _, _ = nodes[i]
        if f >= 0 and t >= 0 and fl >= 0 and improves(cost[t] + cost[fl], leaf):
            cost[i] = cost[t] + cost[fl]
        else:
            nodes[i][1] = -1
            cost[i] = leaf
        if i in kern and improves(kern[i][0], cost[i]):
            cost[i], nodes[i][6] = kern[i]
    return Incumbent(float(cost[0]), nodes, seconds, n_kernel, kernel_rate)
