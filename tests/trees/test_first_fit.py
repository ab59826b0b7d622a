"""A fresh process fits at full speed: the engine is the extension built at install
(nothing compiled at import or at the first fit, no background process, no cache folder)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from jaxsr.trees import OptimalTreeRegressor, engine


def test_engine_is_the_installed_extension():
    """The engine's kernels come from the compiled module shipped in the package."""
    path = engine._core.__file__
    assert os.path.dirname(path) == os.path.dirname(engine.__file__) or path.endswith(
        (".so", ".pyd")
    )
    assert os.path.splitext(path)[1] in (".so", ".pyd")


def test_first_fit_in_a_fresh_process_with_an_unwritable_home(tmp_path):
    """A fit in a new process whose home and cache folders cannot be written finds the
    optimum of this process's fit, compiles nothing (no numba, no compiler process) and
    writes no file."""
    home = tmp_path / "home"
    home.mkdir()
    os.chmod(home, 0o500)
    code = textwrap.dedent("""
        import json, sys, time
        import numpy as np
        from jaxsr.trees import OptimalTreeRegressor
        rng = np.random.default_rng(3)
        X = rng.normal(size=(300, 5))
        y = X[:, 0] ** 2 + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=300)
        t = time.process_time()
        m = OptimalTreeRegressor(regularization=0.005, depth_budget=6).fit(X, y)
        print(json.dumps(dict(objective=m.objective_, optimal=bool(m.optimal_),
                              numba="numba" in sys.modules)))
    """)
    env = dict(
        os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), JAXSR_CACHE_DIR="none"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
    finally:
        os.chmod(home, 0o700)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["optimal"] and not res["numba"]
    assert list(home.iterdir()) == []
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5))
    y = X[:, 0] ** 2 + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=300)
    ref = OptimalTreeRegressor(regularization=0.005, depth_budget=6).fit(X, y)
    assert res["objective"] == pytest.approx(ref.objective_, rel=1e-12)


def test_warmup_command_has_nothing_to_do_for_trees(capsys):
    """``jaxsr warmup`` succeeds and says the tree engine needs nothing."""
    from jaxsr.cli import main

    assert main(["warmup"]) == 0
    assert "compiled at install" in capsys.readouterr().err
