"""The search sample: the rows a large fit searches on (beyond the paper).

Every numeric pass of the paper's search (section 2: semantics, node equations, the four
searches, the constant optimisation) is a sum over the ``N`` training rows, and an
iteration runs dozens of them, so a fit's cost grows with ``N``. Past a size the ranking
of candidates no longer changes with more rows: the greedy choice among thousands of
candidates is decided by reductions far larger than their sampling error. Beyond
``SymbolicRegressor(search_sample=...)`` rows (:data:`DEFAULT_ROWS` by default) the search
therefore runs on a fixed subsample of the rows (as PySR's ``batching``, but fixed and
deterministic), while all rows decide what is kept:

- every change the search keeps (a candidate, a constant optimisation, a tree of the
  beam) must also pass the acceptance rule on all rows, else it is rejected and the next
  candidate is tried (:meth:`~jaxsr.symbolic.strategies.DomeSearch.verified`);
- the models of the front are scored on all rows, the final model's constants are refined
  on all rows, and the model selection and ``mse_`` use all rows.

The sample (:func:`search_rows`) is stratified on the target, so the sample's
distribution of ``y`` is the data's to within one stratum, and it holds, for every
feature, a row at its minimum and one at its maximum, so the box of the sample is the box
of the data (the domain proof of ``domain="box"`` covers every row). It depends only on
the data, never on a random state: the same data give the same sample.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_ROWS", "SEED", "search_rows", "sample_size"]

SEED = 0
"""Seed of the generator that picks a row in each stratum (:func:`search_rows`)."""

DEFAULT_ROWS = 10_000
"""Rows of the search sample under ``search_sample="auto"``: fits of more rows search on a
sample of this size. Measured with ``benchmarks/bench_sr_large_n.py`` (results in
``benchmarks/results/sr_large_n.txt``)."""


def sample_size(search_sample, n_rows: int) -> int | None:
    """The rows of the search sample for ``n_rows`` training rows and the estimator's
    ``search_sample`` (``"auto"``: :data:`DEFAULT_ROWS`; an int >= 2: that many; ``None``:
    no sample), or ``None`` when the search runs on every row.

    Raises:
      ValueError: ``search_sample`` is not ``"auto"``, ``None`` or an int of at least 2.
    """
    if search_sample is None:
        return None
    if isinstance(search_sample, str):
        if search_sample != "auto":
            raise ValueError(
                f"search_sample must be 'auto', None or an int >= 2; got {search_sample!r}"
            )
        size = DEFAULT_ROWS
    elif (
        isinstance(search_sample, bool | np.bool_)
        or not isinstance(search_sample, int | np.integer)
        or search_sample < 2
    ):
        raise ValueError(
            f"search_sample must be 'auto', None or an int >= 2; got {search_sample!r}"
        )
    else:
        size = int(search_sample)
    return size if n_rows > size else None


def search_rows(
    X: np.ndarray, y: np.ndarray, size: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """The row indices of the search sample, sorted: ``size`` rows stratified on the
    target, plus for each feature a row at its minimum and one at its maximum.

    The rows of positive weight are ordered by ``y`` (ties by row index) and cut into
    ``size`` strata of (nearly) equal count; the sample takes one row of each, drawn
    uniformly by a generator of fixed seed (:data:`SEED`), so the sample depends on the
    data alone. (Taking the middle row of each stratum instead made a sample on which the
    greedy search missed ``x1*x2/x3 + x4 - x5**2`` at 500 and 2,000 rows, where random
    and stratified random samples of the same sizes found it.) The feature extremes are
    added when the strata missed them (the sample then has up to ``2 M`` more rows).

    Args:
      X: ``(N, M)`` float array, y: ``(N,)`` float array.
      size: rows to draw, ``2 <= size < N``.
      weights: optional ``(N,)`` non-negative sample weights; rows of weight 0 are never
        drawn as strata (their weights follow the rows into the sample).

    Returns:
      ``(n,)`` int64 array of distinct row indices in increasing order,
      ``min(size, rows of positive weight) <= n <= size + 2 M``.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    n = y.shape[0]
    rows = np.arange(n) if weights is None else np.flatnonzero(np.asarray(weights) > 0)
    order = rows[np.lexsort((rows, y[rows]))]
    k = min(int(size), order.shape[0])
    # stratum s covers order[edges[s]:edges[s+1]]; one row of it at random
    edges = (np.arange(k + 1) * order.shape[0]) // k
    u = np.random.default_rng(SEED).random(k)
    picked = order[edges[:-1] + (u * (edges[1:] - edges[:-1])).astype(np.int64)]
    extremes = np.concatenate([np.argmin(X, axis=0), np.argmax(X, axis=0)])
    return np.unique(np.concatenate([picked, extremes]).astype(np.int64))
