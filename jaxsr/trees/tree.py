"""The fitted tree: flat arrays in pre-order, prediction, an index-card text, JSON round trip."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Tree"]

#: the attributes of scikit-learn's ``tree_`` that its exporters read
_SKLEARN_TREE_ATTRIBUTES = frozenset(
    {
        "children_left",
        "children_right",
        "threshold",
        "impurity",
        "n_node_samples",
        "weighted_n_node_samples",
        "n_outputs",
        "n_classes",
        "n_features",
        "node_count",
        "max_depth",
        "capacity",
        "missing_go_to_left",
        "compute_feature_importances",
        "max_n_classes",
    }
)


@dataclass
class Tree:
    """A binary regression tree over binary features, stored as flat pre-order arrays.

    Node ``0`` is the root. For a split node ``i`` the samples with feature
    ``feature[i]`` equal to 1 ("true") go to ``true_child[i]``, the others to
    ``false_child[i]``. Leaves have ``feature == -1`` and children ``-1``.

    Attributes:
      feature: ``(n_nodes,)`` int, the binary feature tested (``-1`` at leaves).
      true_child, false_child: ``(n_nodes,)`` int child indices (``-1`` at leaves).
      value: ``(n_nodes,)`` float, the prediction of the node's samples (mean for squared
        loss, weighted median for absolute loss), in the units of ``y``. One dimension, not
        scikit-learn's ``(n_nodes, n_outputs, n_classes)``: the tree has one output and
        no classes, and ``value[apply(X)]`` is the prediction.
        ``OptimalTreeRegressor.to_sklearn().tree_.value`` has scikit-learn's shape
        ``(n_nodes, 1, 1)``.
      n_samples: ``(n_nodes,)`` int, training samples reaching the node.
      weight: ``(n_nodes,)`` float, their summed sample weight.
      loss: ``(n_nodes,)`` float, their summed weighted loss around ``value`` (units of
        ``y^2`` or ``|y|``).
    """

    feature: np.ndarray
    true_child: np.ndarray
    false_child: np.ndarray
    value: np.ndarray
    n_samples: np.ndarray
    weight: np.ndarray
    loss: np.ndarray
    feature_names: list[str] | None = field(default=None)

    def __getattr__(self, name):
        # scikit-learn's export_text / plot_tree / export_graphviz read the arrays of
        # sklearn.tree._tree.Tree: say which tools read this one instead
        if name in _SKLEARN_TREE_ATTRIBUTES:
            raise AttributeError(
                f"jaxsr's Tree has no {name!r}: it is not scikit-learn's tree (its splits "
                "test binary features, its leaves have feature -1 and value has shape "
                "(n_nodes,)), so scikit-learn's export_text, plot_tree and export_graphviz "
                "cannot read it. Use the model's own export_text(), "
                "jaxsr.trees.plot_tree(model) or jaxsr.trees.export_graphviz(model), or "
                "model.to_sklearn(): the same tree as a fitted "
                "sklearn.tree.DecisionTreeRegressor, which those functions read"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.feature < 0))

    @property
    def depth(self) -> int:
        """Levels from root to deepest leaf, counting the root as 1 (``depth_budget`` units)."""
        d = np.zeros(self.n_nodes, dtype=int)
        d[0] = 1
        for i in range(self.n_nodes):  # pre-order: parents come first
            if self.feature[i] >= 0:
                d[self.true_child[i]] = d[i] + 1
                d[self.false_child[i]] = d[i] + 1
        return int(d.max()) if self.n_nodes else 0

    def _descend(self, X, visit=None) -> np.ndarray:
        """Walk every row of the binary matrix ``X`` ``(n, M)`` from the root to its leaf,
        one level per pass; ``visit(rows, nodes)`` sees the node each row still moving
        stands at, the root's level first. Returns the leaf of each row."""
        X = np.asarray(X)
        node = np.zeros(X.shape[0], dtype=int)
        rows = np.arange(X.shape[0])
        while rows.size:
            here = node[rows]
            if visit is not None:
                visit(rows, here)
            f = self.feature[here]
            inner = f >= 0
            rows, here, f = rows[inner], here[inner], f[inner]
            bit = X[rows, f] > 0.5
            node[rows] = np.where(bit, self.true_child[here], self.false_child[here])
        return node

    def apply(self, X) -> np.ndarray:
        """Index of the leaf each row of the binary matrix ``X`` ``(n, M)`` reaches."""
        return self._descend(X)

    def decision_path(self, X):
        """The nodes each row of the binary matrix ``X`` ``(n, M)`` passes through.

        Returns:
          ``scipy.sparse.csr_matrix`` ``(n, n_nodes)``, int64: entry ``(i, j)`` is 1 when
          row ``i`` passes through node ``j`` (the root, the splits on its way and its
          leaf, :meth:`apply`); in a row the column indices increase from root to leaf.
        """
        import scipy.sparse as sp

        rows, cols = [], []
        self._descend(X, lambda r, nodes: (rows.append(r), cols.append(nodes)))
        r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        c = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        m = sp.csr_matrix(
            (np.ones(r.size, dtype=np.int64), (r, c)), shape=(np.asarray(X).shape[0], self.n_nodes)
        )
        m.sort_indices()
        return m

    def predict(self, X) -> np.ndarray:
        """Predictions ``(n,)`` for the binary matrix ``X`` ``(n, M)`` (0/1 or bool)."""
        return self.value[self.apply(X)]

    # ------------------------------------------------------------------ text
    def condition(self, i: int, feature_names=None) -> str:
        """The test of split node ``i`` as text: the binary feature's name (``"x3 <= 4.5"``,
        ``"city == north"``), or ``"<name> == 1"`` for a plain 0/1 column such as ``"hot"``.
        The samples for which it holds go to ``true_child[i]``."""
        names = feature_names if feature_names is not None else self.feature_names
        f = int(self.feature[i])
        if f < 0:
            raise ValueError(f"node {i} is a leaf; it has no condition")
        name = str(names[f]) if names is not None else f"x{f + 1}"
        if any(op in name for op in ("<=", ">=", "==", "!=", "<", ">")):
            return name
        return f"{name} == 1"

    @staticmethod
    def format_value(v: float, decimals: int = 4) -> str:
        """A prediction with ``decimals`` digits after the point (scikit-learn's meaning of
        ``decimals``), ``-0`` shown as ``0``."""
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            raise ValueError(f"decimals must be an integer >= 0; got {decimals!r}")
        text = f"{float(v):.{decimals}f}"
        return text[1:] if text.startswith("-") and float(text) == 0.0 else text

    def leaf_label(self, i: int, decimals: int = 4, show_counts: bool = True) -> str:
        """``"predict 5.0000  (n = 10)"`` for leaf ``i``."""
        extra = f"  (n = {int(self.n_samples[i])})" if show_counts else ""
        return f"predict {self.format_value(self.value[i], decimals)}{extra}"

    def export_text(self, feature_names=None, decimals: int = 4, show_counts: bool = True) -> str:
        """The tree as text, one line per split and one per leaf, as scikit-learn's
        ``export_text`` draws it, with ``else`` for the branch where the test fails::

            |--- x3 <= 4.5
            |   |--- predict 1.2500  (n = 40)
            |--- else
            |   |--- city == north
            |   |   |--- predict 5.0000  (n = 30)
            |   |--- else
            |   |   |--- predict 9.0000  (n = 30)

        Args:
          feature_names: one name per binary feature (default: the stored names, else
            ``x1 .. xM``).
          decimals: digits after the decimal point of the predictions (as scikit-learn).
          show_counts: append ``(n = samples)`` to every prediction.

        Raises:
          ValueError: ``decimals`` not an integer >= 0.
        """
        self.format_value(0.0, decimals)  # checks decimals
        lines: list[str] = []
        # depth-first with an explicit stack (a tree of any depth, no recursion): a node
        # is ("node", i, depth), the "else" line between a split's branches ("else", pad)
        stack: list[tuple] = [("node", 0, 0)] if self.n_nodes else []
        while stack:
            item = stack.pop()
            if item[0] == "else":
                lines.append(item[1] + "else")
                continue
            _, i, depth = item
            pad = "|   " * depth + "|--- "
            if self.feature[i] < 0:
                lines.append(pad + self.leaf_label(i, decimals, show_counts))
                continue
            lines.append(pad + self.condition(i, feature_names))
            stack += [
                ("node", int(self.false_child[i]), depth + 1),
                ("else", pad),
                ("node", int(self.true_child[i]), depth + 1),
            ]
        return "\n".join(lines)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Plain-JSON dictionary (lists of ints/floats); inverse of :meth:`from_dict`."""
        return {
            "feature": [int(v) for v in self.feature],
            "true_child": [int(v) for v in self.true_child],
            "false_child": [int(v) for v in self.false_child],
            "value": [float(v) for v in self.value],
            "n_samples": [int(v) for v in self.n_samples],
            "weight": [float(v) for v in self.weight],
            "loss": [float(v) for v in self.loss],
            "feature_names": None if self.feature_names is None else list(self.feature_names),
        }

    @classmethod
    def from_dict(cls, d: dict, *, path: str = "tree", n_features: int | None = None) -> Tree:
        """Rebuild a tree from :meth:`to_dict` output, checking every field.

        Args:
          d: the dictionary.
          path: the name of ``d`` in error messages (a saved model passes ``tree``).
          n_features: the number of binary features, if known: a split tests one of them.

        Raises:
          ValueError: naming the field: missing keys, arrays of different lengths or of the
            wrong types, a split feature below 0 (or, with ``n_features``, beyond the
            binary features), a non-finite prediction, negative counts or weights, a leaf
            with children, or child indices that do not form one tree in pre-order (every
            child after its parent, every node but the root the child of one split).
        """
        from .._loading import field, int_array, mapping, real_array, string_list

        mapping(d, path)
        feature = int_array(
            field(d, "feature", path),
            f"{path}.feature",
            min_length=1,
            min_value=-1,
            max_value=None if n_features is None else n_features - 1,
        )
        n = feature.shape[0]
        arrs = {
            "feature": feature,
            "true_child": int_array(
                field(d, "true_child", path),
                f"{path}.true_child",
                length=n,
                min_value=-1,
                max_value=n - 1,
            ),
            "false_child": int_array(
                field(d, "false_child", path),
                f"{path}.false_child",
                length=n,
                min_value=-1,
                max_value=n - 1,
            ),
            "value": real_array(
                field(d, "value", path),
                f"{path}.value",
                length=n,
                what="predictions must be finite",
            ),
            "n_samples": int_array(
                field(d, "n_samples", path), f"{path}.n_samples", length=n, min_value=0
            ),
            "weight": real_array(
                field(d, "weight", path),
                f"{path}.weight",
                length=n,
                min_value=0,
                what="sample weights must be finite",
            ),
            "loss": real_array(
                field(d, "loss", path), f"{path}.loss", length=n, min_value=0, allow_inf=True
            ),
        }
        seen = np.zeros(n, dtype=bool)
        for i in range(n):
            kids = (int(arrs["true_child"][i]), int(arrs["false_child"][i]))
            if feature[i] < 0:
                if kids != (-1, -1):
                    raise ValueError(
                        f"{path}.true_child[{i}] / false_child[{i}] are {kids}; "
                        f"node {i} is a leaf (feature -1), whose children are "
                        "-1"
                    )
                continue
            for name, c in zip(("true_child", "false_child"), kids, strict=True):
                if c <= i or seen[c]:
                    raise ValueError(
                        f"{path}.{name}[{i}] is {c}; a child index must come "
                        f"after its node ({i + 1}..{n - 1}) and belong to one "
                        "split only"
                    )
                seen[c] = True
        if n > 1 and int(seen.sum()) != n - 1:
            orphan = int(np.flatnonzero(~seen[1:])[0]) + 1
            raise ValueError(
                f"{path}: node {orphan} is no split's child; the child indices do not form one tree"
            )
        names = d.get("feature_names")
        if names is not None:
            names = string_list(names, f"{path}.feature_names", length=n_features)
        return cls(**arrs, feature_names=names)
