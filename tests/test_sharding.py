"""The functional kernels sharded over samples on 4 CPU devices equal the 1-device results.

``tests/conftest.py`` sets ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` before JAX
starts, so these run on any machine. The inputs are placed with ``NamedSharding`` over a
1-D mesh named ``samples``; XLA inserts the cross-device reductions.
"""

import importlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxsr import datasets


def _kernels(module: str, *names: str):
    mod = importlib.import_module(module)
    return [getattr(mod, n) for n in names]


@pytest.fixture(scope="module")
def mesh():
    devices = jax.devices("cpu")
    if len(devices) < 4:
        pytest.skip("needs 4 CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=4)")
    return Mesh(np.array(devices[:4]), ("samples",))


def _assert_same(single, sharded, rtol):
    single, sharded = np.asarray(single), np.asarray(sharded)
    assert single.shape == sharded.shape
    np.testing.assert_array_equal(np.isfinite(single), np.isfinite(sharded))
    fin = np.isfinite(single)
    np.testing.assert_allclose(sharded[fin], single[fin], rtol=rtol, atol=0)


def test_symbolic_kernels_sharded_over_samples(mesh):
    (Expression, node_semantics, node_equations, forbidden_sets, constant_variable_search) = (
        _kernels(
            "jaxsr.symbolic",
            "Expression",
            "node_semantics",
            "node_equations",
            "forbidden_sets",
            "constant_variable_search",
        )
    )
    X, y = datasets.make_newton_gravitation(1000, seed=0)  # N divisible by 4
    # iteration 2 of the paper's Table 3, with a division so that S is not trivial
    tree = Expression.parse("(434063.5718753305 * x2) / x3", ["x1", "x2", "x3"]).padded()
    n_slots = max(1, int(np.max(tree.n_slots)))
    cap = tree.op.shape[0]
    no_limit = 2**30

    def kernels(XT, y):
        sem = node_semantics(tree, XT)
        eqs = node_equations(tree, sem, y)
        S = forbidden_sets(tree, sem, n_slots)
        nodes = jnp.ones((cap,), bool)
        pool = jnp.ones((XT.shape[0],), bool)
        cv_red, cv_k = constant_variable_search(
            tree, sem, eqs, S, XT, nodes, pool, no_limit, no_limit
        )
        return sem, eqs.a, eqs.b, eqs.c, eqs.d, S, cv_red, cv_k

    XT = np.ascontiguousarray(X.T)
    single = kernels(jnp.asarray(XT), jnp.asarray(y))
    XT_s = jax.device_put(XT, NamedSharding(mesh, P(None, "samples")))
    y_s = jax.device_put(y, NamedSharding(mesh, P("samples")))
    sharded = kernels(XT_s, y_s)

    # really spread over the 4 devices, sample axis split
    assert len(sharded[0].sharding.device_set) == 4
    assert sharded[0].addressable_shards[0].data.shape == (cap, 250)
    for a, b in zip(single[:6], sharded[:6], strict=True):  # per-sample values: same ops
        _assert_same(a, b, rtol=1e-15)
    for a, b in zip(single[6:], sharded[6:], strict=True):  # means over samples: summation order
        _assert_same(a, b, rtol=1e-9)
    # the winner of the constant-variable search is the paper's iteration 3 (the constant
    # becomes k * x1), on both layouts
    red, red_s = np.asarray(single[6]), np.asarray(sharded[6])
    best = np.unravel_index(np.argmax(np.where(np.isfinite(red), red, -np.inf)), red.shape)
    best_s = np.unravel_index(np.argmax(np.where(np.isfinite(red_s), red_s, -np.inf)), red.shape)
    assert best == best_s
    # pre-order: 0 "/", 1 "*", 2 the constant 434063.57..., 3 x2, 4 x3; the constant
    # becoming k * x1 (variable 0, operator index 2) is the best change
    assert tuple(int(i) for i in best) == (2, 0, 2)


def test_tree_kernels_sharded_over_classes(mesh):
    leaf_statistics, kmeans_lower_bound = _kernels(
        "jaxsr.trees", "leaf_statistics", "kmeans_lower_bound"
    )
    rng = np.random.default_rng(0)
    U, M = 256, 12  # equivalence classes x binary features
    features = rng.integers(0, 2, size=(U, M)).astype(np.float64)
    W = rng.integers(1, 5, size=U).astype(np.float64)
    mean = np.sort(rng.normal(size=U) * 3.0)
    S = W * mean
    Q = W * mean**2 + rng.uniform(0, 1, size=U)  # some spread inside each class
    E = Q - S**2 / W
    stats = np.column_stack([W, S, Q, E, W, np.ones(U)])
    mask = rng.uniform(size=U) < 0.7

    def kernels(features, stats, mask, W, S, Q):
        true_stats, total = leaf_statistics(features, stats, mask)
        lb = kmeans_lower_bound(W, S, Q, mask, 0.01, 8, normalizer=float(np.sum(E) + 1.0))
        return true_stats, total, lb

    single = kernels(*map(jnp.asarray, (features, stats, mask, W, S, Q)))
    rows = NamedSharding(mesh, P("samples"))
    sharded = kernels(
        jax.device_put(features, NamedSharding(mesh, P("samples", None))),
        jax.device_put(stats, NamedSharding(mesh, P("samples", None))),
        *(jax.device_put(a, rows) for a in (mask, W, S, Q)),
    )
    for a, b in zip(single, sharded, strict=True):
        _assert_same(a, b, rtol=1e-12)
    # and against plain numpy: the "true" child of every split
    m = mask.astype(np.float64)[:, None]
    np.testing.assert_allclose(np.asarray(sharded[0]), features.T @ (stats * m), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(sharded[1]), (stats * m).sum(axis=0), rtol=1e-12)


