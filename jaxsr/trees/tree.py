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
    def export_text(self, feature_names=None, decimals: int = 4, show_counts: bool = True
                    ) -> str:
        """An index card: nested ``if <feature> is true / else`` rules ending in predictions.

        Args:
          feature_names: one name per binary feature (default: the stored names, else
            ``x1 .. xM``).
          decimals: significant digits of the printed predictions.
          show_counts: append ``(n = samples)`` to every prediction.
        """
        names = feature_names if feature_names is not None else self.feature_names
        lines: list[str] = []

        def name(f):
            return str(names[f]) if names is not None else f"x{f + 1}"

        def fmt(v):
            return f"{v:.{decimals}g}"

        def rec(i, indent):
            pad = "|   " * indent
            if self.feature[i] < 0:
                extra = f"  (n = {int(self.n_samples[i])})" if show_counts else ""
                lines.append(f"{pad}predict {fmt(self.value[i])}{extra}")
                return
            nm = name(int(self.feature[i]))
            lines.append(f"{pad}if {nm} is true:")
            rec(int(self.true_child[i]), indent + 1)
            lines.append(f"{pad}else ({nm} is false):")
            rec(int(self.false_child[i]), indent + 1)

        if self.n_nodes:
            rec(0, 0)
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
