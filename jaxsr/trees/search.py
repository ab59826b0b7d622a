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
   (:func:`jaxsr.trees.engine.kmeans_losses`).

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
(:mod:`jaxsr.trees.incumbent`: best-first growth, one product of the support's
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
from . import engine as cs
from .extraction import extract_tree, memo_key
from .incumbent import greedy_tree
from .losses import STAT_E, STAT_W, objective
from .problem import (
    ALL_BOUNDS,
    TreeProblem,
    build_problem,
    cheap_split_bound,
    deep_bound,
    leaf_cost,
    levels,
)
from .solver import GREEDY, UNTRIED, Entry, Status, reaches
from .tree import Tree

__all__ = ["SearchResult", "OptimalTreeSearch", "ALL_BOUNDS"]

STEP_SECONDS = 0.1  # the engine's steps between progress reports last about this long
_DEVICE_KMEANS_MAX_CLASSES = 4000  # the device k-means builds a U x U table per subproblem
_DEVICE_KMEANS_MAX_CLUSTERS = 16  # the device computes every row: cap, and bound the rest


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


class OptimalTreeSearch:
    """One fit's search: the problem record, the greedy incumbent, the engine and the tree
    extraction (see the module docstring).

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
        loss only); None picks them from the classes and features
        (:func:`~jaxsr.trees.problem.host_exact_levels`; ``"jax"``:
        :func:`~jaxsr.trees.problem.auto_exact_levels`).
      time_limit: seconds or None. verbose: progress lines on stderr.
      backend: ``"numpy"`` (the host engine alone) or ``"jax"`` (the host engine, with
        the children of every expansion with at least 3 levels evaluated in batched,
        jitted device calls: exact subtrees at the bottom, k-means bounds above;
        :mod:`jaxsr.trees.device`).
      greedy: start from the greedy CART tree (pruned at ``lambda``) as the incumbent:
        the tree returned under a limit is never worse than it.
      mesh: ``None`` or a ``jax.sharding.Mesh`` over which the ``"jax"`` backend splits
        the class axis of its batched calls (:class:`jaxsr.trees.device.DeviceBatcher`).
      progress: report the phase, steps, bounds, gap and subproblems to the open
        :class:`jaxsr._progress.FitProgress` (the estimator's bar): the root's bounds before
        the first step, then about twice a second (the engine's steps are sized to last
        about :data:`STEP_SECONDS`).

    Attributes:
      problem: the :class:`~jaxsr.trees.problem.TreeProblem` (built here, once).
      incumbent: the greedy :class:`~jaxsr.trees.incumbent.Incumbent` after :meth:`run`
        (None when the search did not need one).
      memo: after :meth:`run`, the engine's memo as a mapping ``(packed support bytes,
        levels) -> Entry``. status: why the search ended.

    Raises:
      ValueError: ``normalize=False`` and the spread of ``y`` puts the mean loss outside
        the float64 range (:func:`~jaxsr.trees.problem.build_problem`).
    """

    def __init__(
        self,
        X,
        y,
        w,
        *,
        loss="squared_error",
        regularization=0.01,
        normalize=True,
        depth_budget=5,
        min_samples_leaf=1,
        bounds=ALL_BOUNDS,
        exact_levels=None,
        time_limit=None,
        verbose=False,
        backend="numpy",
        greedy=True,
        mesh=None,
        progress=False,
    ):
        self.problem: TreeProblem = build_problem(
            X,
            y,
            w,
            loss=loss,
            regularization=regularization,
            normalize=normalize,
            depth_budget=depth_budget,
            min_samples_leaf=min_samples_leaf,
            bounds=bounds,
            exact_levels=exact_levels,
            host=backend != "jax",
        )
        self.time_limit = time_limit
        self.verbose = verbose
        self.progress = bool(progress)
        self.greedy = bool(greedy)
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
        self._kernel_rate = 3e-8  # seconds per element operation of the kernel (updated)
        self.memo: dict = {}  # (packed support, levels) -> solver.Entry
        self.incumbent = None
        self.status = None
        self.n_kernel = 0
        self.n_kmeans = 0

    # ------------------------------------------------------------------ progress
    def _live_bound(self, state, final=False):
        """The root's lower bound now (valid during the search, :mod:`jaxsr.trees.engine`)
        and its entry."""
        e = self.memo[state.root_key]
        if final or e.solved or state.status is not None:
            return e.lb, e
        return cs.live_lower_bound(state), e

    def _report(self, state, final=False, line=True):
        """The bounds, gap and subproblems on the progress bar (``progress``) and, with
        ``verbose``, one line on stderr."""
        lb, e = self._live_bound(state, final)
        if self.progress:
            _progress.update(
                0,
                bound=f"{lb:.6g}",
                objective=f"{e.ub:.6g}",
                gap=f"{max(e.ub - lb, 0.0):.3g}",
                subproblems=len(self.memo),
            )
        if self.verbose and line:
            _progress.write(
                f"[osrt] lower bound {lb:.6f}  upper bound {e.ub:.6f}  "
                f"subproblems {len(self.memo)}  kernels {self.n_kernel}  "
                f"elapsed {time.perf_counter() - state.t0:.2f} s"
            )

    def _build_seconds(self, nodes):
        """Predicted seconds to extract a tree of ``nodes`` nodes (a leaf value per node
        from the samples, :func:`~jaxsr.trees.extraction.extract_tree`) and for the
        estimator to recompute its objective from its predictions (measured ~15 us + 5 ns
        per sample a node, ~1 ms + 10 ns per sample for the rest; doubled, as a margin)."""
        n = self.problem.n
        return 2.0 * (nodes * (1.5e-5 + 5e-9 * n) + 1e-3 + 1e-8 * n)

    # ------------------------------------------------------------------ the device
    def _device(self):
        """The :class:`~jaxsr.trees.device.DeviceBatcher` (``backend="jax"``), made at the
        first call; None while a time limit leaves less than a compilation
        (:data:`~jaxsr.trees.device.COMPILE_SECONDS`) and nothing is compiled for this
        fit's shapes in the process (the host then evaluates the children)."""
        if self.dev is None and self._jax:
            from . import device

            P = self.problem
            n_dev = 1 if self._mesh is None else int(self._mesh.devices.size)
            Up = max(64 * n_dev, -(-P.U // (64 * n_dev)) * 64 * n_dev)
            if (
                self.deadline is None
                or self.deadline - time.perf_counter() >= device.COMPILE_SECONDS
                or device.compiled_for(Up, P.M)
            ):
                self.dev = device.DeviceBatcher(
                    P.Xc,
                    P.st4,
                    P.korder,
                    P.lam,
                    P.norm,
                    P.m1,
                    mean=P.cls_mean,
                    E=P.stats[:, STAT_E],
                    mesh=self._mesh,
                )
        return self.dev

    def _device_expansion(self, state, L):
        """The device's part of the engine's expansion of level ``L``
        (:mod:`jaxsr.trees.engine`, ``backend="jax"``): the children of its splits,
        as :meth:`_device_children` takes them; their entries go to the memo. Returns
        whether the device evaluated every new child."""
        P = self.problem
        fr = state.search.frame(L)
        nk, d = int(fr["nk"]), int(fr["levels"])
        F = fr["feat"]
        mask = fr["mask"].astype(bool)
        maskT = mask[None, :] & P.XcT[F]
        maskF = mask[None, :] & ~P.XcT[F]
        dT, dF = fr["dT"], fr["dF"]
        packT, packF = np.packbits(maskT, axis=1), np.packbits(maskF, axis=1)
        keysT = [(packT[i].tobytes(), int(dT[i])) if dT[i] > 1 else None for i in range(nk)]
        keysF = [(packF[i].tobytes(), int(dF[i])) if dF[i] > 1 else None for i in range(nk)]
        return self._device_children(
            mask,
            d,
            (maskT, maskF),
            (keysT, keysF),
            (fr["stT"], fr["stF"]),
            (fr["leafT"], fr["leafF"]),
            (dT, dF),
        )

    def _device_children(self, mask, d, masks, keys, stats, leaves, deffs):
        """Evaluate all new children of a subproblem in batched device calls; False when
        the device is not used (see :meth:`_device`)."""
        if self._device() is None:
            return False
        P = self.problem
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
        if not P.l1 and d - 1 <= P.kl + 1:
            W = P.stats[mask, STAT_W]
            Wt = float(W.sum())
            centre = float(np.dot(W, P.cls_mean[mask]) / Wt) if Wt > 0 else 0.0
            # under a time limit, only the chunks predicted to end before the deadline
            # (a first call compiles): the others stay new, solved on the host if visited
            costs, feats, done = self.dev.subtrees(bm, d - 2, centre, self.deadline)
            self.n_kernel += done
            for k, c, f in zip(sel_k[:done], costs[:done], feats[:done], strict=True):
                memo[k] = Entry(float(c), float(c), int(f), True, -1, np.inf)
            return done == len(sel_k)
        if (
            P.l1
            or not P.use_kmeans
            or P.U > _DEVICE_KMEANS_MAX_CLASSES
            or not self.dev.batch_kmeans
        ):
            return True
        st = np.stack(sel_st)
        cheap = np.broadcast_to(cheap_split_bound(P, st), (len(sel_k),))
        # children have at most max(sel_d) levels, so at most 2^(max(sel_d)-1) leaves
        kmax = int(min(1 << min(max(sel_d) - 1, 20), P.U))
        K = max(min(kmax, _DEVICE_KMEANS_MAX_CLUSTERS), P.look)
        kb, done = self.dev.kmeans_bounds(bm, K, P.look, self.deadline)
        if kmax > K:  # trees with more than K leaves: loss >= E, leaves >= K + 1
            kb = np.minimum(kb, objective(st[:, STAT_E], P.norm, P.lam, K + 1))
        self.n_kmeans += done
        for j, k in enumerate(sel_k[:done]):
            leaf = sel_leaf[j]
            sb = max(float(cheap[j]), float(kb[j]))
            if reaches(sb, leaf):
                memo[k] = Entry(float(leaf), float(leaf), -1, True, -1, np.inf)
            else:
                kd = k[1] > P.kl + 1 and P.kl and not P.l1
                deep = max(sb, float(deep_bound(P, sel_st[j]))) if kd else np.inf
                memo[k] = Entry(
                    float(min(leaf, sb)), float(leaf), -1, False, UNTRIED if kd else -1, float(deep)
                )
        return done == len(sel_k)

    # ------------------------------------------------------------------ driver
    def run(self, max_steps=None) -> SearchResult:
        """Solve: the greedy incumbent (:mod:`jaxsr.trees.incumbent`), the root's entry,
        the engine (:mod:`jaxsr.trees.engine`: init, step until terminate) and the tree
        (:mod:`jaxsr.trees.extraction`)."""
        t0 = time.perf_counter()
        P = self.problem
        self.incumbent = None
        mask = np.ones(P.U, dtype=bool)
        d = levels(P, P.depth, P.stats.sum(0), leaf_cost(P, mask))
        key = memo_key(mask, d)
        shallow = bool(P.kl and d <= P.kl + 1)
        # one shallow-kernel call (d <= kl + 1) is a few products: not worth the ~0.2 s
        # threadpoolctl takes to find the libraries on the first fit of a process
        blas = _blas_single_thread() if not shallow else contextlib.nullcontext()
        blas.__enter__()
        self.deadline = None if self.time_limit is None else t0 + float(self.time_limit)
        try:
            inc = None
            if self.progress:
                _progress.update(0, phase="greedy")
            if self.greedy and d > 1 and not shallow:
                # anytime: the greedy CART tree first (a few ms), so the search starts
                # from its objective and never returns a worse tree, even when the time
                # limit stops it before the root's bounds are computed
                inc = greedy_tree(
                    P,
                    mask,
                    d,
                    deadline=self.deadline,
                    polish=self.deadline is not None,
                    kernel_rate=self._kernel_rate,
                )
                self._kernel_rate = inc.kernel_rate
                self.n_kernel += inc.n_kernel
            g = np.inf if inc is None else inc.objective
            if self.deadline is not None:
                # the time limit covers the tree's extraction and the estimator's
                # objective after the search: both are reserved, sized by the incumbent
                kept = 1 if inc is None else sum(1 for nd in inc.nodes if nd[1] >= 0) * 2 + 1
                self.deadline -= self._build_seconds(kept)
                if inc is not None:  # a kept exact subtree is rebuilt by the kernel,
                    # level by level (its root call and the calls below: ~2.5 of the first)
                    self.deadline -= 2.5 * sum(
                        dt for i, dt in inc.kernel_seconds.items() if inc.nodes[i][6] >= 1
                    )
            state = self._search((key, mask, d), g, max_steps, t0)
            self.n_kernel += state.kernel_calls
            self.n_kmeans += state.kmeans
            e = self.memo[key]
            if e.feat == GREEDY:  # the root's best tree is the incumbent
                self.incumbent = inc
            tree = extract_tree(
                P, self.memo, mask, d, None if self.incumbent is None else self.incumbent.nodes
            )
        finally:
            blas.__exit__(None, None, None)
        if self.verbose or self.progress:
            self._report(state, final=True)
        self.status = state.status
        return SearchResult(
            tree=tree,
            objective=float(e.ub),
            lower_bound=float(e.lb),
            timed_out=state.status is Status.TIME_LIMIT,
            n_subproblems=len(self.memo),
            n_kernel_calls=self.n_kernel,
            n_kmeans=self.n_kmeans,
            seconds=time.perf_counter() - t0,
            status=state.status,
            steps=state.steps,
        )

    def _search(self, root, incumbent, max_steps, t0):
        """The engine from the root (its entry with the objective ``incumbent`` of the
        greedy tree, inf for none) until it terminates; ``backend="jax"``: the device
        evaluates the children of every expansion with at least 3 levels. Progress and
        verbose lines between steps. Returns the final :class:`~jaxsr.trees.engine.State`;
        :attr:`memo` reads its memo."""
        device = None
        if self._jax:

            def device(st, L):
                ref[0] = st  # the search as the engine holds it now
                return self._device_expansion(st, L)

        limit = None if self.deadline is None else self.deadline - t0
        ref = [
            cs.init(
                self.problem,
                root,
                incumbent,
                limit,
                max_steps,
                t0,
                device,
                kernel_rate=self._kernel_rate,
            )
        ]
        self.memo = cs.MemoView(ref)
        state = ref[0]
        if self.progress:  # the root's bounds on the bar before the first step
            _progress.update(0, phase="search")
            self._report(state, line=False)
        next_line = t0 + 1.0  # verbose: a line a second
        next_post = t0 + 0.5  # progress: the bounds twice a second
        # visits per step: sized so that a step lasts about STEP_SECONDS (a visit costs
        # microseconds to a kernel call of seconds), so the bar moves between them
        chunk = 16
        while cs.terminate(state) is None:
            steps = state.steps
            t_step = time.perf_counter()
            state = ref[0] = cs.step(state, chunk)
            dt = time.perf_counter() - t_step
            done = state.steps - steps
            if done > 0:
                chunk = int(
                    min(
                        cs.CHUNK,
                        max(1, chunk * 2 if dt <= 0 else min(2 * chunk, STEP_SECONDS * done / dt)),
                    )
                )
            if self.progress or self.verbose:
                if self.progress:
                    _progress.update(max(state.steps - steps, 1))
                now = time.perf_counter()
                if (self.verbose and now >= next_line) or (self.progress and now >= next_post):
                    line = now >= next_line
                    self._report(state, line=line)
                    next_post = time.perf_counter() + 0.5
                    if line:
                        next_line = next_post + 0.5
        return state


# the scan of the loaded libraries (10-20 ms with JAX loaded) at import, so that it is not
# spent inside the time limit of the first fit of a process
_blas_controller()
