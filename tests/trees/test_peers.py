"""Optimal trees against the peers ``osrt`` 0.2.2 and ``pystreed`` 1.4 on the OSRT datasets.

The peer values below were measured by ``benchmarks/bench_trees_peers.py`` run with its
defaults, which time both peers (the current ``benchmarks/results/trees_peers.json`` is a
depth-budget grid against pystreed alone): each peer's objective is recomputed in float64 from
its own predictions on the training data and its own leaf count,

    objective = SSE / SST + lambda * leaves,

on the 0/1 matrices of ``shared/data/osrt/binarized/`` (last column = target), squared loss,
``depth_budget`` 5 (pystreed ``max_depth`` 4, ``cost_complexity`` = lambda; osrt
``minimum_captured_points`` 1, ``k_cluster`` True). The peers are not needed here.

Our tree must never be worse than a peer's (osrt computes in float32: 5e-4 relative; pystreed:
1e-9 relative). Where ours is *lower*, the peer's tree is not optimal, and the test shows why
ours is right: an exhaustive search over all trees (``_exhaustive_objective`` below: plain
numpy dynamic programming over every split at every node, no bounds) gives our value, and our
own search with the k-means bound switched off gives it too. The measured cases where a peer
is beaten beyond rounding:

* pystreed with its default k-means lower bound on ``enb-heat`` (lambda 0.01) and ``sync``
  (lambda 0.1 and 0.05, depth budget 5; the case named in the issue): it returns a tree and
  claims optimality, but its own search with ``regression_lower_bound="equivalent"`` finds the
  better tree that we find;
* pystreed on ``optical`` (lambda 0.01) with either bound: 0.22257140952 against the optimum
  0.22257140894 (2.6e-9 relative; 0.019 in SSE units): a different 5-leaf chain.

``osrt`` never loses beyond its float32 tolerance at these settings (with a 300 s limit it
certified every case; seoul-bike and garments took 39-140 s each over our runs). On
``optical`` it too returns a non-optimal 5-leaf tree (0.222571412, 1.4e-8 relative above the
optimum: below float32 resolution, so inside its tolerance).
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxsr.datasets import shared_data_dir

LAMBDA = 0.01
DEPTH_BUDGET = 5
OSRT_RTOL = 5e-4  # osrt computes in float32
STREED_RTOL = 1e-9

# (dataset stem, lambda): rows, binary features, then each peer's (objective, leaves),
# measured with benchmarks/bench_trees_peers.py (osrt 0.2.2, pystreed 1.4.0).
PEERS = {
    ("airfoil", 0.01): dict(
        rows=1503,
        features=17,
        osrt=(0.834072285082806, 11),
        pystreed=(0.8340722850374608, 11),
        pystreed_equivalent=(0.8340722850374608, 11),
    ),
    ("airquality", 0.01): dict(
        rows=111,
        features=16,
        osrt=(0.26442673667679684, 7),
        pystreed=(0.2644267366767747, 7),
        pystreed_equivalent=(0.2644267366767747, 7),
    ),
    ("enb-cool", 0.01): dict(
        rows=768,
        features=27,
        osrt=(0.13368316233850808, 6),
        pystreed=(0.13368316233824434, 6),
        pystreed_equivalent=(0.13368316233824434, 6),
    ),
    ("enb-heat", 0.01): dict(
        rows=768,
        features=27,
        osrt=(0.13709694518127363, 7),
        pystreed=(0.138085569477434, 6),
        pystreed_equivalent=(0.13709694518116894, 7),
    ),
    ("garments_worker_productivity_binary_threshold_4", 0.01): dict(
        rows=691,
        features=48,
        osrt=(0.3806776145180011, 6),
        pystreed=(0.38067761451620286, 6),
        pystreed_equivalent=(0.38067761451620286, 6),
    ),
    ("insurance", 0.01): dict(
        rows=1338,
        features=16,
        osrt=(0.287362599798316, 8),
        pystreed=(0.2873625997982562, 8),
        pystreed_equivalent=(0.2873625997982562, 8),
    ),
    ("optical", 0.01): dict(
        rows=640,
        features=29,
        osrt=(0.22257141202818942, 5),
        pystreed=(0.22257140951994714, 5),
        pystreed_equivalent=(0.22257140951994714, 5),
    ),
    ("real-estate", 0.01): dict(
        rows=414,
        features=18,
        osrt=(0.48588024482712616, 13),
        pystreed=(0.4858802448270231, 13),
        pystreed_equivalent=(0.4858802448270231, 13),
    ),
    ("seoul-bike", 0.01): dict(
        rows=8760,
        features=32,
        osrt=(0.5294594864090931, 8),
        pystreed=(0.5294594864087155, 8),
        pystreed_equivalent=(0.5294594864087155, 8),
    ),
    ("servo", 0.01): dict(
        rows=167,
        features=15,
        osrt=(0.3537446908557261, 5),
        pystreed=(0.353744690855681, 5),
        pystreed_equivalent=(0.353744690855681, 5),
    ),
    ("sync", 0.01): dict(
        rows=557,
        features=12,
        osrt=(0.11954867383741677, 4),
        pystreed=(0.1195486738345474, 4),
        pystreed_equivalent=(0.1195486738345474, 4),
    ),
    ("yacht", 0.01): dict(
        rows=308,
        features=35,
        osrt=(0.31263859143756423, 3),
        pystreed=(0.3126385914375571, 3),
        pystreed_equivalent=(0.3126385914375571, 3),
    ),
    ("sync", 0.1): dict(
        rows=557,
        features=12,
        osrt=(0.4795486738374168, 4),
        pystreed=(0.5157960157232329, 3),
        pystreed_equivalent=(0.4795486738345474, 4),
    ),
    ("sync", 0.05): dict(
        rows=557,
        features=12,
        osrt=(0.2795486738374168, 4),
        pystreed=(0.3657960157232329, 3),
        pystreed_equivalent=(0.2795486738345474, 4),
    ),
}

# Cases where a peer's tree is beaten beyond rounding (see the module docstring).
PEER_NOT_OPTIMAL = {
    ("enb-heat", 0.01): "pystreed",
    ("optical", 0.01): "pystreed",
    ("sync", 0.1): "pystreed",
    ("sync", 0.05): "pystreed",
}
# The exhaustive search takes 2-25 s on each of these two (48 features; 1833 distinct rows)
# on 2 CPU cores: left out of the suite; osrt (certified) and pystreed agree on them.
NOT_EXHAUSTIVE = {"garments_worker_productivity_binary_threshold_4", "seoul-bike"}
CASES = sorted(PEERS, key=lambda c: (c[1] != LAMBDA, c[0], -c[1]))


def _ids(case):
    return f"{case[0][:20]}-lam{case[1]}"


def _load(name):
    import pandas as pd

    data = shared_data_dir(required=False)
    path = None if data is None else data / "osrt" / "binarized" / f"{name}.csv"
    if path is None or not path.is_file():
        pytest.skip("shared/data/osrt/binarized not found")
    df = pd.read_csv(path)
    X = df.iloc[:, :-1].to_numpy()
    assert np.isin(X, (0, 1)).all()
    return X.astype(np.float64), df.iloc[:, -1].to_numpy(dtype=np.float64)


def _objective(y, pred, leaves, lam):
    """SSE/SST + lam*leaves in float64, from predictions and a leaf count."""
    yc = y - y.mean()
    return float(np.sum((y - pred) ** 2) / (yc @ yc) + lam * leaves)


def _exhaustive_objective(X, y, lam, depth_budget):
    """Minimum of SSE/SST + lam*leaves over ALL trees with at most ``depth_budget - 1``
    split levels on the binary columns of ``X`` (leaves predict their mean).

    Dynamic programming over every support set reachable by a path of splits (as sets of
    equivalence classes of identical rows), trying every feature at every node, no bounds:
    the objective is a sum over leaves, so the best tree on a support is its best leaf or its
    best split into two best subtrees. The last two
    split levels are evaluated for all feature pairs at once with matrix products (counts,
    sums and sums of squares of every (f, g) cell). Splits with an empty side are skipped
    (they only add a leaf).
    """
    X = np.asarray(X, dtype=np.float64)
    yc = np.asarray(y, dtype=np.float64) - np.mean(y)
    sst = float(yc @ yc)
    # Samples with identical feature rows always share a leaf: work on these classes, each
    # with its count, sum and sum of squares of the (centred) target.
    U, inverse = np.unique(X, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    cw = np.bincount(inverse, minlength=len(U)).astype(np.float64)
    cs = np.bincount(inverse, weights=yc, minlength=len(U))
    cq = np.bincount(inverse, weights=yc * yc, minlength=len(U))
    memo: dict = {}

    def leaf(c, s, q):
        with np.errstate(divide="ignore", invalid="ignore"):
            sse = np.where(c > 0, q - s * s / np.where(c > 0, c, 1), 0.0)
        return np.maximum(sse, 0.0) / sst + lam

    def best(S, d):
        idx = np.flatnonzero(S)
        w, sy, qy = cw[idx], cs[idx], cq[idx]
        c, s, q = w.sum(), sy.sum(), qy.sum()
        here = float(leaf(c, s, q))
        if d == 0 or c < 2:
            return here
        key = (S.tobytes(), d)
        if key in memo:
            return memo[key]
        A = U[idx]
        c1, s1, q1 = A.T @ w, A.T @ sy, A.T @ qy
        c0, s0, q0 = c - c1, s - s1, q - q1
        valid = (c1 > 0) & (c0 > 0)
        if d == 1:
            split = np.where(valid, leaf(c1, s1, q1) + leaf(c0, s0, q0), np.inf)
            val = min(here, float(split.min()))
        elif d == 2:
            n11, s11, q11 = A.T @ (A * w[:, None]), A.T @ (A * sy[:, None]), A.T @ (A * qy[:, None])
            n10, s10, q10 = c1[:, None] - n11, s1[:, None] - s11, q1[:, None] - q11
            n01, s01, q01 = c1[None, :] - n11, s1[None, :] - s11, q1[None, :] - q11
            n00, s00, q00 = c0[:, None] - n01, s0[:, None] - s01, q0[:, None] - q01
            one = np.where((n11 > 0) & (n10 > 0), leaf(n11, s11, q11) + leaf(n10, s10, q10), np.inf)
            zero = np.where(
                (n01 > 0) & (n00 > 0), leaf(n01, s01, q01) + leaf(n00, s00, q00), np.inf
            )
            best1 = np.minimum(leaf(c1, s1, q1), one.min(1))
            best0 = np.minimum(leaf(c0, s0, q0), zero.min(1))
            val = min(here, float(np.where(valid, best1 + best0, np.inf).min()))
        else:
            val = here
            for f in np.flatnonzero(valid):
                col = U[:, f] > 0.5
                val = min(val, best(S & col, d - 1) + best(S & ~col, d - 1))
        memo[key] = val
        return val

    return best(np.ones(len(U), dtype=bool), depth_budget - 1)


# ------------------------------------------------------------------ the oracle itself
def test_exhaustive_oracle_matches_brute_force_enumeration():
    """The oracle equals a plain enumeration of every tree (depth budget 3) on random data."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(40, 4)).astype(np.float64)
    y = rng.normal(size=40) + 2 * X[:, 0] * X[:, 1]

    def trees(S, d):  # every tree on support S: yields its objective
        ys = y[S]
        yield float(((ys - ys.mean()) ** 2).sum() / sst + lam)
        if d == 0:
            return
        for f in range(X.shape[1]):
            a, b = S & (X[:, f] > 0.5), S & (X[:, f] < 0.5)
            if a.any() and b.any():
                for va in trees(a, d - 1):
                    for vb in trees(b, d - 1):
                        yield va + vb

    for lam in (0.0, 0.02, 0.3):
        sst = float(((y - y.mean()) ** 2).sum())
        brute = min(trees(np.ones(40, dtype=bool), 2))
        assert _exhaustive_objective(X, y, lam, 3) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in NOT_EXHAUSTIVE], ids=_ids)
