"""Binarizer: real-valued (and categorical) features to binary features with readable names.

Optimal sparse regression trees search over splits on *binary* features (OSRT, section 2:
"Real-valued features in the raw dataset can be transformed into binary features in many
different ways, e.g., splitting the domain of the feature into equal-sized buckets, splitting
between every two realized values of the variable in the training set, using splits from a
reference model as in McTavish et al. (2022)"). :class:`Binarizer` offers each of these:

* ``"quantile"``: thresholds at the interior quantiles of each column (equal-*count*
  buckets), deduplicated;
* ``"uniform"``: thresholds at the interior edges of equal-*width* buckets (what the OSRT
  experiments did to produce the data in ``shared/data/osrt/binarized``, with
  ``pandas.cut``);
* ``"midpoints"``: every midpoint between two consecutive distinct values of the column
  (no information is lost: every split a tree on the real values can make is available);
* ``"gbdt"``: the thresholds used by a gradient-boosted reference model
  (``sklearn.ensemble.GradientBoostingRegressor`` fitted on ``X, y``; McTavish et al. 2022,
  "Fast sparse decision tree optimization via reference ensembles").

Every numeric binary column means ``x <= threshold`` (1 when true), the convention of
scikit-learn's trees. Categorical columns are one-hot encoded (``x == value``).

:class:`Binarizer` is a scikit-learn transformer (``TransformerMixin + BaseEstimator``), so it
works in pipelines and grid searches, e.g. in front of an ``OptimalTreeRegressor``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .._base import BaseEstimator, TransformerMixin, check_fitted
from .._validation import (
    check_choice,
    check_feature_names,
    check_int,
    check_integer_precision,
    check_numeric_column,
    check_shape_2d,
    default_feature_names,
)

__all__ = ["Binarizer"]

_STRATEGIES = ("quantile", "uniform", "midpoints", "gbdt")
_DEFAULT_GBDT = {"n_estimators": 40, "max_depth": 1, "learning_rate": 0.1, "random_state": 0}
_FORMAT_VERSION = 1


def _is_dataframe(X) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _format_value(v: float, digits: int = 6) -> str:
    """Short readable form of a threshold: ``4.5``, ``0.001``, ``1e+07``, ``-3``."""
    s = f"{v:.{digits}g}"
    if "e" not in s and "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s == "-0" else s


def _format_column(thresholds: np.ndarray) -> list[str]:
    """Format the thresholds of one column, with enough digits to keep them distinct."""
    for digits in (6, 8, 10, 12, 15, 17):
        out = [_format_value(float(t), digits) for t in thresholds]
        if len(set(out)) == len(out):
            return out
    return [repr(float(t)) for t in thresholds]  # pragma: no cover (17 digits are exact)


def _json_value(v):
    """A category value as a JSON-safe python scalar."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool | int | str) or v is None:
        return v
    if isinstance(v, float):
        return v
    return str(v)


