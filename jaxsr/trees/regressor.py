"""OptimalTreeRegressor: the provably optimal sparse regression tree (OSRT), scikit-learn style."""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .. import _memory, _progress
from .._base import BaseEstimator, RegressorMixin, check_fitted
from .._config import precision, resolve_dtype, resolve_mesh
from .._validation import (
    check_choice,
    check_feature_names,
    check_int,
    check_real,
    check_sample_weight,
    check_target,
    default_feature_names,
    feature_names,
    validate_X,
)
from .._warn import warn_user
from .binarize import Binarizer
from .solver import ALL_BOUNDS, Status
from .tree import Tree

__all__ = ["OptimalTreeRegressor", "PathSegment"]


class PathSegment(NamedTuple):
    """One piece of :meth:`OptimalTreeRegressor.regularization_path`: the tree of
    ``model`` is optimal for every ``regularization`` in ``[lambda_min, lambda_max]``.

    Attributes:
      lambda_min, lambda_max: float, the piece's range (``lambda_max`` may be ``inf``).
      n_leaves: int, leaves of the tree. loss: float, its normalised loss (``loss_``);
        its objective at ``lambda`` is ``loss + lambda * n_leaves``.
      optimal: bool, the fit that found it was certified (``optimal_``).
      model: the fitted :class:`OptimalTreeRegressor`.
    """

    lambda_min: float
    lambda_max: float
    n_leaves: int
    loss: float
    optimal: bool
    model: OptimalTreeRegressor


_LOSSES = ("squared_error", "absolute_error")
#: the defaults, chosen on the real-data panel (``benchmarks/bench_trees_defaults.py``)
DEFAULT_REGULARIZATION = 0.005
DEFAULT_DEPTH_BUDGET = 6
#: quantile thresholds a feature of the default binarizer where gbdt's float32 cannot go
FALLBACK_THRESHOLDS = 16
ROUNDING_ALLOWANCE = 1e-4
"""The loss that rounding the leaf values to float64 adds (``y`` on a large offset, e.g.
``1e10 + signal``) counts as rounding in ``optimal_`` up to this share of the objective (or
of the one-leaf loss, ``loss_scale_``, where that is larger); beyond it the offset swamps
the signal and a tree whose gap exceeds the certificate's tolerance is not certified."""
_FORMAT = "jaxsr.OptimalTreeRegressor"


def certificate_tolerance(objective, regularization=0.0, loss_scale=1.0) -> float:
    """The rounding tolerance of a certificate comparison, in objective units.

    ``1e-9 * max(|objective|, regularization, loss_scale)``: the search's sums round at
    about 1e-16 of the largest loss they cancel, the one-leaf tree's ``loss_scale``
    (``root_leaf_loss``, 1 with ``normalize=True``); a relative tolerance alone is 0 at an
    objective of 0 (``regularization=0`` on data that a tree fits exactly).
    """
    return 1e-9 * max(
        abs(float(objective)), float(regularization), float(loss_scale), np.finfo(np.float64).tiny
    )


def default_binarizer(X=None) -> Binarizer:
    """The binarizer of ``binarizer="auto"`` for real (or text) features, chosen on the
    real-data panel (``benchmarks/bench_trees_defaults.py``): the thresholds of a boosted
    reference ensemble, ``Binarizer(strategy="gbdt")`` (40 stumps; McTavish et al. 2022),
    text columns one-hot. scikit-learn's trees compute in float32, so where a numeric value
    of ``X`` lies beyond the float32 range the quantile binarizer with
    :data:`FALLBACK_THRESHOLDS` thresholds a feature is used instead (exact in float64)."""
    if X is not None:
        big = float(np.finfo(np.float32).max)
        try:
            if hasattr(X, "select_dtypes"):
                Xn = X.select_dtypes(include="number").to_numpy(np.float64)
            else:
                Xn = np.asarray(X, dtype=np.float64)
            with np.errstate(invalid="ignore"):
                beyond = bool(np.any(np.abs(Xn[np.isfinite(Xn)]) > big))
        except (TypeError, ValueError):
            beyond = False
        if beyond:
            return Binarizer(strategy="quantile", n_thresholds=FALLBACK_THRESHOLDS)
    return Binarizer(strategy="gbdt")


def _is_auto(binarizer) -> bool:
    return isinstance(binarizer, str) and binarizer == "auto"


