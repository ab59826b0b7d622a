"""Pictures of a fitted tree: :func:`plot_tree` (matplotlib) and :func:`export_graphviz` (dot).

Both draw the same boxes as :meth:`Tree.export_text` writes lines: a split node shows its
test (the binary feature, e.g. ``"x3 <= 4.5"``) and how many training samples reach it; a
leaf shows its prediction and its samples. The edge to the child where the test holds is
labelled ``true``, the other ``false``, as in the OSRT paper's figures.

matplotlib is imported only by :func:`plot_tree`; :func:`export_graphviz` needs nothing (it
returns the dot source; render it with graphviz, e.g. ``dot -Tpng tree.dot -o tree.png``).
"""

from __future__ import annotations

import numpy as np

from .tree import Tree

__all__ = ["export_graphviz", "plot_tree"]


def _tree_and_names(model, feature_names):
    """The :class:`Tree` of ``model`` (a fitted OptimalTreeRegressor, or a Tree) and the names
    of its binary features."""
    if isinstance(model, Tree):
        tree, names = model, model.feature_names
    else:
        if getattr(model, "tree_", None) is None:
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"this {type(model).__name__} is not fitted yet; call "
                "fit(X, y) before drawing its tree"
            )
        tree = model.tree_
        names = getattr(model, "binary_feature_names_", None) or tree.feature_names
    if feature_names is not None:
        names = [str(n) for n in feature_names]
        used = tree.feature[tree.feature >= 0]
        if used.size and int(used.max()) >= len(names):
            raise ValueError(
                f"feature_names has {len(names)} names, but the tree splits on "
                f"binary feature {int(used.max())} (0-based)"
            )
    return tree, names


def _labels(tree: Tree, names, decimals: int, show_counts: bool) -> list[str]:
    """One label per node, two lines: the test or the prediction, then the samples."""
    tree.format_value(0.0, decimals)  # checks decimals
    out = []
    for i in range(tree.n_nodes):
        count = f"\nn = {int(tree.n_samples[i])}" if show_counts else ""
        if tree.feature[i] >= 0:
            out.append(tree.condition(i, names) + count)
        else:
            out.append(f"predict {tree.format_value(tree.value[i], decimals)}" + count)
    return out


