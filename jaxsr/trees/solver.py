"""The search's status, memo entries, rounding tolerance and constants.

The branch and bound itself (OSRT section 4, in the depth-first style of GOSDT / MurTree)
is one engine, :mod:`jaxsr.trees.engine` (C++ compiled at install; ``init`` / ``step`` /
``terminate``, :class:`Status`). This module holds what it shares with the Python layer:
why a search ended (:class:`Status`), a memo entry as Python reads it (:class:`Entry`), the
relative tolerance of every prune / solved test (:func:`reaches`, :func:`improves`), the
phases of a frontier frame and the best-first root's constants.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["Status", "Entry", "reaches", "improves", "RTOL", "GREEDY", "UNTRIED", "ALL_BOUNDS"]

ALL_BOUNDS = ("hierarchical", "lookahead", "equivalent", "kmeans")  # the bounds a search may use

RTOL = 1e-12  # relative tolerance of every prune / solved test (rounding of the sums)
NEXT, TRUE, FALSE = range(3)  # a frame's phase: start the next split / await a child
GREEDY = -3  # Entry.feat of the root: its best tree is the greedy incumbent
UNTRIED = -2  # Entry.klev: the shallow-kernel upper bound is still to be computed


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


BEST_FIRST_AFTER = 0.5  # fraction of the time limit after which the root goes best-first
_BEST_FIRST_TRIES = 2  # capped attempts per root split before it is solved against the incumbent
