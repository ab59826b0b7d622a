"""``SymbolicRegressor``: deterministic symbolic regression (DoME) as an estimator.

Paper: ``shared/papers/deterministic-symbolic-regression.md`` (sections 2-2.8).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import sys
import threading
import time
import warnings

import numpy as np

from .. import _memory, _progress, _sharding
from .._base import BaseEstimator, RegressorMixin, check_fitted
from .._config import (
    feature_bucket,
    precision,
    resolve_dtype,
    resolve_mesh,
    sample_bucket,
    thread_settings,
    to_device,
)
from .._validation import (
    check_choice,
    check_int,
    check_real,
    check_sample_weight,
    check_target,
    feature_names,
    validate_X,
    validate_X_y,
)
from .._warn import warn_user
from . import beam as _beam
from . import crossval as _crossval
from . import domain as _domain
from . import elimination as _elimination
from . import front as _pf
from . import rational as _rational
from . import refine as _refine
from . import sampling as _sampling
from . import search as _search
from . import unary as _unary
from .expression import MUL, SQRT, VAR, Expression, capacity_bucket
from .front import FrontModel
from .semantics import tree_output
from .strategies import DomeSearch, scale_output

__all__ = ["ExtrapolationWarning", "SymbolicRegressor"]


class ExtrapolationWarning(UserWarning):
    """:meth:`SymbolicRegressor.predict` was given rows outside the box of the training
    data (a feature the model uses below its training minimum or above its maximum): a
    closed-form model is fitted to the data's range and may change fast outside it."""


_FORMAT = "jaxsr.SymbolicRegressor"
PAPER_SHARE = 1.0 / 3.0
"""With ``unary_operators``: the share of ``max_time`` that the paper's search (``+ - *
/`` only) runs on before the search with the unary operators."""
SQUARE_SHARE = 1.0 / 6.0
"""With ``"sqrt"`` among ``unary_operators`` and a target of one sign: the share of
``max_time`` of the square-target search (the paper's search on ``y**2``, its models read
as ``sqrt(p)``), which runs after the paper's search when that one did not reach the
rounding level, and before the unary search (:meth:`SymbolicRegressor._square_target_search`)."""
SEED_SHARE = 1.0 / 3.0
"""With ``rational_start`` and ``max_time``: the share of ``max_time`` that the search from a
rational starting structure that is not exact may take before the searches from the mean
(:mod:`jaxsr.symbolic.rational`)."""
RATIONAL_SHARE = SEED_SHARE / 2.0
"""With ``rational_start`` and ``max_time``: the share of ``max_time`` after which no further
rational candidate is fitted (those found so far compete for the start)."""
_EXACT_STOPS = tuple(
    s.reason
    for s in (_search.Status.ROUNDING_LEVEL, _search.Status.GOAL, _search.Status.CONSTANT_TARGET)
)
"""The stop reasons of a fit that reached its target: nothing runs after it."""
_LAST_STOPS = _EXACT_STOPS + (_search.Status.MAX_ITERATIONS.reason,)
"""The stop reasons after which no further search of the portfolio or the widening
schedule runs: the target reached, or the user's cap on the work (``max_iterations``)."""
READABLE_ROWS = 200  # training rows kept to tell which terms of a sum are too small to show
_VERSION = 1


def _jit_tree(tree: Expression, dt):
    import jax

    return jax.jit(tree.to_jax(dtype=dt))


def _latex_number(v: float, precision: int) -> str:
    """``v`` with ``precision`` significant digits in LaTeX (``1.2 \\cdot 10^{-5}``)."""
    if not np.isfinite(v):
        return r"\infty" if v > 0 else (r"-\infty" if v < 0 else "nan")
    text = f"{v:.{precision}g}"
    if "e" in text:
        mant, exp = text.split("e")
        return f"{mant} \\cdot 10^{{{int(exp)}}}"
    return text


_FITS: dict = {}  # id -> (the worker's "done" event, _FitRun) of the fits running
_FITS_LOCK = threading.Lock()


def _stop_fits_at_exit() -> None:
    """At interpreter exit (before daemon threads are stopped): ask every running fit to
    stop and wait for its worker to end at its next check."""
    with _FITS_LOCK:
        fits = list(_FITS.values())
    for _, run in fits:
        run.stop()
    for done, _ in fits:
        if not done.wait(1.0):  # a compilation in flight, which nothing can interrupt
            with contextlib.suppress(Exception):
                print(
                    "jaxsr: the process ends when the symbolic fit's compilation in flight ends",
                    file=sys.stderr,
                    flush=True,
                )
            done.wait()


atexit.register(_stop_fits_at_exit)


class _FitRun:
    """State of one fit shared between the worker and the caller (``max_time``): the
    last accepted tree ``snapshot = (expression, mse, len(history))`` in the original
    units, the history, the stop reason and an error to re-raise."""

    def __init__(self, expr, mse):
        self.snapshot = (expr, mse, 0)
        self.history: list[dict] = []
        self.stop_reason = None
        self.error = None
        self.engine = None
        self.stopped = False
        self.eliminated = []  # the backward elimination's trees (engine units)

    def stop(self):
        self.stopped = True
        if self.engine is not None:
            self.engine.stop = True

    expand = None  # unary operators: search tree -> tree over X (unary.expand_terminals)

    def unscaled(self, expr, y_scale):
        """A search tree as the user's tree: in the target's units and, with unary
        operators, its extra terminals as unary nodes."""
        expr = expr if y_scale == 1.0 else scale_output(expr, y_scale)
        return expr if self.expand is None else self.expand(expr)

    def commit(self, engine, y_scale):
        if not self.stopped:
            self.snapshot = (
                self.unscaled(engine.expr, y_scale),
                _unscaled_mse(engine.mse, y_scale),
                len(self.history),
            )


def _effective_rows(y, w) -> float:
    """The ``n`` of the information criterion for rows ``y`` of weights ``w``: the row
    count, or with sample weights (which are relative: their scale never changes the fit)
    Kish's effective sample size ``(sum w)**2 / sum(w**2)``, which is the row count for
    equal weights (``check_sample_weight`` divided the weights by their largest: these
    sums cannot overflow)."""
    if w is None:
        return float(np.shape(y)[0])
    wr = np.asarray(w, np.float64)
    return float(np.sum(wr) ** 2 / np.sum(wr * wr))


def _unscaled_mse(mse, y_scale) -> float:
    """The MSE in the target's units: ``mse`` is the MSE of the target divided by
    ``y_scale``. ``inf`` where the product is beyond the float range (a target near
    ``1e300`` and an inexact model); an exact model's 0 stays 0 at any scale."""
    if mse == 0:
        return 0.0
    with np.errstate(over="ignore"):
        return float(np.float64(mse) * np.float64(y_scale) * np.float64(y_scale))


def _warn_if_variation_is_rounding(ya, w, dt) -> bool:
    """Warn (``UserWarning``) when the target's variance is positive but at most
    :data:`ROUNDING_MARGIN` times the rounding floor of ``dt``
    (:func:`~jaxsr.symbolic.front.loss_floor`, errors of 1024 units in the last place at
    the target's scale; class docstring): the search then cannot tell models apart whose
    errors differ by less than that, and at or below the floor itself it can only return
    the starting constant. It happens when ``y`` varies little around a large offset
    (``1e12 + x`` in float64, ``1e3 + x`` in float32); subtracting the offset first makes
    the variation visible. Returns whether it warned."""
    y = np.asarray(ya, np.float64)
    wt = np.ones_like(y) if w is None else np.asarray(w, np.float64)
    top = float(np.max(np.abs(y))) if y.size else 0.0
    if y.size < 2 or not np.sum(wt) > 0 or top == 0.0:
        return False
    ys = y / top  # in units of the largest |y|: no overflow near 1e300
    mean = float(np.sum(wt * ys) / np.sum(wt))
    var = float(np.sum(wt * (ys - mean) ** 2) / np.sum(wt))
    floor = _pf.loss_floor(ys, dt, wt)
    if 0.0 < var <= ROUNDING_MARGIN * floor:
        what = (
            "so the fit can only return a constant"
            if var <= floor
            else "so models whose errors differ by less than that count as equal"
        )
        warn_user(
            f"y varies by a standard deviation of {np.sqrt(var) * top:.3g} around "
            f"{mean * top:.6g}, close to the rounding level of its magnitude in "
            f"{np.dtype(dt).name} (errors of {np.sqrt(floor) * top:.3g}), {what}; fit "
            f"y - {mean * top:.6g} instead and add the offset back"
            + (", or use dtype='float64'" if np.dtype(dt) != np.float64 else ""),
            UserWarning,
        )
        return True
    return False


def _warn_budget_before_first_change(
    max_time: float, compile_seconds: float, compiling: bool = False
) -> None:
    """``ConvergenceWarning``: ``max_time`` ran out before the search accepted its first
    change, so the model is the starting one (the mean of ``y``). ``compiling``: the fit
    had not yet compiled all its programs (the first compilation may not have ended, so
    ``compile_seconds`` can be 0 while the whole budget went to it)."""
    from sklearn.exceptions import ConvergenceWarning

    spent = ""
    if compile_seconds >= 0.05 or compiling:
        done = (
            f"{compile_seconds:.1f} s of it went to"
            if compile_seconds >= 0.05
            else "it ran out while"
        )
        spent = (
            f"; {done} compiling the search's programs (once per size bucket of the "
            "data: later fits reuse them, and JAX's persistent compilation cache keeps "
            "them on disk)"
        )
    warn_user(
        f"max_time={max_time:g} s ran out before the search accepted its first change, so "
        f"the model is the starting one (the mean of y){spent}. Give a longer max_time "
        "(or none), or compile the programs first (a fit without max_time, or "
        "`jaxsr warmup`).",
        ConvergenceWarning,
    )


CONSTANT_WARN_R2 = 0.1
"""A fit whose selected model is a constant warns when a least-squares linear model of
the features explains at least this adjusted R^2 of the training target."""


def _warn_if_constant_model(tree: Expression, Xa, ya, w) -> None:
    """``ConvergenceWarning`` when the selected model uses no feature although a linear
    model of the features explains an adjusted R^2 of at least :data:`CONSTANT_WARN_R2`
    on the training rows (weighted by ``w``): a constant is then a failure of the search,
    never an answer to return silently."""
    from sklearn.exceptions import ConvergenceWarning

    if tree.n_nodes and np.any(tree.op == VAR):
        return
    X = np.asarray(Xa, np.float64)
    y = np.asarray(ya, np.float64)
    n, m = X.shape
    if n <= m + 1 or np.all(y == y[0]):
        return
    sw = np.ones(n) if w is None else np.sqrt(np.asarray(w, np.float64))
    A = np.column_stack([np.ones(n), X]) * sw[:, None]
    with np.errstate(all="ignore"):
        coef = np.linalg.lstsq(A, y * sw, rcond=None)[0]
        ss_res = float(np.sum((A @ coef - y * sw) ** 2))
        ybar = float(np.average(y, weights=None if w is None else w))
        ss_tot = float(np.sum((sw * (y - ybar)) ** 2))
    if not (np.isfinite(ss_res) and ss_tot > 0):
        return
    r2 = 1.0 - (ss_res / (n - m - 1)) / (ss_tot / (n - 1))
    if r2 >= CONSTANT_WARN_R2:
        warn_user(
            f"the selected model is a constant, although a linear model of the features "
            f"explains an adjusted R^2 of {r2:.3g} of the training target: the search did not "
            "find a model that uses the features. Try another strategy, a larger max_nodes "
            "or max_time, or look at equations_ for the other models.",
            ConvergenceWarning,
        )


PORTFOLIO_MIN_SECONDS = 0.5
"""With a portfolio of strategies and ``max_time``: a further strategy's search starts only
when at least this many seconds of the budget are left."""
ROUNDING_MARGIN = 100.0
"""The target-variation warning of :meth:`SymbolicRegressor.fit` fires when the variance of
``y`` is at most this many times the rounding floor."""


def _check_scales(Xa, ya, dt) -> float:
    """The power of two ``s`` the target is divided by inside the fit (1 unless ``|y|``
    is so large or small that its squares leave the float range; undone exactly in the
    constants, :func:`~jaxsr.symbolic.strategies.scale_output`).

    Raises:
      ValueError: a feature column whose magnitudes are beyond ``finfo.max**0.25`` or
        (all nonzero ones) below ``finfo.tiny**0.25`` of ``dt``: products of two features
        and their squares would overflow or underflow (equation 29 and the MSE).
    """
    fi = np.finfo(dt)
    big, small = float(fi.max) ** 0.25, float(fi.tiny) ** 0.25
    amax = np.max(np.abs(Xa), axis=0) if Xa.size else np.zeros(0)
    bad_big = np.flatnonzero(amax > big)
    bad_small = np.flatnonzero((amax > 0) & (amax < small))
    for cols, what in ((bad_big, "up to"), (bad_small, "all below")):
        if cols.size:
            j = int(cols[0])
            raise ValueError(
                f"feature column {j} has magnitudes {what} {amax[j]:.3g}; with "
                f"dtype={np.dtype(dt).name!r} the symbolic search needs every feature within "
                f"[{small:.3g}, {big:.3g}] in magnitude (products of two features and their "
                "squares must stay finite and normal). Rescale that column (e.g. divide it "
                "by a power of ten and put the factor back in the formula)"
                + (", or use dtype='float64'" if np.dtype(dt) != np.float64 else "")
                + "."
            )
    ymax = float(np.max(np.abs(ya))) if ya.size else 0.0
    if ymax == 0.0 or small <= ymax <= big:
        return 1.0
    return float(2.0 ** np.frexp(ymax)[1])