class Binarizer(TransformerMixin, BaseEstimator):
    """Turn real and categorical features into binary features ``x <= t`` / ``x == v``.

    A scikit-learn transformer (``fit``, ``transform``, ``fit_transform``,
    ``get_feature_names_out``, ``get_params``, ``set_params``).

    Each output column is the indicator of one test on one input column:

    * numeric column ``j``, threshold ``t``: ``1`` where ``X[:, j] <= t``, named
      ``"<name_j> <= t"`` (e.g. ``"x3 <= 4.5"``);
    * categorical column ``j``, value ``v``: ``1`` where ``X[:, j] == v``, named
      ``"<name_j> == v"``.

    Names are the DataFrame's column names, else ``x1 .. xM`` (1-based, as in the papers).
    After the candidate columns are built on the training data, columns that are constant on
    it (all 0 or all 1) are dropped, and so are columns equal to an earlier column or to its
    complement (a tree splitting on ``b`` or on ``1 - b`` is the same tree); each drop is
    listed with its reason in :attr:`dropped_`.

    Args:
      strategy: how numeric thresholds are chosen (OSRT section 2 lists these ways):

        * ``"quantile"`` (default): equal-count buckets. For ``k = 1 .. n_thresholds`` the
          column is ``x <= Q_k``, ``Q_k`` the weighted quantile at level ``k /
          (n_thresholds + 1)`` (the inverted CDF, numpy's ``np.quantile(x, level,
          weights=sample_weight, method="inverted_cdf")``); the threshold printed is the
          midpoint between ``Q_k`` and the next larger value of the column (where a tree
          puts it). Deduplicated. Weights act as repeated rows: integer weights give what
          repeating the rows gives, and scaling all weights changes nothing.
        * ``"uniform"``: ``min(x) + k * (max(x) - min(x)) / (n_thresholds + 1)``: the interior
          edges of equal-width buckets, as the OSRT experiments binarized their data.
        * ``"midpoints"``: ``(u[i] + u[i+1]) / 2`` for the sorted distinct values ``u`` of the
          column: every split between two realized values (``n_thresholds`` is ignored).
        * ``"gbdt"``: every threshold used by a ``GradientBoostingRegressor`` fitted on
          ``(X_numeric, y, sample_weight)`` (McTavish et al. 2022). ``fit`` then needs ``y``.
          scikit-learn's trees compute in float32: their cuts cannot separate values closer
          than float32 resolution, and values beyond the float32 range are refused. With
          stumps (``max_depth=1``, the default, and no other ``gbdt_params`` than
          ``n_estimators``, ``learning_rate``, ``random_state``) the boosting runs here, each
          column sorted once instead of once a stage (about 1 s instead of 6 at 1e5 rows x 10
          columns): the same splits as scikit-learn's model, except that splits tied to
          rounding (equal or complementary columns; scikit-learn draws among them with
          ``random_state``) go to the first column.

        The arithmetic is overflow-safe up to the float maximum (no ``a + b`` or
        ``max - min`` that could be infinite), and a cut ``t`` between two distinct values
        ``a < b`` keeps them apart (``a <= t < b``) even when they are one ulp apart or
        subnormal (then ``t = a``, as no float lies between).
      n_thresholds: number of thresholds per numeric column for ``"quantile"`` and
        ``"uniform"`` (positive int; fewer remain after deduplication).
      max_features: keep at most this many binary columns (positive int), or ``None`` for
        all. With ``"gbdt"`` the columns whose thresholds gave the largest total impurity
        reduction in the reference model are kept (one-hot columns come after them);
        otherwise the budget is dealt to the input columns in turns, and a column given
        ``b`` tests keeps those whose fractions of ones are closest to ``k / (b + 1)``,
        ``k = 1 .. b`` (evenly spread splits).
      categorical: column names or 0-based column indices to one-hot encode. Non-numeric
        DataFrame columns (strings, categories, objects) are one-hot encoded automatically.
      gbdt_params: keyword arguments for ``sklearn.ensemble.GradientBoostingRegressor``,
        merged over the defaults ``n_estimators=40, max_depth=1, learning_rate=0.1,
        random_state=0``.

    Attributes:
      n_features_in_: number of input columns ``M``.
      feature_names_in_: object array of the ``M`` column names, only when ``X`` was a
        DataFrame with string column names (scikit-learn's convention); the output names use
        them, else ``x1 .. xM``.
      thresholds_: list of ``M`` float64 arrays; ``thresholds_[j]`` holds the sorted
        thresholds of the kept columns ``x_j <= t`` (empty for categorical columns).
      categories_: dict ``{j: [values]}`` of the kept one-hot values of each categorical
        column ``j``.
      features_: list of ``(j, op, value)`` for each output column, ``op`` in
        ``("<=", "==")``, in output order.
      feature_names_out_: list of the output column names, e.g. ``["x1 <= 2.5", ...]``.
      n_features_out_: number of binary columns.
      dropped_: list of ``(name, reason)`` for candidate columns that were dropped,
        ``reason`` one of ``"constant"``, ``"duplicate of <name>"``,
        ``"complement of <name>"``, ``"max_features"``, ``"constant input column"``.

    Raises:
      ValueError: unknown strategy, bad ``n_thresholds`` / ``max_features``, NaN or
        infinite numeric values, empty input, unknown categorical columns, ``"gbdt"``
        without ``y``, or a transform input whose columns do not match the fitted ones.

    Example:
      >>> import numpy as np
      >>> X = np.arange(1.0, 11.0).reshape(-1, 1)
      >>> b = Binarizer(n_thresholds=4).fit(X)
      >>> b.feature_names_out_
      ['x1 <= 2.5', 'x1 <= 4.5', 'x1 <= 6.5', 'x1 <= 8.5']
      >>> b.transform([[3.0], [9.0]]).tolist()
      [[0, 1, 1, 1], [0, 0, 0, 0]]

    References:
      Zhang, Xin, Seltzer, Rudin (2023), "Optimal Sparse Regression Trees", AAAI,
      section 2 (binary features). McTavish, Zhong, Achermann, Karimalis, Chen, Rudin, Seltzer
      (2022), "Fast Sparse Decision Tree Optimization via Reference Ensembles", AAAI.
    """

    def __init__(
        self,
        strategy: str = "quantile",
        n_thresholds: int = 4,
        max_features: int | None = None,
        categorical=None,
        gbdt_params: dict | None = None,
    ):
        self.strategy = strategy
        self.n_thresholds = n_thresholds
        self.max_features = max_features
        self.categorical = categorical
        self.gbdt_params = gbdt_params

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> None:
        check_choice(self.strategy, "strategy", _STRATEGIES)
        if self.strategy in ("quantile", "uniform"):
            check_int(self.n_thresholds, "n_thresholds", min_value=1)
        check_int(self.max_features, "max_features", min_value=1, allow_none=True)
        if self.gbdt_params is not None and not isinstance(self.gbdt_params, dict):
            raise ValueError(f"gbdt_params must be a dict or None, got {self.gbdt_params!r}")

    def _split_columns(self, X):
        """Return ``(columns, names, numeric, is_frame)``: one 1-D array per input column, the
        column names, whether each column has a numeric dtype, and whether X is a frame."""
        check_shape_2d(X)  # sparse, complex, 1-D, empty: jaxsr._validation's messages
        if _is_dataframe(X):
            from pandas.api.types import is_bool_dtype, is_numeric_dtype

            names = [str(c) for c in X.columns]
            numeric = [bool(is_numeric_dtype(dt) or is_bool_dtype(dt)) for dt in X.dtypes.tolist()]
            cols = [X.iloc[:, j].to_numpy() for j in range(X.shape[1])]
            is_frame = True
        else:
            arr = np.asarray(X)
            names = None
            cols = [arr[:, j] for j in range(arr.shape[1])]
            # Plain arrays: every column is numeric unless listed in ``categorical``.
            numeric = [True] * arr.shape[1]
            is_frame = False
        if names is None:
            names = default_feature_names(len(cols))
        for j, c in enumerate(cols):  # thresholds are float64: no integer may merge
            if numeric[j] and c.dtype.kind in "iu":
                check_integer_precision(c, np.float64, f"X column {names[j]!r}")
        return cols, names, numeric, is_frame

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, sample_weight=None) -> Binarizer:
        """Choose the thresholds and categories on training data.

        Args:
          X: ``(n_samples, n_features)`` array-like or pandas DataFrame (numeric columns,
            plus categorical ones if named in ``categorical`` or non-numeric in a frame).
          y: ``(n_samples,)`` target; needed only by ``strategy="gbdt"``, ignored otherwise.
          sample_weight: ``(n_samples,)`` non-negative weights, or ``None`` (all 1). Rows of
            weight 0 are ignored, as if absent: they create no thresholds or categories and
            do not count when columns are tested for being constant or duplicates.
            ``"quantile"`` uses weighted quantiles (see the class docstring), ``"gbdt"``
            fits its reference model with the weights. Multiplying every weight by the same
            positive factor gives the same binarizer.

        Returns:
          ``self``, with the fitted attributes listed in the class docstring.

        Raises:
          ValueError: see the class docstring.
        """
        self._check_params()
        X = check_feature_names(self, X, reset=True)  # n_features_in_, feature_names_in_
        cols, names, numeric, is_frame = self._split_columns(X)
        n_samples, n_in = len(cols[0]), len(cols)
        from .._validation import check_sample_weight

        w_all = check_sample_weight(sample_weight, n_samples)
        # Rows of weight 0 are left out: the binarizer is the one fitted on the other rows.
        live = w_all > 0
        w = w_all[live]
        cat_idx = self._categorical_indices(names, numeric)
        values: list[np.ndarray | None] = []
        for j in range(n_in):
            if j in cat_idx:
                _check_categorical_column(cols[j], names[j])
                cols[j] = _normalize_categorical(cols[j])
                values.append(None)
            else:
                values.append(_numeric_column(cols[j], names[j]))
        # Only the rows that count (positive weight) from here on.
        if not live.all():
            cols = [c[live] for c in cols]
            values = [None if v is None else v[live] for v in values]
            n_samples = int(live.sum())

        y_arr = None
        if self.strategy == "gbdt":
            if y is None:
                raise ValueError("strategy='gbdt' needs the target: call fit(X, y)")
            from .._validation import check_target

            y_arr = check_target(y, n_samples=len(w_all))[live]

        # Candidate tests (j, op, value) in output order; gbdt scores by test.
        candidates: list[tuple[int, str, Any]] = []
        scores: dict[tuple[int, str, Any], float] = {}
        dropped: list[tuple[str, str]] = []
        num_idx = [j for j in range(n_in) if j not in cat_idx]
        if self.strategy == "gbdt" and num_idx:
            thr_by_col, gain = self._gbdt_thresholds(
                np.column_stack([values[j] for j in num_idx]), y_arr, w
            )
            thr_map = {j: thr_by_col[k] for k, j in enumerate(num_idx)}
            gain_map = {(num_idx[k], t): g for (k, t), g in gain.items()}
        for j in range(n_in):
            if j in cat_idx:
                cats = _unique_categories(cols[j])
                if len(cats) < 2:
                    dropped.append((names[j], "constant input column"))
                candidates.extend((j, "==", v) for v in cats)
                continue
            v = values[j]
            if self.strategy == "gbdt":
                thr = thr_map[j]
                for t in thr:
                    scores[(j, "<=", float(t))] = gain_map[(j, float(t))]
            else:
                thr = _thresholds(v, self.strategy, self.n_thresholds, w)
            if np.min(v) == np.max(v):
                dropped.append((names[j], "constant input column"))
            candidates.extend((j, "<=", float(t)) for t in thr)

        kept, dropped_more = _drop_redundant(candidates, cols, values, names, n_samples)
        dropped.extend(dropped_more)
        if self.max_features is not None and len(kept) > self.max_features:
            keep = set(self._select(kept, cols, values, scores, w))
            for c in kept:
                if c not in keep:
                    dropped.append((_name(names, c), "max_features"))
            kept = [c for c in kept if c in keep]

        self._set_fitted(names, is_frame, cat_idx, kept, dropped)
        return self

    def _categorical_indices(self, names: list[str], numeric: list[bool]) -> set[int]:
        cat = set()
        spec = self.categorical
        if spec is not None:
            if isinstance(spec, str | numbers.Integral):
                spec = [spec]
            for c in spec:
                if isinstance(c, numbers.Integral) and not isinstance(c, bool):
                    if not 0 <= int(c) < len(names):
                        raise ValueError(
                            f"categorical column index {c} is out of range for "
                            f"{len(names)} columns (indices are 0-based)"
                        )
                    cat.add(int(c))
                elif str(c) in names:
                    cat.add(names.index(str(c)))
                else:
                    raise ValueError(
                        f"categorical column {c!r} is not a column of X; columns are {names}"
                    )
        cat.update(j for j, is_num in enumerate(numeric) if not is_num)
        return cat

    def _gbdt_thresholds(self, Xn: np.ndarray, y: np.ndarray, w: np.ndarray):
        try:
            from sklearn.ensemble import GradientBoostingRegressor
        except ImportError as err:  # pragma: no cover (scikit-learn is in [test])
            raise ImportError(
                "strategy='gbdt' needs scikit-learn: pip install scikit-learn"
            ) from err
        big = float(np.finfo(np.float32).max)
        if np.any(np.abs(Xn) > big):
            raise ValueError(
                "strategy='gbdt' fits scikit-learn trees, which compute in float32: values "
                f"beyond +-{big:.3g} cannot be split there; use strategy='quantile', "
                "'uniform' or 'midpoints' (exact in float64), or rescale the columns"
            )
        params = dict(_DEFAULT_GBDT)
        params.update(self.gbdt_params or {})
        # the squared-loss splits do not change when y is shifted and scaled: fit on y
        # centred on its median and divided by its largest deviation, so a target near
        # 1e300 or 1e-300 neither overflows nor underflows the ensemble's sums
        y = np.asarray(y, dtype=np.float64)
        mid = float(np.median(y)) if y.size else 0.0
        dev = y - mid
        top = float(np.max(np.abs(dev))) if y.size else 0.0
        if np.isfinite(top) and top > 0:
            y = dev / top
        elif top == 0:
            y = np.zeros_like(y)
        stumps = _stump_params(params)
        if stumps is not None:  # the default: the same splits, without a sort per stage
            return _boosted_stumps(Xn, y, np.asarray(w, dtype=np.float64), *stumps)
        model = GradientBoostingRegressor(**params).fit(Xn, y, sample_weight=w)
        found: list[set[float]] = [set() for _ in range(Xn.shape[1])]
        gain: dict[tuple[int, float], float] = {}
        for est in np.asarray(model.estimators_).ravel():
            tr = est.tree_
            for node in range(tr.node_count):
                f = int(tr.feature[node])
                if f < 0:  # leaf
                    continue
                t = float(tr.threshold[node])
                found[f].add(t)
                left, right = tr.children_left[node], tr.children_right[node]
                w = tr.weighted_n_node_samples
                g = (
                    w[node] * tr.impurity[node]
                    - w[left] * tr.impurity[left]
                    - w[right] * tr.impurity[right]
                )
                gain[(f, t)] = gain.get((f, t), 0.0) + float(g)
        return [np.array(sorted(s), dtype=np.float64) for s in found], gain

    def _select(self, kept, cols, values, scores, w) -> list[tuple]:
        """The ``max_features`` tests to keep (see the class docstring)."""
        m = int(self.max_features)
        if self.strategy == "gbdt":
            order = sorted(
                range(len(kept)),
                key=lambda i: (-scores.get(kept[i], -math.inf), i),
            )
            return [kept[i] for i in order[:m]]
        # How many tests each input column gets: the columns take turns.
        by_col: dict[int, list[tuple[float, int]]] = {}
        for i, c in enumerate(kept):
            p = float(np.average(_indicator(c, cols, values), weights=w))
            by_col.setdefault(c[0], []).append((p, i))
        cols_order = sorted(by_col)
        budget = dict.fromkeys(cols_order, 0)
        left = m
        while left > 0:
            for j in cols_order:
                if left > 0 and budget[j] < len(by_col[j]):
                    budget[j] += 1
                    left -= 1
        # Within a column, the tests whose fraction of ones is closest to k / (budget + 1):
        # evenly spread splits, the most balanced one first.
        chosen: list[int] = []
        for j in cols_order:
            pool = list(by_col[j])
            b = budget[j]
            for k in range(1, b + 1):
                target = k / (b + 1)
                best = min(pool, key=lambda pi, target=target: (abs(pi[0] - target), pi[1]))
                pool.remove(best)
                chosen.append(best[1])
        return [kept[i] for i in chosen]

    def _set_fitted(self, names, is_frame, cat_idx, kept, dropped) -> None:
        n_in = len(names)
        self.n_features_in_ = n_in
        self._input_names = list(names)  # as printed; feature_names_in_ is sklearn's
        self._fitted_on_frame = bool(is_frame)
        self._categorical_columns = sorted(int(j) for j in cat_idx)
        self.features_ = [(int(j), op, v) for (j, op, v) in kept]
        thr: list[list[float]] = [[] for _ in range(n_in)]
        cats: dict[int, list] = {j: [] for j in self._categorical_columns}
        for j, op, v in self.features_:
            (thr[j] if op == "<=" else cats[j]).append(v)
        self.thresholds_ = [np.array(sorted(t), dtype=np.float64) for t in thr]
        self.categories_ = cats
        self.feature_names_out_ = _names_out(names, self.features_)
        self.n_features_out_ = len(self.features_)
        self.dropped_ = list(dropped)

    # ------------------------------------------------------------------ transform
    def _check_fitted(self) -> None:
        check_fitted(self, "features_")  # NotFittedError (a ValueError)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False  # NaN/inf are refused with a clear message
        tags.input_tags.sparse = False
        tags.input_tags.categorical = True  # one-hot columns x == v
        tags.input_tags.string = True  # text columns of a DataFrame are categorical
        tags.target_tags.required = self.strategy == "gbdt"
        tags.transformer_tags.preserves_dtype = []  # the output is uint8 0/1
        tags.non_deterministic = False
        return tags

    def transform(self, X) -> np.ndarray:
        """Binary features of ``X``.

        Args:
          X: ``(n_samples, n_features_in_)`` array-like or DataFrame with the columns seen in
            :meth:`fit` (a frame fitted on a frame is matched by column name).

        Returns:
          ``uint8`` array of shape ``(n_samples, n_features_out_)``; column ``k`` is 1 where
          the test ``features_[k]`` holds. Unseen categories give 0 in every one-hot column.

        Raises:
          ValueError: not fitted, wrong number or names of columns, NaN/inf in a numeric
            column, non-numeric values in a numeric column, no rows.
        """
        self._check_fitted()
        X = check_feature_names(self, X, reset=False)  # a frame is reordered by name
        cols, names, numeric, _ = self._split_columns(X)
        if len(cols) != self.n_features_in_:
            raise ValueError(
                f"X has {len(cols)} features, but Binarizer is expecting "
                f"{self.n_features_in_} features as input (it was fitted on "
                f"{self.n_features_in_} columns: {self._input_names})"
            )
        n = len(cols[0])
        out = np.zeros((n, self.n_features_out_), dtype=np.uint8)
        cat = set(self._categorical_columns)
        values = {}
        for j in range(self.n_features_in_):
            if j in cat:
                _check_categorical_column(cols[j], self._input_names[j])
                cols[j] = _normalize_categorical(cols[j])
            else:  # every numeric column is checked, used or not
                values[j] = _numeric_column(cols[j], self._input_names[j])
        by_col: dict[int, list[int]] = {}
        for k, (j, op, v) in enumerate(self.features_):
            if op == "<=":
                by_col.setdefault(j, []).append(k)
            else:
                out[:, k] = _equals(cols[j], v)
        for j, ks in by_col.items():  # all thresholds of a column at once
            thr = np.array([self.features_[k][2] for k in ks], dtype=np.float64)
            out[:, ks] = values[j][:, None] <= thr[None, :]
        return out

    def fit_transform(self, X, y=None, sample_weight=None) -> np.ndarray:
        """``fit(X, y, sample_weight).transform(X)``: ``uint8`` array
        ``(n_samples, n_features_out_)`` (every row, those of weight 0 too)."""
        return self.fit(X, y, sample_weight=sample_weight).transform(X)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the output columns (object array of str), e.g. ``"x3 <= 4.5"``.

        Args:
          input_features: optional list of ``n_features_in_`` names to use instead of the
            fitted ones.

        Raises:
          ValueError: not fitted, or ``input_features`` of the wrong length.
        """
        self._check_fitted()
        names = self._input_names
        if input_features is not None:
            names = [str(c) for c in input_features]
            if len(names) != self.n_features_in_:
                raise ValueError(
                    f"input_features has {len(names)} names; expected {self.n_features_in_}"
                )
        return np.asarray(_names_out(names, self.features_), dtype=object)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        """A JSON-serialisable dict with the parameters and, if fitted, the fitted state.

        ``json.dumps(b.to_dict())`` works; :meth:`from_dict` rebuilds an equal binarizer
        (same thresholds to the last bit, same names, same transform). The gbdt reference
        model itself is not saved (only its thresholds).
        """
        params = self.get_params()
        params["categorical"] = (
            None
            if self.categorical is None
            else [
                _json_value(c)
                for c in (
                    [self.categorical]
                    if isinstance(self.categorical, str | numbers.Integral)
                    else self.categorical
                )
            ]
        )
        params["gbdt_params"] = (
            None
            if self.gbdt_params is None
            else {str(k): _json_value(v) for k, v in self.gbdt_params.items()}
        )
        d: dict[str, Any] = {"class": "Binarizer", "version": _FORMAT_VERSION, "params": params}
        if hasattr(self, "features_"):
            d["fitted"] = {
                "feature_names_in": list(self._input_names),
                "has_feature_names": hasattr(self, "feature_names_in_"),
                "fitted_on_frame": self._fitted_on_frame,
                "categorical_columns": list(self._categorical_columns),
                "features": [[j, op, _json_value(v)] for (j, op, v) in self.features_],
                "dropped": [[n, r] for (n, r) in self.dropped_],
            }
        return d

    @classmethod
    def from_dict(cls, d: dict, *, path: str = "") -> Binarizer:
        """Rebuild a :class:`Binarizer` saved by :meth:`to_dict`, checking every field.

        The parameters go through the checks of :meth:`fit`; each binary feature must be
        ``[column, "<=", finite threshold]`` on a numeric column or ``[column, "==",
        value]`` on a categorical one (another operator would silently change what the
        column means), with ``column`` one of the input columns.

        Args:
          d: the dictionary.
          path: the name of ``d`` in error messages (a saved tree model passes
            ``binarizer``).

        Raises:
          ValueError: if ``d`` is not a dict written by :meth:`to_dict`, or a field it
            cannot hold; the message names the field, e.g. ``fitted.features[3][1] is
            '<'; ...``.
        """
        from .. import _loading as L

        def at(key):
            return f"{path}.{key}" if path else key

        if not isinstance(d, dict) or d.get("class") != "Binarizer" or "params" not in d:
            raise ValueError("not a Binarizer dict (expected the output of Binarizer.to_dict())")
        if d.get("version") != _FORMAT_VERSION:
            raise ValueError(f"unsupported Binarizer dict version {d.get('version')!r}")
        b = L.build_estimator(cls, d["params"], at("params"))
        fitted = d.get("fitted")
        if fitted is not None:
            fp = at("fitted")
            L.mapping(fitted, fp)
            names = L.string_list(L.field(fitted, "feature_names_in", fp), f"{fp}.feature_names_in")
            n_in = len(names)
            on_frame = L.boolean(L.field(fitted, "fitted_on_frame", fp), f"{fp}.fitted_on_frame")
            cat = L.int_array(
                L.field(fitted, "categorical_columns", fp),
                f"{fp}.categorical_columns",
                min_value=0,
                max_value=n_in - 1,
            ).tolist()
            feats = L.field(fitted, "features", fp)
            if not isinstance(feats, list):
                raise ValueError(f"{fp}.features must be a list; got {L._what(feats)}")
            kept = []
            for k, f in enumerate(feats):
                fk = f"{fp}.features[{k}]"
                if not isinstance(f, list) or len(f) != 3:
                    raise ValueError(f"{fk} must be [column, operator, value]; got {L._what(f)}")
                j = L.integer(f[0], f"{fk}[0]", min_value=0, max_value=n_in - 1)
                op = f[1]
                if op == "<=":
                    if j in cat:
                        raise ValueError(
                            f"{fk}[1] is '<=' on the categorical column {j}; "
                            "a categorical column's features are '=='"
                        )
                    kept.append((j, op, L.real(f[2], f"{fk}[2]", what="thresholds must be finite")))
                elif op == "==":
                    if j not in cat:
                        raise ValueError(
                            f"{fk}[1] is '==' on the numeric column {j}; a "
                            "numeric column's features are '<=' thresholds "
                            f"(or list {j} in {fp}.categorical_columns)"
                        )
                    kept.append((j, op, L.scalar(f[2], f"{fk}[2]")))
                else:
                    raise ValueError(
                        f"{fk}[1] is {L._what(op)}; the operator of a binary "
                        "feature is '<=' (a threshold) or '==' (a category)"
                    )
            dropped = L.field(fitted, "dropped", fp)
            if not isinstance(dropped, list):
                raise ValueError(f"{fp}.dropped must be a list; got {L._what(dropped)}")
            for k, x in enumerate(dropped):
                L.string_list(x, f"{fp}.dropped[{k}]", length=2)
            has_names = L.boolean(
                fitted.get("has_feature_names", on_frame), f"{fp}.has_feature_names"
            )
            b._set_fitted(names, on_frame, set(cat), kept, [tuple(x) for x in dropped])
            if has_names:
                b.feature_names_in_ = np.asarray(names, dtype=object)
        return b


# ---------------------------------------------------------------------- helpers
def _numeric_column(col: np.ndarray, name: str) -> np.ndarray:
    return check_numeric_column(
        col,
        name,
        hint="; list it in Binarizer(categorical=[...]) to "
        "one-hot encode it (OptimalTreeRegressor(binarizer=Binarizer("
        "categorical=[...])))",
    )


def _check_categorical_column(col: np.ndarray, name: str) -> None:
    import pandas as pd

    if bool(np.any(pd.isna(col))):
        raise ValueError(
            f"categorical column {name!r} contains missing values (None/NaN); "
            "fill them (e.g. with a 'missing' category) first"
        )


def _unique_categories(col: np.ndarray) -> list:
    """Distinct values of a normalised column, sorted when comparable, else by type and text."""
    import pandas as pd

    vals = [_json_value(v) for v in pd.unique(col)]
    try:
        return sorted(vals)
    except TypeError:
        return sorted(vals, key=lambda v: (type(v).__name__, str(v)))


def _normalize_categorical(col: np.ndarray) -> np.ndarray:
    """The column's values as python scalars (``np.str_`` -> ``str``, ...) in an object array."""
    vals = col.tolist()  # numpy scalars -> python scalars
    if col.dtype == object:
        vals = [v if type(v) in (str, int, float, bool) else _json_value(v) for v in vals]
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out


