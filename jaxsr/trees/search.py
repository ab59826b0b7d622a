"""Dynamic programming with bounds over support sets (OSRT section 4).

A subproblem is a support set over the *equivalence classes* (unique binary feature rows;
a support always contains whole classes) plus the number ``r`` of levels a subtree on it
may use (``r = 1``: a leaf). Its memo key is the bit-packed support and ``r``.

The search is a depth-first branch and bound in the style of GOSDT / MurTree:
``solve(subproblem, cap)`` either proves the optimum (lower bound = upper bound) or proves
that no tree on the subproblem costs less than ``cap`` (its lower bound reaches ``cap``),
and memoises lower bound, upper bound and best root split per subproblem. At each
subproblem:

1. the statistics of the children of *every* split come from one matrix product
   (:func:`jaxsr.trees.bounds.leaf_statistics`), giving their leaf costs and cheap bounds
   (equivalent points + one-step lookahead, or their memoised bounds);
2. splits are tried in order of the sum of their children's lower bounds; a split whose
   bound sum reaches ``min(best so far, cap)`` is pruned together with all later ones
   (hierarchical bound, Theorem 3.1); each child is solved with the cap its sibling
   leaves (``cap - lower bound of the sibling``);
3. when a subproblem is first expanded, its k-Means equivalent-points lower bound
   (Theorem 3.5, Algorithm 1; :mod:`jaxsr.trees.kmeans`) is computed with at most
   ``min(2^(r-1), classes, n / min_samples_leaf)`` clusters and at least 2 (a tree that
   splits has two leaves); if that bound reaches the leaf cost, the leaf is optimal
   (lookahead, Theorem 3.2). Each DP row takes O(U log U) time and O(U) memory (divide
   and conquer over the monotone split points), or one pass over a U x U cost table for
   small supports; only the last entry of the last row is computed before the early stop
   (:func:`~jaxsr.trees.kmeans.kmeans_losses_np`).

For absolute loss the equivalence-class constraint does not keep optimal clusters
contiguous in any order, so the bound used is 1-D weighted k-medians over the subproblem's
individual targets (distinct values, summed weights): a relaxation of the constrained
problem, hence a valid but weaker bound, combined (max) with the equivalent-points bound.
It is computed for subproblems with at least 3 levels left (smaller ones are cheaper to
expand directly) and at most 20000 distinct targets.

Three reformulations keep the answer exact and shrink the space:

* a tree with ``H`` leaves costs at least ``E / normaliser + lambda H``, so no tree with
  more than ``(leaf cost - E / normaliser) / lambda`` leaves (or more leaves than classes,
  or than ``n / min_samples_leaf``) can beat the leaf: ``r`` is capped there. This is what
  makes ``depth_budget=None`` (the paper's unconstrained problem) a finite-depth problem;
* for squared loss, subproblems with at most ``exact_levels + 1`` levels left are solved
  exactly and at once by :mod:`jaxsr.trees.subtrees` (pair / triple statistics);
* deeper subproblems (``r > kl + 1``, ``kl = exact_levels``) get, before they are
  expanded, the same kernel's exact best tree with at most ``kl`` split levels as an upper
  bound. Every tree not covered by it is deeper than ``kl`` splits, so it has at least
  ``kl + 2`` leaves and costs at least the k-Means bound restricted to ``C >= kl + 2``
  clusters (Theorems 3.5 and 3.7; at least ``E / normaliser + lambda (kl + 2)``). So
  ``min(kernel cost, that bound)`` is a lower bound of the subproblem, and when the bound
  reaches the kernel cost the kernel tree is optimal without any expansion (the kernel is
  not called when the deep bound does not exceed the lower bound already known: it could
  then only offer a tree, which the expansion finds anyway). This is what
  makes shallow optima under ``depth_budget=None`` cheap (enb-heat, lambda 0.1: one
  subproblem). A memo entry records when its best tree is the kernel's (``KLEV``), and
  the tree is rebuilt from the kernel then.

Before the true child of a split is solved, the false child's memo entry (its k-Means
bound) is created: the split is dropped when the two bounds reach the incumbent (or the
cap), else the true child is solved against the cap its sibling's k-Means bound leaves,
which is tighter than its cheap bound (:mod:`jaxsr.trees.engine`). On the OSRT
datasets at depth budget 7 this cuts the solver's steps 2-4x (yacht lambda 0.001: 2387 ->
636, enb-cool lambda 0.01: 3804 -> 865) and the exact kernel calls up to 4.5x.

The result carries the certificate: the root's lower bound and the objective of the tree
returned. With a time limit the search stops, and the lower bound is still valid: it is
the minimum over the root's splits of the (memoised or cheap) bounds of their children,
raised bottom up through the frontier as the stack unwinds
(:func:`jaxsr.trees.engine.live_lower_bound` gives the same bound during the
search).

Anytime (a time limit): the incumbent is greedy CART, computed first
(:meth:`OptimalTreeSearch._greedy`: best-first growth, one product of the support's
statistics with its class rows per node, vectorised over all features; a node's leaf
budget caps its levels, which leaves the pruned tree unchanged), with each grown node's
exact shallow subtree as an alternative in the pruning; the search only replaces it by a
better tree. The limit covers the set-up and the extraction of the tree (reserved from
the incumbent's size); a k-means bound or a kernel call predicted not to end before the
deadline is skipped (the cheap bounds stay: valid, weaker).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np

from .. import _progress
from . import solver
from . import warmup as _warmup
from .bounds import equivalent_points_bound, kmeans_bound, useful_levels
from .kmeans import KMEDIANS_MAX_VALUES, kmeans_losses_np, kmedians_losses_np
from .losses import (
    STAT_C,
    STAT_E,
    STAT_N,
    STAT_Q,
    STAT_S,
    STAT_W,
    absolute_class_losses,
    absolute_losses,
    class_statistics,
    objective,
    recentre,
    scale_targets,
    sse,
    stats_loss,
)
from .solver import RTOL as _RTOL
from .solver import Entry, Status
from .solver import reaches as _reaches
from .subtrees import best_subtree_np, distinct_splits
from .tree import Tree
from .warmup import load_native_kernels, native_kernels_cached

__all__ = ["SearchResult", "OptimalTreeSearch", "ALL_BOUNDS", "native_for_time_limit",
           "load_native_kernels", "native_kernels_cached"]

ALL_BOUNDS = ("hierarchical", "lookahead", "equivalent", "kmeans")
_BIG_DEPTH = 1 << 30
_DEVICE_KMEANS_MAX_CLASSES = 4000  # the device k-means builds a U x U table per subproblem
_DEVICE_KMEANS_MAX_CLUSTERS = 16  # the device computes every row: cap, and bound the rest
_ST4 = [STAT_W, STAT_S, STAT_Q, STAT_N]  # the columns the shallow-subtree kernel reads
_NODE_VALUE_ELEMENTS = 1 << 22  # (nodes x samples) per chunk of _node_values (32 MiB)
_UNTRIED = -2  # Entry.klev: the shallow-kernel upper bound is still to be computed
_GREEDY = -3  # Entry.feat of the root: its best tree is the greedy incumbent
# the compiled host kernels (numba, :mod:`jaxsr.trees.compiled`) cost ~0.75 s CPU once per
# process (import and load) and are then 5-20x faster than numpy per subproblem: a search
# (either loss) uses them unless it is one kernel call; so does every search once they
# are loaded. Which kernels a fit gets, their cache and their one-time compilation (in a
# background process on a fresh install): :mod:`jaxsr.trees.warmup`.
_NATIVE_LOADED = _warmup._NATIVE_LOADED
_SWITCH_POLL_SECONDS = 1.0  # how often a search on the numpy kernels asks for them


def native_for_time_limit(seconds_left):
    """:func:`jaxsr.trees.warmup.kernels_for_fit` (the ``native`` argument of a
    host search that must end within ``seconds_left``)."""
    return _warmup.kernels_for_fit(seconds_left)


def unique_rows(packed):
    """``np.unique(packed, axis=0, return_inverse=True)`` of ``(n, b)`` uint8 rows, the
    same order (lexicographic in the bytes), 5-30x faster: the rows are compared as one
    big-endian uint64 each when ``b <= 8`` (at most 64 binary features), else as ``b``-byte
    void scalars (``axis=0`` builds a structured dtype of ``b`` fields, ~0.7 ms at 557 x
    2 bytes, which dominated a depth-3 fit). Returns ``(uniq (U, b), inverse (n,))``."""
    packed = np.ascontiguousarray(packed, dtype=np.uint8)
    n, b = packed.shape
    if b <= 8:
        key = np.zeros(n, dtype=np.uint64)
        for j in range(b):
            key = (key << np.uint64(8)) | packed[:, j].astype(np.uint64)
    else:
        key = packed.view(np.dtype((np.void, b))).reshape(n)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return packed[first], np.asarray(inv).reshape(-1)


@dataclass
class SearchResult:
    """What :meth:`OptimalTreeSearch.run` returns.

    Attributes:
      tree: the best tree found (a :class:`~jaxsr.trees.tree.Tree`).
      objective: its objective as the search computed it (normalised loss + lambda*leaves).
      lower_bound: a proven lower bound on the optimal objective.
      timed_out: the time limit stopped the search.
      n_subproblems: memoised subproblems; n_kernel_calls: exact-subtree evaluations;
      n_kmeans: k-means / k-medians bounds computed; seconds: wall time of the search.
      status: why the search ended (:class:`~jaxsr.trees.solver.Status`); steps: the
        solver's steps (subproblem visits).
    """

    tree: Tree
    objective: float
    lower_bound: float
    timed_out: bool
    n_subproblems: int
    n_kernel_calls: int
    n_kmeans: int
    seconds: float
    status: Status = Status.OPTIMAL
    steps: int = 0


_BLAS_CONTROLLER = []  # one threadpoolctl controller per process (scanning libraries: ~10 ms)


def _blas_controller():
    """The process's threadpoolctl controller (None without threadpoolctl), built once."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - optional
        return None
    if not _BLAS_CONTROLLER:
        _BLAS_CONTROLLER.append(ThreadpoolController())
    return _BLAS_CONTROLLER[0]