def test_peers_against_exhaustive_search(case):
    """Each peer is at or above the true optimum, and equal to it except where measured."""
    name, lam = case
    X, y = _load(name)
    ref = PEERS[case]
    assert X.shape == (ref["rows"], ref["features"])
    best = _exhaustive_objective(X, y, lam, DEPTH_BUDGET)
    for peer, rtol in (
        ("osrt", OSRT_RTOL),
        ("pystreed", STREED_RTOL),
        ("pystreed_equivalent", STREED_RTOL),
    ):
        value = ref[peer][0]
        assert value >= best * (1 - 1e-12), (peer, value, best)
        beaten = value > best * (1 + rtol)
        expected = PEER_NOT_OPTIMAL.get(case) == peer or (
            peer == "pystreed_equivalent" and case == ("optical", 0.01)
        )
        assert beaten == expected, (peer, value, best)


# ------------------------------------------------------------------ our trees
@pytest.fixture(scope="module")
def Regressor():
    from jaxsr.trees import OptimalTreeRegressor

    return OptimalTreeRegressor


def _fit(Regressor, X, y, lam, **extra):
    wanted = {
        "regularization": lam,
        "depth_budget": DEPTH_BUDGET,
        "loss": "squared_error",
        "binarizer": None,
        **extra,
    }
    model = Regressor(**wanted).fit(X, y)
    pred = np.asarray(model.predict(X), dtype=np.float64)
    leaves = int(model.n_leaves_)
    # The objective is that of a real tree: at most `leaves` distinct predictions, each the
    # mean of the samples it is predicted for (so SSE/SST is that partition's loss).
    values = np.unique(pred)
    assert values.size <= leaves
    for v in values:
        np.testing.assert_allclose(y[pred == v].mean(), v, rtol=1e-9, atol=1e-12)
    return model, _objective(y, pred, leaves, lam)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["auto", "jax"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_never_worse_than_the_peers(Regressor, case, backend):
    """Both search backends ('auto' is the numpy host kernels on a CPU)."""
    name, lam = case
    X, y = _load(name)
    ref = PEERS[case]
    model, ours = _fit(Regressor, X, y, lam, backend=backend)
    assert model.optimal_, f"{name}: no certificate (lower bound {model.lower_bound_})"
    assert ours <= ref["osrt"][0] * (1 + OSRT_RTOL), (ours, ref["osrt"])
    assert ours <= ref["pystreed"][0] * (1 + STREED_RTOL), (ours, ref["pystreed"])
    assert ours <= ref["pystreed_equivalent"][0] * (1 + STREED_RTOL)
    np.testing.assert_allclose(model.objective_, ours, rtol=1e-9)
    if case in PEER_NOT_OPTIMAL:
        # Ours is lower than that peer's: it must be the true optimum.
        peer = PEER_NOT_OPTIMAL[case]
        assert ours < ref[peer][0] * (1 - STREED_RTOL)
        assert ours == pytest.approx(_exhaustive_objective(X, y, lam, DEPTH_BUDGET), rel=1e-10)


@pytest.mark.parametrize("case", sorted(PEER_NOT_OPTIMAL), ids=_ids)
def test_where_a_peer_loses_our_search_without_kmeans_bound_agrees(Regressor, case):
    """Switching our k-means bound off (the bound that misleads pystreed) changes nothing."""
    from jaxsr.trees.search import ALL_BOUNDS

    name, lam = case
    X, y = _load(name)
    _, with_kmeans = _fit(Regressor, X, y, lam)
    _, without = _fit(Regressor, X, y, lam, bounds=tuple(b for b in ALL_BOUNDS if b != "kmeans"))
    assert without == pytest.approx(with_kmeans, rel=1e-12)
    assert with_kmeans == pytest.approx(PEERS[case]["pystreed_equivalent"][0], rel=1e-8)