def _equals(col: np.ndarray, v) -> np.ndarray:
    """``col == v`` elementwise for a normalised categorical column (object array)."""
    return np.asarray(col == v, dtype=bool).reshape(len(col))


def _lerp(a, b, g) -> np.ndarray:
    """``a + g * (b - a)`` for ``a <= b`` and ``g`` in ``[0, 1]``, without overflow.

    Like numpy's linear interpolation (``b - (b - a) * (1 - g)`` for ``g >= 0.5``) where
    ``b - a`` is finite; where it overflows (``a`` near ``-max``, ``b`` near ``+max``) the
    convex combination ``a * (1 - g) + b * g``, whose two terms cannot overflow. The result
    is clipped to ``[a, b]``.
    """
    a, b, g = (np.asarray(z, dtype=np.float64) for z in (a, b, g))
    with np.errstate(over="ignore", invalid="ignore"):
        d = b - a
        t = np.where(g >= 0.5, b - d * (1.0 - g), a + d * g)
        t = np.where(np.isfinite(d), t, a * (1.0 - g) + b * g)
    return np.minimum(np.maximum(t, a), b)


def _cut_between(a, b, g) -> np.ndarray:
    """Threshold ``t`` at fraction ``g`` of the way from ``a`` to ``b`` (``a < b``) such that
    ``x <= t`` keeps its exact-arithmetic meaning for ``x`` in ``{a, b}``.

    For ``g < 1`` the exact cut lies below ``b``, so ``b`` must test false; when rounding
    lands ``t`` on ``b`` (``a`` and ``b`` a few ulps apart, e.g. one ulp: ``(a + b) / 2``
    rounds to ``b`` half the time) ``t`` becomes the float just below ``b`` (``a`` itself
    when they are one ulp apart), so two distinct values never collapse into one side.
    """
    a, b, g = (np.asarray(z, dtype=np.float64) for z in (a, b, g))
    t = _lerp(a, b, g)
    with np.errstate(under="ignore", over="ignore"):  # below 0 or -max: clipped to a
        below = np.nextafter(b, -np.inf)
    return np.where((g < 1.0) & (t >= b), np.maximum(below, a), t)


