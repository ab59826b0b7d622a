"""Pictures and text of a fitted tree: plot_tree (matplotlib, Agg), export_graphviz (dot source,
parsed structurally; graphviz is not needed) and export_text (one line per split)."""

import doctest
import re

import numpy as np
import pandas as pd
import pytest

from jaxsr.trees import Binarizer, OptimalTreeRegressor, Tree, export_graphviz, plot_tree
from jaxsr.trees import plot as plot_module


@pytest.fixture(scope="module")
def shop():
    """The optimal tree has 3 leaves: temperature first, then the city on the warm side."""
    rng = np.random.default_rng(0)
    n = 120
    temp = rng.integers(0, 40, n).astype(float)
    city = np.where(rng.uniform(size=n) < 0.5, "north", "south")
    y = np.where(temp <= 20, 1.0, np.where(city == "north", 5.0, 9.0))
    y = y + rng.normal(0, 0.01, n)
    df = pd.DataFrame({"temp C": temp, "city": city})
    m = OptimalTreeRegressor(
        regularization=0.01, depth_budget=3, binarizer=Binarizer(strategy="midpoints")
    ).fit(df, y)
    assert m.optimal_ and m.n_leaves_ == 3
    return m


def _splits(tree):
    return [i for i in range(tree.n_nodes) if tree.feature[i] >= 0]


def test_export_text_one_line_per_split_and_decimal_places(shop):
    tree = shop.tree_
    text = shop.export_text()
    lines = text.splitlines()
    splits = _splits(tree)
    # one line per node plus one "else" line per split; no condition is written twice
    assert len(lines) == tree.n_nodes + len(splits)
    conditions = [tree.condition(i) for i in splits]
    assert [
        ln.split("|--- ")[1] for ln in lines if not ln.endswith("else") and "predict" not in ln
    ] == conditions
    assert sum(ln.endswith("|--- else") for ln in lines) == len(splits)
    assert conditions[0] == "temp C <= 20.5"
    assert conditions[1].startswith("city == ")
    # the leaves in pre-order, with 4 (default) or 2 decimal places, as scikit-learn
    leaves = [i for i in range(tree.n_nodes) if tree.feature[i] < 0]
    got = [ln.split("predict ")[1] for ln in lines if "predict" in ln]
    assert got == [f"{tree.value[i]:.4f}  (n = {tree.n_samples[i]})" for i in leaves]
    two = [
        ln.split("predict ")[1].split()[0]
        for ln in shop.export_text(decimals=2).splitlines()
        if "predict" in ln
    ]
    assert two == [f"{tree.value[i]:.2f}" for i in leaves]


def test_export_text_decimals_mean_decimal_places_not_significant_digits():
    t = Tree(
        feature=np.array([0, -1, -1]),
        true_child=np.array([1, -1, -1]),
        false_child=np.array([2, -1, -1]),
        value=np.array([0.0, 123.456, -0.0001]),
        n_samples=np.array([4, 2, 2]),
        weight=np.ones(3) * 2,
        loss=np.zeros(3),
        feature_names=["hot"],
    )
    assert t.export_text(decimals=2, show_counts=False) == (
        "|--- hot == 1\n|   |--- predict 123.46\n|--- else\n|   |--- predict 0.00"
    )
    assert "predict 123\n" in t.export_text(decimals=0, show_counts=False) + "\n"
    with pytest.raises(ValueError, match="decimals"):
        t.export_text(decimals=-1)
    with pytest.raises(ValueError, match="decimals"):
        export_graphviz(t, decimals=1.5)


def test_plot_tree_draws_every_node_and_edge(shop):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tree = shop.tree_
    fig, ax = plt.subplots()
    try:
        boxes = plot_tree(shop, ax=ax)
        splits = _splits(tree)
        assert len(boxes) == tree.n_nodes
        assert all(b.axes is ax for b in boxes)
        # every node box says what export_text says; edges are labelled true / false
        for i, b in enumerate(boxes):
            first, second = b.get_text().split("\n")
            if tree.feature[i] >= 0:
                assert first == tree.condition(i)
            else:
                assert first == f"predict {tree.value[i]:.4f}"
            assert second == f"n = {tree.n_samples[i]}"
        words = [t.get_text() for t in ax.texts if t not in boxes]
        assert sorted(words) == sorted(["true", "false"] * len(splits))
        assert len(ax.lines) == 2 * len(splits)
        # children sit below their parent, the true child to the left
        for i in splits:
            (xp, yp), (xt, yt), (xf, yf) = (
                boxes[j].get_position() for j in (i, tree.true_child[i], tree.false_child[i])
            )
            assert yt < yp and yf < yp and xt < xp < xf
        fig.canvas.draw()  # renders without error
        # default axes, no counts, no fill
        plt.figure()
        boxes = plot_tree(shop, show_counts=False, filled=False, decimals=1)
        assert boxes[0].axes is plt.gca()
        assert [b.get_text() for b in boxes if "predict" in b.get_text()] == [
            f"predict {tree.value[i]:.1f}" for i in range(tree.n_nodes) if tree.feature[i] < 0
        ]
    finally:
        plt.close("all")


_NODE = re.compile(r'^(\d+) \[label="((?:[^"\\]|\\.)*)"(?:, fillcolor="#[0-9a-f]{6}")?\];$')
_EDGE = re.compile(r'^(\d+) -> (\d+) \[label="(true|false)"\];$')