MEMORY_PER_ROW = 14
"""Floats per row and node of capacity at the peak of a fit (the node semantics and
equations, the forbidden sets, the general-case constant search's per-row arrays)."""
MEMORY_PER_COLUMN = 70
"""Floats per column of ``X`` and node of capacity (the candidates of every node x
variable x operator of the beam's trees)."""
MEMORY_PER_CELL = 6
"""Floats per entry of ``X`` (the data on the device, its powers and inverses for the
closed-form scores)."""


def peak_memory_bytes(n_rows: int, n_columns: int, max_nodes, itemsize: int = 8) -> float:
    """Estimated peak memory of a :class:`SymbolicRegressor` fit, in bytes, beyond the
    ~0.3 GB a process with JAX starts with.

    ``itemsize * (cap * (MEMORY_PER_ROW * N + MEMORY_PER_COLUMN * M) + MEMORY_PER_CELL
    * N * M)`` with ``cap`` the node capacity of ``max_nodes`` (128 for unlimited trees):
    fitted to peak resident memory measured on a CPU with the default settings (within
    about 25% at N from 20 to 3e5 and M from 5 to 3e4; the beam width hardly matters,
    the trees of a beam share their data).

    Args:
      n_rows: ``N``, rows given to the fit.
      n_columns: ``M``, columns searched (features and unary terminals).
      max_nodes: the estimator's ``max_nodes`` (``None``: unlimited).
      itemsize: bytes per float (8 for float64, 4 for float32).
    """
    cap = capacity_bucket(128 if max_nodes is None else int(max_nodes))
    n, m = float(n_rows), float(n_columns)
    return float(itemsize) * (
        cap * (MEMORY_PER_ROW * n + MEMORY_PER_COLUMN * m) + MEMORY_PER_CELL * n * m
    )


def all_rows_memory_bytes(n_rows: int, n_columns: int, max_nodes, itemsize: int = 8) -> float:
    """Memory, in bytes, that the checks on all rows add to a fit whose search runs on a
    sample (``search_sample``): the data (``X`` on the host and the device, ``y`` and
    the weights) and the semantics of one tree on every row, ``(cap, N)``, twice (the
    check's pass and its result), with ``cap`` as in :func:`peak_memory_bytes`."""
    cap = capacity_bucket(128 if max_nodes is None else int(max_nodes))
    n, m = float(n_rows), float(n_columns)
    return float(itemsize) * n * (2.0 * cap + 2.0 * m + 4.0)


FIT_PROGRAMS = 8
"""The programs a default fit compiles in a new process (measured with JAX's compile
events: the check of one tree and of a batch, the analysis, the searches, the top
candidates, the constant passes, the joint polish, the output)."""
_FITTED_BUCKETS: set = set()  # the buckets fitted in this process (_expected_programs)


def _pool(const_cols) -> np.ndarray:
    """The variable pool of a search, ``(feature_bucket(M),)`` bool: the non-constant
    columns of ``M``, none of the padding columns of :meth:`SymbolicRegressor._device_data`."""
    const_cols = np.asarray(const_cols, bool)
    pool = np.zeros(feature_bucket(const_cols.shape[0]), bool)
    pool[: const_cols.shape[0]] = ~const_cols
    return pool


