"""jaxsr's kernels on several devices: samples sharded over 4 (simulated) CPU devices.

Every sum over samples in jaxsr is a reduction that JAX can split over a device mesh. This
script simulates 4 CPU devices (the flag must be set before JAX is imported), places the
data with ``NamedSharding`` along the sample axis, runs the public functional kernels of
both methods and checks that the results equal the single-device ones. On a machine with
several GPUs, drop the ``XLA_FLAGS`` line and use ``jax.devices()``.

Run: ``python examples/sharding_cpu_devices.py``
"""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from jaxsr.datasets import make_newton_gravitation  # noqa: E402
from jaxsr.symbolic import (  # noqa: E402
    Expression,
    constant_variable_search,
    forbidden_sets,
    node_equations,
    node_semantics,
)
from jaxsr.trees import kmeans_lower_bound, leaf_statistics  # noqa: E402

jax.config.update("jax_enable_x64", True)  # this script's choice; jaxsr itself never flips it

devices = jax.devices()
print(f"{len(devices)} devices: {[str(d) for d in devices]}")
mesh = Mesh(np.array(devices[:4]), ("samples",))


def max_rel_diff(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    assert np.array_equal(np.isfinite(a), np.isfinite(b)), "different invalid candidates"
    f = np.isfinite(a)
    if not f.any():
        return 0.0
    return float(np.max(np.abs(a[f] - b[f]) / np.maximum(np.abs(a[f]), 1e-300)))


# ---------------------------------------------------------------- symbolic regression
X, y = make_newton_gravitation(20_000, seed=0)  # F = G*m1*m2/d^2
XT = np.ascontiguousarray(X.T)  # (features, N): the variables as points of semantic space
# an intermediate tree of the paper's Table 3 (iteration 2)
tree = Expression.parse("(434063.5718753305 * x2) / x3", ["x1", "x2", "x3"]).padded()
n_slots = max(1, int(np.max(tree.n_slots)))
cap = tree.op.shape[0]


def symbolic_step(XT, y):
    """One constant-variable search (section 2.3) over every node, variable and operator."""
    sem = node_semantics(tree, XT)  # (capacity, N)
    eqs = node_equations(tree, sem, y)  # a, b, c, d: (capacity, N) each
    S = forbidden_sets(tree, sem, n_slots)  # (capacity, K, N)
    reduction, constant = constant_variable_search(
        tree, sem, eqs, S, XT, jnp.ones((cap,), bool), jnp.ones((3,), bool), 2**30, 2**30
    )
    return reduction, constant  # (capacity, variables, 4 operators)


one = symbolic_step(jnp.asarray(XT), jnp.asarray(y))
XT_sharded = jax.device_put(XT, NamedSharding(mesh, P(None, "samples")))
y_sharded = jax.device_put(y, NamedSharding(mesh, P("samples")))
four = symbolic_step(XT_sharded, y_sharded)
print(f"\nsymbolic regression, N = {len(y):,} samples, X sharded as {XT_sharded.sharding.spec}")
print(
    f"  candidate MSE reductions: max relative difference 1 vs 4 devices "
    f"{max_rel_diff(one[0], four[0]):.2e}"
)
print(
    f"  optimal constants:        max relative difference 1 vs 4 devices "
    f"{max_rel_diff(one[1], four[1]):.2e}"
)
best = [
    np.unravel_index(np.nanargmax(np.where(np.isfinite(r), r, -np.inf)), r.shape)
    for r in (np.asarray(one[0]), np.asarray(four[0]))
]
node, var, op = (int(i) for i in best[1])
print(
    f"  best candidate (node, variable, operator): 1 device {tuple(map(int, best[0]))}, "
    f"4 devices {(node, var, op)}: k = {float(np.asarray(four[1])[node, var, op]):.6g} "
    f"{'+-*/'[op]} x{var + 1}"
)
assert best[0] == best[1] and max_rel_diff(one[0], four[0]) < 1e-9

# ---------------------------------------------------------------- optimal trees
rng = np.random.default_rng(0)
U, M = 1024, 16  # equivalence classes (unique binary rows) x binary features
features = rng.integers(0, 2, size=(U, M)).astype(np.float64)
W = rng.integers(1, 5, size=U).astype(np.float64)
mean = np.sort(features[:, :3] @ np.array([3.0, -2.0, 1.0]) + rng.normal(size=U))
S, Q = W * mean, W * mean**2 + rng.uniform(0, 1, U)
stats = np.column_stack([W, S, Q, Q - S**2 / W, W, np.ones(U)])  # W, S, Q, E, N, C
mask = rng.uniform(size=U) < 0.6  # one subproblem's support
sst = float(np.sum(Q) - np.sum(S) ** 2 / np.sum(W))


def tree_step(features, stats, mask, W, S, Q):
    """Leaf statistics of both children of every split, and the k-means lower bound."""
    true_stats, total = leaf_statistics(features, stats, mask)  # (M, 6), (6,)
    bound = kmeans_lower_bound(W, S, Q, mask, 0.01, 8, normalizer=sst)
    return true_stats, total, bound


one = tree_step(*map(jnp.asarray, (features, stats, mask, W, S, Q)))
rows = NamedSharding(mesh, P("samples"))
four = tree_step(
    jax.device_put(features, NamedSharding(mesh, P("samples", None))),
    jax.device_put(stats, NamedSharding(mesh, P("samples", None))),
    *(jax.device_put(a, rows) for a in (mask, W, S, Q)),
)
print(f"\noptimal trees, {U} equivalence classes x {M} binary features, sharded by class")
print(
    f"  leaf statistics of all {M} splits: max relative difference "
    f"{max_rel_diff(one[0], four[0]):.2e}"
)
print(f"  k-means lower bound: 1 device {float(one[2]):.12f}, 4 devices {float(four[2]):.12f}")
assert max_rel_diff(one[0], four[0]) < 1e-12 and abs(float(one[2]) - float(four[2])) < 1e-9
print("\nsame results on 1 and on 4 devices")
