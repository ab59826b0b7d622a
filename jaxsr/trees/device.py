"""Batched evaluation of frontier subproblems on the JAX device (``backend="jax"``).

When the search expands a subproblem, all children of all its splits form a batch. This
module evaluates such a batch in one jitted, ``jax.vmap``-ed call per chunk:

* children with at most ``exact_levels + 1`` levels left: their exact optimal subtree
  (:func:`jaxsr.trees.subtrees.optimal_subtree_cost`, pair/triple statistics as matrix
  products);
* deeper children: their k-Means equivalent-points lower bound
  (:func:`jaxsr.trees.kmeans.kmeans_lower_bound`).

Supports are fixed-shape masks over all equivalence classes (padded to a multiple of 64
with empty classes), so every call of a fit has the same shapes and compiles once per
``levels`` / cluster count. Batches are cut into chunks whose work arrays fit in
``chunk_bytes``. The numbers are computed in float64 whatever the estimator's dtype.

Several devices (``mesh``): the class axis of every array (class rows, class statistics,
the supports' mask columns) is split over all the mesh's axes with ``NamedSharding``
(padded to a multiple of ``64 * devices``); the kernels are the same jitted functions and
XLA inserts the cross-device sums of the class statistics (GSPMD). The costs equal one
device's up to the order of those float64 sums, so the search finds the same optimum.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._config import program, to_device
from .kmeans import kmeans_lower_bound
from .losses import recentred
from .subtrees import optimal_subtree_cost

__all__ = ["DeviceBatcher"]


def _recentred_subtrees(X, W, mean, E, N, centre, masks, lam, norm, levels, m1):
    """Exact subtrees of a batch of supports, with the class statistics re-centred on
    ``centre`` (the expanded parent's mean; :func:`jaxsr.trees.losses.recentre`)."""
    S, Q = recentred(W, mean, E, centre)
    st4 = jnp.stack([W, S, Q, N], axis=1)
    return jax.vmap(optimal_subtree_cost, in_axes=(None, None, 0, None, None, None, None))(
        X, st4, masks, lam, norm, levels, m1
    )


def _kmeans_bounds(
    weights, sums, sq_sums, masks, regularization, max_clusters, normalizer, min_clusters
):
    """k-Means lower bounds of a batch of supports (``masks``, ``(B, U)``)."""
    return jax.vmap(kmeans_lower_bound, in_axes=(None, None, None, 0, None, None, None, None))(
        weights, sums, sq_sums, masks, regularization, max_clusters, normalizer, min_clusters
    )


# jaxsr programs: the CPU compile options and the persistent compilation cache apply
_batched_subtrees = program(_recentred_subtrees, static_argnames=("levels", "m1"))
_batched_kmeans = program(_kmeans_bounds, static_argnames=("max_clusters", "min_clusters"))


# seconds of the slowest call seen per compiled signature, process-wide (jit caches its
# compilations per process): a time-limited search makes a device call only when it is
# predicted to end before the deadline (:meth:`DeviceBatcher.affordable`)
_CALL_SECONDS: dict = {}
_MEASURED: set = set()  # signatures timed after their compiling call
COMPILE_SECONDS = 20.0
"""Seconds allowed for the first call of a signature (its compilation: 1-7 s measured on
CPU); a time-limited search with less time left skips the call (the host evaluates those
children instead, the same optimum)."""


def compiled_for(Up: int, M: int) -> bool:
    """Whether a batched kernel was already called (compiled) in this process for
    ``Up`` padded classes (and ``M`` features, for the subtree kernel)."""
    return any(sig[1] == Up and (sig[0] == "kmeans" or sig[2] == M) for sig in _CALL_SECONDS)


def _pad_rows(a, n):
    out = np.zeros((n,) + a.shape[1:], dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class DeviceBatcher:
    """Device copies of the class data and the two batched kernels.

    Args:
      Xc: ``(U, M)`` float 0/1 class feature rows. st4: ``(U, 4)`` ``W, S, Q, N``.
      korder: ``(U,)`` int, classes sorted by mean target (k-means order).
      lam, norm, m1: ``lambda``, loss normaliser, minimum leaf size.
      chunk_bytes: memory budget of one call's work arrays.
      batch_kmeans: evaluate the k-means bounds of the children in batches too (default:
        only when JAX runs on an accelerator).
      mesh: ``None`` (one device) or a ``jax.sharding.Mesh``: the class axis is split over
        all its axes (see the module docstring).
    """

    def __init__(
        self,
        Xc,
        st4,
        korder,
        lam,
        norm,
        m1,
        chunk_bytes=5e8,
        batch_kmeans=True,
        mean=None,
        E=None,
        mesh=None,
    ):
        U, M = Xc.shape
        self.U, self.M = U, M
        n_dev = 1 if mesh is None else int(mesh.devices.size)
        self.Up = Up = max(64 * n_dev, -(-U // (64 * n_dev)) * 64 * n_dev)
        self._place = self._placer(mesh)
        self.lam, self.norm, self.m1 = float(lam), float(norm), int(m1)
        self.korder = np.asarray(korder)
        self.chunk_bytes = float(chunk_bytes)
        self.n_calls = 0
        self.n_kmeans_items = 0
        # the batched k-means builds a U x U table per child: worth it on an accelerator,
        # slower on CPU than the host's O(U log U) rows (insurance, lambda 0.01, no depth
        # limit: 3.6 s host vs 31 s batched), but backend="jax" runs the same code on
        # every platform (the "auto" backend picks the host engine on every platform)
        self.batch_kmeans = bool(batch_kmeans)
        put = self._place
        with jax.enable_x64(True):
            self.X = put(_pad_rows(np.asarray(Xc, np.float64), Up), 0)
            s4 = np.asarray(st4, np.float64)
            Wc = s4[:, 0]
            if mean is None:
                mean = np.where(Wc > 0, s4[:, 1] / np.where(Wc > 0, Wc, 1.0), 0.0)
            if E is None:
                E = np.maximum(s4[:, 2] - Wc * mean * mean, 0.0)
            self.W = put(_pad_rows(Wc, Up), 0)
            self.mean = put(_pad_rows(np.asarray(mean, np.float64), Up), 0)
            self.E = put(_pad_rows(np.asarray(E, np.float64), Up), 0)
            self.N = put(_pad_rows(s4[:, 3], Up), 0)
            s = np.asarray(st4, np.float64)[self.korder]
            self.kW = put(_pad_rows(s[:, 0], Up), 0)
            self.kS = put(_pad_rows(s[:, 1], Up), 0)
            self.kQ = put(_pad_rows(s[:, 2], Up), 0)

    @staticmethod
    def _placer(mesh):
        """``put(array, class_axis)``: the array on the device, or, with a mesh, split
        along ``class_axis`` over all the mesh's axes (replicated along the others)."""
        if mesh is None:
            return lambda a, axis: to_device(a)
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        axes = tuple(mesh.axis_names)

        def put(a, axis):
            spec = [None] * np.ndim(a)
            spec[axis] = axes
            return jax.device_put(a, NamedSharding(mesh, P(*spec)))

        return put

    def affordable(self, sig, deadline) -> bool:
        """A call of signature ``sig`` is predicted to end before ``deadline``
        (``time.perf_counter`` seconds; None: no limit): its slowest time seen, or
        :data:`COMPILE_SECONDS` when it was never called (compiled) in this process."""
        if deadline is None:
            return True
        import time

        need = _CALL_SECONDS.get(sig, COMPILE_SECONDS)
        return need < deadline - time.perf_counter()

    def _timed(self, sig, fn, *args):
        import time

        t = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        dt = time.perf_counter() - t
        if sig not in _CALL_SECONDS:  # the first call compiles: a tenth of it as a guess
            _CALL_SECONDS[sig] = 0.1 * dt
            _MEASURED.discard(sig)
        elif sig not in _MEASURED:
            _CALL_SECONDS[sig] = dt
            _MEASURED.add(sig)
        else:
            _CALL_SECONDS[sig] = max(_CALL_SECONDS[sig], dt)
        return out

    def _chunks(self, B, per_item_bytes):
        c = int(max(1, min(64, self.chunk_bytes // max(per_item_bytes, 1))))
        c = 1 << (c.bit_length() - 1)  # power of two
        # two batch shapes per kernel (8 and the memory cap): few compilations per fit
        return min(c, 8) if B <= 8 else c

    def subtrees(self, masks: np.ndarray, levels: int, centre: float = 0.0, deadline=None):
        """Exact optimal subtrees of a batch of supports.

        Args:
          masks: ``(B, U)`` bool supports. levels: split levels (1..3).
          centre: the targets' centre for the sums (the parent subproblem's mean, so the
            losses round relative to its spread).
          deadline: ``time.perf_counter`` seconds or None: the chunks not predicted to end
            before it are not evaluated (:meth:`affordable`).

        Returns:
          ``(costs (B,) float, features (B,) int, done)``: the first ``done`` are evaluated
          (all of them without a deadline).
        """
        B = masks.shape[0]
        M = self.M
        per = 8.0 * (14 * 4 * M ** (levels + 0) + 4 * self.Up * M)
        c = self._chunks(B, per)
        costs = np.empty(B)
        feats = np.empty(B, dtype=int)
        sig = ("subtrees", self.Up, M, c, int(levels), self.m1)
        done = 0
        with jax.enable_x64(True):
            for s in range(0, B, c):
                if not self.affordable(sig, deadline):
                    break
                m = _pad_rows(masks[s : s + c], c)
                m = np.concatenate([m, np.zeros((c, self.Up - self.U), bool)], axis=1)
                cc, ff = self._timed(
                    sig,
                    _batched_subtrees,
                    self.X,
                    self.W,
                    self.mean,
                    self.E,
                    self.N,
                    float(centre),
                    self._place(m, 1),
                    self.lam,
                    self.norm,
                    levels,
                    self.m1,
                )
                n = min(c, B - s)
                costs[s : s + n] = np.asarray(cc)[:n]
                feats[s : s + n] = np.asarray(ff)[:n]
                self.n_calls += 1
                done = s + n
        return costs, feats, done

    def kmeans_bounds(self, masks: np.ndarray, max_clusters: int, min_clusters: int, deadline=None):
        """k-Means equivalent-points lower bounds of a batch of supports.

        Args:
          masks: ``(B, U)`` bool supports (class order of the search).
          max_clusters: static cap on the clusters (leaves). min_clusters: 1 or 2.
          deadline: as in :meth:`subtrees`.

        Returns:
          ``(bounds (B,) float (objective units), done)``: the first ``done`` evaluated.
        """
        B = masks.shape[0]
        per = 8.0 * 6 * self.Up * self.Up
        c = self._chunks(B, per)
        out = np.empty(B)
        sig = ("kmeans", self.Up, c, int(max_clusters), int(min_clusters))
        done = 0
        with jax.enable_x64(True):
            for s in range(0, B, c):
                if not self.affordable(sig, deadline):
                    break
                m = _pad_rows(masks[s : s + c][:, self.korder], c)
                m = np.concatenate([m, np.zeros((c, self.Up - self.U), bool)], axis=1)
                lb = self._timed(
                    sig,
                    _batched_kmeans,
                    self.kW,
                    self.kS,
                    self.kQ,
                    self._place(m, 1),
                    self.lam,
                    int(max_clusters),
                    self.norm,
                    int(min_clusters),
                )
                n = min(c, B - s)
                out[s : s + n] = np.asarray(lb)[:n]
                self.n_calls += 1
                self.n_kmeans_items += n
                done = s + n
        return out, done
