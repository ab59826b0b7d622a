"""The fitted tree: flat arrays in pre-order, prediction, an index-card text, JSON round trip."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Tree"]


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
        loss, weighted median for absolute loss), in the units of ``y``.
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

    def apply(self, X) -> np.ndarray:
        """Index of the leaf each row of the binary matrix ``X`` ``(n, M)`` reaches."""
        X = np.asarray(X)
        node = np.zeros(X.shape[0], dtype=int)
        rows = np.arange(X.shape[0])
        for _ in range(self.n_nodes):
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                break
            bit = X[rows[inner], f[inner]] > 0.5
            node[inner] = np.where(bit, self.true_child[node[inner]],
                                   self.false_child[node[inner]])
        return node

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

    def export_text(self, feature_names=None, decimals: int = 4, show_counts: bool = True
                    ) -> str:
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
            stack += [("node", int(self.false_child[i]), depth + 1), ("else", pad),
                      ("node", int(self.true_child[i]), depth + 1)]
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
    def from_dict(cls, d: dict) -> Tree:
        """Rebuild a tree from :meth:`to_dict` output.

        Raises:
          ValueError: missing keys, arrays of different lengths, or child indices that do
            not form a tree.
        """
        keys = ["feature", "true_child", "false_child", "value", "n_samples", "weight",
                "loss"]
        missing = [k for k in keys if k not in d]
        if missing:
            raise ValueError(f"tree dictionary lacks the keys {missing}")
        arrs = {
            "feature": np.asarray(d["feature"], dtype=int),
            "true_child": np.asarray(d["true_child"], dtype=int),
            "false_child": np.asarray(d["false_child"], dtype=int),
            "value": np.asarray(d["value"], dtype=float),
            "n_samples": np.asarray(d["n_samples"], dtype=int),
            "weight": np.asarray(d["weight"], dtype=float),
            "loss": np.asarray(d["loss"], dtype=float),
        }
        n = arrs["feature"].shape[0]
        if n == 0 or any(a.shape != (n,) for a in arrs.values()):
            raise ValueError("tree dictionary arrays must be 1-D, non-empty, of one length")
        inner = arrs["feature"] >= 0
        kids = np.concatenate([arrs["true_child"][inner], arrs["false_child"][inner]])
        if kids.size and (kids.min() < 1 or kids.max() >= n
                          or np.unique(kids).size != kids.size or kids.size != n - 1):
            raise ValueError("tree dictionary child indices do not form a tree")
        return cls(**arrs, feature_names=d.get("feature_names"))
