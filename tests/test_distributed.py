"""A symbolic fit over a mesh spanning two processes (JAX's multi-process runtime,
``jax.distributed``) equals the single-process fit.

Two CPU processes on this machine (``tests/distributed_fit.py``), 2 simulated devices
each, join a coordinator on a free local port; the global mesh has 4 devices, each process
addresses 2 of them and places only their samples.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import distributed_fit  # noqa: E402  (PARAMS and data(); importing it starts no JAX)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_fit_over_two_processes_equals_one_process(tmp_path):
    from jaxsr import SymbolicRegressor

    port, n = _free_port(), 2
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    )
    outs = [tmp_path / f"process{i}.json" for i in range(n)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "distributed_fit.py"),
                str(port),
                str(n),
                str(i),
                str(outs[i]),
            ],
            env=env,
            cwd=HERE.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(n)
    ]
    logs = []
    try:
        # the single-process fit while the two processes run
        X, y = distributed_fit.data()
        one = SymbolicRegressor(**distributed_fit.PARAMS).fit(X, y)
        for p in procs:
            logs.append(p.communicate(timeout=300)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, log in zip(procs, logs, strict=True):
        assert p.returncode == 0, log[-3000:]

    assert one.expression_ in ("(x3 + (x2 * x1))", "(x3 + (x1 * x2))")  # the law, exact
    for i, out in enumerate(outs):
        got = json.loads(out.read_text())
        assert (got["process"], got["processes"]) == (i, n)
        assert (got["devices"], got["local_devices"]) == (4, 2)
        # the samples (301 rows padded to 320) split over 4 devices, 2 of them here; the 3
        # features padded to their bucket of 4
        assert not got["XT_fully_addressable"]
        assert got["XT_local_shards"] == [[4, 80], [4, 80]]
        assert got["expression"] == one.expression_
        assert got["history"] == [h["search"] for h in one.history_]
        assert got["stop_reason"] == one.stop_reason_
        np.testing.assert_allclose(got["mse"], one.mse_, rtol=1e-9, atol=1e-12 * np.var(y))
        assert "max_time must be None" in got["max_time_refused"]