def _layout(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """``(x, depth)`` of every node: leaves at 0, 1, 2, ... from left (true side) to right,
    a split centred over its two children, depth 0 at the root."""
    x = np.zeros(tree.n_nodes)
    depth = np.zeros(tree.n_nodes, dtype=int)
    next_leaf = 0
    # depth-first with an explicit stack (no recursion: a tree of any depth): a node is
    # visited once going down (leaves get their x) and once more after both children
    # (a split is centred over them)
    stack: list[tuple[int, int, bool]] = [(0, 0, False)] if tree.n_nodes else []
    while stack:
        i, d, done = stack.pop()
        t, f = int(tree.true_child[i]), int(tree.false_child[i])
        if done:
            x[i] = 0.5 * (x[t] + x[f])
            continue
        depth[i] = d
        if tree.feature[i] < 0:
            x[i] = next_leaf
            next_leaf += 1
            continue
        stack += [(i, d, True), (f, d + 1, False), (t, d + 1, False)]
    return x, depth


def _leaf_colours(tree: Tree) -> dict[int, tuple[float, float, float]]:
    """A fill colour per leaf: light to dark orange with the prediction (as scikit-learn's
    ``filled=True`` shades regression leaves)."""
    leaves = np.flatnonzero(tree.feature < 0)
    v = tree.value[leaves]
    lo, hi = float(np.min(v)), float(np.max(v))
    out = {}
    for i, val in zip(leaves, v, strict=True):
        a = 0.0 if hi == lo else (float(val) - lo) / (hi - lo)
        a = 0.15 + 0.7 * a
        out[int(i)] = (1.0 - a * (1.0 - 0.898), 1.0 - a * (1.0 - 0.506), 1.0 - a * (1.0 - 0.188))
    return out


_CHAR_WIDTH = 0.56  # width of a character of matplotlib's default font, in font sizes
_LINE_HEIGHT = 1.25  # height of a line of text, in font sizes
_BOX_PAD = 0.4  # the boxes' padding (``boxstyle="round,pad=0.4"``), in font sizes


def figure_size(labels, n_leaves: int, levels: int, fontsize: float) -> tuple[float, float]:
    """``(width, height)`` in inches of a figure in which :func:`plot_tree`'s boxes do not
    overlap: leaves sit one layout unit apart and levels one unit apart, so a unit must be
    wider than the widest box (its longest line) and taller than twice the tallest box
    (room for the edge labels between levels); at least matplotlib's default 6.4 x 4.8.

    Args:
      labels: the boxes' texts (lines separated by ``\n``).
      n_leaves: leaves of the tree (layout units across).
      levels: levels of the tree (layout units down).
      fontsize: the boxes' font size in points.
    """
    pt = fontsize / 72.0  # inches per font size
    chars = max((len(line) for text in labels for line in text.split("\n")), default=1)
    lines = max((text.count("\n") + 1 for text in labels), default=1)
    unit_w = (chars * _CHAR_WIDTH + 2 * _BOX_PAD) * pt * 1.1
    unit_h = (lines * _LINE_HEIGHT + 2 * _BOX_PAD) * pt * 2.2
    return max(6.4, unit_w * (n_leaves + 0.2)), max(4.8, unit_h * levels)


def plot_tree(
    model,
    ax=None,
    *,
    feature_names=None,
    decimals: int = 4,
    show_counts: bool = True,
    filled: bool = True,
    fontsize: float | None = None,
):
    """Draw a fitted tree with matplotlib.

    Args:
      model: a fitted :class:`~jaxsr.trees.OptimalTreeRegressor`, or a
        :class:`~jaxsr.trees.Tree`.
      ax: the ``matplotlib.axes.Axes`` to draw on. Default: the current figure's axes; a
        new (empty) figure is first resized by :func:`figure_size` so that no two boxes
        overlap, up to dozens of leaves.
      feature_names: names of the binary features (default: the model's, e.g.
        ``"x3 <= 4.5"``).
      decimals: digits after the decimal point of the leaf predictions.
      show_counts: add ``n = samples`` to every box.
      filled: shade the leaves by their prediction.
      fontsize: text size in points (default: smaller for bigger trees).

    Returns:
      A list of ``n_nodes`` ``matplotlib.text.Text`` boxes in node (pre-order) order; the
      edge labels ``true``/``false`` are further texts on ``ax``.

    Raises:
      ImportError: matplotlib is not installed.
      sklearn.exceptions.NotFittedError: ``model`` is not fitted (a ``ValueError``).
      ValueError: ``feature_names`` too short, ``decimals`` not an integer >= 0.

    Example:
      >>> import matplotlib
      >>> matplotlib.use("Agg")
      >>> import numpy as np
      >>> from jaxsr.trees import OptimalTreeRegressor, plot_tree
      >>> X = np.array([[0], [1]] * 5); y = np.array([1.0, 5.0] * 5)
      >>> m = OptimalTreeRegressor(regularization=0.01, depth_budget=2).fit(X, y)
      >>> [t.get_text() for t in plot_tree(m)]
      ['x1 == 1\\nn = 10', 'predict 5.0000\\nn = 5', 'predict 1.0000\\nn = 5']
    """
    tree, names = _tree_and_names(model, feature_names)
    labels = _labels(tree, names, decimals, show_counts)
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is a test dependency
        raise ImportError("plot_tree needs matplotlib: pip install matplotlib") from err
    x, depth = _layout(tree)
    n_leaves = max(tree.n_leaves, 1)
    levels = int(depth.max()) + 1 if tree.n_nodes else 1
    if fontsize is None:
        fontsize = float(np.clip(13.0 - 0.6 * n_leaves, 6.0, 11.0))
    if ax is None:
        fig = plt.gcf()
        if not fig.axes:  # a new figure: sized so that no two boxes overlap
            fig.set_size_inches(*figure_size(labels, n_leaves, levels, fontsize))
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0)) if not fig.axes else plt.gca()
    y = -depth.astype(float)
    colours = _leaf_colours(tree) if filled else {}
    for i in range(tree.n_nodes):
        if tree.feature[i] < 0:
            continue
        for child, word in ((int(tree.true_child[i]), "true"), (int(tree.false_child[i]), "false")):
            ax.plot([x[i], x[child]], [y[i], y[child]], color="0.45", lw=1.0, zorder=1)
            ax.text(
                0.5 * (x[i] + x[child]),
                0.5 * (y[i] + y[child]),
                word,
                ha="center",
                va="center",
                fontsize=0.85 * fontsize,
                color="0.3",
                zorder=2,
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.9},
            )
    boxes = []
    for i in range(tree.n_nodes):
        fc = colours.get(i, "white")
        boxes.append(
            ax.text(
                x[i],
                y[i],
                labels[i],
                ha="center",
                va="center",
                fontsize=fontsize,
                zorder=3,
                bbox={"boxstyle": "round,pad=0.4", "fc": fc, "ec": "0.2", "lw": 0.8},
            )
        )
    ax.set_xlim(-0.6, n_leaves - 0.4)
    ax.set_ylim(-(levels - 1) - 0.5, 0.5)
    ax.set_axis_off()
    return boxes