def _unescape(s):
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s)


@pytest.mark.parametrize("filled", [True, False])
def test_export_graphviz_parses_into_the_tree(shop, filled):
    tree = shop.tree_
    dot = export_graphviz(shop, filled=filled)
    lines = dot.splitlines()
    assert lines[0] == "digraph Tree {" and lines[-1] == "}"
    assert dot.count("{") == dot.count("}") == 1 and dot.count('"') % 2 == 0
    body = lines[3:-1]
    nodes = [m for m in map(_NODE.match, body) if m]
    edges = [m for m in map(_EDGE.match, body) if m]
    assert len(nodes) + len(edges) == len(body)  # nothing else in the body
    assert [int(m.group(1)) for m in nodes] == list(range(tree.n_nodes))
    labels = [_unescape(m.group(2)) for m in nodes]
    assert labels == [b.get_text() for b in _boxes_without_drawing(shop)]
    splits = _splits(tree)
    got = {(int(m.group(1)), m.group(3)): int(m.group(2)) for m in edges}
    want = {(i, "true"): int(tree.true_child[i]) for i in splits}
    want.update({(i, "false"): int(tree.false_child[i]) for i in splits})
    assert got == want and len(edges) == 2 * len(splits)
    assert ("fillcolor" in dot) == filled
    # names with quotes, backslashes and newlines survive the escaping
    names = [f'{n} "q"\\ {{x}}' for n in shop.binary_feature_names_]
    dot = export_graphviz(shop, feature_names=names, filled=filled)
    nodes = [m for m in map(_NODE.match, dot.splitlines()) if m]
    assert len(nodes) == tree.n_nodes
    assert _unescape(nodes[0].group(2)) == f"{names[tree.feature[0]]}\nn = {tree.n_samples[0]}"


def _boxes_without_drawing(model):
    return [
        type("T", (), {"get_text": lambda self, s=s: s})()
        for s in plot_module._labels(model.tree_, model.binary_feature_names_, 4, True)
    ]


def test_errors_and_docstring_examples():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        export_graphviz(OptimalTreeRegressor())
    with pytest.raises(NotFittedError):
        plot_tree(OptimalTreeRegressor())
    m = OptimalTreeRegressor(depth_budget=2).fit(np.array([[0], [1]] * 4), [1.0, 2.0] * 4)
    with pytest.raises(ValueError, match="feature_names has 0 names"):
        export_graphviz(m, feature_names=[])
    assert "wet == 1" in export_graphviz(m, feature_names=["wet"])
    pytest.importorskip("matplotlib").use("Agg")
    import matplotlib.pyplot as plt

    try:
        result = doctest.testmod(plot_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    finally:
        plt.close("all")
    assert result.attempted >= 2 and result.failed == 0


def _tree_with_leaves(n_leaves):
    """A tree of ``n_leaves`` leaves (every leaf split in turn, breadth first), with long
    feature names and 4-digit predictions, in pre-order arrays."""
    children = {0: None}
    queue, next_id = [0], 1
    while len(children) - sum(1 for c in children.values() if c) < n_leaves:
        node = queue.pop(0)
        children[node] = (next_id, next_id + 1)
        children[next_id] = children[next_id + 1] = None
        queue += [next_id, next_id + 1]
        next_id += 2
    order, stack = [], [0]
    while stack:  # pre-order
        node = stack.pop()
        order.append(node)
        if children[node]:
            stack += [children[node][1], children[node][0]]
    pos = {node: k for k, node in enumerate(order)}
    n = len(order)
    feature, t, f = (np.full(n, -1) for _ in range(3))
    for node, ch in children.items():
        if ch:
            feature[pos[node]] = pos[node] % 7
            t[pos[node]], f[pos[node]] = pos[ch[0]], pos[ch[1]]
    names = [f"sensor reading {j} <= {1234.5678 * (j + 1):.4f}" for j in range(7)]
    return Tree(
        feature=feature,
        true_child=t,
        false_child=f,
        value=np.linspace(-1234.5, 9876.5, n),
        n_samples=np.full(n, 1000),
        weight=np.full(n, 1000.0),
        loss=np.zeros(n),
        feature_names=names,
    )


@pytest.mark.parametrize("n_leaves", [3, 15, 31])
def test_plot_tree_at_the_default_size_draws_no_box_over_another(n_leaves, tmp_path):
    """A new figure is sized to the tree: no two node boxes overlap, none is cut off."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tree = _tree_with_leaves(n_leaves)
    assert tree.n_leaves == n_leaves
    try:
        plt.figure()
        boxes = plot_tree(tree)
        fig = plt.gcf()
        fig.savefig(tmp_path / f"tree_{n_leaves}.png")
        renderer = fig.canvas.get_renderer()
        rects = [b.get_bbox_patch().get_window_extent(renderer) for b in boxes]
        figure = fig.bbox
        for k, r in enumerate(rects):
            assert figure.x0 <= r.x0 and r.x1 <= figure.x1, k  # not cut off
            assert figure.y0 <= r.y0 and r.y1 <= figure.y1, k
            for q in rects[k + 1 :]:
                assert not r.overlaps(q)
        w, h = fig.get_size_inches()
        levels = len({b.get_position()[1] for b in boxes})
        assert (w, h) == plot_module.figure_size(
            [b.get_text() for b in boxes], n_leaves, levels, boxes[0].get_fontsize()
        )
    finally:
        plt.close("all")
