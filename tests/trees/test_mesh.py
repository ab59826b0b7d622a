"""The tree search's batched device calls sharded over the class axis of a device mesh
equal one device's.

``tests/conftest.py`` gives JAX four CPU devices, so this runs on any machine exactly as on
a multi-GPU node: the class rows, their statistics and the supports' mask columns are split
over the mesh with ``NamedSharding`` and XLA inserts the cross-device sums.
"""

import jax
import numpy as np
import pytest
from jax.sharding import Mesh
from oracles import kmeans_losses_np  # same folder (pytest prepends it to sys.path)

from jaxsr.trees import OptimalTreeRegressor
from jaxsr.trees.bounds import kmeans_bound
from jaxsr.trees.device import DeviceBatcher
from jaxsr.trees.losses import STAT_E, STAT_Q, STAT_S, STAT_W
from jaxsr.trees.problem import exact_subtree
from jaxsr.trees.search import OptimalTreeSearch


@pytest.fixture(scope="module")
def mesh():
    devices = jax.devices("cpu")
    if len(devices) < 4:
        pytest.skip("needs 4 CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=4)")
    return Mesh(np.array(devices[:4]), ("classes",))


def _data(seed=7, n=90, M=6):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, M))
    y = np.round(rng.normal(size=n) + 2.0 * X[:, 0] - 1.5 * X[:, 1] * X[:, 2], 2)
    w = rng.integers(1, 4, size=n).astype(float)
    return X, y, w


def test_sharded_kernels_equal_the_host_kernels(mesh):
    """Exact subtrees and k-means bounds of a batch of random supports, evaluated by the
    sharded DeviceBatcher, equal the host (numpy) kernels of the search: the same costs up
    to the order of the float64 sums. The shapes (one split level, 12 supports: the root's children)
    are those of the estimator fit below, which so compiles nothing new."""
    X, y, w = _data()
    s = OptimalTreeSearch(X, y, w, regularization=0.01, depth_budget=4).problem
    dev = DeviceBatcher(
        s.Xc, s.st4, s.korder, s.lam, s.norm, s.m1, mean=s.cls_mean, E=s.stats[:, STAT_E], mesh=mesh
    )
    assert dev.Up % (64 * 4) == 0 and dev.X.sharding.spec[0] in ("classes", ("classes",))
    rng = np.random.default_rng(1)
    masks = rng.random((12, s.U)) < 0.6
    masks[0] = True  # the root support
    costs, _, _ = dev.subtrees(masks, 1, centre=0.1)
    host = [exact_subtree(s, m, 1)[0] for m in masks]
    np.testing.assert_allclose(costs, host, rtol=1e-12, atol=1e-15)
    lbs, _ = dev.kmeans_bounds(masks, 4, 2)
    for m, lb in zip(masks, lbs, strict=True):
        sel = s.korder[m[s.korder]]
        st = s.stats[sel]
        losses = kmeans_losses_np(st[:, STAT_W], st[:, STAT_S], st[:, STAT_Q], 4)
        assert lb == pytest.approx(kmeans_bound(losses, s.lam, s.norm, 2), rel=1e-12, abs=1e-15)


def test_estimator_on_a_mesh_finds_the_host_optimum(mesh):
    X, y, w = _data(seed=11)
    params = dict(regularization=0.005, depth_budget=3, exact_levels=1)
    host = OptimalTreeRegressor(backend="numpy", **params).fit(X, y, sample_weight=w)
    sharded = OptimalTreeRegressor(mesh=mesh, **params).fit(X, y, sample_weight=w)
    assert sharded._resolve_backend() == "jax"
    assert sharded.n_subproblems_ > 1  # a search, not one kernel call
    assert sharded.optimal_ and host.optimal_
    assert sharded.objective_ == pytest.approx(host.objective_, rel=1e-9)
    np.testing.assert_allclose(sharded.predict(X), host.predict(X), rtol=1e-12)
    assert sharded.to_dict()["params"]["mesh"] is None  # a Mesh object is not JSON


def test_mesh_parameter_errors():
    X, y, _ = _data(n=20)
    with pytest.raises(ValueError, match="mesh must be None, 'all' or a jax.sharding.Mesh"):
        OptimalTreeRegressor(mesh="gpus").fit(X, y)
    with pytest.raises(ValueError, match="backend='numpy' runs on the host only"):
        OptimalTreeRegressor(mesh="all", backend="numpy").fit(X, y)