def _dot_quote(text: str) -> str:
    """A dot string literal: backslashes and quotes escaped, newlines as ``\\n``."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def export_graphviz(
    model, *, feature_names=None, decimals: int = 4, show_counts: bool = True, filled: bool = True
) -> str:
    """The tree as graphviz dot source (a ``str``; graphviz itself is not needed).

    One node statement per tree node, named by its pre-order index (``0`` is the root),
    labelled as :func:`plot_tree` labels it; one edge per parent-child pair, labelled
    ``true`` (the test holds) or ``false``. Render with ``dot -Tsvg tree.dot > tree.svg`` or
    ``graphviz.Source(text)``.

    Args:
      model: a fitted :class:`~jaxsr.trees.OptimalTreeRegressor`, or a
        :class:`~jaxsr.trees.Tree`.
      feature_names: as in :func:`plot_tree`.
      decimals: as in :func:`plot_tree`.
      show_counts: as in :func:`plot_tree`.
      filled: as in :func:`plot_tree`.

    Returns:
      The dot source, ``digraph Tree { ... }``.

    Raises:
      sklearn.exceptions.NotFittedError: ``model`` is not fitted (a ``ValueError``).
      ValueError: ``feature_names`` too short, ``decimals`` not an integer >= 0.

    Example:
      >>> import numpy as np
      >>> from jaxsr.trees import OptimalTreeRegressor, export_graphviz
      >>> X = np.array([[0], [1]] * 5); y = np.array([1.0, 5.0] * 5)
      >>> m = OptimalTreeRegressor(regularization=0.01, depth_budget=2).fit(X, y)
      >>> print(export_graphviz(m, filled=False))
      digraph Tree {
      node [shape=box, style="rounded", fontname="helvetica"];
      edge [fontname="helvetica"];
      0 [label="x1 == 1\\nn = 10"];
      1 [label="predict 5.0000\\nn = 5"];
      2 [label="predict 1.0000\\nn = 5"];
      0 -> 1 [label="true"];
      0 -> 2 [label="false"];
      }
    """
    tree, names = _tree_and_names(model, feature_names)
    labels = _labels(tree, names, decimals, show_counts)
    colours = _leaf_colours(tree) if filled else {}
    style = '"rounded, filled"' if filled else '"rounded"'
    lines = [
        "digraph Tree {",
        f'node [shape=box, style={style}, fontname="helvetica"'
        + (', fillcolor="#ffffff"' if filled else "")
        + "];",
        'edge [fontname="helvetica"];',
    ]
    for i in range(tree.n_nodes):
        extra = ""
        if i in colours:
            r, g, b = (round(255 * c) for c in colours[i])
            extra = f', fillcolor="#{r:02x}{g:02x}{b:02x}"'
        lines.append(f"{i} [label={_dot_quote(labels[i])}{extra}];")
    for i in range(tree.n_nodes):
        if tree.feature[i] >= 0:
            lines.append(f'{i} -> {int(tree.true_child[i])} [label="true"];')
            lines.append(f'{i} -> {int(tree.false_child[i])} [label="false"];')
    lines.append("}")
    return "\n".join(lines)