def test_symbolic_regressor_on_a_mesh_equals_one_device(mesh):
    from jaxsr import SymbolicRegressor

    X, y = datasets.make_newton_gravitation(1000, seed=0)
    X, y = X[:201], y[:201]  # padded to the first bucket (256 rows: 64 per device)
    # the greedy search and the default beam (which orders trees whose MSEs agree to 12
    # digits, e.g. x1*x2 and x2*x1 summed in another order over devices, by their text)
    for params in (
        dict(strategy=1, beam_width=1, max_nodes=9, max_iterations=4),
        dict(max_nodes=9, max_iterations=4),
    ):
        _mesh_equals_one_device(X, y, params, mesh)
    with pytest.raises(ValueError, match="mesh"):
        SymbolicRegressor(mesh="gpu", max_iterations=1).fit(X, y)


def _mesh_equals_one_device(X, y, params, mesh):
    from jaxsr import SymbolicRegressor

    one = SymbolicRegressor(**params).fit(X, y)
    for m in ("all", mesh):
        many = SymbolicRegressor(mesh=m, **params).fit(X, y)
        np.testing.assert_array_equal(many.expression_tree_.op, one.expression_tree_.op)
        np.testing.assert_allclose(
            many.expression_tree_.value, one.expression_tree_.value, rtol=1e-9
        )
        assert [h["search"] for h in many.history_] == [h["search"] for h in one.history_]
        # the last change recovers Newton's law: both MSEs are rounding (1e-32 of y**2)
        np.testing.assert_allclose(many.mse_, one.mse_, rtol=1e-9, atol=1e-12 * np.var(y))
        np.testing.assert_allclose(many.predict(X), one.predict(X), rtol=1e-9)


# ---------------------------------------------------------------- the sample axis holds
def _full_sample_arrays(hlo: str, n: int) -> list[str]:
    """The instructions of a compiled (partitioned, per-device) HLO module whose result
    has rank >= 2 and an axis of the full sample count ``n``: an ``[rows, N]`` array that
    some device holds whole instead of its own ``[rows, N / devices]`` part."""
    import re

    out = []
    for line in hlo.splitlines():
        m = re.match(r"\s*(?:ROOT )?%\S+ = \w+\[([\d,]+)\]", line)
        if m:
            dims = [int(d) for d in m.group(1).split(",")]
            if len(dims) >= 2 and n in dims and np.prod(dims) > n:
                out.append(line.strip()[:160])
    return out


