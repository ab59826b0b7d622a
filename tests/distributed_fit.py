"""One process of a symbolic fit over a mesh spanning several processes (jax.distributed).

Started by ``tests/test_distributed.py`` as ``python tests/distributed_fit.py PORT
N_PROCESSES PROCESS_ID OUT.json``: the process simulates 2 CPU devices, joins the
coordinator on ``127.0.0.1:PORT`` (CPU collectives: gloo), builds the global 1-D mesh
over every process's devices, fits ``y = x1 * x2 + x3`` (every process holds the full
data) and writes its model and what it saw of the placement as JSON.

Importing this module (the test reads :data:`PARAMS` and :func:`data`) neither imports
JAX nor changes the environment; only running it as a script does.
"""

import json
import os
import sys

import numpy as np

# the paper's greedy search (strategy 3), with the estimator's other defaults (the
# domain proof on the box, backward elimination, BIC selection)
PARAMS = dict(strategy=3, beam_width=1, max_nodes=9, progress=False)


def data():
    """``y = x1 * x2 + x3`` on 301 rows, x uniform in [1, 2] (seed 0)."""
    X = np.random.default_rng(0).uniform(1.0, 2.0, size=(301, 3))
    return X, X[:, 0] * X[:, 1] + X[:, 2]


def main(port: int, n_processes: int, process_id: int, out: str) -> None:
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=n_processes,
        process_id=process_id,
        initialization_timeout=120,
    )
    from jax.sharding import Mesh

    from jaxsr import SymbolicRegressor
    from jaxsr._config import precision

    mesh = Mesh(np.array(jax.devices()), ("samples",))
    X, y = data()
    sr = SymbolicRegressor(mesh=mesh, **PARAMS).fit(X, y)
    with precision(np.float64):  # the placement the fit used
        XT = sr._device_data(X, y, None, np.float64)[0]
    try:
        SymbolicRegressor(mesh=mesh, max_time=5.0, **PARAMS).fit(X, y)
        refused = ""
    except ValueError as err:
        refused = str(err)
    with open(out, "w") as f:
        json.dump(
            {
                "process": jax.process_index(),
                "processes": jax.process_count(),
                "devices": len(jax.devices()),
                "local_devices": len(jax.local_devices()),
                "XT_fully_addressable": XT.is_fully_addressable,
                "XT_local_shards": [list(s.data.shape) for s in XT.addressable_shards],
                "expression": sr.expression_,
                "mse": float(sr.mse_),
                "stop_reason": sr.stop_reason_,
                "history": [h["search"] for h in sr.history_],
                "max_time_refused": refused,
            },
            f,
        )
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
