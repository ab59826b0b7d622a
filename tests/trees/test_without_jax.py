"""A saved tree needs numpy only: loading and predicting (from Python or with
``jaxsr predict``) imports no JAX, so a tree model serves in a process that never pays
JAX's start-up."""

import subprocess
import sys

import numpy as np
import pandas as pd

from jaxsr.io import save_model
from jaxsr.trees import OptimalTreeRegressor

CHECK = """
import sys
import numpy as np
import pandas as pd
import jaxsr.io as io
from jaxsr.cli import main

model = io.load_model(sys.argv[1])
X = pd.read_csv(sys.argv[2])
print(repr(model.predict(X).tolist()))
assert main(["predict", sys.argv[1], sys.argv[2], "--output", sys.argv[3]]) == 0
loaded = sorted(m for m in sys.modules if m == "jax" or m.startswith(("jax.", "jaxlib")))
assert not loaded, loaded
"""


def test_tree_loads_and_predicts_without_jax(tmp_path):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(0, 1, size=(200, 3)), columns=["a", "b", "c"])
    y = np.where(X["a"] > 0.5, 2.0, -1.0) + np.where(X["b"] > 0.3, 0.5, 0.0)
    tree = OptimalTreeRegressor(regularization=0.01, depth_budget=3, progress=False).fit(X, y)
    save_model(tree, tmp_path / "tree.json")
    X.head(7).to_csv(tmp_path / "new.csv", index=False)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CHECK,
            str(tmp_path / "tree.json"),
            str(tmp_path / "new.csv"),
            str(tmp_path / "pred.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    expected = tree.predict(X.head(7))
    np.testing.assert_array_equal(eval(proc.stdout), expected)  # noqa: S307 - a list literal
    # jaxsr predict writes the shortest form that reads back to the same floats
    lines = (tmp_path / "pred.csv").read_text().split()
    assert lines[0] == "prediction" and lines[1:] == [repr(float(v)) for v in expected]