def _weighted_quantile_cuts(v: np.ndarray, w: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Cuts below and above the weighted quantiles of ``v`` (positive weights ``w``) at
    levels ``q`` in ``(0, 1)``.

    The quantile is the weighted inverted CDF, ``Q(q) = min{u : W(x <= u) >= q W}`` (numpy's
    ``method="inverted_cdf"``), so the binary column is ``x <= Q(q)``; the threshold is
    placed midway between ``Q(q)`` and the next larger value (a quantile at the maximum gives
    the maximum: a constant column, dropped later). This definition does not change when every
    weight is multiplied by the same factor, and integer weights give what repeating the rows
    gives (scikit-learn's meaning of ``sample_weight``); a level within ``1e-10`` of a
    cumulative weight counts as reaching it, so rounding of the sums cannot move a cut.
    """
    u, inv = np.unique(v, return_inverse=True)
    F = np.cumsum(np.bincount(inv.ravel(), weights=w, minlength=u.size))
    total = F[-1]
    k = np.searchsorted(F, np.asarray(q, dtype=np.float64) * total - 1e-10 * total, side="left")
    k = np.minimum(k, u.size - 1)
    last = k == u.size - 1
    nxt = np.minimum(k + 1, u.size - 1)
    return np.where(last, u[k], _cut_between(u[k], u[nxt], 0.5))


def _round_edges_down(t: np.ndarray, lo: float, hi: float, n: int, u: np.ndarray) -> np.ndarray:
    """Uniform edges ``lo + k (hi - lo) / (n + 1)`` that rounding put *onto* a realized value
    ``u`` above the exact edge would move that value below the cut; those few (the check is
    exact, with fractions) become the float just below it, so ``x <= t`` means what the
    exact edge means for every realized ``x``."""
    from fractions import Fraction

    t = np.array(t, dtype=np.float64)
    i = np.minimum(np.searchsorted(u, t), u.size - 1)
    for k in np.flatnonzero((u[i] == t) & (t > lo)):
        exact = Fraction(lo) + Fraction(int(k) + 1, n + 1) * (Fraction(hi) - Fraction(lo))
        if exact < Fraction(float(t[k])):
            t[k] = np.nextafter(t[k], -np.inf)
    return t


def _thresholds(v: np.ndarray, strategy: str, n: int, w: np.ndarray | None = None) -> np.ndarray:
    """Candidate thresholds of one numeric column, sorted and distinct (float64).

    ``v``: the column's values on the rows with positive weight ``w`` (``None``: all 1).
    Every formula is overflow-safe up to the float maximum and keeps two distinct values,
    even one ulp apart (or subnormal), on the two sides of a midpoint.
    """
    if w is None:
        w = np.ones(v.shape, dtype=np.float64)
    if strategy == "quantile":
        t = _weighted_quantile_cuts(v, w, np.arange(1, n + 1) / (n + 1))
    elif strategy == "uniform":
        lo, hi = float(np.min(v)), float(np.max(v))
        if lo == hi:
            return np.array([lo])
        t = _cut_between(lo, hi, np.arange(1, n + 1) / (n + 1))
        t = _round_edges_down(t, lo, hi, n, np.unique(v))
    else:  # midpoints
        u = np.unique(v)
        t = _cut_between(u[:-1], u[1:], 0.5)
    return np.unique(np.asarray(t, dtype=np.float64))


def _indicator(c, cols, values) -> np.ndarray:
    j, op, v = c
    if op == "<=":
        return values[j] <= v
    return _equals(cols[j], v)


def _name(names, c) -> str:
    j, op, v = c
    if op == "<=":
        return f"{names[j]} <= {_format_value(v)}"
    return f"{names[j]} == {v}"


def _names_out(names: list[str], features) -> list[str]:
    out: list[str | None] = [None] * len(features)
    by_col: dict[int, list[int]] = {}
    for k, (j, op, v) in enumerate(features):
        if op == "<=":
            by_col.setdefault(j, []).append(k)
        else:
            out[k] = f"{names[j]} == {v}"
    for j, ks in by_col.items():
        texts = _format_column(np.array([features[k][2] for k in ks]))
        for k, s in zip(ks, texts, strict=True):
            out[k] = f"{names[j]} <= {s}"
    return [str(s) for s in out]


def _drop_redundant(candidates, cols, values, names, n_samples):
    """Drop constant columns and columns equal to an earlier one or to its complement.

    The candidate columns are built and bit-packed in blocks (a threshold column of a
    numeric feature for all its thresholds at once, ``x[:, None] <= t[None, :]``): the same
    columns, keys and drops as one column at a time, ~5x faster on a thousand thresholds.
    """
    kept, dropped = [], []
    seen: dict[bytes, tuple] = {}
    C = len(candidates)
    block = max(1, min(C, (1 << 24) // max(n_samples, 1)))  # ~16 MB of bools a block
    for s0 in range(0, C, block):
        cand = candidates[s0 : s0 + block]
        B = np.empty((n_samples, len(cand)), dtype=bool)
        by_col: dict[int, list[int]] = {}
        for k, c in enumerate(cand):
            if c[1] == "<=":
                by_col.setdefault(c[0], []).append(k)
            else:
                B[:, k] = _indicator(c, cols, values)
        for j, ks in by_col.items():
            thr = np.array([cand[k][2] for k in ks], dtype=np.float64)
            B[:, ks] = values[j][:, None] <= thr[None, :]
        ones = B.sum(axis=0)
        keys = np.ascontiguousarray(np.packbits(B, axis=0).T)
        comps = np.ascontiguousarray(np.packbits(~B, axis=0).T)
        for k, c in enumerate(cand):
            if ones[k] == 0 or ones[k] == n_samples:
                dropped.append((_name(names, c), "constant"))
                continue
            key = keys[k].tobytes()
            if key in seen:
                dropped.append((_name(names, c), f"duplicate of {_name(names, seen[key])}"))
                continue
            comp = comps[k].tobytes()
            if comp in seen:
                dropped.append((_name(names, c), f"complement of {_name(names, seen[comp])}"))
                continue
            seen[key] = c
            kept.append(c)
    return kept, dropped


# ---------------------------------------------------------------------- boosted stumps
_FEATURE_THRESHOLD = 1e-7  # scikit-learn's trees: values closer than this are not split


def _stump_params(params: dict) -> tuple[int, float] | None:
    """``(n_estimators, learning_rate)`` when the merged ``GradientBoostingRegressor``
    parameters ``params`` describe least-squares boosting of stumps, which
    :func:`_boosted_stumps` computes (only ``n_estimators``, ``learning_rate`` and
    ``random_state`` given, ``max_depth=1``); else None (scikit-learn fits the model)."""
    if set(params) != set(_DEFAULT_GBDT) or params["max_depth"] != 1:
        return None
    n_est, lr = params["n_estimators"], params["learning_rate"]
    if (
        isinstance(n_est, bool)
        or not isinstance(n_est, numbers.Integral)
        or n_est < 1
        or isinstance(lr, bool)
        or not isinstance(lr, numbers.Real)
        or not (math.isfinite(float(lr)) and float(lr) > 0)
    ):
        return None  # scikit-learn's own checks give the error
    return int(n_est), float(lr)


def _boosted_stumps(
    Xn: np.ndarray, y: np.ndarray, w: np.ndarray, n_estimators: int, learning_rate: float
):
    """The splits of ``GradientBoostingRegressor(max_depth=1, n_estimators=n_estimators,
    learning_rate=learning_rate)`` fitted on ``(Xn, y, w)``, without its sorts.

    scikit-learn sorts every column at every stage (0.17 s a stage at 1e5 x 10); here the
    columns are sorted once (as float32, as scikit-learn's trees see them) and a stage is
    one pass of running sums of the weighted residuals over each column in that order
    (:func:`jaxsr.trees.engine.best_stump`). Each stage is
    the least-squares stump of scikit-learn's ``DecisionTreeRegressor`` (criterion
    ``"squared_error"``: the largest ``S_L^2 / W_L + S_R^2 / W_R``; splits only between
    values more than ``1e-7`` apart, at ``x_lo / 2 + x_hi / 2``; no split where the
    residuals' weighted variance is at most the float64 epsilon), from the weighted mean,
    adding ``learning_rate`` times the leaf means. Splits whose scores tie to rounding
    (equal or complementary columns), which scikit-learn breaks by a random order of the
    features, go to the lowest position, then the lowest column; so ``random_state`` plays
    no part.

    Args:
      Xn: ``(n, p)`` float64 within the float32 range. y: ``(n,)`` float64.
      w: ``(n,)`` positive float64 weights.

    Returns:
      ``(thresholds, gain)`` as :meth:`Binarizer._gbdt_thresholds`: per column the sorted
      thresholds, and per ``(column, threshold)`` the summed weighted loss decrease.
    """
    from .engine import best_stump

    cols = np.ascontiguousarray(np.asarray(Xn, dtype=np.float32).T)  # (p, n)
    p, n = cols.shape
    order = np.argsort(cols, axis=1, kind="stable")  # each column's order
    xs = np.take_along_axis(cols, order, axis=1).astype(np.float64)
    # a split after sorted position q puts the first q + 1 samples left
    cand = xs[:, 1:] > xs[:, :-1] + _FEATURE_THRESHOLD
    Wt = float(np.sum(w))
    raw = np.full(n, float(np.average(y, weights=w)))
    found: list[set[float]] = [set() for _ in range(p)]
    gain: dict[tuple[int, float], float] = {}
    eps = float(np.finfo(np.float64).eps)
    for _ in range(n_estimators):
        r = y - raw
        g = w * r
        S = float(np.sum(g))
        if n < 2 or float(np.dot(g, r)) / Wt - (S / Wt) ** 2 <= eps:
            raw += learning_rate * (S / Wt)  # a leaf (scikit-learn: impurity <= epsilon)
            continue
        score, f, q, sl, wl = best_stump(order, cand, g, w, S, Wt)
        if f < 0:  # every column constant: a leaf
            raw += learning_rate * (S / Wt)
            continue
        t = float(xs[f, q] / 2.0 + xs[f, q + 1] / 2.0)
        sr, wr = S - sl, Wt - wl
        found[f].add(t)
        gain[(f, t)] = gain.get((f, t), 0.0) + (score - S * S / Wt)
        left = cols[f].astype(np.float64) <= t  # as scikit-learn's trees compare
        raw += learning_rate * np.where(left, sl / wl, sr / wr)
    return [np.array(sorted(s), dtype=np.float64) for s in found], gain
