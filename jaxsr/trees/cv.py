"""OptimalTreeRegressorCV: the regularization (and depth budget) of an optimal tree chosen
by K-fold cross-validation over the exact regularization path of every fold.

For one fold and one depth budget the optimal tree is piecewise constant in ``lambda``
(:meth:`OptimalTreeRegressor.regularization_path`: every breakpoint exact, each piece
certified), so its held-out loss is a step function of ``lambda``, and so is the mean over
the folds: constant between consecutive breakpoints of the union of the folds' paths. The
cross-validated loss is therefore known at *every* ``lambda`` in ``[lambda_min, inf)``,
not on a grid, from ``2 k - 1`` fits per fold for ``k`` pieces (scikit-learn's ``LassoCV``
computes the path of each fold on a grid of ``alphas``; here the path is exact).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np

from .._base import BaseEstimator, RegressorMixin, check_fitted
from .._validation import (
    check_choice,
    check_int,
    check_real,
    check_sample_weight,
    check_target,
)
from .regressor import _LOSSES, OptimalTreeRegressor

__all__ = ["OptimalTreeRegressorCV"]

_SELECTIONS = ("min", "1se")


class OptimalTreeRegressorCV(RegressorMixin, BaseEstimator):
    """Optimal sparse regression tree whose ``regularization`` (and optionally
    ``depth_budget``) is chosen by K-fold cross-validation, then refitted on all rows.

    For every depth budget in ``depth_budgets`` and every fold, the exact regularization
    path of the fold's training rows is computed
    (:meth:`OptimalTreeRegressor.regularization_path`, from ``lambda_min`` to the ``lambda``
    beyond which one leaf is optimal); each distinct tree of the path is scored on the
    fold's held-out rows (the weighted mean of the loss: squared error for
    ``loss="squared_error"``, absolute error for ``"absolute_error"``, in units of ``y^2``
    or ``|y|``). Between two consecutive breakpoints of all folds' paths every fold's tree
    is fixed, so the mean held-out loss is exact on each such interval of ``lambda``
    (:attr:`cv_results_` has one row per interval and depth budget). The interval chosen
    (``selection``) gives ``regularization_`` (its geometric midpoint; ``2 x`` its left end
    for the last, unbounded one) and ``depth_budget_``, and :attr:`best_estimator_` is an
    :class:`OptimalTreeRegressor` with them, fitted on all rows.

    The binarizer is fitted on each fold's training rows only (no leakage from the
    held-out rows), once per fold, and the paths run on its binary features.

    Args:
      depth_budgets: int or sequence of ints >= 1: the depth budgets tried (the
        ``osrt`` package's meaning, as :class:`OptimalTreeRegressor`'s ``depth_budget``:
        2 = one split). Default ``(3, 4, 5, 6)``.
      cv: number of folds (int >= 2: ``KFold(cv, shuffle=True, random_state=0)``, so the
        result does not depend on the order of the rows, and is reproducible) or any
        scikit-learn splitter / iterable of ``(train, test)`` index arrays.
      lambda_min: the smallest ``regularization`` of the paths, > 0, as a fraction of the
        one-leaf tree's loss (with ``normalize=True`` that is ``lambda`` itself: a leaf
        must lower the normalised loss by ``lambda_min`` to pay for itself).
      selection: ``"min"``: the interval of least mean held-out loss (ties: the larger
        ``lambda``, then the smaller depth budget); ``"1se"``: Breiman et al.'s one
        standard error rule: among the intervals whose mean loss is within one standard
        error (over the folds) of that minimum, the one with the fewest mean leaves (then
        the smaller depth budget, the larger ``lambda``).
      loss: as :class:`OptimalTreeRegressor` (passed to every fit).
      min_samples_leaf: as :class:`OptimalTreeRegressor`.
      binarizer: as :class:`OptimalTreeRegressor`.
      normalize: as :class:`OptimalTreeRegressor`.
      exact_levels: as :class:`OptimalTreeRegressor`.
      dtype: as :class:`OptimalTreeRegressor`.
      time_limit: seconds for each fit (``None``: no limit). A fit stopped by it warns,
        and its path is then not exact.
      progress: a progress bar for the final fit on all rows (the folds' fits show none).
      verbose: one line on stderr per depth budget and fold.

    Attributes:
      best_estimator_: the :class:`OptimalTreeRegressor` fitted on all rows.
      regularization_: float, the ``lambda`` chosen.
      depth_budget_: int, the depth budget chosen.
      cv_results_: dict of numpy arrays, one entry per (depth budget, ``lambda``
        interval): ``depth_budget``, ``lambda_low``, ``lambda_high`` (the interval;
        ``inf`` for the last), ``regularization`` (the ``lambda`` that stands for it),
        ``split{k}_test_loss`` (fold ``k``), ``mean_test_loss``, ``std_test_loss``,
        ``mean_n_leaves`` (the folds' trees), ``rank_test_loss`` (1 = least loss).
        ``pandas.DataFrame(cv_results_)`` gives a table.
      best_index_: the row of ``cv_results_`` chosen.
      n_splits_: the number of folds.
      tree_: that of :attr:`best_estimator_`, as are ``n_leaves_``, ``depth_``,
        ``binarizer_``, ``binary_feature_names_``, ``objective_``, ``loss_``,
        ``lower_bound_``, ``gap_``, ``optimal_``, ``status_``, ``n_features_in_`` and
        ``feature_names_in_``.

    Raises:
      ValueError: from :meth:`fit`: invalid hyper-parameters, fewer rows than folds, and
        whatever :class:`OptimalTreeRegressor` raises on the data.

    Example:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> X = rng.uniform(size=(200, 2))
      >>> y = np.where(X[:, 0] > 0.5, 2.0, 0.0) + 0.1 * rng.normal(size=200)
      >>> m = OptimalTreeRegressorCV(depth_budgets=3, progress=False).fit(X, y)
      >>> m.n_leaves_
      2
    """

    def __init__(
        self,
        depth_budgets=(3, 4, 5, 6),
        cv=5,
        lambda_min=1e-3,
        selection="min",
        loss="squared_error",
        min_samples_leaf=1,
        binarizer="auto",
        normalize=True,
        exact_levels=None,
        time_limit=None,
        dtype="float64",
        progress=True,
        verbose=False,
    ):
        self.depth_budgets = depth_budgets
        self.cv = cv
        self.lambda_min = lambda_min
        self.selection = selection
        self.loss = loss
        self.min_samples_leaf = min_samples_leaf
        self.binarizer = binarizer
        self.normalize = normalize
        self.exact_levels = exact_levels
        self.time_limit = time_limit
        self.dtype = dtype
        self.progress = progress
        self.verbose = verbose

    # ------------------------------------------------------------------ parameters
    def _depths(self) -> list[int]:
        d = self.depth_budgets
        items = [d] if isinstance(d, int | np.integer) and not isinstance(d, bool) else d
        try:
            items = list(items)
        except TypeError:
            items = [d]
        if not items:
            raise ValueError(
                "depth_budgets must hold at least one depth budget; got an empty sequence"
            )
        return sorted(
            {
                int(check_int(v, "depth_budgets", min_value=1, hint=" (each >= 1; 2 = one split)"))
                for v in items
            }
        )

    def _estimator(self, **kw) -> OptimalTreeRegressor:
        params = {
            "loss": self.loss,
            "min_samples_leaf": self.min_samples_leaf,
            "binarizer": self.binarizer,
            "normalize": self.normalize,
            "exact_levels": self.exact_levels,
            "time_limit": self.time_limit,
            "dtype": self.dtype,
            "progress": False,
        }
        params.update(kw)
        return OptimalTreeRegressor(**params)

    def _splits(self, n: int):
        from sklearn.model_selection import KFold, check_cv

        if isinstance(self.cv, int | np.integer) and not isinstance(self.cv, bool):
            k = check_int(self.cv, "cv", min_value=2, hint=" (the number of folds)")
            if n < k:
                raise ValueError(f"cv={k} folds need at least {k} samples; got n_samples={n}")
            return list(KFold(k, shuffle=True, random_state=0).split(np.zeros(n)))
        return list(check_cv(self.cv).split(np.zeros(n)))

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, sample_weight=None):
        """Cross-validate ``regularization`` (and ``depth_budget``), then refit on all rows.

        Args:
          X: ``(n_samples, n_features)`` array-like or DataFrame, as for
            :meth:`OptimalTreeRegressor.fit`.
          y: ``(n_samples,)`` real targets.
          sample_weight: ``(n_samples,)`` non-negative weights or None; they weight the
            fits and the held-out losses.

        Returns:
          ``self``.

        Raises:
          ValueError: see the class.
        """
        depths = self._depths()
        lam_min = check_real(
            self.lambda_min,
            "lambda_min",
            min_value=0,
            strict=True,
            hint=" (a fraction of the one-leaf loss)",
        )
        check_choice(self.selection, "selection", _SELECTIONS)
        check_choice(self.loss, "loss", _LOSSES)
        # the data are validated, and the binarizer checked, once on all rows (the same
        # checks and errors as OptimalTreeRegressor.fit)
        tmpl = self._estimator(depth_budget=depths[0])
        tmpl._check_params()
        ya = check_target(y, dtype=np.float64)
        Xb_all, _, _ = tmpl._binary_X(X, fitting=True, y=ya, sample_weight=sample_weight)
        n = Xb_all.shape[0]
        if n != ya.shape[0]:
            raise ValueError(
                f"X and y have different numbers of samples: X has {n} rows, y has {ya.shape[0]}"
            )
        w_raw = None if sample_weight is None else check_sample_weight(sample_weight, n)
        splits = self._splits(n)
        K = len(splits)

        # per depth budget and fold: the path's pieces and their held-out losses
        # each fold's binary features, once (every depth budget uses them)
        binary = [self._fold_binary(X, ya, w_raw, tr, te) for tr, te in splits]
        results = []  # (depth, [(lows (P,), losses (P,), leaves (P,)) per fold])
        for d in depths:
            per_fold = []
            for k, (tr, te) in enumerate(splits):
                per_fold.append(self._fold_path(binary[k], ya, w_raw, tr, te, d, lam_min))
                if self.verbose:
                    import sys

                    lows, losses, leaves = per_fold[-1]
                    print(
                        f"[jaxsr] depth budget {d}, fold {k + 1}/{K}: {len(lows)} trees "
                        f"on the path",
                        file=sys.stderr,
                    )
            results.append((d, per_fold))

        rows = self._intervals(results, K, lam_min)
        self.cv_results_ = rows
        self.best_index_ = self._select(rows, K)
        self.n_splits_ = K
        self.regularization_ = float(rows["regularization"][self.best_index_])
        self.depth_budget_ = int(rows["depth_budget"][self.best_index_])
        best = self._estimator(
            depth_budget=self.depth_budget_,
            regularization=self.regularization_,
            progress=self.progress,
            verbose=self.verbose,
        )
        best.fit(X, y, sample_weight=sample_weight)
        self.best_estimator_ = best
        for a in (
            "tree_",
            "n_leaves_",
            "depth_",
            "binarizer_",
            "binary_feature_names_",
            "objective_",
            "loss_",
            "lower_bound_",
            "gap_",
            "optimal_",
            "status_",
            "n_features_in_",
            "feature_names_in_",
        ):
            if hasattr(best, a):
                setattr(self, a, getattr(best, a))
        return self

    def _fold_binary(self, X, y, w, tr, te):
        """A fold's binarizer, fitted on its training rows only: ``(B_train, B_test)``."""
        est = self._estimator()
        Xtr = X.iloc[tr] if hasattr(X, "iloc") else np.asarray(X)[tr]
        Xte = X.iloc[te] if hasattr(X, "iloc") else np.asarray(X)[te]
        wtr = None if w is None else w[tr]
        b = est._binarizer_for(Xtr)
        if b is None:
            return np.asarray(Xtr, dtype=np.float64), np.asarray(Xte, dtype=np.float64)
        b = copy.deepcopy(b)
        if wtr is None:
            b.fit(Xtr, y[tr])
        else:
            b.fit(Xtr, y[tr], sample_weight=wtr)
        return (
            np.asarray(b.transform(Xtr), dtype=np.float64),
            np.asarray(b.transform(Xte), dtype=np.float64),
        )

    def _fold_path(self, binary, y, w, tr, te, depth, lam_min):
        """The exact path of one fold on the binary features of its own binarizer:
        ``(lambda_min of each piece (P,), held-out loss (P,), leaves (P,))``."""
        est = self._estimator(depth_budget=depth, binarizer=None)
        Btr, Bte = binary
        wtr = None if w is None else w[tr]
        lo = lam_min * self._leaf_loss(y[tr], wtr)
        with warnings.catch_warnings():
            # a fold whose binary features are constant is one leaf: no path to speak of
            warnings.simplefilter("ignore", RuntimeWarning)
            path = est.regularization_path(Btr, y[tr], sample_weight=wtr, lambdas=[lo, np.inf])
        wte = np.ones(len(te)) if w is None else w[te]
        lows, losses, leaves = [], [], []
        for p in path:
            r = y[te] - p.model.predict(Bte).astype(np.float64)
            e = r * r if self.loss == "squared_error" else np.abs(r)
            losses.append(float(np.dot(wte, e) / wte.sum()) if wte.sum() > 0 else float(np.mean(e)))
            lows.append(p.lambda_min)
            leaves.append(p.n_leaves)
        return np.asarray(lows), np.asarray(losses), np.asarray(leaves, dtype=np.float64)

    def _leaf_loss(self, y, w) -> float:
        """The one-leaf tree's loss in objective units: 1 with ``normalize=True``, else the
        weighted mean squared (absolute) deviation from the mean (median)."""
        if self.normalize:
            return 1.0
        w = np.ones_like(y) if w is None else w
        if self.loss == "squared_error":
            m = np.dot(w, y) / w.sum()
            v = float(np.dot(w, (y - m) ** 2) / w.sum())
        else:
            o = np.argsort(y, kind="stable")
            c = np.cumsum(w[o])
            med = y[o][int(np.searchsorted(c, 0.5 * c[-1]))]
            v = float(np.dot(w, np.abs(y - med)) / w.sum())
        return v if v > 0 else 1.0

    @staticmethod
    def _intervals(results, K, lam_min):
        """One row per (depth budget, interval between consecutive breakpoints of the
        folds' paths): the folds' held-out losses there."""
        cols = {
            "depth_budget": [],
            "lambda_low": [],
            "lambda_high": [],
            "regularization": [],
            "mean_n_leaves": [],
        }
        split_cols = [[] for _ in range(K)]
        for d, per_fold in results:
            # the folds' paths start at lambda_min times their own one-leaf loss: the
            # common range starts at the largest start
            start = max(float(lows[0]) for lows, _, _ in per_fold)
            cuts = sorted({float(v) for lows, _, _ in per_fold for v in lows[1:] if v > start})
            edges = [start, *cuts, np.inf]
            for a, b in zip(edges[:-1], edges[1:], strict=True):
                if np.isfinite(b):
                    lam = float(np.sqrt(a * b)) if a > 0 else 0.5 * b
                else:
                    lam = 2.0 * a if a > 0 else 1.0
                leaves = 0.0
                for k, (lows, losses, lv) in enumerate(per_fold):
                    i = max(0, int(np.searchsorted(lows, lam, side="right")) - 1)
                    split_cols[k].append(float(losses[i]))
                    leaves += lv[i] / K
                cols["depth_budget"].append(d)
                cols["lambda_low"].append(a)
                cols["lambda_high"].append(b)
                cols["regularization"].append(lam)
                cols["mean_n_leaves"].append(leaves)
        out = {k: np.asarray(v) for k, v in cols.items()}
        out["depth_budget"] = out["depth_budget"].astype(np.int64)
        S = np.asarray(split_cols, dtype=np.float64)  # (K, rows)
        for k in range(K):
            out[f"split{k}_test_loss"] = S[k]
        out["mean_test_loss"] = S.mean(axis=0)
        out["std_test_loss"] = S.std(axis=0)
        order = np.argsort(out["mean_test_loss"], kind="stable")
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(1, order.size + 1)
        out["rank_test_loss"] = rank
        return out

    def _select(self, rows, K) -> int:
        mean = rows["mean_test_loss"]
        tol = 1e-12 * max(1.0, float(np.max(np.abs(mean))))
        best = float(np.min(mean))
        if self.selection == "1se":
            se = float(rows["std_test_loss"][int(np.argmin(mean))]) / np.sqrt(K)
            cand = np.flatnonzero(mean <= best + se + tol)
            key = [
                (rows["mean_n_leaves"][i], rows["depth_budget"][i], -rows["regularization"][i])
                for i in cand
            ]
        else:
            cand = np.flatnonzero(mean <= best + tol)
            key = [(-rows["regularization"][i], rows["depth_budget"][i]) for i in cand]
        return int(cand[min(range(len(cand)), key=key.__getitem__)])

    # ------------------------------------------------------------------ predict
    def _check_fitted(self):
        check_fitted(self, "best_estimator_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self._estimator().__sklearn_tags__()
        tags.input_tags = inner.input_tags
        tags.non_deterministic = self.time_limit is not None
        return tags

    def predict(self, X):
        """Predictions ``(n_samples,)`` of :attr:`best_estimator_` (see
        :meth:`OptimalTreeRegressor.predict`)."""
        self._check_fitted()
        return self.best_estimator_.predict(X)

    def apply(self, X):
        """The leaf of each sample (:meth:`OptimalTreeRegressor.apply`)."""
        self._check_fitted()
        return self.best_estimator_.apply(X)

    def decision_path(self, X):
        """The nodes each sample passes (:meth:`OptimalTreeRegressor.decision_path`)."""
        self._check_fitted()
        return self.best_estimator_.decision_path(X)

    @property
    def feature_importances_(self) -> np.ndarray:
        """:attr:`OptimalTreeRegressor.feature_importances_` of :attr:`best_estimator_`."""
        self._check_fitted()
        return self.best_estimator_.feature_importances_

    def export_text(self, decimals: int = 4, show_counts: bool = True) -> str:
        """The tree as an index card (:meth:`OptimalTreeRegressor.export_text`)."""
        self._check_fitted()
        return self.best_estimator_.export_text(decimals=decimals, show_counts=show_counts)