class OptimalTreeRegressor(RegressorMixin, BaseEstimator):
    """Provably optimal sparse regression tree over binary features (OSRT).

    Minimises the objective (OSRT eq. 1 and 2)

        R(t) = loss(t) / normaliser + regularization * leaves(t),   depth(t) <= depth_budget,

    over all binary trees whose splits test one binary feature and whose leaves predict a
    constant (the weighted mean for ``loss="squared_error"``, the weighted median for
    ``"absolute_error"``), by dynamic programming with bounds (hierarchical, one-step
    lookahead, equivalent points and the k-Means equivalent-points lower bound; see
    :mod:`jaxsr.trees.search`). For absolute loss the k-Means bound's analogue is 1-D
    weighted k-medians over the subproblem's individual targets (the equivalence-class
    constraint is relaxed there: a valid, weaker bound). The fit ends with a certificate:
    ``lower_bound_`` is a proven lower bound on the optimal objective, ``objective_`` the
    objective of the tree returned, ``optimal_`` tells whether they meet.

    **What is normalised.** ``loss(t)`` is the summed weighted loss over the training
    samples: ``sum_i w_i (y_i - yhat_i)^2`` or ``sum_i w_i |y_i - yhat_i|``. With
    ``normalize=True`` (default, as in the ``osrt`` package) the normaliser is that loss for
    the one-leaf tree -- ``SST = sum_i w_i (y_i - ybar)^2`` for squared loss, the summed
    absolute deviation from the weighted median for absolute loss -- so the one-leaf tree has
    loss 1, ``loss / normaliser = 1 - R^2`` and ``regularization`` is scale-free. With
    ``normalize=False`` the normaliser is ``sum_i w_i`` (``n`` without weights): the paper's
    raw mean loss (MSE / MAE), and ``regularization`` is in units of ``y^2`` (``|y|``).

    **The engine.** The search is C++ compiled when the package is installed
    (:mod:`jaxsr.trees.engine`): the first fit of a process runs at full speed.

    **Defaults.** ``regularization=0.005``, ``depth_budget=6`` and the boosted-stump
    binarizer were chosen on a real-data panel (``benchmarks/bench_trees_defaults.py``,
    ``docs/trees.md``): among the settings whose median tree had at most 16 leaves and
    whose every fit was certified, on the panel's tuning splits, those within 0.005 of
    the best mean test R^2, then the fewest leaves. The paper's setting is :meth:`paper`.

    Args:
      regularization: ``lambda >= 0``, the price of one leaf in objective units.
      depth_budget: the most levels of the tree counting the root as 1 (the ``osrt``
        package's meaning: 1 = a single leaf, 2 = one split); ``None`` = no depth limit
        (the paper's unconstrained problem; needs ``regularization > 0``).
      max_depth: scikit-learn's depth instead: the most splits from the root to a leaf
        (``DecisionTreeRegressor(max_depth=d)``'s meaning; 0 = a single leaf). When given
        it sets the depth budget to ``max_depth + 1``; ``None`` (default): ``depth_budget``
        decides (so, unlike scikit-learn's, ``None`` is not "unlimited": that is
        ``depth_budget=None``). A ``depth_budget`` other than its default that disagrees
        raises ValueError.
      loss: ``"squared_error"`` or ``"absolute_error"``.
      min_samples_leaf: every leaf holds at least this many training samples (unweighted).
      time_limit: seconds for the whole :meth:`fit` (on a process's first fit the loading
        of JAX, then binarization, set-up, the search and the extraction of the tree,
        which is reserved before the search stops); the search stops there and returns the best
        tree found, with ``optimal_`` False unless the bounds already met. Anytime: the
        search starts from greedy CART on the same binary features, grown best first
        (largest loss decrease first) and pruned at ``regularization``; under a limit each
        grown node's exact shallow subtree (``exact_levels`` split levels) is an
        alternative in that pruning. So the tree returned is never worse than greedy
        CART's: greedy CART is always grown whole, whatever the clock (a few milliseconds
        on a thousand binary features, so a limit shorter than that is overrun by them);
        ``backend="jax"`` makes a device call only when it is predicted to end in time (a
        first call, which compiles, is allowed :data:`jaxsr.trees.device.COMPILE_SECONDS`),
        else the host evaluates those subproblems. Measured: ``benchmarks/bench_trees_anytime.py``.
        ``None``: no limit.
      binarizer: ``"auto"`` (default): ``X`` is used as it is when every value is 0 or
        1, else binarized by :func:`default_binarizer`: the thresholds of 40 boosted
        stumps fitted on ``(X, y)`` (``Binarizer(strategy="gbdt")``, McTavish et al.
        2022), one indicator per category of a text column; ``None``: ``X`` must already be
        0/1; or an unfitted :class:`~jaxsr.trees.Binarizer` (or any object with ``fit``
        and ``transform``). A copy is fitted on ``X`` in :meth:`fit` (``binarizer_``) and
        applied in :meth:`predict`.
      normalize: see above.
      bounds: the bounds to use, any subset of ``("hierarchical", "lookahead",
        "equivalent", "kmeans")``. Every subset gives the same optimum; fewer bounds only
        make the search slower (ablation, OSRT section 6.4).
      exact_levels: split levels solved at once by the matrix-product kernels of
        :mod:`jaxsr.trees.subtrees` (squared loss; 0 = none, up to 3); ``None`` picks them
        from the distinct binary rows and the binary features: the largest whose kernel
        fits in memory and in about 2 s a call on every row
        (:func:`~jaxsr.trees.problem.host_exact_levels`; ``backend="jax"``: the device's
        arrays, :func:`~jaxsr.trees.problem.auto_exact_levels`). Deeper subproblems get
        the kernel's best shallow tree as an upper bound, certified optimal when no tree
        with more leaves can beat it.
      backend: ``"numpy"``: the host engine (:mod:`jaxsr.trees.engine`, C++), one
        subproblem at a time,
        pruning between them; ``"jax"``: every expanded subproblem's children are
        evaluated in batched, jitted device calls (exact subtrees at the bottom, k-means
        bounds above; :mod:`jaxsr.trees.device`), driven by the Python loop; ``"auto"``
        (default): ``"numpy"`` on every platform, accelerators included, and ``"jax"``
        only with a ``mesh``. The batched device path evaluates the children of one
        subproblem per call, waits for each call, and is driven by the Python loop, so it
        evaluates children that the host engine prunes away between them (on the CPU,
        insurance at lambda 0.01 with no depth budget: 31 s batched, 3.6 s on the host);
        no size was found where it pays, so ``auto`` never trades the host engine for it.
        Same optimum either way.
      verbose: one line a second on stderr (lower bound, upper bound, subproblems,
        elapsed seconds).
      progress: a progress bar (tqdm) on stderr for fits longer than a second: the
        ``phase`` (``binarize``, ``classes`` -- the equivalence classes and the root's
        bounds --, ``greedy``, ``search``), solver steps, the lower ``bound`` (from the
        root's bounds on, before the first step), the ``objective`` of the best tree so far,
        their ``gap`` and the ``subproblems`` in the memo (default ``True``, as
        :class:`~jaxsr.SymbolicRegressor`; on a stream that is not a terminal a line every
        10 s; nothing is ever printed to stdout). ``False``: no bar.
      dtype: ``"float64"`` (default) or ``"float32"``: the precision of the inputs and of
        the predictions. The search's sums are always accumulated in float64 on the host,
        so the certificate is exact to about 1e-12.
      max_steps: the most solver steps (subproblem visits, :mod:`jaxsr.trees.engine`);
        the search stops there (``status_ == "node_limit"``) and returns the best tree
        found with a valid lower bound, like ``time_limit`` but reproducible. ``None``: no
        limit.
      mesh: several devices: ``None`` (default, one device), ``"all"`` (a 1-D mesh over all
        local devices, axis ``"classes"``) or a ``jax.sharding.Mesh``. The ``"jax"``
        backend then splits the class axis (the distinct binary rows) of its batched bound
        and subtree evaluations over the mesh (:mod:`jaxsr.trees.device`); same optimum as
        one device. A mesh implies ``backend="jax"`` (``"auto"`` picks it; ``"numpy"``
        with a mesh raises ValueError).

    Attributes:
      tree_: the fitted :class:`~jaxsr.trees.Tree`.
      objective_: ``loss_ + regularization * n_leaves_`` of ``tree_``, recomputed from its
        own predictions on the training data.
      loss_: ``loss(tree_) / normaliser``.
      lower_bound_: proven lower bound on the optimal objective (<= ``objective_``).
      gap_: ``objective_ - lower_bound_`` (>= 0).
      optimal_: ``gap_ <= 1e-9 * max(objective_, regularization, loss_scale_)``
        (:func:`certificate_tolerance`; tolerant at an objective of 0) plus the loss that
        rounding the leaf values to float64 adds (``y`` on a large offset), the latter only
        while it is at most :data:`ROUNDING_ALLOWANCE` of ``max(objective_, loss_scale_)``
        (beyond, ``optimal_`` is False, with a warning to subtract the offset): the tree is
        certified optimal.
      loss_scale_: the one-leaf tree's loss in objective units (1 with ``normalize=True``):
        the scale of the search's rounding.
      timed_out_: the time limit stopped the search (``status_ == "time_limit"``).
      status_: why the search ended: ``"optimal"``, ``"time_limit"`` or ``"node_limit"``
        (:class:`~jaxsr.trees.solver.Status`); a fit that ends without a certificate
        warns (``sklearn.exceptions.ConvergenceWarning``).
      n_leaves_, depth_: size of ``tree_`` (``depth_`` counts the root as 1).
      normalizer_: the normaliser of the loss.
      n_features_in_: the number of columns of ``X`` seen in :meth:`fit`.
      feature_names_in_: object array of their names, only when ``X`` was a DataFrame with
        string column names (scikit-learn's convention; else the names are ``x1 .. xM``).
      binary_feature_names_: names of the binary features the tree splits on.
      binarizer_: the fitted copy of ``binarizer`` (or ``None``).
      n_subproblems_, fit_seconds_: search statistics.
      exact_levels_: the split levels of the exact shallow kernels used (``exact_levels``,
        or the automatic choice from the number of distinct binary rows).

    Raises:
      ValueError: from :meth:`fit` for invalid hyper-parameters or data (see there).

    Example:
      >>> import numpy as np
      >>> X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5)
      >>> y = np.array([1.0, 1.0, 5.0, 5.0] * 5)
      >>> m = OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, y)
      >>> m.n_leaves_, m.optimal_, round(m.objective_, 6)
      (2, True, 0.02)
    """

    def __init__(
        self,
        regularization=DEFAULT_REGULARIZATION,
        depth_budget=DEFAULT_DEPTH_BUDGET,
        loss="squared_error",
        min_samples_leaf=1,
        time_limit=None,
        binarizer="auto",
        normalize=True,
        bounds=ALL_BOUNDS,
        exact_levels=None,
        backend="auto",
        verbose=False,
        dtype="float64",
        max_steps=None,
        mesh=None,
        progress=True,
        max_depth=None,
    ):
        self.regularization = regularization
        self.depth_budget = depth_budget
        self.max_depth = max_depth
        self.loss = loss
        self.min_samples_leaf = min_samples_leaf
        self.time_limit = time_limit
        self.binarizer = binarizer
        self.normalize = normalize
        self.bounds = bounds
        self.exact_levels = exact_levels
        self.backend = backend
        self.verbose = verbose
        self.dtype = dtype
        self.max_steps = max_steps
        self.mesh = mesh
        self.progress = progress

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        """Hyperparameter checks (:mod:`jaxsr._validation`); raises ValueError."""
        lam = check_real(self.regularization, "regularization", min_value=0)
        d = self._depth_budget()
        if d is None and lam == 0:
            raise ValueError(
                "regularization=0 with depth_budget=None is unbounded: every "
                "split that lowers the loss pays off, so the tree would grow "
                "until each leaf is one equivalence class. Give "
                "regularization > 0 or a depth_budget."
            )
        check_choice(self.loss, "loss", _LOSSES)
        msl = check_int(self.min_samples_leaf, "min_samples_leaf", min_value=1)
        check_real(self.time_limit, "time_limit", min_value=0, allow_none=True, hint=" (seconds)")
        bounds = (self.bounds,) if isinstance(self.bounds, str) else tuple(self.bounds)
        unknown = [b for b in bounds if b not in ALL_BOUNDS]
        if unknown:
            raise ValueError(f"unknown bounds {unknown}; choose from {ALL_BOUNDS}")
        check_int(self.exact_levels, "exact_levels", min_value=0, max_value=3, allow_none=True)
        check_int(self.max_steps, "max_steps", min_value=0, allow_none=True, hint=" (solver steps)")
        check_choice(self.backend, "backend", ("auto", "numpy", "jax"))
        resolve_mesh(self.mesh, "classes")  # raises on a bad value
        if self.mesh is not None and self.backend == "numpy":
            raise ValueError(
                "mesh shards the batched device calls of backend='jax'; "
                "backend='numpy' runs on the host only: use backend='jax' or "
                "'auto' with a mesh"
            )
        if not (
            self.binarizer is None
            or _is_auto(self.binarizer)
            or (hasattr(self.binarizer, "fit") and hasattr(self.binarizer, "transform"))
        ):
            raise ValueError(
                "binarizer must be 'auto', None or a Binarizer (an object with "
                f"fit and transform); got {self.binarizer!r}"
            )
        return lam, d, int(msl), bounds, resolve_dtype(self.dtype)

    def _depth_budget(self):
        """The depth budget from ``depth_budget`` and scikit-learn's ``max_depth``."""
        d = check_int(
            self.depth_budget,
            "depth_budget",
            min_value=1,
            allow_none=True,
            hint=" (1 = a single leaf, 2 = one split)",
        )
        md = check_int(
            self.max_depth,
            "max_depth",
            min_value=0,
            allow_none=True,
            hint=" (scikit-learn's meaning: splits from the root to the deepest "
            "leaf; 0 = a single leaf)",
        )
        if md is None:
            return d
        if d != DEFAULT_DEPTH_BUDGET and d != md + 1:
            raise ValueError(
                f"max_depth={md} and depth_budget={d} disagree: max_depth (scikit-learn's "
                f"meaning, splits on the way to the deepest leaf) is depth_budget - 1 (the "
                f"osrt package's meaning, levels counting the root). Give one of them, e.g. "
                f"max_depth={md} alone (depth_budget {md + 1})."
            )
        return md + 1

    @staticmethod
    def _check_binary(Xa, names):
        bad = np.flatnonzero(~np.all((Xa == 0) | (Xa == 1), axis=0))
        if bad.size:
            cols = [names[j] for j in bad[:5]] + (["..."] if bad.size > 5 else [])
            raise ValueError(
                f"X must be binary (0/1) for a tree without a binarizer (binarizer=None, or "
                f"'auto' fitted on 0/1 data), but {bad.size} column(s) hold other values: "
                f"{cols}. Fit with real features and the default binarizer='auto', or "
                "binarize them first, e.g. OptimalTreeRegressor(binarizer=Binarizer()) or "
                "Binarizer().fit_transform(X)."
            )

    @staticmethod
    def _check_memory(n, M, U_est, exact_levels, host=True):
        from .problem import host_kernel_bytes

        if M > 65535:
            raise ValueError(
                f"X has {M} binary features; at most 65535 are supported. "
                "Use fewer thresholds per feature (Binarizer)."
            )
        need = 8.0 * n * M * 4
        if exact_levels is not None and exact_levels >= 1 and host:
            need += host_kernel_bytes(U_est, M)  # the engine's kernels: U x M bytes
        elif exact_levels is not None and exact_levels >= 3:
            need += 8.0 * (U_est * M * M + 60.0 * M**3)
        elif exact_levels is not None and exact_levels == 2:
            need += 8.0 * (U_est * M * 4 + 60.0 * M**2)
        _memory.check_memory(
            need,
            f"X has {n} samples and {M} binary features: the search",
            "Use fewer binary features (fewer Binarizer thresholds) or a smaller exact_levels",
            fraction=0.5,
        )

    def _binarizer_for(self, X):
        """The binarizer :meth:`fit` uses on ``X``: ``self.binarizer``, or for ``"auto"``
        ``None`` when ``X`` is numeric with every value 0 or 1, else
        :func:`default_binarizer`."""
        if not _is_auto(self.binarizer):
            return self.binarizer
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Xa = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):  # text or mixed columns: the Binarizer's job
            return default_binarizer(X)
        if Xa.ndim == 2 and Xa.size and np.all((Xa == 0) | (Xa == 1)):
            return None
        return default_binarizer(Xa)

    def _binary_X(self, X, *, fitting, y=None, sample_weight=None):
        """(binary bool matrix, input feature names, binary feature names).

        When fitting, ``sample_weight`` (if given) goes to the binarizer too: rows of weight
        0 then create no thresholds (see :meth:`Binarizer.fit`)."""
        binarizer = self._binarizer_for(X) if fitting else self.binarizer_
        if binarizer is None:
            if fitting:
                self.binarizer_ = None
            # feature names set (fit) or checked, a frame reordered by name (predict)
            Xa = validate_X(self, X, reset=fitting)
            names = feature_names(self)
            self._check_binary(Xa, names)
            return Xa > 0.5, names, list(names)
        X = check_feature_names(self, X, reset=fitting)
        if fitting:
            b = copy.deepcopy(binarizer)
            if sample_weight is None:
                b.fit(X, y)
            else:
                b.fit(X, y, sample_weight=sample_weight)
            Xb = b.transform(X)
            self.binarizer_ = b
        else:
            Xb = self.binarizer_.transform(X)
        Xb = np.asarray(Xb)
        names = feature_names(self)
        try:
            bnames = [str(s) for s in self.binarizer_.get_feature_names_out()]
        except Exception:  # noqa: BLE001 - any binarizer without names
            bnames = default_feature_names(Xb.shape[1])
        return Xb > 0.5, names, bnames

    def _resolve_backend(self):
        """``backend="auto"``: the host engine on every platform (an accelerator included:
        see ``backend``), the batched device path only with a ``mesh``."""
        if self.backend != "auto":
            return self.backend
        return "jax" if self.mesh is not None else "numpy"

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None):
        """Find the optimal tree.

        Args:
          X: ``(n_samples, n_features)`` array-like or DataFrame; 0/1 values when
            ``binarizer`` is None, else anything the binarizer accepts.
          y: ``(n_samples,)`` real targets.
          sample_weight: ``(n_samples,)`` non-negative weights, or None (all 1).

        Returns:
          ``self``.

        Raises:
          ValueError: invalid hyper-parameters (negative/NaN ``regularization``,
            ``regularization=0`` with ``depth_budget=None``, ...); NaN/inf, empty data,
            mismatched lengths; non-binary ``X`` with ``binarizer=None`` (the message names
            the columns); too many binary features for the memory at hand (the guard
            reads the available memory, see :func:`jaxsr._memory.available_memory_bytes`; the
            environment variable ``JAXSR_MEMORY_LIMIT`` overrides it: a size such as
            ``64G`` to assume, or ``off``).
        """
        # time_limit counts the whole fit: the binarization, and on a process's first fit
        # the loading of the search's modules (and JAX, about 2 s), which wait until then
        # so that a saved tree loads and predicts with numpy alone
        t_fit = time.perf_counter()
        from .problem import auto_exact_levels, host_exact_levels
        from .search import OptimalTreeSearch, _blas_single_thread

        lam, depth, msl, bounds, dt = self._check_params()
        # the host backend computes in numpy only: no JAX scope (its float64 check compiles
        # a JAX op, 0.2-0.5 s on the first fit of a process)
        # (nor under a time limit shorter than a device compilation: the device is then
        # used only if its kernels are compiled, and the check costs ~0.05 s)
        backend = self._resolve_backend()
        short = False
        if backend == "jax" and self.time_limit is not None:
            from .device import COMPILE_SECONDS

            short = float(self.time_limit) < COMPILE_SECONDS
        scope = (
            precision(dt)
            if backend == "jax" and not short
            else contextlib.nullcontext(resolve_dtype(dt))
        )
        # a progress bar on stderr once the fit has run a second (steps, bounds, gap)
        bar = _progress.FitProgress(
            "OptimalTreeRegressor", bool(self.progress), unit="steps", watch_jax=backend == "jax"
        )
        # one BLAS thread for the whole fit (the search's products, the binarizer's and the
        # certificate's dot products over the samples): idle OpenBLAS threads spin, and on a
        # loaded machine that cost up to 0.7 CPU s of a 4 s fit at 1e5 samples
        with bar, scope, _blas_single_thread():
            ya = check_target(y, dtype=dt)
            # the set-up's phases on the bar: binarization, then the equivalence classes
            # and the root's bounds (OptimalTreeSearch), then the search with its bounds
            _progress.update(0, phase="binarize")
            Xb, names, bnames = self._binary_X(X, fitting=True, y=ya, sample_weight=sample_weight)
            if Xb.shape[0] != ya.shape[0]:
                raise ValueError(
                    f"X and y have different numbers of samples: X has "
                    f"{Xb.shape[0]} rows, y has {ya.shape[0]}"
                )
            w = check_sample_weight(sample_weight, ya.shape[0], dtype=np.float64)
            n, M = Xb.shape
            el = self.exact_levels
            el_mem = el
            if el is None and self.loss == "squared_error":
                # the guard runs before the rows are grouped: it assumes every sample is
                # its own class. The search then picks the levels from the number of
                # distinct rows (``host_exact_levels(U, M)``, within the same byte budget;
                # the device's ``auto_exact_levels``): household-like data, 2e6 rows but
                # 9e3 distinct, gets 3 levels on the device, not 1
                el_mem = auto_exact_levels(n, M) if backend == "jax" else host_exact_levels(n, M)
            self._check_memory(n, M, n, el_mem, host=backend != "jax")
            time_left = (
                None
                if self.time_limit is None
                else max(0.0, float(self.time_limit) - (time.perf_counter() - t_fit))
            )
            _progress.update(0, phase="classes")
            search = OptimalTreeSearch(
                Xb,
                ya.astype(np.float64),
                w,
                loss=self.loss,
                regularization=lam,
                normalize=bool(self.normalize),
                depth_budget=depth,
                min_samples_leaf=msl,
                bounds=bounds,
                exact_levels=el,
                time_limit=time_left,
                verbose=bool(self.verbose),
                backend=backend,
                mesh=resolve_mesh(self.mesh, "classes")[0],
                progress=bool(self.progress),
            )
            if self.time_limit is not None:  # what is left after the search's set-up
                search.time_limit = max(0.0, float(self.time_limit) - (time.perf_counter() - t_fit))
            res = search.run(max_steps=self.max_steps)
        tree = res.tree
        tree.feature_names = list(bnames)
        self.tree_ = tree
        self.binary_feature_names_ = list(bnames)
        p = 2 if self.loss == "squared_error" else 1
        if not self.normalize:
            self.normalizer_ = float(w.sum())
        elif search.problem.total_loss > 0:  # inf where SST exceeds the float64 range
            self.normalizer_ = float(search.problem.scale.loss_to_y(search.problem.total_loss, p))
        else:
            self.normalizer_ = 1.0
        with _blas_single_thread():
            self._finish(Xb, ya.astype(np.float64), w, lam, res.lower_bound, search)
        self.status_ = res.status.value
        self.timed_out_ = res.status is Status.TIME_LIMIT
        self.n_subproblems_ = int(res.n_subproblems)
        self.exact_levels_ = int(search.problem.kl)
        self.fit_seconds_ = float(time.perf_counter() - t_fit)
        if res.status is not Status.OPTIMAL and not self.optimal_:
            warn_user(
                f"OptimalTreeRegressor stopped at its {res.status.value.replace('_', ' ')} "
                f"after {self.fit_seconds_:.3g} s without proving optimality: the tree "
                f"returned has objective {self.objective_:.6g}, the optimum is at least "
                f"{self.lower_bound_:.6g} (gap {self.gap_:.3g}). Give a larger "
                f"{'max_steps' if res.status is Status.NODE_LIMIT else 'time_limit'} "
                "for a certificate.",
                ConvergenceWarning,
            )
        return self

    def _finish(self, Xb, y, w, lam, lower_bound, search):
        """Objective of ``tree_`` from its own predictions, and the certificate.

        The loss is recomputed in the search's internal units (targets centred and scaled
        by powers of two, :mod:`jaxsr.trees.losses`), so it neither overflows near the
        float maximum nor loses a small signal on a large offset.

        Raises:
          RuntimeError: the search's lower bound exceeds the objective of the tree by more
            than the rounding of its float64 sums (a bug, never hidden).
        """
        # predicted per class (distinct binary row), then per sample: the same numbers,
        # U tree walks instead of n (0.2 s at 2e6 samples with 9e3 classes)
        tp = search.problem
        pred = self.tree_.predict(tp.Xc_bool)[tp.inv]
        sc = tp.scale
        r = sc.to_internal(y) - sc.to_internal(pred)
        wi = w / sc.w_max
        loss = np.dot(wi, r * r) if self.loss == "squared_error" else np.dot(wi, np.abs(r))
        self.loss_ = float(loss / tp.norm)
        self.n_leaves_ = self.tree_.n_leaves
        self.depth_ = self.tree_.depth
        self.objective_ = self.loss_ + lam * self.n_leaves_
        lb = float(lower_bound)
        # the search sums class statistics (matrix products): its numbers round at about
        # 1e-16 of the losses they cancel, the largest of which is the one-leaf tree's
        # (``root_leaf_loss``, objective units). So the tolerance is relative to that
        # scale, not to the objective: at an objective of 0 (lambda 0, a tree that fits
        # exactly) a bound of 1e-16 is rounding. Anything beyond 1e-9 of it is a bug.
        self.loss_scale_ = float(max(tp.root_leaf_loss, 0.0))
        tol = certificate_tolerance(self.objective_, lam, self.loss_scale_)
        if not lb <= self.objective_ + tol:
            raise RuntimeError(
                f"internal error: the search's lower bound {lb!r} exceeds the objective "
                f"{self.objective_!r} of the tree it returned; please report this with the "
                "data (the certificate would be false)"
            )
        self.lower_bound_ = min(lb, self.objective_)  # within rounding (checked above)
        self.gap_ = float(self.objective_ - self.lower_bound_)
        # a leaf's prediction is its mean rounded to float64; rounding by delta adds
        # W delta^2 to its loss (the mean is optimal), which no search can remove: it only
        # shows where y sits on a large offset (y = 1e10 + signal)
        excess = 0.0
        if self.loss == "squared_error":
            ulp = np.ldexp(np.spacing(np.abs(pred)), -sc.exponent)
            excess = float(np.dot(wi, ulp * ulp) / tp.norm)
        # beyond ROUNDING_ALLOWANCE the offset swamps the signal: no allowance
        swamped = excess > ROUNDING_ALLOWANCE * max(abs(self.objective_), self.loss_scale_) + tol
        self.optimal_ = bool(self.gap_ <= tol + (0.0 if swamped else excess))
        if swamped and not self.optimal_:
            warn_user(
                f"y sits on an offset so large that rounding the leaf values to float64 "
                f"adds up to {excess:.3g} to the objective {self.objective_:.6g}: the tree "
                "is not certified (optimal_ is False). Fit y minus an offset (its mean or "
                "minimum) and add the offset back to the predictions.",
                UserWarning,
            )

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        check_fitted(self, "tree_")  # NotFittedError (a ValueError)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False  # NaN/inf are refused with a clear message
        tags.input_tags.sparse = False
        tags.non_deterministic = False  # the optimum, ties broken by feature order
        b = default_binarizer() if _is_auto(self.binarizer) else self.binarizer
        if b is not None and hasattr(b, "__sklearn_tags__"):
            inner = b.__sklearn_tags__().input_tags
            tags.input_tags.categorical = inner.categorical
            tags.input_tags.string = inner.string
        return tags

    def predict(self, X):
        """Predictions ``(n_samples,)`` of dtype ``dtype`` for ``X`` (same kind as in fit).

        Raises:
          ValueError: not fitted, wrong number of features, NaN/inf, non-binary ``X``
            without a binarizer.
        """
        self._check_fitted()
        dt = resolve_dtype(self.dtype)
        Xb, _, _ = self._binary_X(X, fitting=False)
        if Xb.shape[1] != len(self.binary_feature_names_):
            raise ValueError(
                f"X gives {Xb.shape[1]} binary features, but the model was "
                f"fitted with {len(self.binary_feature_names_)}"
            )
        return self.tree_.predict(Xb).astype(dt)

    def _binary_rows(self, X):
        """The fitted binarizer's binary matrix of ``X`` (checked like :meth:`predict`)."""
        self._check_fitted()
        Xb, _, _ = self._binary_X(X, fitting=False)
        if Xb.shape[1] != len(self.binary_feature_names_):
            raise ValueError(
                f"X gives {Xb.shape[1]} binary features, but the model was "
                f"fitted with {len(self.binary_feature_names_)}"
            )
        return Xb

    def apply(self, X) -> np.ndarray:
        """The leaf each sample reaches, as scikit-learn's ``DecisionTreeRegressor.apply``.

        Args:
          X: ``(n_samples, n_features)``, the same kind of input as in :meth:`fit`.

        Returns:
          ``(n_samples,)`` int64 node indices into the arrays of ``tree_`` (pre-order, the
          root is 0); ``predict(X) == tree_.value[apply(X)]``.

        Raises:
          ValueError: not fitted, or ``X`` as in :meth:`predict`.
        """
        Xb = self._binary_rows(X)  # checks that the model is fitted first
        return self.tree_.apply(Xb).astype(np.int64)

    def decision_path(self, X):
        """The nodes each sample passes through, as scikit-learn's ``decision_path``.

        Args:
          X: ``(n_samples, n_features)``, the same kind of input as in :meth:`fit`.

        Returns:
          ``scipy.sparse.csr_matrix`` of shape ``(n_samples, n_nodes)``, dtype int64:
          entry ``(i, j)`` is 1 when sample ``i`` passes through node ``j`` of ``tree_``
          (the root, the splits on its way, and its leaf :meth:`apply`; in a row the
          column indices increase from the root to the leaf).

        Raises:
          ValueError: not fitted, or ``X`` as in :meth:`predict`.
        """
        return self.tree_.decision_path(self._binary_rows(X))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Loss reduction per input feature, normalised to sum 1 (scikit-learn's
        impurity-based ``feature_importances_``, with the tree's own loss).

        Each split node ``t`` on binary feature ``f`` adds ``loss(t) - loss(true child) -
        loss(false child)`` (``tree_.loss``: summed weighted squared or absolute loss of
        the node's training samples around its prediction) to the input column that ``f``
        tests (``binarizer_.features_``; without a binarizer the binary columns are the
        input columns); the sums are divided by their total. A one-leaf tree has all
        zeros, as in scikit-learn.

        Returns:
          ``(n_features_in_,)`` float64, non-negative, summing to 1 (or all 0).

        Raises:
          NotFittedError: not fitted. AttributeError: a custom binarizer without
            ``features_`` (the input column of each binary feature is unknown).
        """
        self._check_fitted()
        t = self.tree_
        if self.binarizer_ is None:
            column = np.arange(len(self.binary_feature_names_))
        elif hasattr(self.binarizer_, "features_"):
            column = np.array([int(j) for j, _, _ in self.binarizer_.features_], dtype=int)
        else:
            raise AttributeError(
                "feature_importances_ needs the input column of each binary "
                "feature: the binarizer has no features_ attribute"
            )
        inner = np.flatnonzero(t.feature >= 0)
        gain = t.loss[inner] - t.loss[t.true_child[inner]] - t.loss[t.false_child[inner]]
        # the mean (median) of a node minimises its squared (absolute) loss, so a split
        # never raises it: a negative gain is rounding
        gain = np.where(np.isfinite(gain), np.maximum(gain, 0.0), 0.0)
        imp = np.zeros(int(self.n_features_in_), dtype=np.float64)
        np.add.at(imp, column[t.feature[inner]], gain)
        total = imp.sum()
        return imp / total if total > 0 else imp

    def regularization_path(self, X, y, sample_weight=None, lambdas=None) -> list[PathSegment]:
        """Every distinct optimal tree over a range of ``regularization``, with the exact
        ``lambda`` where the optimum changes (each piece certified).

        For a fixed tree ``T`` the objective ``loss_T + lambda * leaves_T`` (OSRT eq. 1,
        ``loss_T`` normalised as in :meth:`fit`) is a line in ``lambda``, so the optimal
        objective is the lower envelope of these lines: concave and piecewise linear, and
        the optimal tree is piecewise constant in ``lambda`` (this plays the part of
        scikit-learn's ``cost_complexity_pruning_path``, for optimal rather than greedily
        pruned trees). The pieces are found by the standard parametric search: with
        certified optimal trees ``T1`` at ``l1`` and ``T2`` at ``l2``, either they lie on
        one line (which is then optimal on all of ``[l1, l2]``, by concavity), or their
        lines cross at ``l* = (loss_T2 - loss_T1) / (leaves_T1 - leaves_T2)`` and a fit
        there either meets that value (``l*`` is a breakpoint) or gives a tree strictly
        below both, and both halves are searched again. Each fit is a clone of this
        estimator (same parameters, ``regularization`` set), so ``2 k - 1`` fits find
        ``k`` pieces. The path is exact when every fit is certified (``optimal`` of each
        piece; a fit stopped by ``time_limit`` or ``max_steps`` warns).

        Args:
          X: ``(n_samples, n_features)``, as in :meth:`fit`.
          y: ``(n_samples,)`` targets. sample_weight: ``(n_samples,)`` or None.
          lambdas: ``None``: the whole path, from ``lambda = 0`` to the ``lambda`` beyond
            which one leaf is optimal (the last piece then ends at ``inf``); or an
            array-like of values ``>= 0``: the path over ``[min(lambdas), max(lambdas)]``
            (every breakpoint inside; a grid only sets the range); a maximum of ``inf``:
            from ``min(lambdas)`` to the end of the path.

        Returns:
          list of :class:`PathSegment` ``(lambda_min, lambda_max, n_leaves, loss,
          optimal, model)``, ordered by increasing ``lambda`` (decreasing ``n_leaves``,
          increasing ``loss``), consecutive pieces sharing their end points; ``model`` is
          a fitted :class:`OptimalTreeRegressor` whose tree is optimal for every
          ``lambda`` of the piece. ``pandas.DataFrame(path)`` gives a table.

        Raises:
          ValueError: ``lambdas`` empty, negative or not finite; ``lambdas=None`` (or a
            ``lambda`` of 0) with ``depth_budget=None`` (lambda 0 has no depth limit
            then); and whatever :meth:`fit` raises.
        """
        from sklearn.base import clone

        if lambdas is None:
            lo, hi = 0.0, None
        else:
            lam = np.asarray(lambdas, dtype=np.float64).reshape(-1)
            if (
                lam.size == 0
                or np.any(np.isnan(lam))
                or np.any(lam < 0)
                or not np.isfinite(lam.min())
            ):
                raise ValueError(
                    "lambdas must be a non-empty array of values >= 0 "
                    "(regularization), finite but for an inf maximum; got "
                    f"{lambdas!r}"
                )
            lo, hi = float(lam.min()), float(lam.max())
            hi = None if np.isinf(hi) else hi  # inf: to the end of the path
        if lo == 0 and self._depth_budget() is None:
            raise ValueError(
                "the regularization path from lambda = 0 needs a depth_budget "
                "(with depth_budget=None, lambda 0 grows the tree until each "
                "leaf is one distinct row): give a depth_budget, or lambdas "
                "with a minimum above 0"
            )

        def fit_at(value):
            m = clone(self).set_params(regularization=float(value))
            return m.fit(X, y, sample_weight=sample_weight)

        def line(m, value):
            return m.loss_ + value * m.n_leaves_

        def tol(v, m=None):  # the certificate's tolerance (objective units)
            scale = 1.0 if m is None else getattr(m, "loss_scale_", 1.0)
            return certificate_tolerance(v, 0.0, scale)

        def same_line(a, b):
            return a.n_leaves_ == b.n_leaves_ and abs(a.loss_ - b.loss_) <= tol(a.loss_, a)

        m_lo = fit_at(lo)
        open_end = hi is None
        if hi is None:
            # one leaf costs its loss L1 + lambda; a tree with k >= 2 leaves costs at least
            # k lambda, so past L1 the one leaf is the only optimum (a hair above: no tie)
            leaf_loss = float(m_lo.tree_.loss[0] / m_lo.normalizer_)
            hi = max(lo, leaf_loss * (1.0 + 1e-6) + 1e-12)
        m_hi = fit_at(hi) if hi > lo else m_lo
        pieces = []  # (lambda_min, lambda_max, model), built left to right
        stack = [(lo, m_lo, hi, m_hi)]
        while stack:
            l1, m1, l2, m2 = stack.pop()
            if l2 <= l1 or same_line(m1, m2):
                pieces.append((l1, l2, m1))
                continue
            db = m1.n_leaves_ - m2.n_leaves_
            cross = (m2.loss_ - m1.loss_) / db if db > 0 else l1
            cross = min(max(cross, l1), l2)  # in [l1, l2] by optimality; rounding aside
            m = fit_at(cross)
            if m.objective_ >= min(line(m1, cross), line(m2, cross)) - tol(m.objective_, m):
                pieces += [(l1, cross, m1), (cross, l2, m2)]  # a breakpoint
            else:  # a new line below both: search both sides (left first)
                stack += [(cross, m, l2, m2), (l1, m1, cross, m)]
        # merge neighbours on one line, drop pieces of zero length (a breakpoint's own
        # tie) when a neighbour covers the point
        merged: list[list] = []
        for a, b, m in pieces:
            if merged and same_line(merged[-1][2], m):
                merged[-1][1] = b
            elif merged and b - a <= tol(b, m) * 1e-3 and len(pieces) > 1:
                continue
            else:
                if merged:
                    merged[-1][1] = a
                merged.append([a, b, m])
        if open_end and merged[-1][2].n_leaves_ == 1:
            merged[-1][1] = np.inf
        return [
            PathSegment(float(a), float(b), int(m.n_leaves_), float(m.loss_), bool(m.optimal_), m)
            for a, b, m in merged
        ]

    def to_sklearn(self):
        """The fitted tree as a fitted ``sklearn.tree.DecisionTreeRegressor`` on the input
        columns, for scikit-learn's tools: ``sklearn.tree.export_text``, ``plot_tree``,
        ``export_graphviz``, its ``tree_`` arrays (``value`` of shape ``(n_nodes, 1, 1)``).

        A binary feature ``x_j <= t`` of the binarizer is scikit-learn's test ``X[:, j] <=
        t`` (its left child is the true side); without a binarizer, a 0/1 column ``j`` is
        ``X[:, j] <= 0.5`` (left: the column is 0, the false side). Node order, leaf values,
        sample counts and weights are this tree's; ``impurity`` is a node's loss divided by
        its weight (weighted MSE, or MAE for absolute loss). scikit-learn's trees compare
        in float32: a value within float32 rounding of a threshold may take the other side.

        Returns:
          a fitted ``DecisionTreeRegressor`` (``criterion`` = ``loss``, ``max_depth`` =
          ``depth_ - 1``) whose ``predict`` equals :meth:`predict` (up to that rounding).

        Raises:
          NotFittedError: not fitted. ValueError: the tree splits on a one-hot category
            (``x == v``), which scikit-learn's numeric tests cannot express, or the
            binarizer has no ``features_`` (a custom one).
        """
        from sklearn.tree import DecisionTreeRegressor

        self._check_fitted()
        t = self.tree_
        n = t.n_nodes
        col = np.full(n, -2, dtype=np.int64)
        thr = np.full(n, -2.0)
        left = np.full(n, -1, dtype=np.int64)
        right = np.full(n, -1, dtype=np.int64)
        feats = None if self.binarizer_ is None else getattr(self.binarizer_, "features_", 0)
        if feats == 0:
            raise ValueError(
                "to_sklearn needs the input column and threshold of each binary "
                "feature: the binarizer has no features_ attribute"
            )
        for i in np.flatnonzero(t.feature >= 0):
            f = int(t.feature[i])
            if feats is None:  # a 0/1 input column: X <= 0.5 is the false side
                col[i], thr[i] = f, 0.5
                left[i], right[i] = t.false_child[i], t.true_child[i]
                continue
            j, op, v = feats[f]
            if op != "<=":
                raise ValueError(
                    f"the tree splits on {self.binary_feature_names_[f]!r}, a one-hot "
                    "category: scikit-learn's trees test X[:, j] <= t on numbers and have no "
                    "equivalent. Use the model's export_text(), jaxsr.trees.plot_tree(model) "
                    "or jaxsr.trees.export_graphviz(model)."
                )
            col[i], thr[i] = int(j), float(v)
            left[i], right[i] = t.true_child[i], t.false_child[i]
        w = np.asarray(t.weight, dtype=np.float64)
        imp = np.where(w > 0, np.asarray(t.loss, dtype=np.float64) / np.where(w > 0, w, 1.0), 0.0)
        m = DecisionTreeRegressor(
            criterion=self.loss, max_depth=max(int(self.depth_), 1) - 1 or None
        )
        p = int(self.n_features_in_)
        # a fitted shell of the right shapes, then this tree's nodes in it
        m.fit(np.zeros((2, p)), np.zeros(2))
        state = m.tree_.__getstate__()
        nodes = np.zeros(n, dtype=state["nodes"].dtype)
        nodes["left_child"], nodes["right_child"] = left, right
        nodes["feature"], nodes["threshold"] = col, thr
        nodes["impurity"] = imp
        nodes["n_node_samples"] = np.asarray(t.n_samples, dtype=np.int64)
        nodes["weighted_n_node_samples"] = w
        nodes["missing_go_to_left"] = 1
        value = np.asarray(t.value, dtype=np.float64).reshape(n, 1, 1)
        # a fresh Tree, as unpickling builds one (__reduce__): __setstate__ sizes it
        shell = m.tree_
        fresh = type(shell)(*shell.__reduce__()[1])
        fresh.__setstate__(
            {
                "max_depth": max(int(self.depth_), 1) - 1,
                "node_count": n,
                "nodes": nodes,
                "values": value,
            }
        )
        m.tree_ = fresh
        if hasattr(self, "feature_names_in_"):
            m.feature_names_in_ = self.feature_names_in_
        m.n_features_in_ = p
        m.max_features_ = p
        return m

    @classmethod
    def paper(cls, **params) -> OptimalTreeRegressor:
        """The setting of the OSRT paper's experiments, by name: 4 equal-width buckets per
        feature (``Binarizer(strategy="uniform", n_thresholds=3)``, as the paper's data in
        ``shared/data/osrt/binarized`` were made), ``depth_budget=5`` and
        ``regularization=0.01`` (the defaults before they were chosen on the real-data
        panel, ``benchmarks/bench_trees_defaults.py``). ``params`` override any of them."""
        base = {
            "regularization": 0.01,
            "depth_budget": 5,
            "binarizer": Binarizer(strategy="uniform", n_thresholds=3),
        }
        return cls(**{**base, **params})

    def export_text(self, decimals: int = 4, show_counts: bool = True) -> str:
        """The tree as an index card, one line per split (see :meth:`Tree.export_text`);
        ``decimals`` = digits after the decimal point of the predictions."""
        self._check_fitted()
        return self.tree_.export_text(
            self.binary_feature_names_, decimals=decimals, show_counts=show_counts
        )

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        """A JSON-able dictionary of the fitted model; :meth:`from_dict` rebuilds it.

        Raises:
          ValueError: not fitted, or a binarizer without ``to_dict``.
        """
        self._check_fitted()
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "binarizer"}
        params["bounds"] = list(
            (params["bounds"],) if isinstance(params["bounds"], str) else params["bounds"]
        )
        params["dtype"] = str(resolve_dtype(params["dtype"]))
        # JSON-able: a device mesh is not saved ("all" is)
        params["mesh"] = params["mesh"] if isinstance(params["mesh"], str) else None
        if params["regularization"] is not None:
            params["regularization"] = float(params["regularization"])
        b = None
        if self.binarizer_ is not None:
            if not hasattr(self.binarizer_, "to_dict"):
                raise ValueError("the binarizer has no to_dict(); cannot serialise the model")
            b = self.binarizer_.to_dict()
        return {
            "format": _FORMAT,
            "version": 1,
            "params": params,
            "binarizer": b,
            "tree": self.tree_.to_dict(),
            "feature_names_in": feature_names(self),
            "has_feature_names": hasattr(self, "feature_names_in_"),
            "n_features_in": int(self.n_features_in_),
            "binary_feature_names": list(self.binary_feature_names_),
            "normalizer": self.normalizer_,
            "certificate": {
                "objective": self.objective_,
                "loss": self.loss_,
                "lower_bound": self.lower_bound_,
                "gap": self.gap_,
                "optimal": self.optimal_,
                "timed_out": self.timed_out_,
            },
        }

    @classmethod
    def from_dict(cls, d: dict) -> OptimalTreeRegressor:
        """Rebuild a fitted model from :meth:`to_dict` output, checking every field.

        An edited or damaged dictionary is refused rather than loaded into a model that
        predicts something else or carries a false certificate: the hyperparameters go
        through the checks of :meth:`fit`, the binarizer through
        :meth:`Binarizer.from_dict`, the tree through :meth:`Tree.from_dict` (splits on one
        of the binary features), the names must match the binarizer's output, and the
        certificate must hold together (numbers >= 0, ``lower_bound <= objective``,
        ``gap = objective - lower_bound``).

        Raises:
          ValueError: not a dictionary written by :meth:`to_dict`, or a field it cannot
            hold; the message names the field, e.g. ``certificate.lower_bound is 2.5, above
            certificate.objective 1.25``.
        """
        from .. import _loading as L

        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise ValueError(f"not a {_FORMAT} dictionary (missing or wrong 'format')")
        if d.get("version", 1) != 1:
            raise ValueError(f"unsupported {_FORMAT} version {d.get('version')!r}")
        params = dict(L.mapping(L.field(d, "params"), "params"))
        if isinstance(params.get("bounds", ALL_BOUNDS), list):  # JSON has no tuples
            params["bounds"] = tuple(params["bounds"])
        est = L.build_estimator(cls, params)
        has_names = L.boolean(d.get("has_feature_names", True), "has_feature_names")
        in_names = d.get("feature_names_in")
        if in_names is not None:
            L.string_list(in_names, "feature_names_in")
        if "n_features_in" in d or in_names is None:
            n_in = L.integer(L.field(d, "n_features_in"), "n_features_in", min_value=1)
        else:
            n_in = len(in_names)
        if in_names is not None and len(in_names) != n_in:
            raise ValueError(
                f"feature_names_in has {len(in_names)} names; the model has "
                f"n_features_in = {n_in} features"
            )
        if has_names and in_names is None:
            raise ValueError("feature_names_in is missing, but has_feature_names is true")
        bnames = L.string_list(L.field(d, "binary_feature_names"), "binary_feature_names")
        if d.get("binarizer") is not None:
            est.binarizer = Binarizer.from_dict(d["binarizer"], path="binarizer")
            est.binarizer_ = est.binarizer
            b = est.binarizer_
            if not hasattr(b, "features_"):
                raise ValueError(
                    "binarizer has no fitted state ('fitted'); a fitted model's binarizer is fitted"
                )
            if b.n_features_in_ != n_in:
                raise ValueError(
                    f"binarizer.fitted.feature_names_in has {b.n_features_in_} "
                    f"names; the model has n_features_in = {n_in} features"
                )
            if list(b.feature_names_out_) != bnames:
                raise ValueError(
                    "binary_feature_names differ from the names of the "
                    "binarizer's features (binarizer.fitted.features); one of "
                    "them was edited"
                )
        else:
            est.binarizer_ = None
            if len(bnames) != n_in:
                raise ValueError(
                    f"binary_feature_names has {len(bnames)} names; without a "
                    f"binarizer the model's {n_in} features are its binary "
                    "features"
                )
        est.tree_ = Tree.from_dict(L.field(d, "tree"), path="tree", n_features=len(bnames))
        if has_names:
            est.feature_names_in_ = np.asarray(in_names, dtype=object)
        est.n_features_in_ = n_in
        est.binary_feature_names_ = list(bnames)
        est.tree_.feature_names = list(est.binary_feature_names_)
        est.normalizer_ = L.real(
            L.field(d, "normalizer"),
            "normalizer",
            allow_inf=True,
            what="the loss normaliser is a number > 0",
        )
        if not est.normalizer_ > 0:
            raise ValueError(f"normalizer is {est.normalizer_!r}; it must be > 0")
        c = L.mapping(L.field(d, "certificate"), "certificate")
        num = {
            k: L.real(
                L.field(c, k, "certificate"),
                f"certificate.{k}",
                min_value=0,
                what="the certificate's numbers must be finite",
            )
            for k in ("objective", "loss", "lower_bound", "gap")
        }
        obj, lb = num["objective"], num["lower_bound"]
        if lb > obj:
            raise ValueError(
                f"certificate.lower_bound is {lb!r}, above certificate.objective "
                f"{obj!r}; a lower bound on the optimum cannot exceed the "
                "objective of a tree"
            )
        if num["loss"] > obj:
            raise ValueError(
                f"certificate.loss is {num['loss']!r}, above "
                f"certificate.objective {obj!r} (the loss plus the leaf "
                "penalty)"
            )
        if abs(num["gap"] - (obj - lb)) > 1e-12 * max(1.0, obj):
            raise ValueError(
                f"certificate.gap is {num['gap']!r}; it must be objective - "
                f"lower_bound = {obj - lb!r}"
            )
        est.objective_, est.loss_ = obj, num["loss"]
        est.lower_bound_, est.gap_ = lb, num["gap"]
        est.optimal_ = L.boolean(L.field(c, "optimal", "certificate"), "certificate.optimal")
        est.timed_out_ = L.boolean(L.field(c, "timed_out", "certificate"), "certificate.timed_out")
        est.n_leaves_, est.depth_ = est.tree_.n_leaves, est.tree_.depth
        return est