def test_sample_axis_stays_sharded_through_a_greedy_iteration(mesh, monkeypatch):
    """One strategy-3 iteration of the greedy engine (searches, check, constant passes,
    joint polish) on 4 devices: every [*, N] array the engine holds is split over the
    samples, no program the iteration runs holds a [*, N] intermediate whole on a device
    (only 1-D arrays of one value per sample, the constant solver's globally sorted
    candidates, are gathered), and the iteration makes the one-device change."""
    from jaxsr import SymbolicRegressor, _config
    from jaxsr._config import precision
    from jaxsr._sharding import sample_mesh
    from jaxsr.symbolic.strategies import DomeSearch

    X, y = datasets.make_newton_gravitation(1000, seed=0)
    X, y = X[:301], y[:301]  # padded to 320 rows: 80 per device
    names = ["x1", "x2", "x3"]

    calls = {}
    call = _config._Program.__call__

    def recording(self, *args, **kwargs):
        leaves = jax.tree.leaves((args, kwargs))
        if any(
            isinstance(x, jax.Array)
            and not isinstance(x, jax.core.Tracer)
            and len(x.sharding.device_set) > 1
            for x in leaves
        ):
            calls.setdefault(self.__name__, (self, args, kwargs))
        return call(self, *args, **kwargs)

    def iteration(m):
        sr = SymbolicRegressor(mesh=m)
        with precision(np.float64), sample_mesh(sr._sample_mesh()[0]):
            XT, yj, wj = sr._device_data(X, y, None, np.float64)
            pool = np.arange(XT.shape[0]) < 3  # the padding columns are out of the pool
            engine = DomeSearch(
                XT,
                yj,
                pool,
                max_nodes=9,
                max_height=None,
                min_improvement=1e-6,
                feature_names=names,
                weights=wj,
            )
            rec = engine.step(3)
            return engine, rec, engine.analyse()

    one, rec1, _ = iteration(None)
    monkeypatch.setattr(_config._Program, "__call__", recording)
    many, rec4, (_, sem, eqs, S) = iteration(mesh)
    monkeypatch.setattr(_config._Program, "__call__", call)

    # the same change as on one device
    assert rec4["search"] == rec1["search"] and rec4["node"] == rec1["node"]
    # the paper's first change on Newton's law: the constant becomes k / x3
    assert rec4["search"] == "constant-variable"
    assert re.fullmatch(r"\([\d.e+]+ / x3\)", many.expr.to_string(names))
    assert many.mse < 0.85 * float(np.var(y))
    assert np.array_equal(many.expr.op, one.expr.op)
    np.testing.assert_allclose(many.expr.value, one.expr.value, rtol=1e-9)
    np.testing.assert_allclose(many.mse, one.mse, rtol=1e-9)

    # the arrays the engine holds: the sample axis (last) split over the 4 devices
    for a in (many.XT, many.y, many.weights, sem, *eqs, S):
        assert len(a.sharding.device_set) == 4
        assert a.sharding.spec[a.ndim - 1] in ("samples", ("samples",))
        assert {s.data.shape[-1] for s in a.addressable_shards} == {80}

    # the compiled programs of the iteration: no [*, N] array held whole on a device
    assert {"_analyse", "search_all", "_check", "constant_passes", "polish_steps"} <= set(calls)
    for name, (prog, args, kwargs) in calls.items():
        with precision(np.float64), sample_mesh(mesh):
            hlo = prog.lower(*args, **kwargs).compile().as_text()
        assert "num_partitions=4" in hlo, name
        assert _full_sample_arrays(hlo, 320) == [], name
        if name in ("_analyse", "search_all"):
            assert re.search(r"f64\[16,80\]", hlo), name  # the semantics, 80 rows each


def test_sample_chunks_take_each_devices_own_samples(mesh):
    """``sample_chunk``: without a mesh chunk i is the contiguous samples; over 4 devices it
    is the i-th part of every device's own samples, computed without moving a sample
    between devices (a dynamic slice of the split axis would gather it whole)."""
    from jax import lax

    from jaxsr._sharding import sample_chunk, sample_mesh

    z = np.arange(3 * 64, dtype=np.float64).reshape(3, 64)  # 16 samples per device

    def chunks(z):  # (4 chunks, 3, 16)
        return lax.map(lambda i: sample_chunk(z, i, 4, axis=1), jnp.arange(4))

    one = np.asarray(jax.jit(chunks)(jnp.asarray(z)))
    np.testing.assert_array_equal(one, z.reshape(3, 4, 16).transpose(1, 0, 2))
    with sample_mesh(mesh):
        zs = jax.device_put(z, NamedSharding(mesh, P(None, "samples")))
        f = jax.jit(chunks)
        many = np.asarray(f(zs))
        hlo = f.lower(zs).compile().as_text()
    # chunk i: samples 4i .. 4i+3 of each device's block of 16
    cols = (16 * np.arange(4)[:, None] + np.arange(4)[None, :]).reshape(-1)
    for i in range(4):
        np.testing.assert_array_equal(many[i], z[:, cols + 4 * i])
    np.testing.assert_array_equal(np.sort(many.transpose(1, 0, 2).reshape(3, -1)), z)
    assert "all-gather" not in hlo and "all-to-all" not in hlo


def test_a_mesh_of_explicit_axes_is_used_with_auto_axes():
    """``jax.make_mesh`` gives ``Explicit`` axes (every sharded ``jnp`` operation would need
    an ``out_sharding``): the estimator uses the same devices and names as ``Auto`` axes,
    and a 2-D mesh splits the samples over both axes."""
    from jax.sharding import AxisType

    from jaxsr import SymbolicRegressor

    if len(jax.devices("cpu")) < 4:
        pytest.skip("needs 4 CPU devices")
    given = jax.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    mesh, axes = SymbolicRegressor(mesh=given)._sample_mesh()
    assert mesh.axis_types == (AxisType.Auto, AxisType.Auto) and axes == ("a", "b")
    assert mesh.axis_names == given.axis_names
    assert np.array_equal(mesh.devices, given.devices)
    X, y = datasets.make_newton_gravitation(64, seed=0)
    with jax.enable_x64(True):
        XT = SymbolicRegressor(mesh=given)._device_data(X, y, None, np.float64)[0]
    assert XT.sharding.spec == P(None, ("a", "b"))
    # 64 rows padded to the first bucket (256), 3 columns to 4: a quarter of the rows each
    assert {s.data.shape for s in XT.addressable_shards} == {(4, 64)}