class SymbolicRegressor(RegressorMixin, BaseEstimator):
    """Deterministic symbolic regression (DoME): grows one expression over ``+ - * /``.

    Starting from the mean of the target, each iteration replaces one node of the tree by
    the constant, variable, ``k op x`` or ``k op subtree`` that most reduces the training
    MSE, found exactly from the node equations (paper, section 2) and scored for all
    candidates at once in JAX.

    The search is greedy: it stops when no single replacement, even after the stuck-tree
    fallback below, lowers the MSE by more than the acceptance threshold (e.g. strategy 3
    on ``2.4*x1 - x2/x1 - 10`` over ``x1 = 1..100`` is stuck at the least-squares line
    until the fallback's zero terms let it reach the formula; see ``tests/symbolic``).

    **The defaults** (``strategy=2, beam_width=(4, 16), bic_patience=10,
    backward_elimination=True, model_selection="bic", extrapolation_limit=8,
    domain="box", rational_start=True``) were chosen on a benchmark panel; the measurements
    are in the user guide ("The defaults, and why") and
    ``benchmarks/results/sr_defaults.txt``. The paper's method stays available by name:
    ``strategy=3, beam_width=1, bic_patience=None, backward_elimination=False,
    model_selection="best", extrapolation_limit=None, domain="rows", rational_start=False``.

    Acceptance: a change is kept only if the true training MSE drops by more than
    ``max(min_improvement * MSE, floor)``, ``floor = (1024 * eps)**2 * mean(y**2)``
    (errors of 1024 units in the last place at the target's scale are rounding), and the tree has
    no zero denominator and no pole inside the training range (no denominator changes
    sign over the training rows). When no search improves the tree, zero-valued terms
    ``+ (0*x1 + 0*x2 + ...)``, then their pairwise products, are added while the tree fits
    ``max_nodes`` and the searches run again (the authors' package does this); unused zero
    terms, and any branch whose removal changes the MSE by at most the floor, are pruned.

    Args:
      max_nodes: maximum number of nodes of the tree (section 2.7). Default 50, the
        default of the authors' package (SymDoME.jl ``maximumNodes``): without a size limit
        a search on noisy data goes on adding small terms for hundreds of iterations.
        ``None``: no limit.
      strategy: 1, 2, 3 or 4 (section 2.8), or a portfolio: a sequence of distinct ones,
        e.g. ``(2, 1, 3)``, whose searches run one after another (each a whole fit with the
        same parameters on the same rows, within what is left of ``max_time``) until one
        reaches the rounding level or the goal; every search's models join ``equations_``
        and ``searches_`` lists them. Default 2 (the panel's winner; the paper recommends
        3, which stops at the first small gain of its staged searches: 8 of the 17 laws).
        A portfolio ``(2, 1, 3)`` with ``beam_width=4`` found no more laws on the panel and
        a lower real-data median (0.59) in about five times the time.
      min_improvement: a search succeeds only if it lowers the MSE by more than
        ``min_improvement * MSE`` (default ``1e-6``, section 2.8).
      max_iterations: stop after this many iterations (``None``: no limit).
      goal_mse: stop once the training MSE is ``<= goal_mse`` (default 0).
      max_time: wall-clock budget of the fit in seconds, compilation included (``None``:
        no limit): the search gets ``max_time`` less a reserve (a quarter of it, at most 1 s)
        for building the result, then the last accepted tree is returned, cold or warm JIT
        cache (a compilation in progress finishes in a background thread).
      max_height: maximum tree height in levels (``None``: no limit; section 2.7).
      verbose: print one line per iteration on stderr (search, node, new subtree, MSE, nodes,
        elapsed seconds).
      progress: a progress bar (tqdm) on stderr for fits longer than a second: JIT
        compilation as its own phase, then iterations with the MSE and the number of nodes
        (default ``True``, as PySR; nothing is ever printed to stdout).
      dtype: ``"float64"`` (default) or ``"float32"``. Features must lie within
        ``[finfo.tiny**0.25, finfo.max**0.25]`` in magnitude (``1.2e-77 .. 1.2e77`` in
        float64, ``1.1e-19 .. 4.3e9`` in float32; else a ValueError says what to do); a
        target beyond that range is divided by a power of two inside the fit and the
        factor is put back exactly in the constants.
      max_constant_passes: cap on the passes of each constant optimisation (section 2.6;
        ``None``, the default: no cap, as in the paper; each pass that changes a constant
        lowers the MSE by more than the acceptance floor, so it ends). A history record
        whose optimisation hit the cap has ``constant_passes_capped=True``.

      model_selection: which model of the Pareto front ``equations_`` ``predict``,
        ``expression_``, ``sympy()``, ``latex()`` and ``to_jax()`` use (PySR's meanings,
        :mod:`jaxsr.symbolic.front`): ``"bic"`` (default: the lowest Bayesian information
        criterion ``n log(loss) + complexity log(n)``, ``n`` training rows, losses under the
        rounding floor counting as equal, so an exact formula is not outbid by longer trees
        that only shave rounding error, and on noisy data the law is preferred to the law
        plus noise terms), ``"best"`` (PySR's: the highest score among the models whose
        loss is below 1.5 times the lowest; on the panel's real data it chose small models,
        median test R^2 0.58 against 0.64 with ``"bic"``), ``"accuracy"`` (lowest loss: the
        last tree of the search), ``"score"`` (highest score) or ``"cv"`` (the lowest
        5-fold cross-validated loss, constants refitted per fold on fixed structures,
        :mod:`jaxsr.symbolic.crossval`; column ``cv_loss`` of ``equations_``; with fewer
        than 4 training rows it chooses as ``"bic"``; on the benchmark's real data it
        predicted no better than ``"bic"``). Any row is reachable afterwards with
        ``index=``.
      validation_fraction: ``None`` (default) or a fraction in ``(0, 1)`` of the rows held out
        (a fixed shuffle, so the split is deterministic): the search runs on the others and
        the held-out MSE of each front model (``validation_loss``; weighted by the held-out
        rows' ``sample_weight`` when given) replaces the training loss in the selection.
        Raises ValueError when every held-out row has weight 0.
      precision: significant digits of the readable form (``str(model)``, ``print(model)``,
        the ``equation`` column, :meth:`latex`); default 4. It rounds the constants and drops
        the terms of a sum that change no value on the training rows (up to 200 of them)
        beyond that digit, e.g. rounding-level ``1.2e-14/x1`` next to ``3*x1 + 2``.
        Predictions and :meth:`sympy` keep the exact tree.
      refine_constants: after the search, refine all constants of the final tree jointly
        (L-BFGS, optax; :mod:`jaxsr.symbolic.refine`), kept only if the training MSE drops
        (default ``False``: the paper's method alone).
      initial_expression: warm start: the tree the search starts from instead of the mean
        of the target, a string over the feature names (e.g. ``"2.5 * x1 + x2"``, or the
        frame's column names) or an :class:`Expression`; it must be defined on the
        training data (no zero denominator). E.g. ``max_iterations=1`` times one
        iteration on a given tree; ``initial_expression=fitted.expression_`` resumes a fit.
      beam_width: ``B``, the trees kept per iteration (1 is the paper's greedy search,
        unchanged), or a widening schedule (default ``(4, 16)``, the panel's winner).
        ``B > 1``: beam search over the ``B`` best distinct trees
        (:mod:`jaxsr.symbolic.beam`); ``equations_`` is the front of every tree that
        entered the beam, ``history_`` rows show the best tree so far (``beam_mse``: the
        MSE of the new beam's best). **A widening schedule:** an increasing sequence,
        e.g. ``(4, 16)``: when the search with the first width ends without reaching the
        rounding level (or ``goal_mse``; nor at ``max_iterations``, which caps the fit's
        work), the search runs again from the start with the next width (each a whole
        fit, within what is left of ``max_time``), and so on;
        every search's models join ``equations_``, ``searches_`` lists them. With a
        portfolio of strategies, every strategy runs at one width before the next width.
        Deterministic: the amount of search is set by the schedule, not by the clock
        (``max_time`` only caps it). This is how a default fit spends more effort where
        it pays: an exact law ends after the first search; on the panel the second raised
        the real-data median test R^2 from 0.638 to 0.677 and found 2 more of the 58 laws.
      unary_operators: names from ``("sqrt", "exp", "log", "sin", "cos")`` (default ``()``:
        the paper's ``+ - * /`` only). Each variable transformed by each operator is
        offered to the searches as an extra terminal, wherever the domain rules admit it
        on the training data (``sqrt``/``log`` of positive columns only, no overflow of
        ``exp``), and the moves ``p -> u(p)`` on every non-terminal subtree ``p``, and
        ``p -> u(k*p)`` (``exp, sin, cos``) or ``u(k + p)``, ``u(k - p)`` (``sqrt, log``)
        on non-terminals and variables (``k`` from a 1-D search), are scored on ``p``'s
        node equation with the same domain rules (no search runs below a unary node); see
        :mod:`jaxsr.symbolic.unary` for what is and is not searched.
        ``unary_terminals_`` lists the terminals offered. **Two searches:** the unary
        terminals and moves can lead the greedy away from a law of ``+ - * /`` alone, so a
        fit with unary operators (and no ``initial_expression``) first runs the paper's
        search (the same parameters, ``unary_operators=()``) on
        :data:`PAPER_SHARE` of ``max_time``, then the search with the unary operators on
        the rest of it (all of both in ``max_time`` and ``fit_seconds_``). When the
        paper's search reaches the rounding level (or ``goal_mse``) the second search is
        not run; otherwise ``equations_`` is the Pareto front of the models of both and
        ``model_selection`` chooses among them as always (training or validation loss);
        ``history_`` is the unary search's and ``portfolio_`` tells which search the
        selected model comes from. **The square-target search:** with ``"sqrt"`` among the
        operators and a target of one sign, between the two the paper's search also runs
        on ``y**2`` (:data:`SQUARE_SHARE` of ``max_time``) and its models ``p`` join the
        front as ``sign * sqrt(p)`` (where ``p > 0`` on every training row), scored on
        ``y``; when one of them reaches the rounding floor the unary search is not run
        (``m0 / sqrt(1 - v**2/c**2)`` is such a law: no search runs inside a ``sqrt``).
      mesh: run every pass sharded over the samples: ``None`` (default, one device),
        ``"all"`` (a 1-D mesh over all local devices) or a ``jax.sharding.Mesh`` (the
        samples are split over all its axes). Results equal one device's up to the
        order of summation. A mesh may span several processes (``jax.distributed``,
        every process calling ``fit`` with the same data and parameters; ``max_time``
        must then be ``None``): each process places only its own devices' samples.
      domain: where a model must be free of poles, beyond the finite values and non-zero
        denominators on the training rows that every model has. ``"box"`` (default): no
        denominator vanishes, no ``sqrt``/``log`` argument leaves its domain and nothing
        overflows anywhere in the box spanned by the training data (per feature, the
        minimum and maximum over the rows of positive weight; with unary operators, of
        the transformed terminal columns too), proved for every tree the search keeps by
        interval arithmetic with bisection (:mod:`jaxsr.symbolic.domain`); a candidate
        without the proof is refused, and constant moves that lose it are undone. The
        cost: a law whose pole lies in an empty corner of that box (e.g. ``1/(x1 - x2)``
        with ``x1 > x2`` on every row but overlapping ranges) is refused too. ``"rows"``:
        the training rows only, as in the paper (no denominator zero or changing sign
        over them).
      bic_patience: the information-criterion stop (beyond the paper;
        :mod:`jaxsr.symbolic.search`): the search ends once its tree has grown this many
        nodes past the tree of lowest Bayesian information criterion met so far
        (``n log(MSE) + nodes log(n)``, the criterion of ``model_selection="bic"``)
        without lowering it; on noisy data the law is found early and the nodes after it
        only fit the noise. Default 10 (on the panel: the same laws and real-data median
        as without it; the median fit 1.0 s instead of 6.5 s, 1.1 s instead of 14.5 s on
        the noisy laws); ``None``: the search runs until its other rules.
      backward_elimination: after the search, walk back from its final tree one deletion
        at a time (a node replaced by its node-equation constant or by one of its
        children, constants re-optimised) while the information criterion falls; every
        tree kept joins ``equations_`` (:mod:`jaxsr.symbolic.elimination`; beyond the
        paper; not with ``unary_operators``). Default ``True``: on the panel it turned
        the 25-node noisy fit of ``G*m1*m2*(1/r2 - 1/r1)`` into the 15-node law (15 of
        the 17 laws at 1% noise instead of 14) and changed no other count.
      extrapolation_limit: the extrapolation guard of the selection
        (:mod:`jaxsr.symbolic.front`): ``model_selection`` chooses only among models
        whose predictions just outside the training box (each feature of up to 256
        training rows moved a twentieth of its range past the data, on a log scale for a
        positive feature; :func:`~jaxsr.symbolic.domain.edge_probes`) stay within the
        training target's range widened by this many times its width on each side
        (``edge_excursion`` in ``equations_``). Default 8: on the panel's real data it
        removed the one split with a negative test R^2 (-23: a model dividing by a power
        of a feature predicted 28x the truth just below the feature's training minimum)
        and left the median test R^2 unchanged; any value from 4 to 12 did the same.
        ``None``: off (PySR's selection rules as they are).
      search_sample: the search sample of a large fit (:mod:`jaxsr.symbolic.sampling`;
        beyond the paper, like PySR's ``batching`` but fixed and deterministic): with more
        training rows than this, the search runs on this many rows stratified on the
        target (plus each feature's extreme rows), while every change it keeps must pass
        the acceptance rule on all rows too, and the front, the selection and ``mse_`` use
        all rows (``history_`` reports the sample's MSE). ``"auto"`` (default):
        :data:`~jaxsr.symbolic.sampling.DEFAULT_ROWS` (10,000) rows, the size that did
        best of 5,000 to 50,000 on ``benchmarks/bench_sr_large_n.py`` (results in
        ``benchmarks/results/sr_large_n.txt``); an int: that many; ``None``: the paper's
        exact search on every row, whose cost and memory grow with N.
      rational_start: start the first search at a rational structure (beyond the paper;
        :mod:`jaxsr.symbolic.rational`): a linear-in-parameters fit ``y*Q = P`` over small
        monomial libraries (``P``, ``Q`` of degree up to 3 and 2), its terms chosen by
        backward elimination, the candidate of lowest information criterion that meets the
        ``domain`` rule becoming the first search's starting tree. It reaches the laws whose
        denominator is a sum (``x1*x2/(x1 + x2 + x3)``, ``a*x/(b + x)``,
        ``1/(1/x1 + 1/x2)``), which no single-node move of the searches passes through. When
        that start is exact the fit ends there; otherwise (on at most :data:`SEED_SHARE` of
        ``max_time``) every search of the schedule then runs from the mean as without it, and
        the front holds the models of all of them (``searches_[i]["start"]`` says where each
        began). Default ``True``; ``False``: the searches from the mean alone. Not with
        ``unary_operators`` (their first, paper's, search uses it) nor an
        ``initial_expression``; skipped on more than
        :data:`~jaxsr.symbolic.rational.MAX_COLUMNS` library columns.

    Attributes:
      expression_: str, fully parenthesised infix with the feature names.
      expression_tree_: :class:`Expression` (pre-order arrays; variables index the
        columns of ``X``).
      mse_: float, training MSE of the selected tree (``history_[-1]["mse"]`` is the
        final tree's), in the target's units squared: ``inf`` when that exceeds the
        float range (a target near ``1e300``, where even rounding errors square past
        it; the fit itself runs on the target divided by its scale, and :meth:`score`,
        R^2, is computed at any scale).
      n_nodes_: int, nodes of the selected tree (``expression_tree_``).
      n_iterations_: int; history_: list of dicts, one per accepted change (``iteration,
        search, node`` (0-based pre-order), ``replaced, subtree, expression, mse`` (its
        true training MSE), ``n_nodes, seconds``; ``constants_optimised`` (single-constant
        changes), ``constants_polished`` (joint polish steps kept) and
        ``constant_passes_capped`` after a constant optimisation, ``extended`` (order of the
        zero terms) after the stuck-tree fallback); a final ``search="prune"`` record when
        branches were pruned.
      n_features_in_: int, the number of columns of ``X`` in :meth:`fit`.
      feature_names_in_: object array of the column names, only when ``X`` was a DataFrame
        with string column names (scikit-learn's convention); the expression then uses
        them, else ``x1 .. xM``.
      dropped_features_: names of constant columns left out of the variable pool.
      stop_reason_: the limit that ended the fit (its last search, see ``searches_``):
        ``"goal"``,
        ``"rounding level"`` (MSE at or below the acceptance floor), ``"no improvement"``
        (no change, even after the stuck-tree fallback, lowers the MSE), ``"max_nodes"``
        (the same, but ``max_nodes`` left no room for the fallback's first-order zero
        terms: a larger cap might go on), ``"max_iterations"``,
        ``"information criterion"`` (``bic_patience``), ``"max_time"`` or
        ``"constant target"`` (:class:`jaxsr.symbolic.search.Status`).
      search_rows_: ``None``, or the sorted ``(n,)`` int64 indices of the rows of ``X``
        (after a validation split: of the training part) the search ran on
        (``search_sample``).
      searches_: list of dicts, one per search of the ``strategy`` portfolio and the
        ``beam_width`` schedule that ran, in order: ``strategy, beam_width, expression``
        (its final tree), ``mse, stop_reason, n_iterations, seconds`` and ``start``
        (``"rational"``: from the rational structure of ``rational_start``, ``"mean"``, or
        ``"initial_expression"``); ``history_`` and ``n_iterations_`` are the first
        search's.
      equations_: pandas DataFrame, the Pareto front of the models met during the fit, one
        row per model by increasing ``complexity`` (nodes), in this column order:
        ``complexity, loss`` (training MSE), ``score`` (``-d log(loss) / d complexity``
        against the previous row), with a validation split ``validation_loss``,
        ``edge_excursion`` (the extrapolation guard's measure, see
        ``extrapolation_limit``), ``iteration`` (that made the model), ``equation``
        (readable: constants rounded to ``precision`` digits, folded by sympy) and last
        the wide ``expression`` (exact, fully parenthesised; :meth:`Expression.parse`
        reads it back).
      selected_index_: int, the row of ``equations_`` chosen by ``model_selection``;
        ``expression_``, ``expression_tree_`` and ``mse_`` describe that model.
      refinement_: with ``refine_constants``, :class:`jaxsr.symbolic.refine.RefineResult` of
        the final tree (``accepted``, ``mse_before``, ``mse``, ``n_iterations``); else None.
      portfolio_: with ``unary_operators`` and no warm start, a dict: ``selected``
        (``"paper"``, ``"square target"`` or ``"unary"``: the search the selected model
        comes from), ``unary_search_run`` (False when the paper's or the square-target
        search reached the rounding level), ``paper`` (that search's ``expression``,
        ``mse``, ``stop_reason``, ``n_iterations``, ``seconds``) and ``square_target``
        (None when it did not run; else its best model of ``y`` as ``expression`` and
        ``mse``, the model of ``y**2`` as ``target_expression`` and ``target_mse``, and
        ``stop_reason``, ``n_iterations``, ``seconds``); else None.
      fit_seconds_: float, wall seconds of :meth:`fit` (both searches with unary
        operators).

    Warns:
      sklearn.exceptions.ConvergenceWarning: from :meth:`fit`, when ``max_time`` ran out
        before the first accepted change (the model is the mean; the message gives the
        seconds spent compiling), or when the selected model is a constant although a
        linear model explains an adjusted R^2 of at least 0.1 of the target: no fit
        returns the mean silently.
      ExtrapolationWarning: from :meth:`predict`, for rows outside the training box in a
        feature the model uses.

    Example:
      >>> import numpy as np
      >>> X = np.arange(1.0, 21.0).reshape(-1, 1)
      >>> sr = SymbolicRegressor(strategy=3).fit(X, 3.0 * X[:, 0] + 2.0)
      >>> round(sr.score(X, 3.0 * X[:, 0] + 2.0), 12)
      1.0
    """

    def __init__(
        self,
        max_nodes=50,
        strategy=2,
        min_improvement=1e-6,
        max_iterations=None,
        goal_mse=0.0,
        max_time=None,
        max_height=None,
        verbose=False,
        dtype="float64",
        model_selection="bic",
        validation_fraction=None,
        precision=4,
        progress=True,
        refine_constants=False,
        max_constant_passes=None,
        initial_expression=None,
        mesh=None,
        beam_width=(4, 16),
        unary_operators=(),
        domain="box",
        extrapolation_limit=_pf.EXTRAPOLATION_LIMIT,
        bic_patience=10,
        backward_elimination=True,
        search_sample="auto",
        rational_start=True,
    ):
        self.max_nodes = max_nodes
        self.strategy = strategy
        self.min_improvement = min_improvement
        self.max_iterations = max_iterations
        self.goal_mse = goal_mse
        self.max_time = max_time
        self.max_height = max_height
        self.verbose = verbose
        self.dtype = dtype
        self.model_selection = model_selection
        self.validation_fraction = validation_fraction
        self.precision = precision
        self.progress = progress
        self.refine_constants = refine_constants
        self.max_constant_passes = max_constant_passes
        self.initial_expression = initial_expression
        self.mesh = mesh
        self.beam_width = beam_width
        self.unary_operators = unary_operators
        self.domain = domain
        self.extrapolation_limit = extrapolation_limit
        self.bic_patience = bic_patience
        self.backward_elimination = backward_elimination
        self.search_sample = search_sample
        self.rational_start = rational_start

    # ---------------------------------------------------------------- checks
    def _check_params(self) -> None:
        """Hyperparameter checks (:mod:`jaxsr._validation`); raises ValueError."""
        self._strategies()
        check_int(self.max_nodes, "max_nodes", min_value=1, allow_none=True)
        check_int(self.max_height, "max_height", min_value=1, allow_none=True)
        check_int(self.max_iterations, "max_iterations", min_value=0, allow_none=True)
        check_int(self.max_constant_passes, "max_constant_passes", min_value=1, allow_none=True)
        check_real(self.min_improvement, "min_improvement", min_value=0)
        check_real(self.goal_mse, "goal_mse", min_value=0)
        check_real(
            self.max_time, "max_time", min_value=0, strict=True, allow_none=True, hint=" (seconds)"
        )
        resolve_dtype(self.dtype)
        check_choice(self.model_selection, "model_selection", _pf.MODEL_SELECTIONS)
        check_int(self.precision, "precision", min_value=1)
        self._widths()
        _unary.check_unary_operators(self.unary_operators)
        check_choice(self.domain, "domain", _domain.DOMAINS)
        check_real(self.extrapolation_limit, "extrapolation_limit", min_value=0, allow_none=True)
        check_int(self.bic_patience, "bic_patience", min_value=1, allow_none=True)
        if not isinstance(self.backward_elimination, bool | np.bool_):
            raise ValueError(
                f"backward_elimination must be True or False; got {self.backward_elimination!r}"
            )
        check_real(
            self.validation_fraction,
            "validation_fraction",
            min_value=0,
            strict=True,
            allow_none=True,
        )
        _sampling.sample_size(self.search_sample, 0)
        if not isinstance(self.rational_start, bool | np.bool_):
            raise ValueError(f"rational_start must be True or False; got {self.rational_start!r}")
        if not isinstance(self.refine_constants, bool | np.bool_):
            raise ValueError(
                f"refine_constants must be True or False; got {self.refine_constants!r}"
            )
        if self.validation_fraction is not None and not self.validation_fraction < 1:
            raise ValueError(
                f"validation_fraction must be None or a number in (0, 1); got "
                f"{self.validation_fraction!r}"
            )
        if self.max_time is not None and _sharding.spans_processes(self._sample_mesh()[0]):
            raise ValueError(
                "max_time must be None on a mesh spanning several processes: each process "
                "would stop at its own clock and leave the others waiting in a collective; "
                "bound the fit with max_iterations or max_nodes"
            )
        ie = self.initial_expression
        if ie is not None and not isinstance(ie, (str, Expression)):
            raise ValueError(
                "initial_expression must be None, a string over the feature "
                f"names or an Expression; got {type(ie).__name__}"
            )

    def _strategies(self) -> tuple[int, ...]:
        """``strategy`` as a tuple of distinct strategies (one int: a 1-tuple).

        Raises:
          ValueError: not one of 1-4 or a non-empty sequence of distinct ones.
        """
        s = self.strategy
        seq = tuple(s) if isinstance(s, list | tuple) else (s,)
        for v in seq:
            check_choice(v, "strategy", (1, 2, 3, 4))
        if not seq or len(set(seq)) != len(seq):
            raise ValueError(
                f"strategy must be 1, 2, 3, 4 or a non-empty sequence of distinct "
                f"ones (a portfolio, run in that order); got {s!r}"
            )
        return tuple(int(v) for v in seq)

    def _widths(self) -> tuple[int, ...]:
        """``beam_width`` as a tuple of strictly increasing widths (one int: a 1-tuple).

        Raises:
          ValueError: not an integer >= 1 or a non-empty increasing sequence of them.
        """
        b = self.beam_width
        seq = tuple(b) if isinstance(b, list | tuple) else (b,)
        for v in seq:
            check_int(v, "beam_width", min_value=1)
        if not seq or any(int(v) <= int(u) for u, v in zip(seq, seq[1:], strict=False)):
            raise ValueError(
                f"beam_width must be an integer >= 1 or a non-empty increasing "
                f"sequence of them (a widening schedule); got {b!r}"
            )
        return tuple(int(v) for v in seq)

    def _schedule(self) -> list[tuple[int, int]]:
        """The searches of a fit, in order: ``(strategy, beam width)`` for every width of
        the schedule, and within a width every strategy of the portfolio."""
        return [(s, b) for b in self._widths() for s in self._strategies()]

    def _sample_mesh(self):
        """``(mesh, axes)`` of the ``mesh`` parameter (its axes of type ``Auto``), or
        ``(None, None)``."""
        mesh, axes = resolve_mesh(self.mesh, "samples")
        return _sharding.auto_mesh(mesh), axes

    def _initial_tree(self, names, n_features):
        ie = self.initial_expression
        if ie is None:
            return None
        e = Expression.parse(ie, names) if isinstance(ie, str) else ie
        if e.n_nodes and np.any((e.op == VAR) & ((e.feature < 0) | (e.feature >= n_features))):
            raise ValueError(
                f"initial_expression uses a variable index outside the {n_features} features"
            )
        if self.max_nodes is not None and e.n_nodes > self.max_nodes:
            raise ValueError(
                f"initial_expression has {e.n_nodes} nodes, more than max_nodes={self.max_nodes}"
            )
        return e

    def _expected_programs(self, Xs, dt) -> int | None:
        """The programs this fit is expected to compile (the progress bar's ``compiling
        k/n``): :data:`FIT_PROGRAMS` for the first fit of its buckets (rows, columns,
        node capacity, dtype) in this process, ``None`` (unknown, usually none) after."""
        rows = getattr(self, "search_rows_", None)
        n = Xs.shape[0] if rows is None else rows.shape[0]
        mesh = self._sample_mesh()[0]
        key = (
            sample_bucket(n, 1 if mesh is None else mesh.devices.size),
            feature_bucket(Xs.shape[1]),
            self.max_nodes,
            np.dtype(dt).name,
            self._widths()[0] >= _beam.MIN_WIDTH,
        )
        if key in _FITTED_BUCKETS:
            return None
        _FITTED_BUCKETS.add(key)
        return FIT_PROGRAMS

    def _device_data(self, Xa, ya, w, dt):
        """The samples padded to their size bucket (copies of real rows with weight 0) and
        their columns to their feature bucket (columns of ones, out of the variable pool:
        :func:`_pool`), placed on the device(s): ``XT (Mp, Np), y (Np,), weights (Np,)``
        (mean 1). The compiled programs' shapes follow the buckets, not the data."""
        mesh, axes = self._sample_mesh()
        n, m = Xa.shape
        n_pad = sample_bucket(n, 1 if mesh is None else mesh.devices.size)
        idx = np.arange(n_pad) % n
        XT = np.ones((feature_bucket(m), n_pad), dt)
        XT[:m] = Xa.T[:, idx]
        yp = ya[idx]
        # always weights (ones without sample_weight or padding: the same numbers), so
        # every dataset of a bucket runs the same compiled kernels
        wr = np.ones(n, dt) if w is None else w
        wp = np.zeros(n_pad, dt)
        wp[:n] = wr * (n_pad / np.sum(wr, dtype=np.float64))  # mean 1 over the padding
        if mesh is None:
            return to_device(XT), to_device(yp), to_device(wp)
        from jax.sharding import PartitionSpec as P

        # every process holds the full data; each places its own devices' shards
        return (
            _sharding.place(XT, mesh, P(None, axes)),
            _sharding.place(yp, mesh, P(axes)),
            _sharding.place(wp, mesh, P(axes)),
        )

    # ---------------------------------------------------------------- fit
    def fit(self, X, y, sample_weight=None):
        """Grow the expression on ``X`` ``(n_samples, n_features)`` and ``y``
        ``(n_samples,)``; returns ``self``.

        Args:
          sample_weight: optional ``(n_samples,)`` non-negative weights: the search
            minimises the weighted MSE ``sum(w * (f(x) - y)**2) / sum(w)`` (``mse_`` is
            that); integer weights give the fit of the data with each row repeated that
            many times. A weight-0 row does not count in the loss but still counts for
            the domain of division (no zero denominator on any training row).

        Raises:
          ValueError: invalid hyperparameters, NaN/inf, mismatched lengths, empty data,
            non-numeric columns, negative or all-zero weights, an ``initial_expression``
            that does not parse or is undefined on the data (see :mod:`jaxsr._validation`),
            float32 data beyond float32's range (or whose columns all underflow), or a
            fit whose estimated peak memory (:func:`peak_memory_bytes`) exceeds the memory
            available (checked before anything is allocated; ``JAXSR_MEMORY_LIMIT``
            overrides the measured size, see :mod:`jaxsr._memory`).

        Warns:
          UserWarning: ``y`` varies within 100x the rounding floor of its own magnitude
            (a small signal on a large offset, ``1e12 + x``): the warning names the offset
            to subtract (at or below the floor the fit can only return a constant).
        """
        self._check_params()
        dt = resolve_dtype(self.dtype)
        Xa, ya = validate_X_y(self, X, y, dtype=dt)
        square_target = self._square_target(ya, dt)  # y**2 for the sqrt(p) search
        w = (
            None
            if sample_weight is None
            else check_sample_weight(sample_weight, Xa.shape[0], dtype=dt)
        )
        # on the user's values: a float32 cast can erase the variation it warns about
        rounding = _warn_if_variation_is_rounding(
            ya if dt == np.float64 else check_target(y, dtype=np.float64), w, dt
        )
        # the training box (per-feature min and max of every row given to fit): predict
        # warns outside it
        self._train_box_ = _domain.data_box(Xa)
        X_val = y_val = w_val = None
        train, val = self._validation_split(ya.shape[0])
        if val is not None:  # the weights follow their rows into both parts
            X_val, y_val = Xa[val], ya[val]
            Xa, ya = Xa[train], ya[train]
            if w is not None:
                w, w_val = w[train], w[val]
                if not np.sum(w_val) > 0:
                    raise ValueError(
                        "every validation row has sample_weight 0: the "
                        "validation loss is undefined; use another "
                        "validation_fraction or weights"
                    )
                w = check_sample_weight(w, w.shape[0], dtype=dt)
        # the rows the fit and its search fit (the n of the information criterion)
        self._n_train_rows_ = _effective_rows(ya, w)
        size = _sampling.sample_size(self.search_sample, ya.shape[0])
        self.search_rows_ = None if size is None else _sampling.search_rows(Xa, ya, size, w)
        self._n_search_rows_ = (
            self._n_train_rows_
            if self.search_rows_ is None
            else _effective_rows(ya[self.search_rows_], None if w is None else w[self.search_rows_])
        )
        names = feature_names(self)
        self._check_memory(
            ya.shape[0] + (0 if y_val is None else y_val.shape[0]),
            Xa.shape[1],
            dt,
            None if self.search_rows_ is None else self.search_rows_.shape[0],
        )
        initial_tree = self._initial_tree(names, Xa.shape[1])
        const_cols = np.all(Xa == Xa[:1], axis=0)
        self.dropped_features_ = [names[j] for j in np.flatnonzero(const_cols)]
        start = time.perf_counter()
        deadline = None if self.max_time is None else start + float(self.max_time)
        self._seeded_ = seeded = False  # the first search starts at a rational structure
        if (
            self.rational_start
            and initial_tree is None
            and not self.unary_operators
            and not np.all(ya == ya[0])
        ):  # a constant target is its own model
            seed = self._rational_seed(
                Xa,
                ya,
                w,
                const_cols,
                dt,
                None if deadline is None else start + RATIONAL_SHARE * float(self.max_time),
            )
            if seed is not None:
                initial_tree, seeded = seed.expression, True
                self._seeded_ = True
        paper = self._paper_search(X, y, sample_weight, initial_tree)  # with unary ops
        if paper is not None and paper.stop_reason_ in _EXACT_STOPS:
            return self._adopt_paper_search(paper, Xa, dt, const_cols, names, start)
        square = transformed = None  # the square-target search (y**2 = p)
        if paper is not None and square_target is not None:
            square = self._square_target_search(
                X,
                square_target,
                sample_weight,
                None if self.max_time is None else SQUARE_SHARE * float(self.max_time),
            )
            transformed = self._square_target_models(square, square_target[0], Xa, ya, w)
        # when sign * sqrt(p) fits y to the rounding floor the unary search is not run
        square_exact = bool(transformed) and min(m.loss for m in transformed) <= (
            _pf.loss_floor(ya, dt)
        )
        y_scale = _check_scales(Xa, ya, dt)
        wn = np.ones_like(ya) if w is None else w / np.mean(w)  # weights of mean 1
        with np.errstate(over="ignore", invalid="ignore"):  # a target near 1e300
            mean = float(np.mean(wn * ya / y_scale)) * y_scale
            start_tree = Expression.constant(mean) if initial_tree is None else initial_tree
            run = _FitRun(
                start_tree,
                _unscaled_mse(
                    np.mean(wn * ((start_tree.evaluate(Xa) - ya) / y_scale) ** 2), y_scale
                ),
            )
        initial = FrontModel(*run.snapshot[:2], 0)
        if seeded:  # the mean, the paper's starting model, stays a model of the front
            with np.errstate(over="ignore", invalid="ignore"):
                constant = FrontModel(
                    Expression.constant(mean),
                    _unscaled_mse(np.mean(wn * ((mean - ya) / y_scale) ** 2), y_scale),
                    0,
                )
        # unary operators: transformed variables u(x_m) as extra terminal
        # columns of the search (jaxsr.symbolic.unary); the search's trees are mapped back
        Xs, const_s, names_s, initial_s = Xa, const_cols, names, initial_tree
        cols, terms = _unary.transformed_terminals(
            Xa, self.unary_operators, dt, skip=const_cols, pairs=_unary.PAIR_TERMINALS
        )
        self.unary_terminals_ = [t.name(names) for t in terms]
        if terms:
            m = Xa.shape[1]
            Xs = np.column_stack([Xa, cols])
            const_s = np.concatenate([const_cols, np.zeros(len(terms), bool)])
            names_s = list(names) + self.unary_terminals_
            if initial_tree is not None:
                initial_s = _unary.contract_terminals(initial_tree, m, terms)
            run.expand = lambda e, m=m, terms=terms: _unary.expand_terminals(e, m, terms)
        elif initial_tree is not None and initial_tree.has_unary:
            initial_s = _unary.contract_terminals(initial_tree, Xa.shape[1], terms)
        first_deadline = deadline  # a search from a rational start: SEED_SHARE of it
        if seeded and deadline is not None:
            first_deadline = start + SEED_SHARE * float(self.max_time)
        args = (run, Xs, ya, y_scale, const_s, names_s, dt, start, first_deadline, w, initial_s)
        with _progress.FitProgress(
            "SymbolicRegressor", self.progress, programs=self._expected_programs(Xs, dt)
        ) as bar:
            if square_exact:
                run.stop_reason = square.stop_reason_
            else:
                self._run_in_worker(run, args, deadline)
        if run.error is not None:
            raise run.error
        expr, mse, n_hist = run.snapshot
        self.history_ = [dict(h) for h in run.history[:n_hist]]
        self.stop_reason_ = run.stop_reason or "max_time"
        self.n_iterations_ = sum(1 for h in self.history_ if h["search"] != "prune")
        if (
            self.stop_reason_ == "max_time"
            and self.n_iterations_ == 0
            and paper is None
            and not seeded
        ):
            _warn_budget_before_first_change(
                float(self.max_time),
                bar.compile_seconds,
                compiling=bar.programs is not None and bar.compiled < bar.programs,
            )
        final = FrontModel(expr, float(mse), self.n_iterations_)
        first_seconds = time.perf_counter() - start
        others = self._portfolio_searches(
            X,
            y,
            sample_weight,
            initial_tree,
            deadline,
            last=self.stop_reason_ in _LAST_STOPS,
            seeded=seeded,
        )
        self.searches_ = [
            {
                "strategy": self._strategies()[0],
                "beam_width": 1 if seeded else self._widths()[0],
                "expression": expr.to_string(names),
                "mse": float(mse),
                "stop_reason": self.stop_reason_,
                "n_iterations": self.n_iterations_,
                "seconds": first_seconds,
                "start": (
                    "rational"
                    if seeded
                    else "mean"
                    if initial_tree is None
                    else "initial_expression"
                ),
            }
        ]
        self.searches_ += [
            {
                "strategy": o.strategy,
                "beam_width": o.beam_width,
                "expression": o.expression_,
                "mse": float(o.history_[-1]["mse"]) if o.history_ else o.mse_,
                "stop_reason": o.stop_reason_,
                "n_iterations": o.n_iterations_,
                "seconds": o.fit_seconds_,
                "start": "mean",
            }
            for o in others
        ]
        # the fit ended where its last search ended (the schedule's last, or the one that
        # reached the rounding level, the goal or the time limit)
        self.stop_reason_ = self.searches_[-1]["stop_reason"]
        self.refinement_ = None
        if self.refine_constants and self.stop_reason_ != "constant target" and not square_exact:
            self.refinement_ = _refine.refine_constants(expr, Xa, ya, w, domain=self.domain)
            if self.refinement_.accepted:  # the true MSE dropped: the refined tree is final
                final = FrontModel(
                    self.refinement_.expression, self.refinement_.mse, self.n_iterations_
                )
        n = ya.shape[0]  # rows on which the readable form drops terms too small to show
        self._readable_X_ = np.asarray(
            Xa[np.unique(np.linspace(0, n - 1, min(n, READABLE_ROWS)).round().astype(int))],
            dtype=np.float64,
        )
        models = self._path_models(initial, final)
        if seeded:
            models.insert(0, constant)
        models += [
            FrontModel(
                run.unscaled(m.expression, y_scale), _unscaled_mse(m.loss, y_scale), m.iteration
            )
            for m in getattr(run.engine, "front_models", ())
        ]  # the beam's trees
        models += [
            FrontModel(
                run.unscaled(m.expression, y_scale),
                _unscaled_mse(m.loss, y_scale),
                self.n_iterations_,
            )
            for m in run.eliminated
        ]  # the backward elimination's trees
        own = {m.expression.to_string(names) for m in models}
        if paper is not None:  # the front over both searches' models
            models += [
                FrontModel(e, float(loss), int(it))
                for e, loss, it in zip(
                    paper._front_,
                    paper._front_table_["loss"],
                    paper._front_table_["iteration"],
                    strict=True,
                )
            ]
        if transformed:
            models += transformed
        for o in others:  # the other strategies of a portfolio
            models += [
                FrontModel(e, float(loss), int(it))
                for e, loss, it in zip(
                    o._front_, o._front_table_["loss"], o._front_table_["iteration"], strict=True
                )
            ]
        edges = (Xa, ya, w)  # the extrapolation guard's probes start from the search's rows
        if self.search_rows_ is not None and y_scale == 1.0:
            models = self._all_rows_models(models, Xa, ya, w)
        if y_scale == 1.0:
            self._set_front(models, _pf.loss_floor(ya, dt), X_val, y_val, w_val, edges)
        else:  # |y| near the float limits: the front compares losses of y / y_scale
            with np.errstate(all="ignore"):
                models = [
                    m._replace(
                        loss=float(
                            np.mean((m.expression.evaluate(Xa) / y_scale - ya / y_scale) ** 2)
                        )
                    )
                    for m in models
                ]
                self._set_front(
                    models,
                    _pf.loss_floor(ya / y_scale, dt),
                    X_val,
                    y_val,
                    w_val,
                    edges,
                    scale=y_scale,
                )
                self.mse_ = _unscaled_mse(self.mse_, y_scale)
                self._front_table_["loss"] = np.array(  # an exact model's 0 stays 0
                    [_unscaled_mse(v, y_scale) for v in self._front_table_["loss"]]
                )
        self.n_nodes_ = int(self.expression_tree_.n_nodes)
        names_t = {m.expression.to_string(names) for m in transformed or ()}
        names_p = set() if paper is None else {e.to_string(names) for e in paper._front_}
        for o in others:  # the wider beams: their unary searches' models
            own |= {e.to_string(names) for e in o._front_} - names_p - names_t
        selected = (
            "unary"
            if self.expression_ in own
            else "square target"
            if self.expression_ in names_t
            else "paper"
        )
        self.portfolio_ = (
            None
            if paper is None
            else self._portfolio(
                paper,
                selected,
                run=not square_exact,
                square=square,
                square_models=transformed or (),
                names=names,
            )
        )
        self.fit_seconds_ = time.perf_counter() - start
        # a constant after the search gave up (not after a limit the user set on the
        # iterations, nor after the budget warning above) is a failure to report
        if not rounding and (
            self.stop_reason_ in ("no improvement", "max_nodes", "information criterion")
            or (self.stop_reason_ == "max_time" and self.n_iterations_ > 0)
        ):
            _warn_if_constant_model(self.expression_tree_, Xa, ya, w)
        return self

    # ---------------------------------------------------------------- portfolio
    def _portfolio_searches(
        self, X, y, sample_weight, initial_tree, deadline, last: bool, seeded: bool = False
    ) -> list:
        """With a portfolio ``strategy=(s1, s2, ...)`` or a widening schedule
        ``beam_width=(b1, b2, ...)``: after the first search (``s1``, ``b1``), each other
        search of :meth:`_schedule` in turn, as a fit of its own (the same parameters and
        data, the same validation split, the time left of ``max_time``), until one reaches
        the rounding level or the goal or the time is spent; their models join the Pareto
        front. Nothing runs after a stop of :data:`_LAST_STOPS` (``last``: the target
        reached, or ``max_iterations``, the user's cap on the work) or with a warm start;
        when the first search started at the rational structure (``seeded``, see
        ``rational_start``), every search of the schedule runs from the mean after it;
        a search that would get under :data:`PORTFOLIO_MIN_SECONDS` is not started.
        Deterministic: the same searches run in the same order whenever ``max_time`` is
        not reached."""
        from sklearn.exceptions import ConvergenceWarning

        out = []
        if last or (initial_tree is not None and not seeded):
            return out
        for s, b in self._schedule()[0 if seeded else 1 :]:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left < PORTFOLIO_MIN_SECONDS:
                break
            params = dict(
                self.get_params(deep=False),
                strategy=s,
                beam_width=b,
                max_time=left,
                rational_start=False,
            )
            with warnings.catch_warnings():  # the portfolio's own result is checked once
                warnings.simplefilter("ignore", ConvergenceWarning)
                other = type(self)(**params).fit(X, y, sample_weight)
            out.append(other)
            if other.stop_reason_ in _LAST_STOPS:
                break
        return out

    # ---------------------------------------------------------------- two searches
    def _rational_seed(self, Xa, ya, w, const_cols, dt, deadline=None):
        """The best rational starting structure (:func:`jaxsr.symbolic.rational.
        rational_candidates`, on the search sample when there is one, fitted until
        ``deadline``) that meets the ``domain`` rule, or ``None``."""
        rows = getattr(self, "search_rows_", None)
        Xr, yr, wr = (
            (Xa, ya, w) if rows is None else (Xa[rows], ya[rows], None if w is None else w[rows])
        )
        with np.errstate(all="ignore"):
            found = _rational.rational_candidates(
                np.asarray(Xr, np.float64),
                np.asarray(yr, np.float64),
                None if wr is None else np.asarray(wr, np.float64),
                const_cols=const_cols,
                max_nodes=self.max_nodes,
                floor=_pf.loss_floor(yr, dt, wr),
                deadline=deadline,
            )
        box = _domain.data_box(Xa) if self.domain == "box" else None
        for cand in found[: _rational.TRIES]:
            if box is None or _domain.prove_box(cand.expression, *box).proved:
                return cand
        return None

    def _paper_search(self, X, y, sample_weight, initial_tree):
        """With ``unary_operators`` and no warm start: the paper's search (the same
        parameters, ``unary_operators=()``, ``PAPER_SHARE`` of ``max_time``) fitted on the
        same data (its own, identical, validation split); else ``None``."""
        if not self.unary_operators or initial_tree is not None:
            return None
        params = dict(self.get_params(deep=False), unary_operators=())
        if self.max_time is not None:
            params["max_time"] = PAPER_SHARE * float(self.max_time)
        return type(self)(**params).fit(X, y, sample_weight)

    def _portfolio(
        self, paper, selected: str, run: bool, square=None, square_models=(), names=None
    ) -> dict:
        out = {
            "selected": selected,
            "unary_search_run": run,
            "paper": {
                "expression": paper.expression_,
                "mse": paper.mse_,
                "stop_reason": paper.stop_reason_,
                "n_iterations": paper.n_iterations_,
                "seconds": paper.fit_seconds_,
            },
            "square_target": None,
        }
        if square is not None:
            best = min(square_models, key=lambda m: m.loss, default=None)
            out["square_target"] = {
                "expression": None if best is None else best.expression.to_string(names),
                "mse": None if best is None else float(best.loss),
                "target_expression": square.expression_,
                "target_mse": square.mse_,
                "stop_reason": square.stop_reason_,
                "n_iterations": square.n_iterations_,
                "seconds": square.fit_seconds_,
            }
        return out

    # ---------------------------------------------------------------- square target
    def _square_target(self, y, dt):
        """``(sign, y**2)`` when the square-target search applies (``"sqrt"`` among the
        unary operators, every target (training and validation rows) of one sign,
        ``y**2`` comfortably inside the float range: between ``sqrt(tiny)`` and
        ``sqrt(max)`` of the dtype ``dt``); else ``None``."""
        if "sqrt" not in (self.unary_operators or ()):
            return None
        y = np.asarray(y, np.float64)
        sign = 1.0 if np.all(y > 0) else -1.0 if np.all(y < 0) else 0.0
        if sign == 0.0:
            return None
        with np.errstate(all="ignore"):
            g = y * y
        fi = np.finfo(dt)
        if not (
            np.all(np.isfinite(g)) and g.min() >= np.sqrt(fi.tiny) and g.max() <= np.sqrt(fi.max)
        ):
            return None
        return sign, g

    def _square_target_search(self, X, square_target, sample_weight, seconds):
        """The paper's search (the same parameters, ``unary_operators=()``) on ``y**2``
        (``square_target[1]``), in ``seconds`` (``None``: no limit).

        Why: a law ``y = sqrt(p)`` with ``p`` rational (``m0 / sqrt(1 - v**2/c**2)``,
        ``sqrt(omega**2/c**2 - pi**2/d**2)``) is a law of ``+ - * /`` for ``y**2``, which
        the paper's exact searches can find, while below a unary node no search runs (see
        :mod:`jaxsr.symbolic.unary`). AI Feynman tries such transformations of the target
        too. The models are then read back as ``sign * sqrt(p)`` and compared by their
        true loss on ``y`` (:meth:`_square_target_models`)."""
        params = dict(
            self.get_params(deep=False),
            unary_operators=(),
            max_time=None if seconds is None else float(seconds),
        )
        return type(self)(**params).fit(X, square_target[1], sample_weight)

    @staticmethod
    def _square_target_models(square, sign, Xa, ya, w) -> list[FrontModel]:
        """The square-target search's front as models of ``y``: ``sqrt(p)`` (``-1 *
        sqrt(p)`` for a negative target) for each front tree ``p`` that is positive and
        finite on every training row (the domain rule of ``sqrt``), with its true
        (weighted) training MSE on ``y``."""
        out = []
        with np.errstate(all="ignore"):
            for e, it in zip(square._front_, square._front_table_["iteration"], strict=True):
                p = e.evaluate(Xa)
                if not (np.all(np.isfinite(p)) and np.all(p > 0)):
                    continue
                expr = Expression.unary(SQRT, e)
                if sign < 0:
                    expr = Expression.binary(MUL, Expression.constant(-1.0), expr)
                loss = float(np.average((expr.evaluate(Xa) - ya) ** 2, weights=w))
                if np.isfinite(loss):
                    out.append(FrontModel(expr, loss, int(it)))
        return out

    def _adopt_paper_search(self, paper, Xa, dt, const_cols, names, start):
        """The paper's search reached the rounding level: its fit is this fit (the unary
        search is not run); ``unary_terminals_`` still lists the terminals offered."""
        fitted = {k: v for k, v in vars(paper).items() if k not in self.get_params(deep=False)}
        self.__dict__.update(fitted)
        terms = _unary.transformed_terminals(
            Xa, self.unary_operators, dt, skip=const_cols, pairs=_unary.PAIR_TERMINALS
        )[1]
        self.unary_terminals_ = [t.name(names) for t in terms]
        self.portfolio_ = self._portfolio(paper, "paper", run=False)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _run_in_worker(self, run, args, deadline) -> None:
        """:meth:`_fit_run` in a worker thread (``jaxsr-fit``), the caller waiting for it.

        A kernel or a compilation in flight cannot be interrupted, but the caller stays
        responsive: at the deadline (``max_time`` minus a reserve of a quarter of the
        budget, at most 1 s, to build the front) it asks the search to stop
        (``run.stop()``) and waits for the worker to end at its next check, for at most
        half the reserve: when ``fit`` returns, no search runs on behind it, except a
        compilation (or one long kernel) already in flight, which ends in the background
        without starting anything else; on ``KeyboardInterrupt`` (Ctrl-C) it
        asks the same, waits at most a second and re-raises, leaving the estimator as it
        was before ``fit``. The thread is a daemon, stopped and waited for at exit
        (:func:`_stop_fits_at_exit`): a step still in flight delays the exit by its own
        length only (a daemon thread stopped inside XLA's native code aborts the
        process). It runs under the caller's scoped JAX settings
        (:func:`jaxsr._config.thread_settings`).
        """
        settings = thread_settings()

        # the caller waits on ``done``, never on ``Thread.join``: a join interrupted by
        # Ctrl-C marks a thread that still runs as stopped (CPython 3.11, bpo-45274's
        # fix), and the exit hook would then not wait for it
        done = threading.Event()

        def work():
            try:
                with settings():
                    self._fit_run(*args)
            finally:
                with _FITS_LOCK:
                    _FITS.pop(id(done), None)
                done.set()

        worker = threading.Thread(
            target=contextvars.copy_context().run, args=(work,), name="jaxsr-fit", daemon=True
        )
        reserve = 0.0 if deadline is None else min(1.0, 0.25 * float(self.max_time))
        stop_at = None if deadline is None else deadline - reserve
        with _FITS_LOCK:
            _FITS[id(done)] = (done, run)
        worker.start()
        try:
            while not done.is_set():
                if stop_at is None:
                    done.wait(0.25)
                    continue
                done.wait(max(0.0, min(0.25, stop_at - time.perf_counter())))
                if not done.is_set() and time.perf_counter() >= stop_at:
                    run.stop()
                    run.stop_reason = "max_time"
                    # the step in flight, to its next check: within half the reserve
                    # (a compilation cannot be interrupted; then it ends in the background)
                    done.wait(max(0.0, stop_at + 0.5 * reserve - time.perf_counter()))
                    break
        except BaseException:  # KeyboardInterrupt, SystemExit
            run.stop()
            done.wait(1.0)
            raise

    def _fit_run(
        self,
        run,
        Xa,
        ya,
        y_scale,
        const_cols,
        names,
        dt,
        start,
        deadline,
        w=None,
        initial_tree=None,
    ):
        """The fit proper, in the worker thread of :meth:`_run_in_worker`."""
        try:
            with precision(dt), _sharding.sample_mesh(self._sample_mesh()[0]):
                rows = getattr(self, "search_rows_", None)
                all_rows = None
                if rows is None:
                    XT, yj, wj = self._device_data(Xa, ya / y_scale, w, dt)
                else:  # the search sample (sampling.py); all rows verify its changes
                    XT, yj, wj = self._device_data(
                        Xa[rows], ya[rows] / y_scale, None if w is None else w[rows], dt
                    )
                    all_rows = self._device_data(Xa, ya / y_scale, w, dt)
                engine = DomeSearch(
                    XT,
                    yj,
                    _pool(const_cols),
                    max_nodes=self.max_nodes,
                    max_height=self.max_height,
                    min_improvement=self.min_improvement,
                    feature_names=names,
                    deadline=deadline,
                    max_constant_passes=self.max_constant_passes,
                    weights=wj,
                    domain=self.domain,
                    all_rows=all_rows,
                )
                if self.unary_operators:  # the move p -> u(p) (unary.py)
                    engine.unary_search = _unary.UnarySearch(self.unary_operators)
                if initial_tree is not None:
                    start_tree = (
                        initial_tree
                        if y_scale == 1.0
                        else scale_output(initial_tree, 1.0 / y_scale)
                    )
                    mse, ok = engine._true_mse(start_tree)
                    if not ok:
                        raise ValueError(
                            f"initial_expression {initial_tree.to_string(names)!r} is not "
                            "defined on the training data (a zero denominator, a pole inside "
                            "the training range or a non-finite value)"
                        )
                    engine.expr, engine.mse, engine._cache = start_tree, mse, None
                # from a rational start, the greedy search (the start is near its law)
                width = 1 if getattr(self, "_seeded_", False) else self._widths()[0]
                if width >= _beam.MIN_WIDTH:  # B = 1: the paper's
                    engine = _beam.BeamSearch(engine, width)
                run.engine = engine
                if run.stopped:
                    return
                run.commit(engine, y_scale)
                if self.verbose:
                    msg = (
                        f"[jaxsr] iteration 0: MSE {_unscaled_mse(engine.mse, y_scale):.6g}, "
                        f"{engine.expr.to_string(names)}"
                    )
                    if self.dropped_features_:
                        msg += f" (constant columns dropped: {self.dropped_features_})"
                    _progress.write(msg)
                if initial_tree is None and np.all(ya == ya[0]):
                    run.snapshot = (Expression.constant(float(ya[0])), 0.0, 0)
                    run.stop_reason = _search.Status.CONSTANT_TARGET.reason
                else:
                    reason = self._loop(
                        run,
                        engine,
                        start,
                        deadline,
                        names,
                        y_scale,
                        int(np.sum(~np.asarray(const_cols))),
                    )
                    if not run.stopped:
                        run.stop_reason = reason
                    if self.backward_elimination and not run.stopped and not self.unary_operators:
                        dome = getattr(engine, "engine", engine)  # a beam's DomeSearch
                        dome.expr, dome.mse, dome._cache = engine.expr, engine.mse, None
                        run.eliminated = _elimination.eliminate(dome, self._n_search_rows_)
        except BaseException as err:  # re-raised in the caller's thread
            run.error = err

    def _loop(
        self, run, engine: _search.Engine, start, deadline, names, y_scale, n_pool: int
    ) -> str:
        """The iterations of the search until a stop rule holds (:func:`search.run
        <jaxsr.symbolic.search.run>`, which owns every rule and prunes the final tree);
        returns the stop reason (``stop_reason_``). Here each accepted change (and the
        pruning) becomes a row of the history, a progress update and, with ``verbose``, a
        line. ``n_pool``: the variables the search may use (for the ``"max_nodes"``
        reason: the node cap left no room for the stuck-tree fallback)."""
        with np.errstate(over="ignore"):
            goal = float(np.float64(self.goal_mse) / y_scale / y_scale)

        def record(rec, state):
            if rec["search"] == "prune":  # the loop reports the MSE in the search's units
                rec = dict(rec, mse_before=_unscaled_mse(rec["mse_before"], y_scale))
            it = state.iteration
            rec = {
                "iteration": it,
                **rec,
                "expression": run.unscaled(engine.expr, y_scale).to_string(names),
                "mse": _unscaled_mse(engine.mse, y_scale),
                "n_nodes": engine.expr.n_nodes,
                "seconds": time.perf_counter() - start,
            }
            run.history.append(rec)
            run.commit(engine, y_scale)
            _progress.update(1, MSE=f"{rec['mse']:.4g}", nodes=rec["n_nodes"])
            if self.verbose:
                _progress.write(
                    f"[jaxsr] iteration {it}: {rec['search']} search at node "
                    f"{rec['node']} -> {rec['subtree']}; MSE {rec['mse']:.6g}, "
                    f"{rec['n_nodes']} nodes, {rec['seconds']:.2f} s"
                )

        state = _search.init(
            engine,
            goal=goal,
            max_iterations=self.max_iterations,
            max_nodes=self.max_nodes,
            deadline=deadline,
            n_pool=n_pool,
            stopped=lambda: run.stopped,
            n_samples=getattr(self, "_n_search_rows_", None),
            patience=self.bic_patience,
        )
        return _search.run(engine, state, self._strategies()[0], record).status.reason

    # ---------------------------------------------------------------- front (front.py)
    def _check_memory(self, n_rows: int, n_features: int, dt, n_search: int | None = None) -> None:
        """Refuse, before anything is allocated, a fit whose peak memory
        (:func:`peak_memory_bytes`) exceeds the memory available
        (:func:`jaxsr._memory.check_memory`; ``JAXSR_MEMORY_LIMIT`` overrides it). With
        a search sample of ``n_search`` rows the search's arrays have that many rows;
        the checks on all rows add the semantics of one tree, ``(cap, n_rows)``, and
        the data (:func:`all_rows_memory_bytes`).

        Raises:
          ValueError: the estimate exceeds the memory available, naming the sizes and
            what to change.
        """
        n_ops = len(_unary.check_unary_operators(self.unary_operators))
        columns = n_features * (1 + n_ops) + (_unary.PAIR_TERMINALS_MAX if n_ops else 0)
        size = np.dtype(dt).itemsize
        if n_search is None:
            need = peak_memory_bytes(n_rows, columns, self.max_nodes, size)
        else:
            need = peak_memory_bytes(
                n_search, columns, self.max_nodes, size
            ) + all_rows_memory_bytes(n_rows, columns, self.max_nodes, size)
        terminals = f" (with {columns - n_features} unary terminals)" if n_ops else ""
        _memory.check_memory(
            need,
            f"X has {n_rows} rows and {n_features} columns{terminals}: a symbolic "
            f"fit with max_nodes={self.max_nodes}",
            "Use fewer columns (select the features first), fewer rows, a smaller "
            "max_nodes or dtype='float32'",
        )

    def _validation_split(self, n: int):
        """Deterministic split (a shuffle with a fixed seed) of ``validation_fraction``:
        ``(train, val)`` sorted row indices, or ``(None, None)`` without a split."""
        if self.validation_fraction is None:
            return None, None
        n_val = int(np.ceil(float(self.validation_fraction) * n))
        if n_val < 1 or n - n_val < 2:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} of {n} rows "
                "leaves no validation row or fewer than 2 training rows"
            )
        perm = np.random.default_rng(0).permutation(n)
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    def _path_models(self, initial: FrontModel, final: FrontModel) -> list[FrontModel]:
        """The trees accepted during the fit: the initial one, one per ``history_`` record
        (read back exactly from its ``expression``: constants are printed with ``repr``)
        and the final one."""
        models = [initial]
        names = feature_names(self)
        for rec in self.history_:
            try:
                tree = Expression.parse(rec["expression"], names)
            except (KeyError, ValueError):  # a record without a readable tree: skip it
                continue
            models.append(FrontModel(tree, float(rec["mse"]), int(rec["iteration"])))
        models.append(final)
        return models

    @staticmethod
    def _all_rows_models(models, Xa, ya, w) -> list[FrontModel]:
        """The models of a fit whose search ran on a sample, scored on all rows: the
        Pareto front of their losses (of the sample, or of all rows for the models of
        sub-searches) re-scored by their weighted MSE on every row
        (:func:`~jaxsr.symbolic.refine.weighted_mse`); a model that is not finite on a
        row is dropped (the starting constant always stays)."""
        out = []
        for m in _pf.pareto_front(models):
            loss = _refine.weighted_mse(m.expression, Xa, ya, w)
            if np.isfinite(loss) or m.expression.n_nodes == 1:
                out.append(m._replace(loss=float(loss)))
        return out

    def _cross_validation(self, trees, edges, excursion, scale):
        """:func:`~jaxsr.symbolic.crossval.cross_validated_loss` of the front's trees on
        the training rows ``edges = (X, y, w)``; trees the extrapolation guard passes
        over (``excursion`` above ``extrapolation_limit``) are not refitted (``inf``).
        ``None`` with fewer than 4 rows (2 folds of 2 rows; the selection is then
        ``"bic"``'s)."""
        X, y, w = edges
        keep = np.ones(len(trees), bool)
        if excursion is not None and self.extrapolation_limit is not None:
            tame = np.asarray(excursion, np.float64) <= float(self.extrapolation_limit)
            if tame.any():
                keep = tame
        idx = np.flatnonzero(keep)
        n_folds = min(_crossval.N_FOLDS, y.shape[0] // 2)
        if n_folds < 2:
            return None
        part = _crossval.cross_validated_loss(
            [trees[i] for i in idx], X, y, w, n_folds=n_folds, scale=scale
        )
        loss = np.full(len(trees), np.inf)
        se = np.full(len(trees), np.inf)
        loss[idx], se[idx] = part.loss, part.standard_error
        fold = np.full((len(trees), part.fold_loss.shape[1]), np.inf)
        fold[idx] = part.fold_loss
        return _crossval.CrossValidation(loss, fold, se)

    @staticmethod
    def _short_exact_constants(front, models, floor, edges, scale):
        """The front with its simplest model exact to rounding (loss at most ``floor``,
        the model every selection rule prefers) written with its shortest constants
        (:func:`~jaxsr.symbolic.refine.shortest_constants`: ``3.0`` for the
        ``3.0000000000000004`` of least squares, its loss kept within ``floor`` and within
        a thousandth of the target's variance) and recomputed from all ``models`` with
        that one replaced."""
        exact = [i for i, m in enumerate(front) if m.loss <= floor]
        if not exact:
            return front
        m = front[exact[0]]
        X, y, w = edges
        # a target whose variation is itself below the floor (a small signal on a large
        # offset): the constants may not move by more than a thousandth of its variance
        ys = np.asarray(y, np.float64) / scale
        with np.errstate(all="ignore"):
            var = float(np.average((ys - np.average(ys, weights=w)) ** 2, weights=w))
        short = _refine.shortest_constants(
            m.expression, X, y, w, max_loss=min(floor, 1e-3 * var), scale=scale
        )
        if short is m.expression:
            return front
        loss = _refine.weighted_mse(short, X, y, w, scale=scale)
        new = m._replace(expression=short, loss=loss)  # the units of floor
        return _pf.pareto_front([new if x is m else x for x in models])

    def _set_front(
        self,
        models,
        floor: float,
        X_val=None,
        y_val=None,
        w_val=None,
        edges=None,
        scale: float = 1.0,
    ) -> None:
        """``equations_``, ``selected_index_`` and the selected model's attributes, from the
        models met during the fit and the rounding floor of the training loss; with a
        validation split, each model's (weighted, ``w_val``) MSE on the held-out rows;
        with ``edges = (X, y, w)`` (the search's rows), each model's
        :func:`~jaxsr.symbolic.front.edge_excursion` for the extrapolation guard."""
        names = feature_names(self)
        front = _pf.pareto_front(models)
        if edges is not None:
            front = self._short_exact_constants(front, models, floor, edges, scale)
        complexity = np.array([m.expression.n_nodes for m in front])
        loss = np.array([m.loss for m in front])
        table = {
            "complexity": complexity,
            "loss": loss,
            "score": _pf.front_scores(complexity, loss, floor),
            "expression": [m.expression.to_string(names) for m in front],
            "iteration": [m.iteration for m in front],
        }
        val = None
        if X_val is not None:
            with np.errstate(all="ignore"):
                val = np.array(
                    [
                        float(
                            np.average((m.expression.evaluate(X_val) - y_val) ** 2, weights=w_val)
                        )
                        for m in front
                    ]
                )
            table["validation_loss"] = np.where(np.isfinite(val), val, np.inf)
        excursion = None
        if edges is not None:
            Xe, ye, we = edges
            excursion = _pf.edge_excursion(
                [m.expression for m in front], _domain.edge_probes(Xe, we), ye, we
            )
            table["edge_excursion"] = excursion
        cv = None
        if self.model_selection == "cv" and edges is not None and len(front) > 1:
            cv = self._cross_validation([m.expression for m in front], edges, excursion, scale)
            if cv is not None:
                table["cv_loss"] = cv.loss
        self._front_ = [m.expression for m in front]
        self._loss_floor_ = floor
        # the readable "equation" column (sympy) is built on first read of equations_
        self._front_table_ = table
        self._front_precision_ = self.precision
        self.__dict__.pop("_equations_", None)
        self.selected_index_ = _pf.select_model(
            self.model_selection,
            table["score"],
            loss,
            floor,
            None if val is None else table["validation_loss"],
            complexity=complexity,
            n_samples=getattr(self, "_n_train_rows_", None),
            excursion=excursion,
            limit=self.extrapolation_limit,
            cv_loss=None if cv is None else cv.loss,
            cv_standard_error=None if cv is None else cv.standard_error,
        )
        best = front[self.selected_index_]
        self.expression_tree_ = best.expression
        self.expression_ = best.expression.to_string(names)
        self.mse_ = float(best.loss)

    @property
    def equations_(self):
        """The Pareto front as a pandas DataFrame (see the class docstring). Built on first
        read: its readable ``equation`` column needs sympy, whose import and folding are
        kept out of :meth:`fit` (and so out of ``max_time``).

        Raises:
          NotFittedError: before :meth:`fit`.
        """
        eq = self.__dict__.get("_equations_")
        if eq is None:
            table = self.__dict__.get("_front_table_")
            if table is None:
                self._check_fitted()
                raise AttributeError("equations_")  # pragma: no cover - fitted => table
            import pandas as pd

            names = feature_names(self)
            equation = [
                t.readable_string(
                    names, self._front_precision_, X=self._readable_X_, simplify=False
                )
                for t in self._front_
            ]
            later = ("validation_loss", "cv_loss", "edge_excursion", "iteration")
            cols = {k: v for k, v in table.items() if k not in ("expression",) + later}
            # the wide exact ``expression`` last: a terminal that cannot show every column
            # still shows the readable ``equation``
            cols.update((k, table[k]) for k in later if k in table)
            cols["equation"] = equation
            cols["expression"] = table["expression"]
            eq = self.__dict__["_equations_"] = pd.DataFrame(cols)
        return eq

    @equations_.setter
    def equations_(self, value):
        self.__dict__["_equations_"] = value

    def _tree(self, index=None) -> Expression:
        """The selected tree, or row ``index`` of ``equations_``."""
        self._check_fitted()
        if index is None:
            return self.expression_tree_
        n = len(self._front_)
        if (
            isinstance(index, bool)
            or not isinstance(index, int | np.integer)
            or not (-n <= index < n)
        ):
            raise IndexError(
                f"index must be an integer row of equations_ (0..{n - 1}); got {index!r}"
            )
        return self._front_[int(index)]

    # ---------------------------------------------------------------- use
    def _check_fitted(self) -> None:
        check_fitted(self, "expression_tree_")  # NotFittedError (a ValueError)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False  # NaN/inf are refused with a clear message
        tags.input_tags.sparse = False
        # no randomness: the same data give the same tree, unless max_time (wall clock)
        # ends the search, where a busier machine stops it earlier
        tags.non_deterministic = self.max_time is not None
        return tags

    def predict(self, X, index=None) -> np.ndarray:
        """Outputs of the selected expression (or of row ``index`` of ``equations_``),
        ``(n_samples,)`` array of the model's ``dtype``.

        Args:
          X: ``(n_samples, n_features_in_)`` array-like or DataFrame (a frame with the
            fitted column names in another order is reordered).
          index: ``None`` (the model chosen by ``model_selection``) or a row of
            ``equations_``.

        Raises:
          NotFittedError: before :meth:`fit`.
          ValueError: wrong number or names of features, NaN/inf, non-numeric values.
          IndexError: if ``index`` is not a row of ``equations_``.

        Warns:
          ExtrapolationWarning: some rows lie outside the box of the training rows (a
            feature the model uses below its training minimum or above its maximum); they
            are predicted all the same.
        """
        tree = self._tree(index)
        dt = resolve_dtype(self.dtype)
        Xa = validate_X(self, X, reset=False, dtype=dt)
        n = Xa.shape[0]
        if n == 0:
            return np.zeros(0, dt)
        self._warn_outside_box(tree, Xa)
        # size buckets (the fit's own): no recompile
        XT = np.ones((feature_bucket(Xa.shape[1]), sample_bucket(n)), dt)
        XT[: Xa.shape[1], :n] = Xa.T
        with precision(dt):
            if tree.has_unary:  # the kernels take + - * / trees: the tree's own JAX graph
                return np.asarray(_jit_tree(tree, dt)(to_device(XT[: Xa.shape[1]].T)))[:n]
            tree = tree.padded(dtype=dt)
            return np.asarray(tree_output(tree, to_device(XT)))[:n]

    def _warn_outside_box(self, tree: Expression, Xa) -> None:
        """``ExtrapolationWarning`` when rows of ``Xa`` lie outside the training box in a
        feature that ``tree`` uses (one warning per call, naming the features)."""
        box = getattr(self, "_train_box_", None)
        if box is None:
            return
        lo, hi = box
        used = np.unique(np.asarray(tree.feature)[np.asarray(tree.op) == VAR])
        used = used[(used >= 0) & (used < Xa.shape[1])]
        if not used.size:
            return
        below = Xa[:, used] < lo[used]
        above = Xa[:, used] > hi[used]
        out = below | above
        rows = int(np.count_nonzero(out.any(axis=1)))
        if not rows:
            return
        names = feature_names(self)
        parts = []
        for k in np.flatnonzero(out.any(axis=0))[:5]:
            j = int(used[k])
            parts.append(
                f"{names[j]!r} ({int(np.count_nonzero(out[:, k]))} rows outside "
                f"[{lo[j]:.4g}, {hi[j]:.4g}])"
            )
        warn_user(
            f"{rows} of {Xa.shape[0]} rows lie outside the training range of the features "
            f"the model uses: {', '.join(parts)}; a closed-form model may change fast "
            "outside its data, so check these predictions.",
            ExtrapolationWarning,
        )

    def sympy(self, index=None):
        """The selected expression (or row ``index`` of ``equations_``) as sympy, with its
        exact constants (variables are ``sympy.Symbol(feature name)``)."""
        return self._tree(index).sympy(feature_names(self))

    def to_jax(self, index=None):
        """Pure JAX function ``f(X) -> (n_samples,)`` equal to :meth:`predict` (``index``: a
        row of ``equations_`` instead of the selected model).

        ``X`` ``(n_samples, n_features_in_)`` of any real dtype (integers too) is cast to the
        model's ``dtype`` and evaluated in it; a float64 model switches float64 on for the
        call (scoped, as :meth:`fit` and :meth:`predict` do), so the caller need not enable
        ``jax_enable_x64``. Under the caller's own ``jax.jit``, trace inside
        ``jax.enable_x64(True)`` to keep float64 (JAX fixes the input dtypes at the jit
        boundary). Columns are positions: no feature-name checks.

        Raises:
          NotFittedError: before :meth:`fit`.
          IndexError: if ``index`` is not a row of ``equations_``.
        """
        dt = resolve_dtype(self.dtype)
        g = self._tree(index).to_jax(dtype=dt)

        def f(X):
            with precision(dt):
                return g(X)

        return f

    # ---------------------------------------------------------------- reading
    def _precision(self, precision):
        return self.precision if precision is None else precision

    def readable(self, index=None, precision=None):
        """The selected expression (or row ``index``) in readable sympy form: simplified,
        constants rounded to ``precision`` significant digits (default: the estimator's
        ``precision``); see :meth:`Expression.readable`. Its symbols carry the real feature
        names (``sympy.Symbol("T/R")``); print it with
        :func:`~jaxsr.symbolic.expression.sympy_text` or
        :func:`~jaxsr.symbolic.expression.sympy_latex` to have such names bracketed."""
        return self._tree(index).readable(
            feature_names(self), self._precision(precision), X=self._readable_X_
        )

    def latex(self, index=None, precision=None) -> str:
        """LaTeX of the readable form of the selected expression (or row ``index``), as
        PySR's ``latex``: e.g. ``3 x_{1} + 2``; a feature name that is not a plain identifier
        is written ``\\text{...}``, e.g. ``\\frac{3 \\text{T/R}}{\\text{Node Number}}`` (see
        :func:`~jaxsr.symbolic.expression.sympy_latex`).

        Raises:
          IndexError: if ``index`` is not a row of ``equations_``.
        """
        from .expression import sympy_latex

        return sympy_latex(self.readable(index, precision))

    def latex_table(
        self, indices=None, precision=None, columns=("equation", "complexity", "loss", "score")
    ) -> str:
        """The front (rows ``indices``, default all) as a LaTeX ``booktabs`` table, as PySR's
        ``latex_table``: one row per model, the equation as ``$y = ...$``, losses and scores
        with ``precision`` significant digits. Needs ``\\usepackage{booktabs}``.

        Raises:
          ValueError: for a column other than equation, complexity, loss, score,
            validation_loss (the last only with a validation split).
          IndexError: for an index that is not a row.
        """
        from .expression import sympy_latex

        self._check_fitted()
        known = {
            "equation": "Equation",
            "complexity": "Complexity",
            "loss": "Loss",
            "score": "Score",
            "validation_loss": "Validation loss",
        }
        columns = list(columns)
        bad = [
            c for c in columns if c not in known or (c != "equation" and c not in self.equations_)
        ]
        if bad:
            raise ValueError(
                f"unknown latex_table column(s) {bad}; choose from "
                f"{[c for c in known if c == 'equation' or c in self.equations_]}"
            )
        p = self._precision(precision)
        rows = range(len(self.equations_)) if indices is None else list(indices)
        lines = [
            r"\begin{table}[h]",
            r"\begin{center}",
            r"\begin{tabular}{@{}"
            + "".join("l" if c == "equation" else "c" for c in columns)
            + r"@{}}",
            r"\toprule",
            " & ".join(known[c] for c in columns) + r" \\",
            r"\midrule",
        ]
        for i in rows:
            tree = self._tree(i)
            cells = []
            for c in columns:
                if c == "equation":
                    eq = tree.readable(feature_names(self), p, X=self._readable_X_)
                    cells.append(f"$y = {sympy_latex(eq)}$")
                elif c == "complexity":
                    cells.append(str(int(self.equations_["complexity"].iloc[i])))
                else:
                    cells.append(f"${_latex_number(float(self.equations_[c].iloc[i]), p)}$")
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{center}", r"\end{table}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        """``y = <readable form of the selected model>`` once fitted (else the repr)."""
        if not hasattr(self, "expression_tree_"):
            return repr(self)
        return f"y = {self._readable_text()}"

    def _readable_text(self) -> str:
        """The readable form as text (names that are not plain identifiers bracketed, see
        :func:`~jaxsr.symbolic.expression.sympy_text`), cached per tree and precision. A
        tree more than ``SYMPY_MAX_HEIGHT`` levels high (beyond sympy's recursion) prints
        its exact fully parenthesised form instead."""
        from .expression import SYMPY_MAX_HEIGHT, sympy_text

        cache = getattr(self, "_readable_cache_", None)  # (tree, precision, text)
        if cache is None or cache[0] is not self.expression_tree_ or cache[1] != self.precision:
            if self.expression_tree_.height > SYMPY_MAX_HEIGHT:
                text = self.expression_tree_.to_string(feature_names(self))
            else:
                text = sympy_text(self.readable(), full_prec=False)
            cache = self._readable_cache_ = (self.expression_tree_, self.precision, text)
        return cache[2]

    def _summary(self) -> str:
        row = self.equations_.iloc[self.selected_index_]
        return (
            f"{self!r}\n{self}\n({int(row['complexity'])} nodes, training MSE "
            f"{row['loss']:.4g}; row {self.selected_index_} of {len(self.equations_)} in "
            f"equations_, chosen by model_selection={self.model_selection!r})"
        )

    def _repr_html_(self) -> str:
        """Notebook display: the parameters, the selected equation and its front row."""
        import html

        if not hasattr(self, "expression_tree_"):
            return f"<pre>{html.escape(repr(self))}</pre>"
        return f"<pre>{html.escape(self._summary())}</pre>"

    def _repr_mimebundle_(self, **kwargs):
        """Jupyter display of a fitted model: its equation (scikit-learn's diagram before
        fit)."""
        if not hasattr(self, "expression_tree_"):
            return super()._repr_mimebundle_(**kwargs)
        return {"text/plain": self._summary(), "text/html": self._repr_html_()}

    # ---------------------------------------------------------------- persistence
    def to_dict(self) -> dict:
        """JSON-able dict of the hyperparameters and the fitted model."""
        self._check_fitted()
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "params": {
                **self.get_params(),
                "dtype": str(resolve_dtype(self.dtype)),
                # JSON-able: the warm start as text, a device mesh is not saved
                "initial_expression": (
                    self.initial_expression.to_string(feature_names(self))
                    if isinstance(self.initial_expression, Expression)
                    else self.initial_expression
                ),
                "mesh": self.mesh if isinstance(self.mesh, str) else None,
            },
            "expression": self.expression_,
            "tree": self.expression_tree_.to_dict(),
            "feature_names": feature_names(self),
            "feature_names_in_": (
                None
                if not hasattr(self, "feature_names_in_")
                else [str(c) for c in self.feature_names_in_]
            ),
            "n_features_in_": int(self.n_features_in_),
            "dropped_features_": list(self.dropped_features_),
            "train_box": (
                None
                if getattr(self, "_train_box_", None) is None
                else [self._train_box_[0].tolist(), self._train_box_[1].tolist()]
            ),
            "mse_": float(self.mse_),
            "n_iterations_": int(self.n_iterations_),
            "stop_reason_": self.stop_reason_,
            "history_": [dict(h) for h in self.history_],
            "front": {
                "trees": [t.to_dict() for t in self._front_],
                "equations_": {
                    k: list(v) for k, v in self.equations_.to_dict(orient="list").items()
                },
                "selected_index_": int(self.selected_index_),
                "loss_floor": float(self._loss_floor_),
                "readable_X": (None if self._readable_X_ is None else self._readable_X_.tolist()),
            },
        }

    @classmethod
    def from_dict(cls, d: dict) -> SymbolicRegressor:
        """Rebuild a fitted model from :meth:`to_dict`, checking every field.

        An edited or damaged dictionary is refused rather than loaded into a model that
        predicts something else: the hyperparameters go through the checks of :meth:`fit`,
        every constant of every tree must be finite and every variable index one of the
        ``n_features_in_`` columns, the names, the training box, the statistics and the
        front table must have their types and lengths (:mod:`jaxsr._loading`).

        Raises:
          ValueError: not a saved SymbolicRegressor, or a field it cannot hold; the message
            names the field, e.g. ``tree.value[3] is inf; constants must be finite``.
        """
        from .. import _loading as L

        if not isinstance(d, dict) or d.get("format") != _FORMAT:
            raise ValueError("not a saved jaxsr.SymbolicRegressor (missing 'format' key)")
        if d.get("version") != _VERSION:
            raise ValueError(f"unsupported SymbolicRegressor format version {d.get('version')}")
        params = dict(L.mapping(L.field(d, "params"), "params"))
        for key in ("unary_operators", "strategy", "beam_width"):  # JSON has no tuples
            if isinstance(params.get(key), list):
                params[key] = tuple(params[key])
        est = L.build_estimator(cls, params)
        n_features = L.integer(L.field(d, "n_features_in_"), "n_features_in_", min_value=1)
        est.n_features_in_ = n_features
        est.expression_tree_ = Expression.from_dict(
            L.field(d, "tree"), path="tree", n_features=n_features
        )
        for key in ("feature_names", "feature_names_in_"):
            if d.get(key) is not None:
                L.string_list(d[key], key, length=n_features)
        names = d.get("feature_names", d.get("feature_names_in_"))
        est.expression_ = est.expression_tree_.to_string(names)
        if d.get("feature_names_in_") is not None:
            est.feature_names_in_ = np.asarray(d["feature_names_in_"], dtype=object)
        est.dropped_features_ = L.string_list(d.get("dropped_features_", []), "dropped_features_")
        box = d.get("train_box")  # predict's extrapolation warning (absent: no warning)
        est._train_box_ = None
        if box is not None:
            try:
                lo, hi = (np.asarray(b, np.float64) for b in box)
            except (TypeError, ValueError) as err:
                raise ValueError(f"train_box must be two lists of numbers; got {box!r}") from err
            if not (
                lo.shape == hi.shape == (est.n_features_in_,)
                and np.all(np.isfinite(lo))
                and np.all(np.isfinite(hi))
                and np.all(lo <= hi)
            ):
                raise ValueError(
                    f"train_box must hold the finite minimum and maximum of each "
                    f"of the {est.n_features_in_} features, minimum <= maximum"
                )
            est._train_box_ = (lo, hi)
        est.mse_ = L.real(
            L.field(d, "mse_"),
            "mse_",
            min_value=0,
            allow_inf=True,
            what="the training MSE is a number >= 0",
        )
        est.n_iterations_ = L.integer(L.field(d, "n_iterations_"), "n_iterations_", min_value=0)
        est.stop_reason_ = L.string(d.get("stop_reason_", ""), "stop_reason_")
        est.n_nodes_ = int(est.expression_tree_.n_nodes)
        history = d.get("history_", [])
        if not isinstance(history, list):
            raise ValueError(f"history_ must be a list of records; got {L._what(history)}")
        for i, h in enumerate(history):  # flat records: JSON scalars or lists of them
            for k, v in L.mapping(h, f"history_[{i}]").items():
                for j, x in enumerate(v if isinstance(v, list) else [v]):
                    L.scalar(x, f"history_[{i}].{k}" + (f"[{j}]" if isinstance(v, list) else ""))
        est.history_ = [dict(h) for h in history]
        front = d.get("front")
        if front is not None:
            est._front_from_dict(L.mapping(front, "front"), n_features)
        else:  # saved before the front existed: a one-row front of the saved tree
            est._readable_X_ = None
            est._set_front(
                [FrontModel(est.expression_tree_, est.mse_, est.n_iterations_)], floor=0.0
            )
        return est

    def _front_from_dict(self, front: dict, n_features: int) -> None:
        """The Pareto front of a saved model (:meth:`to_dict`'s ``front``), every field
        checked: its trees as the selected one, a table of one JSON scalar per tree and
        column (``complexity`` equal to each tree's node count), ``selected_index_`` a row,
        ``loss_floor`` a number >= 0, ``readable_X`` finite rows of ``n_features`` values."""
        import pandas as pd

        from .. import _loading as L

        trees = L.field(front, "trees", "front")
        if not isinstance(trees, list) or not trees:
            raise ValueError(
                f"front.trees must be a non-empty list of expressions; got {L._what(trees)}"
            )
        self._front_ = [
            Expression.from_dict(t, path=f"front.trees[{k}]", n_features=n_features)
            for k, t in enumerate(trees)
        ]
        table = L.mapping(L.field(front, "equations_", "front"), "front.equations_")
        for col, values in table.items():
            path = f"front.equations_.{col}"
            if not isinstance(values, list) or len(values) != len(trees):
                raise ValueError(
                    f"{path} must be a list of {len(trees)} entries, one per tree of front.trees"
                )
            for k, v in enumerate(values):
                L.scalar(v, f"{path}[{k}]")
        if "complexity" in table:
            for k, (v, t) in enumerate(zip(table["complexity"], self._front_, strict=True)):
                if L.integer(v, f"front.equations_.complexity[{k}]") != t.n_nodes:
                    raise ValueError(
                        f"front.equations_.complexity[{k}] is {v}, but "
                        f"front.trees[{k}] has {t.n_nodes} nodes"
                    )
        self.equations_ = pd.DataFrame(table)
        self.selected_index_ = L.integer(
            L.field(front, "selected_index_", "front"),
            "front.selected_index_",
            min_value=0,
            max_value=len(trees) - 1,
        )
        self._loss_floor_ = L.real(
            L.field(front, "loss_floor", "front"),
            "front.loss_floor",
            min_value=0,
            what="the loss floor is a finite number >= 0",
        )
        rx = front.get("readable_X")
        if rx is not None:
            rows = rx if isinstance(rx, list) else None
            if rows is None or not rows:
                raise ValueError(
                    f"front.readable_X must be null or a non-empty list of rows; got {L._what(rx)}"
                )
            rx = np.stack(
                [
                    L.real_array(r, f"front.readable_X[{i}]", length=n_features)
                    for i, r in enumerate(rows)
                ]
            )
        self._readable_X_ = rx