def _blas_single_thread():
    """One BLAS thread for the many small products of the search (threadpoolctl optional).

    The products are small (``(4M, U) @ (U, M^2)`` at most); on a loaded machine a threaded
    BLAS spends more time synchronising than computing (measured 19 ms vs 1.4 ms per product
    on 2 busy cores). The controller (a scan of the loaded libraries, ~10 ms with JAX
    loaded) is built once per process.
    """
    ctl = _blas_controller()
    return contextlib.nullcontext() if ctl is None else ctl.limit(limits=1, user_api="blas")


def _least_split(c, node_loss):
    """Greedy CART's split among children's losses ``c`` (one per feature, inf where not
    admissible): the lowest feature among those within ``1e-12`` of the node's loss of the
    least (near-ties, which rounding would otherwise decide, go to the lowest feature, as
    in the shallow-subtree kernels). Returns ``(feature, its children's loss)``."""
    cmin = float(np.min(c))
    f = int(np.argmax(c <= cmin + 1e-12 * abs(node_loss)))
    return f, float(c[f])


class OptimalTreeSearch:
    """The search state for one fit (see the module docstring).

    Args:
      X: ``(n, M)`` bool binary features.
      y: ``(n,)`` float targets. w: ``(n,)`` float non-negative sample weights.
      loss: ``"squared_error"`` or ``"absolute_error"``.
      regularization: ``lambda >= 0`` per leaf, in normalised-loss units.
      normalize: divide the loss by the one-leaf loss (SST or SAD around the median) if
        True, else by the total sample weight (the paper's mean loss).
      depth_budget: levels (1 = a single leaf) or None (no limit; needs ``lambda > 0``).
      min_samples_leaf: minimum samples (unweighted) per leaf.
      bounds: subset of :data:`ALL_BOUNDS` to use.
      exact_levels: 0..3, split levels solved by the matrix-product kernels (squared
        loss only); None picks the largest that fits in memory.
      time_limit: seconds or None. verbose: progress lines on stderr.
      backend: ``"numpy"`` (host kernels, one subproblem at a time, with pruning between
        them) or ``"jax"`` (all children of an expanded subproblem evaluated in batched,
        jitted device calls: exact subtrees at the bottom, k-means bounds above;
        :mod:`jaxsr.trees.device`).
      greedy: start from the greedy CART tree (pruned at ``lambda``) as the incumbent:
        the tree returned under a limit is never worse than it.
      native: the host engine (:mod:`jaxsr.trees.engine`: the search loop and its
        kernels) compiled by numba: True, False (its Python source on the numpy kernels,
        :mod:`jaxsr.trees.interpreted`), or None (compiled unless the whole search is one
        shallow-kernel call and they are not loaded yet: loading costs ~0.75 s once per
        process; on a fresh install the Python source until a background process has
        compiled them, :mod:`jaxsr.trees.warmup`). The optimum is the same. The greedy
        incumbent and the tree extraction use the same choice of kernels.
      mesh: ``None`` or a ``jax.sharding.Mesh`` over which the ``"jax"`` backend splits
        the class axis of its batched calls (:class:`jaxsr.trees.device.DeviceBatcher`).
      progress: report steps, bounds, gap and subproblems to the open
        :class:`jaxsr._progress.FitProgress` (the estimator's bar), about twice a second.
    """

    def __init__(self, X, y, w, *, loss="squared_error", regularization=0.01, normalize=True,
                 depth_budget=5, min_samples_leaf=1, bounds=ALL_BOUNDS, exact_levels=None,
                 time_limit=None, verbose=False, backend="numpy", greedy=True, native=None,
                 mesh=None, progress=False):
        self.l1 = loss == "absolute_error"
        self.lam = float(regularization)
        self.m1 = max(1, int(min_samples_leaf))
        self.bounds = frozenset(bounds)
        self.hier = "hierarchical" in self.bounds
        self.look = 2 if "lookahead" in self.bounds else 1
        self.equiv = "equivalent" in self.bounds
        self.use_kmeans = "kmeans" in self.bounds
        self.depth = _BIG_DEPTH if depth_budget is None else int(depth_budget)
        self.time_limit = time_limit
        self.verbose = verbose
        self.progress = bool(progress)
        self.greedy = bool(greedy)
        self._native_mode = native
        self._native_on = bool(native) or (native is None and _NATIVE_LOADED[0])
        X = np.asarray(X, dtype=bool)
        y = np.asarray(y, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        self.n, self.M = X.shape
        # internal targets in [-1, 1], weights / max weight (exact powers of two; see
        # jaxsr.trees.losses): every loss below is in internal units
        t, wi, self.scale = scale_targets(y, w)
        self.y, self.w = t, wi
        self.y_raw = y
        wsum = float(wi.sum())

        # equivalence classes = unique binary rows
        if self._native_on:
            from .compiled import pack_rows

            packed = pack_rows(np.ascontiguousarray(X))  # one layout: one compilation
        else:
            packed = np.packbits(X, axis=1)
        uniq, inv = unique_rows(packed)
        self.inv = inv
        self.U = U = uniq.shape[0]
        self.Xc_bool = np.unpackbits(uniq, axis=1, count=self.M).astype(bool)  # (U, M)
        self.XcT = np.ascontiguousarray(self.Xc_bool.T)  # (M, U)
        self.Xc = self.Xc_bool.astype(np.float64)
        st, self.cls_mean = class_statistics(inv, t, wi, U)

        # samples sorted by y (absolute loss only: the sort is ~0.2 s at 2e6 samples)
        if self.l1:
            order = np.argsort(t, kind="stable")
            self.ys, self.ws, self.cls_s = t[order], wi[order], inv[order]
            st[:, STAT_E] = absolute_class_losses(self.ys, self.ws, self.cls_s, U)
            self.Xsamp = self.Xc_bool[self.cls_s]  # (n, M) in y order
        self.stats = st
        self._Wc = np.ascontiguousarray(st[:, STAT_W])
        self._Ec = np.ascontiguousarray(st[:, STAT_E])
        self._Nc = np.ascontiguousarray(st[:, STAT_N])
        self._Xu8 = np.ascontiguousarray(self.Xc_bool, dtype=np.uint8)
        self.st4 = np.ascontiguousarray(st[:, [STAT_W, STAT_S, STAT_Q, STAT_N]])

        # normaliser (internal units); a constant target has no loss: one leaf is optimal
        if self.scale.constant:
            total_loss = 0.0
        elif self.l1:
            total_loss = float(absolute_losses(self.ys, self.ws[:, None])[0][0])
        else:
            total_loss = float(stats_loss(st.sum(0)))
        self.total_loss = total_loss
        if normalize:
            self.norm = total_loss if total_loss > 0 else 1.0
        else:
            # the mean loss in y units: loss_y / sum(w) = loss_int / (wsum_int 2^(-p E))
            p = 1 if self.l1 else 2
            with np.errstate(over="ignore", under="ignore"):
                self.norm = float(np.ldexp(wsum, -p * self.scale.exponent))
            if not (np.isfinite(self.norm) and self.norm >= np.finfo(np.float64).tiny):
                what = "overflows" if self.norm < 1.0 else "underflows"
                raise ValueError(
                    f"normalize=False measures the loss in units of y{'^2' if p == 2 else ''}"
                    f", and the spread of y (about 2^{self.scale.exponent}) {what} the "
                    "float64 range there. Use normalize=True (a scale-free objective) or "
                    "rescale y.")
        self.root_leaf_loss = total_loss / self.norm

        # classes sorted by mean target (k-means order)
        self.korder = np.argsort(self.cls_mean, kind="stable")

        if self.l1:
            self.kl = 0
        elif exact_levels is None:
            self.kl = self.auto_exact_levels(U, self.M)
        else:
            self.kl = int(exact_levels)
        # prune / solved tests are relative to the quantities compared: ``a`` reaches
        # ``b`` when ``a >= b - rtol |b|`` (an absolute tolerance in objective units
        # would prune real improvements where the optimum is small next to the root loss)
        self.rtol = _RTOL
        self.dev = None
        self.deadline = None
        self._jax = backend == "jax"
        self._mesh = mesh
        if self._jax:
            from .device import COMPILE_SECONDS

            # under a short time limit the device is set up only when a call can be made
            # (:meth:`_device`): its first use in a process costs ~0.1 s
            if time_limit is None or time_limit >= COMPILE_SECONDS:
                self._device()
        self.deadline = None
        self._kernel_rate = 3e-8  # seconds per element operation of the kernel (updated)
        self._kmeans_rate = 0.0  # seconds per class of a k-means bound (the most seen)
        self.memo: dict = {}  # (packed support, levels) -> solver.Entry
        self.n_kernel = 0
        self.n_kmeans = 0

    @staticmethod
    def auto_exact_levels(U: int, M: int, budget_bytes: float = 6e8) -> int:
        """Largest kernel depth whose work arrays fit in ``budget_bytes``."""
        if 8.0 * (U * M * M + 60.0 * M ** 3) <= budget_bytes:
            return 3
        if 8.0 * (U * M * 4 + 60.0 * M ** 2) <= budget_bytes:
            return 2
        return 1

    def _native(self) -> bool:
        """Whether the host kernels run compiled (see ``native``)."""
        return self._native_on

    # ------------------------------------------------------------------ leaf costs
    def _leaf_l1(self, mask):
        sm = mask[self.cls_s]
        return float(absolute_losses(self.ys[sm], self.ws[sm][:, None])[0][0])

    def _sub_stats(self, idx):
        """Class statistics of a support's classes ``idx``; for squared loss re-centred on
        the support's own mean (:func:`~jaxsr.trees.losses.recentre`: the losses of its
        subsets then round relative to its own spread)."""
        st = self.stats[idx]
        return st if self.l1 else recentre(st, self.cls_mean[idx])

    def _leaf_cost(self, mask, tot=None):
        """Objective of one leaf on ``mask`` (``tot``: unused, kept for the callers)."""
        if self.l1:
            loss = self._leaf_l1(mask)
        elif self._native():
            from .compiled import support_leaf_loss

            loss = support_leaf_loss(mask, self._Wc, self.cls_mean, self._Ec)
        else:
            loss = float(stats_loss(self._sub_stats(np.flatnonzero(mask)).sum(0)))
        return objective(loss, self.norm, self.lam)

    def _deff(self, d, st, leaf):
        """Levels that can matter (:func:`~jaxsr.trees.bounds.useful_levels`)."""
        return useful_levels(d, st, leaf, self.lam, self.norm, self.m1, self.equiv)

    def _cheap_split_bound(self, st):
        """Equivalent points bound of the trees that split (Theorem 3.3; bounds.py)."""
        if self.equiv:
            return equivalent_points_bound(st, self.lam, self.norm, leaves=self.look)
        return np.full(st.shape[:-1], self.look * self.lam)

    # ------------------------------------------------------------------ entries
    def _deep_base(self, tot):
        """Equivalent-points bound of trees with at least ``kl + 2`` leaves."""
        if self.equiv:
            return equivalent_points_bound(tot, self.lam, self.norm, leaves=self.kl + 2)
        return np.full(tot.shape[:-1], self.lam * (self.kl + 2))

    def _split_bound(self, mask, tot, d):
        """Lower bounds for a subproblem first expanded: ``(b, deep)``.

        ``b`` bounds every tree that splits. ``deep`` (used when ``d > kl + 1``, squared
        loss) bounds every tree with at least ``kl + 2`` leaves -- the trees that the exact
        kernel with ``kl`` split levels does not cover (a tree deeper than ``kl`` splits has
        at least ``kl + 2`` leaves): the k-Means bound (Theorem 3.5) restricted to
        ``C >= kl + 2`` clusters, and at least the equivalent-points bound (Theorem 3.3)
        plus ``lambda (kl + 2)``.
        """
        b = float(self._cheap_split_bound(tot))
        cmax = int(min(tot[STAT_C], np.floor(tot[STAT_N] / self.m1)))
        if d - 1 < 40:
            cmax = min(cmax, 1 << (d - 1))
        kdeep = self.kl + 2
        deep = np.inf if cmax < kdeep else float(self._deep_base(tot))
        if not self.use_kmeans or d <= max(self.kl, 2 if self.l1 else 0):
            return b, deep
        if cmax < self.look:
            return np.inf, np.inf
        # the time limit: no k-means (the cheap bounds stay: valid, weaker) when it is
        # predicted not to end before the deadline (the largest seconds per class, or
        # per sample for k-medians, seen so far: the root's comes first)
        size = max(float(tot[STAT_N] if self.l1 else tot[STAT_C]), 1.0)
        if self.deadline is not None and (self._kmeans_rate * size
                                          >= self.deadline - time.perf_counter()):
            return b, deep
        t_k = time.perf_counter()
        stop = self.lam * self.norm
        if self.l1:
            sm = mask[self.cls_s]
            vals, wts = self.ys[sm], self.ws[sm]
            if vals.size == 0:
                return b, deep
            brk = np.flatnonzero(np.diff(vals) > 0) + 1
            starts = np.concatenate([[0], brk])
            vals, wts = vals[starts], np.add.reduceat(wts, starts)
            if vals.size > KMEDIANS_MAX_VALUES:
                return b, deep
            losses = kmedians_losses_np(vals, wts, cmax, stop)
        elif self._native():
            from .compiled import support_kmeans_losses

            sel = self.korder[mask[self.korder]]
            losses = np.empty(max(1, min(cmax, sel.size)))
            k = support_kmeans_losses(sel, self._Wc, self.cls_mean, self._Ec, cmax, stop,
                                      True, losses)
            losses = losses[:k]
        else:
            sel = self.korder[mask[self.korder]]
            s = self._sub_stats(sel)
            losses = kmeans_losses_np(s[:, STAT_W], s[:, STAT_S], s[:, STAT_Q], cmax, stop)
        self.n_kmeans += 1
        self._kmeans_rate = max(self._kmeans_rate, (time.perf_counter() - t_k) / size)
        if not self.l1 and self.kl and cmax >= kdeep:
            deep = max(deep, kmeans_bound(losses, self.lam, self.norm, kdeep))
        return max(b, kmeans_bound(losses, self.lam, self.norm, self.look)), deep

    def _new_entry(self, mask, tot, leaf, d, bounds=None) -> Entry:
        leaf = float(leaf)
        if d <= 1:
            return Entry(leaf, leaf, -1, True, -1, np.inf)
        sb, deep = self._split_bound(mask, tot, d) if bounds is None else bounds
        if _reaches(sb, leaf):
            return Entry(leaf, leaf, -1, True, -1, np.inf)
        klev = _UNTRIED if (self.kl and not self.l1 and d > self.kl + 1) else -1
        return Entry(min(leaf, sb), leaf, -1, False, klev, max(deep, sb))

    # ------------------------------------------------------------------ search
    def _live_bound(self, state, final=False):
        """The root's lower bound now (valid during the search, :mod:`jaxsr.trees.engine`)
        and its entry."""
        e = self.memo[state.root_key]
        if final or e.solved or state.status is not None:
            return e.lb, e
        from .engine import live_lower_bound

        return live_lower_bound(state), e

    def _report(self, state, final=False, line=True):
        """The bounds, gap and subproblems on the progress bar (``progress``) and, with
        ``verbose``, one line on stderr."""
        lb, e = self._live_bound(state, final)
        if self.progress:
            _progress.update(0, bound=f"{lb:.6g}", objective=f"{e.ub:.6g}",
                             gap=f"{max(e.ub - lb, 0.0):.3g}", subproblems=len(self.memo))
        if self.verbose and line:
            _progress.write(f"[osrt] lower bound {lb:.6f}  upper bound {e.ub:.6f}  "
                            f"subproblems {len(self.memo)}  kernels {self.n_kernel}  "
                            f"elapsed {time.perf_counter() - state.t0:.2f} s")

    def _build_seconds(self, nodes):
        """Predicted seconds to extract a tree of ``nodes`` nodes (:meth:`_build`: a leaf
        value per node from the samples) and for the estimator to recompute its objective
        from its predictions (measured ~15 us + 5 ns per sample a node, ~1 ms + 10 ns per
        sample for the rest; doubled, as a margin)."""
        return 2.0 * (nodes * (1.5e-5 + 5e-9 * self.n) + 1e-3 + 1e-8 * self.n)

    def _kernel_work(self, n_classes, levels):
        """Rough element operations of one shallow-kernel call (for the time limit)."""
        M = self.M
        if levels >= 3:
            return n_classes * M * M * 3.0 + 40.0 * M ** 3 + 1.0
        return n_classes * M * 3.0 * (M if levels == 2 else 1) + 40.0 * M ** 2 + 1.0

    def _affordable(self, n_classes, levels) -> bool:
        """A kernel call fits in the time left (rate: the slowest seen, 3e-8 s a priori)."""
        if self.deadline is None:
            return True
        left = self.deadline - time.perf_counter()
        return self._kernel_rate * self._kernel_work(n_classes, levels) < left

    def _kernel(self, mask, levels, idx=None):
        """Exact best tree with at most ``levels`` split levels on ``mask`` (squared loss):
        ``(objective, root feature)`` (:func:`~jaxsr.trees.subtrees.best_subtree_np`, or
        its compiled twin :func:`~jaxsr.trees.compiled.support_subtree`)."""
        if self._native():
            from .compiled import support_subtree

            c, f = support_subtree(mask, self._Xu8, self._Wc, self.cls_mean, self._Ec,
                                   self._Nc, int(levels), self.lam * self.norm,
                                   float(self.m1))
            return float(c / self.norm), int(f)
        idx = np.flatnonzero(mask) if idx is None else idx
        return best_subtree_np(self.Xc[idx], self._sub_stats(idx)[:, _ST4], levels,
                               self.lam, self.norm, self.m1)

    def _children(self, mask):
        idx = np.flatnonzero(mask)
        st = self._sub_stats(idx)
        tot = st.sum(0)
        a = self.Xc[idx].T @ st  # (M, s): the "true" children
        comp = tot[None, :] - a
        ok = (a[:, STAT_N] >= self.m1) & (comp[:, STAT_N] >= self.m1)
        # one feature per distinct split of the support (equal or complementary columns
        # make the same two children; :func:`~jaxsr.trees.subtrees.distinct_splits`)
        if self._native():
            from .compiled import support_splits

            keep = np.empty(self.M, dtype=np.int64)
            keep = keep[:support_splits(mask, self._Xu8, keep)]
            F = keep[ok[keep]]
        else:
            F = np.intersect1d(distinct_splits(self.Xc_bool[idx]), np.flatnonzero(ok))
        a, comp = a[F], comp[F]
        if self.l1:
            sm = mask[self.cls_s]
            ys, ws, Xn = self.ys[sm], self.ws[sm], self.Xsamp[sm][:, F]
            lt = absolute_losses(ys, ws[:, None] * Xn)[0]
            lf = absolute_losses(ys, ws[:, None] * ~Xn)[0]
        else:
            lt, lf = stats_loss(a), stats_loss(comp)
        return (F, a, comp, objective(lt, self.norm, self.lam),
                objective(lf, self.norm, self.lam))

    def _device(self):
        """The :class:`~jaxsr.trees.device.DeviceBatcher` (``backend="jax"``), made at the
        first call; None while a time limit leaves less than a compilation
        (:data:`~jaxsr.trees.device.COMPILE_SECONDS`) and nothing is compiled for this
        fit's shapes in the process (the host then evaluates the children)."""
        if self.dev is None and self._jax:
            from . import device

            n_dev = 1 if self._mesh is None else int(self._mesh.devices.size)
            Up = max(64 * n_dev, -(-self.U // (64 * n_dev)) * 64 * n_dev)
            if (self.deadline is None
                    or self.deadline - time.perf_counter() >= device.COMPILE_SECONDS
                    or device.compiled_for(Up, self.M)):
                self.dev = device.DeviceBatcher(
                    self.Xc, self.st4, self.korder, self.lam, self.norm, self.m1,
                    mean=self.cls_mean, E=self.stats[:, STAT_E], mesh=self._mesh)
        return self.dev

    def _device_expansion(self, state, L):
        """The device's part of the engine's expansion of level ``L``
        (:mod:`jaxsr.trees.engine`, ``backend="jax"``): the children of its splits,
        as :meth:`_device_children` takes them; their entries go to the memo. Returns
        whether the device evaluated every new child."""
        from . import engine as cs

        fr = state.frames
        nk = int(fr.si[L, cs.S_NK])
        d = int(state.memo.i[int(fr.si[L, cs.S_EID]), cs.M_LEV])
        F = fr.ki[L, cs.K_F, :nk]
        mask = fr.mask[L].copy()
        maskT = mask[None, :] & self.XcT[F]
        maskF = mask[None, :] & ~self.XcT[F]
        dT, dF = fr.ki[L, cs.K_DT, :nk].copy(), fr.ki[L, cs.K_DF, :nk].copy()
        packT, packF = np.packbits(maskT, axis=1), np.packbits(maskF, axis=1)
        keysT = [(packT[i].tobytes(), int(dT[i])) if dT[i] > 1 else None for i in range(nk)]
        keysF = [(packF[i].tobytes(), int(dF[i])) if dF[i] > 1 else None for i in range(nk)]
        return self._device_children(
            mask, d, (maskT, maskF), (keysT, keysF),
            (fr.st[L, 0, :nk].copy(), fr.st[L, 1, :nk].copy()),
            (fr.kf[L, cs.K_LEAFT, :nk].copy(), fr.kf[L, cs.K_LEAFF, :nk].copy()), (dT, dF))

    def _device_children(self, mask, d, masks, keys, stats, leaves, deffs):
        """Evaluate all new children of a subproblem in batched device calls; False when
        the device is not used (see :meth:`_device`)."""
        if self._device() is None:
            return False
        memo = self.memo
        sel_m, sel_k, sel_st, sel_leaf, sel_d = [], [], [], [], []
        for side in (0, 1):
            for i, k in enumerate(keys[side]):
                if k is not None and k not in memo:
                    sel_m.append(masks[side][i])
                    sel_k.append(k)
                    sel_st.append(stats[side][i])
                    sel_leaf.append(leaves[side][i])
                    sel_d.append(int(deffs[side][i]))
        if not sel_k:
            return True
        bm = np.stack(sel_m)
        if not self.l1 and d - 1 <= self.kl + 1:
            W = self.stats[mask, STAT_W]
            Wt = float(W.sum())
            centre = float(np.dot(W, self.cls_mean[mask]) / Wt) if Wt > 0 else 0.0
            # under a time limit, only the chunks predicted to end before the deadline
            # (a first call compiles): the others stay new, solved on the host if visited
            costs, feats, done = self.dev.subtrees(bm, d - 2, centre, self.deadline)
            self.n_kernel += done
            for k, c, f in zip(sel_k[:done], costs[:done], feats[:done], strict=True):
                memo[k] = Entry(float(c), float(c), int(f), True, -1, np.inf)
            return done == len(sel_k)
        if (self.l1 or not self.use_kmeans or self.U > _DEVICE_KMEANS_MAX_CLASSES
                or not self.dev.batch_kmeans):
            return True
        st = np.stack(sel_st)
        cheap = np.broadcast_to(self._cheap_split_bound(st), (len(sel_k),))
        # children have at most max(sel_d) levels, so at most 2^(max(sel_d)-1) leaves
        kmax = int(min(1 << min(max(sel_d) - 1, 20), self.U))
        K = max(min(kmax, _DEVICE_KMEANS_MAX_CLUSTERS), self.look)
        kb, done = self.dev.kmeans_bounds(bm, K, self.look, self.deadline)
        if kmax > K:  # trees with more than K leaves: loss >= E, leaves >= K + 1
            kb = np.minimum(kb, objective(st[:, STAT_E], self.norm, self.lam, K + 1))
        self.n_kmeans += done
        for j, k in enumerate(sel_k[:done]):
            leaf = sel_leaf[j]
            sb = max(float(cheap[j]), float(kb[j]))
            if _reaches(sb, leaf):
                memo[k] = Entry(float(leaf), float(leaf), -1, True, -1, np.inf)
            else:
                kd = k[1] > self.kl + 1 and self.kl and not self.l1
                deep = max(sb, float(self._deep_base(sel_st[j]))) if kd else np.inf
                memo[k] = Entry(float(min(leaf, sb)), float(leaf), -1, False,
                                _UNTRIED if kd else -1, float(deep))
        return done == len(sel_k)

    # ------------------------------------------------------------------ driver
    def run(self, max_steps=None) -> SearchResult:
        """Solve (:mod:`jaxsr.trees.engine`: init, step until terminate; build the
        tree)."""
        t0 = time.perf_counter()
        mask = np.ones(self.U, dtype=bool)
        tot = self.stats.sum(0)
        leaf = self._leaf_cost(mask, tot)
        d = int(self._deff(self.depth, tot, leaf))
        key = (np.packbits(mask).tobytes(), d)
        if self._native_mode is None and d > self.kl + 1:
            # a search, not one kernel call: the compiled kernels when they are loaded or
            # cached (loaded now), else numpy while a background process compiles them
            self._native_on = _warmup.kernels_for_fit(None) is None
        # one shallow-kernel call (d <= kl + 1) is a few products: not worth the ~0.2 s
        # threadpoolctl takes to find the libraries on the first fit of a process
        blas = (_blas_single_thread() if not (self.kl and d <= self.kl + 1)
                else contextlib.nullcontext())
        blas.__enter__()
        self.deadline = None if self.time_limit is None else t0 + float(self.time_limit)
        try:
            self._greedy_nodes = None
            g = np.inf
            if self.greedy and d > 1 and not (self.kl and d <= self.kl + 1):
                # anytime: the greedy CART tree first (a few ms), so the search starts
                # from its objective and never returns a worse tree, even when the time
                # limit stops it before the root's bounds are computed
                g, nodes = self._greedy(mask, d, polish=self.deadline is not None)
            if self.deadline is not None:
                # the time limit covers the tree's extraction and the estimator's
                # objective after the search: both are reserved, sized by the incumbent
                kept = 1 if g == np.inf else sum(1 for nd in nodes if nd[1] >= 0) * 2 + 1
                self.deadline -= self._build_seconds(kept)
                if g < np.inf:  # a kept exact subtree is rebuilt by the kernel, level by
                    # level (its root call and the calls below: ~2.5 of the first)
                    self.deadline -= 2.5 * sum(dt for i, dt in self._polish_seconds.items()
                                               if nodes[i][6] >= 1)
            e = self._new_entry(mask, tot, leaf, d)
            if not e.solved and solver.improves(g, e.ub):
                self._greedy_nodes = nodes
                e = e._replace(ub=g, feat=_GREEDY, lb=min(e.lb, g))
                if _reaches(e.lb, e.ub):
                    e = e._replace(lb=e.ub, solved=True)
            limit = None if self.deadline is None else self.deadline - t0
            next_line = t0 + 1.0  # verbose: a line a second
            next_post = t0 + 0.5  # progress: the bounds twice a second
            # the engine (:mod:`jaxsr.trees.engine`): compiled, or, while the
            # compiled kernels are not built, its Python source on the numpy kernels
            # (:mod:`jaxsr.trees.interpreted`); backend="jax": the device evaluates the
            # children of every expansion with at least 3 levels
            from . import engine as cs

            if self._native():
                engine = cs.COMPILED
            else:
                from .interpreted import engine as interpreted_engine

                engine = interpreted_engine()
            device = None
            if self._jax:
                def device(st, L):
                    ref[0] = st  # the memo as the engine holds it now
                    return self._device_expansion(st, L)
            ref = [cs.init(self, (key, mask, d), e, limit, max_steps, t0, engine, device)]
            self.memo = cs.CompiledMemo(self, ref)
            state = ref[0]
            # a fresh install: the engine runs as Python on the numpy kernels while a
            # background process compiles it; once numba's cache holds it, the search goes
            # on compiled from where it is (the same arrays: nothing is recomputed; the
            # compiled loop is 6-15x faster), when the time left affords the load
            switch = (state.engine is not cs.COMPILED and self._native_mode is None
                      and _warmup.compiling())
            next_poll = t0 + _SWITCH_POLL_SECONDS
            while state.status is None:
                if switch and time.perf_counter() >= next_poll:
                    next_poll = time.perf_counter() + _SWITCH_POLL_SECONDS
                    if _warmup.compiled_ready():
                        switch = False
                        left = (None if self.deadline is None
                                else self.deadline - time.perf_counter())
                        if _warmup.kernels_for_fit(left) is None:
                            self._native_on = True
                            state = ref[0] = state._replace(engine=cs.COMPILED)
                            _progress.write(
                                "jaxsr: the compiled tree kernels are ready; the search "
                                f"goes on compiled (after {time.perf_counter() - t0:.1f} s "
                                "on the numpy kernels)")
                steps = state.steps
                state = ref[0] = cs.step(state)
                if self.progress or self.verbose:
                    if self.progress:
                        _progress.update(max(state.steps - steps, 1))
                    now = time.perf_counter()
                    if (self.verbose and now >= next_line) or (self.progress
                                                                and now >= next_post):
                        line = now >= next_line
                        self._report(state, line=line)
                        next_post = time.perf_counter() + 0.5
                        if line:
                            next_line = next_post + 0.5
            self.n_kernel += int(state.ctr[cs.C_KERNEL])
            self.n_kmeans += int(state.ctr[cs.C_KMEANS])
            e = self.memo[key]
            tree = self._build(mask, d)
        finally:
            blas.__exit__(None, None, None)
        if self.verbose or self.progress:
            self._report(state, final=True)
        self.status = state.status
        return SearchResult(tree=tree, objective=float(e.ub), lower_bound=float(e.lb),
                            timed_out=state.status is Status.TIME_LIMIT,
                            n_subproblems=len(self.memo), n_kernel_calls=self.n_kernel,
                            n_kmeans=self.n_kmeans, seconds=time.perf_counter() - t0,
                            status=state.status, steps=state.steps)

    # ------------------------------------------------------------------ tree extraction
    def _root_feature(self, mask, d):
        """Root split of the best tree found on ``(mask, d)`` and its children's levels.

        Returns ``(feature, child_levels, replay)``: ``replay`` says the children are
        memo entries of the search, whose levels are recomputed exactly as the expansion
        computed their keys (:meth:`_child_keys`). A memo entry whose best tree came from
        the shallow kernel (``KLEV = L``) is the best tree with ``L`` split levels: its
        children are rebuilt with ``L`` levels.
        """
        if d <= 1:
            return -1, 0, False
        key = (np.packbits(mask).tobytes(), d)
        e = self.memo.get(key)
        if e is not None and (e.solved or not (self.kl and d <= self.kl + 1)):
            if e.klev >= 1:
                return int(e.feat), int(e.klev), False
            if self.kl and d <= self.kl + 1:
                # solved by the kernel at once (visit): its children are no memo entries,
                # so they are rebuilt as below, without replaying the expansion's keys
                return int(e.feat), d - 1, False
            return int(e.feat), d - 1, True
        if self.kl and d <= self.kl + 1:
            return self._kernel(mask, d - 1)[1], d - 1, False
        # never reached: a leaf can only be optimal here if it was pruned as such
        return -1, 0, False

    def _child_keys(self, mask, d, f):
        """Levels of the two children of split ``f`` of ``(mask, d)``, as :meth:`_expand`
        computed them (same arithmetic, so the same memo keys)."""
        F, a, comp, leafT, leafF = self._children(mask)
        i = int(np.flatnonzero(F == f)[0])
        return (int(self._deff(d - 1, a[i], leafT[i])),
                int(self._deff(d - 1, comp[i], leafF[i])))

    def _median_leaf(self, mask):
        """``(value, samples, weight, loss)`` of an absolute-loss leaf on ``mask``, in ``y``
        units: a weighted median, which is a training target taken as it is. ``loss`` is
        ``inf`` where it exceeds the float64 range (``|y|`` near the float maximum)."""
        sm = mask[self.inv]
        ys, ws = self.y[sm], self.w[sm]
        W = float(ws.sum())
        o = np.argsort(ys, kind="stable")
        ww = ws[o] if W > 0 else np.ones(o.size)
        cw = np.cumsum(ww)
        k = int(np.argmax(cw >= 0.5 * cw[-1]))
        t = float(ys[o][k])
        v = float(self.y_raw[sm][o][k])
        loss = float(self.scale.loss_to_y(np.sum(ws * np.abs(ys - t)), 1))
        return v, int(sm.sum()), W * self.scale.w_max, loss

    def _node_values(self, masks):
        """Leaf values of ``K`` nodes: ``masks`` ``(K, U)`` bool -> ``(value, samples,
        weight, loss)``, each ``(K,)`` (float64, int64, float64, float64), in ``y`` units.

        Squared loss: the weighted mean, in a few array operations over ``(K, n)`` (chunks
        of :data:`_NODE_VALUE_ELEMENTS`; a small tree's extraction was 40-60% of a fit of
        1-2 ms), ``loss`` ``inf`` where it exceeds the float64 range. Absolute loss: a
        weighted median node by node (:meth:`_median_leaf`)."""
        if self.l1:
            cols = np.array([self._median_leaf(m) for m in masks], dtype=float).reshape(-1, 4)
            return cols[:, 0], cols[:, 1].astype(np.int64), cols[:, 2], cols[:, 3]
        step = max(1, _NODE_VALUE_ELEMENTS // max(self.n, 1))  # (K, n) arrays in chunks
        if masks.shape[0] > step:
            parts = [self._node_values(masks[i:i + step])
                     for i in range(0, masks.shape[0], step)]
            return tuple(np.concatenate(c) for c in zip(*parts, strict=True))
        sm = masks[:, self.inv]  # (K, n) samples of each node
        ws = np.where(sm, self.w[None, :], 0.0)
        W = ws.sum(1)
        cnt = sm.sum(1)
        # the mean as a shift from one of the node's own targets: exact for a node whose
        # targets are all equal (a plain sum of equal values rounds)
        t0 = self.y[np.argmax(sm, axis=1)]
        dy = np.where(sm, self.y[None, :] - t0[:, None], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = t0 + np.where(W > 0, (ws * dy).sum(1) / W, dy.sum(1) / np.maximum(cnt, 1))
        r = np.where(sm, self.y[None, :] - t[:, None], 0.0)
        loss = self.scale.loss_to_y((ws * r * r).sum(1), 2)
        return (np.asarray(self.scale.to_y(t), float), cnt.astype(np.int64),
                W * self.scale.w_max, np.asarray(loss, float))

    def _greedy_node(self, m, lev):
        """A node of the greedy tree on support ``m`` with at most ``lev`` levels:
        ``(leaf cost, levels, feature, gain)``.

        ``levels`` is ``lev`` capped by the node's own leaf budget (:meth:`_deff`); the
        split (when ``levels > 1``) is the one of least children's loss (vectorised over
        all features: one product of the support's statistics with its class rows, or the
        compiled one-split kernel), kept only when it lowers the loss; ``gain = leaf -
        (children's loss + lambda)`` in objective units. ``feature =
        -1`` (gain 0) when no split lowers the loss."""
        if self.l1 or self._native():
            leaf = self._leaf_cost(m)
            tot = self.stats[m].sum(0)
            st = None
        else:  # one pass: the support's statistics serve the leaf, the budget and the split
            idx = np.flatnonzero(m)
            raw = self.stats[idx]
            tot = raw.sum(0)
            st = recentre(raw, self.cls_mean[idx])[:, _ST4]  # W, S, Q, N about its mean
            stot = st.sum(0)
            leaf = objective(float(max(sse(stot[0], stot[1], stot[2]), tot[STAT_E])), self.norm,
                             self.lam)
        lev = int(self._deff(lev, tot, leaf))
        if lev <= 1:
            return leaf, lev, -1, 0.0
        if self.l1:
            # every feature's two children at once, on the support's samples in y order
            sm = m[self.cls_s]
            ys, ws, Xn = self.ys[sm], self.ws[sm], self.Xsamp[sm]
            cnt = Xn.sum(axis=0)
            ok = (cnt >= self.m1) & (ys.size - cnt >= self.m1)
            if not ok.any():
                return leaf, lev, -1, 0.0
            c = (absolute_losses(ys, ws[:, None] * Xn)[0]
                 + absolute_losses(ys, ws[:, None] * ~Xn)[0])
            f, c = _least_split(np.where(ok, c, np.inf), (leaf - self.lam) * self.norm)
            c = objective(c, self.norm, self.lam)
        elif st is None:
            # the compiled one-split kernel with no leaf penalty: the split of least
            # children's loss, or -1 when none decreases the loss
            from .compiled import support_subtree

            c, f = support_subtree(m, self._Xu8, self._Wc, self.cls_mean, self._Ec,
                                   self._Nc, 1, 0.0, float(self.m1))
            f, c = int(f), objective(float(c), self.norm, self.lam)
            if f < 0:
                return leaf, lev, -1, 0.0
        else:
            a = st.T @ self.Xc[idx]  # (4, M): every feature's "true" child at once
            comp = stot[:, None] - a
            ok = (a[3] >= self.m1) & (comp[3] >= self.m1)
            if not ok.any():
                return leaf, lev, -1, 0.0
            c = np.where(ok, sse(a[0], a[1], a[2]) + sse(comp[0], comp[1], comp[2]), np.inf)
            f, c = _least_split(c, (leaf - self.lam) * self.norm)
            c = objective(c, self.norm, self.lam)
        return (leaf, lev, f, leaf - c) if solver.improves(c, leaf) else (leaf, lev, -1, 0.0)

    def _greedy(self, mask, d, polish=False):
        """Greedy CART on the binary features, pruned for the objective (the incumbent).

        Grows best first (a heap on the split's gain, so a tree cut short by the time
        limit holds the most useful splits), each node with the split of least children's
        loss while the loss decreases (:meth:`_greedy_split`), to at most ``d`` levels and
        at most the levels a node's own leaf budget allows (:meth:`_deff`: a subtree with
        more than ``h = (leaf - E / normaliser) / lambda`` leaves cannot beat the node's
        leaf, so the pruning below would cut it: stopping there gives the same pruned
        tree); then keeps, bottom up, a split only where its subtrees cost less than a
        leaf (cost-complexity pruning at ``lambda``: the best subtree of the grown tree).
        Without a time limit the grown tree does not depend on the growth order; at the
        deadline the growth stops and the nodes not yet split stay leaves.

        With ``polish`` (squared loss, ``exact_levels >= 2``) each grown node, root first
        and while the time lasts, also gets the exact best tree with at most
        ``min(exact_levels, its levels - 1)`` split levels on its support (the shallow
        kernel): the pruning then keeps, at each node, the least of its leaf, its greedy
        split's subtrees and that exact subtree, a tree never worse than greedy CART's.

        Returns ``(objective, nodes)``; ``nodes[i] = [mask, feature, true, false, leaf,
        levels, klev]`` (``feature = -1``: a leaf; ``klev = L >= 1``: the kernel's exact
        subtree with ``L`` split levels; children after their parent).
        """
        import heapq

        nodes = []
        heap = []  # (-gain, node, levels)
        deadline = self.deadline

        def add(m, lev, parent, side):
            if parent >= 0 and deadline is not None and time.perf_counter() > deadline:
                return False
            i = len(nodes)
            leaf, lev, f, gain = self._greedy_node(m, lev)
            nodes.append([m, -1, -1, -1, leaf, lev, 0])
            if parent >= 0:
                nodes[parent][side] = i
            if f >= 0:
                heapq.heappush(heap, (-gain, i, f, lev))
            return True

        add(mask, d, -1, 0)
        while heap:
            _, i, f, lev = heapq.heappop(heap)
            m = nodes[i][0]
            nodes[i][1] = f
            mt, mf = m & self.Xc_bool[:, f], m & ~self.Xc_bool[:, f]
            if not (add(mt, lev - 1, i, 2) and add(mf, lev - 1, i, 3)):
                nodes[i][1] = -1 if nodes[i][3] < 0 else f
                break  # out of time: the nodes not split stay leaves
        kern = {}
        self._polish_seconds = {}  # node -> seconds of its kernel call
        if polish and self.kl >= 2 and not self.l1:
            for i, nd in enumerate(nodes):
                L = min(self.kl, nd[5] - 1)
                if deadline is not None and time.perf_counter() > deadline:
                    break
                n_cls = int(nd[0].sum())
                if L < 2 or n_cls < 3 or not self._affordable(n_cls, L):
                    continue
                t_k = time.perf_counter()
                kern[i] = (self._kernel(nd[0], L)[0], L)
                dt = time.perf_counter() - t_k
                self._kernel_rate = max(self._kernel_rate, dt / self._kernel_work(n_cls, L))
                self._polish_seconds[i] = dt
                self.n_kernel += 1
        cost = np.empty(len(nodes))
        for i in range(len(nodes) - 1, -1, -1):
            _, f, t, fl, leaf, _, _ = nodes[i]
            if f >= 0 and t >= 0 and fl >= 0 and solver.improves(cost[t] + cost[fl], leaf):
                cost[i] = cost[t] + cost[fl]
            else:
                nodes[i][1] = -1
                cost[i] = leaf
            if i in kern and solver.improves(kern[i][0], cost[i]):
                cost[i], nodes[i][6] = kern[i]
        return float(cost[0]), nodes

    def _build(self, mask, d) -> Tree:
        """The best tree found on the root ``(mask, d)`` (``d``: its memo key's levels).

        Depth first with an explicit stack (no recursion: a chain of any depth works).
        """
        rows = []  # (feature, true, false, value, n, w, loss)
        masks = []  # each row's support (the leaf values are computed at the end)
        todo = [(mask, d, True, -1, 0)]  # (support, levels, effective, parent row, side)
        if self.memo[(np.packbits(mask).tobytes(), d)].feat == _GREEDY:
            todo = []  # the exact shallow subtrees of the greedy tree, built below
            stack = [0]
            parents = {0: (-1, 0)}
            while stack:
                j = stack.pop()
                m, f, t, fl, _, _, klev = self._greedy_nodes[j]
                p, side = parents[j]
                if klev >= 1:  # the kernel's best tree with klev split levels
                    todo.append((m, klev + 1, True, p, side))
                    continue
                i = len(rows)
                rows.append([f, -1, -1, 0.0, 0, 0.0, 0.0])
                masks.append(m)
                if p >= 0:
                    rows[p][side] = i
                if f >= 0:
                    parents[fl], parents[t] = (i, 2), (i, 1)
                    stack += [fl, t]
        while todo:
            m, d_in, effective, parent, side = todo.pop()
            if effective:
                dd = d_in
            else:
                tot = self.stats[m].sum(0)
                dd = int(self._deff(d_in, tot, self._leaf_cost(m, tot)))
            f, dc, replay = self._root_feature(m, dd)
            i = len(rows)
            rows.append([-1, -1, -1, 0.0, 0, 0.0, 0.0])
            masks.append(m)
            if parent >= 0:
                rows[parent][side] = i
            if f >= 0:
                dT, dF = self._child_keys(m, dd, f) if replay else (dc, dc)
                rows[i][0] = f
                # pushed false first, so the true child is numbered right after its parent
                todo.append((m & ~self.Xc_bool[:, f], dF, replay, i, 2))
                todo.append((m & self.Xc_bool[:, f], dT, replay, i, 1))
        if rows:
            vals = self._node_values(np.asarray(masks, dtype=bool).reshape(len(rows), -1))
            for r, v, n, W, loss in zip(rows, *vals, strict=True):
                r[3:] = [float(v), int(n), float(W), float(loss)]
        return self._rows_to_tree(rows)

    @staticmethod
    def _rows_to_tree(rows) -> Tree:
        cols = list(zip(*rows, strict=True))
        return Tree(feature=np.asarray(cols[0], dtype=int),
                    true_child=np.asarray(cols[1], dtype=int),
                    false_child=np.asarray(cols[2], dtype=int),
                    value=np.asarray(cols[3], dtype=float),
                    n_samples=np.asarray(cols[4], dtype=int),
                    weight=np.asarray(cols[5], dtype=float),
                    loss=np.asarray(cols[6], dtype=float))


# the scan of the loaded libraries (10-20 ms with JAX loaded) at import, so that it is not
# spent inside the time limit of the first fit of a process
_blas_controller()
