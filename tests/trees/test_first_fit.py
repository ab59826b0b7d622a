"""The first fit of a fresh install: a certified tree at once on the numpy kernels, one
line on stderr, the compiled kernels built into numba's cache by a background process
that a later process then loads (:mod:`jaxsr.trees.warmup`)."""

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from jaxsr.trees import OptimalTreeRegressor, compiled
from jaxsr.trees import warmup as W

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_FIT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from jaxsr.trees import OptimalTreeRegressor, warmup
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (300, 12))
    y = X @ rng.normal(size=12) + 2.0 * X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=300)
    before = warmup.native_kernels_cached()
    t = time.perf_counter()
    m = OptimalTreeRegressor(regularization=0.002, depth_budget=6, progress=False).fit(X, y)
    fit = time.perf_counter() - t
    compiled_run = warmup._NATIVE_LOADED[0]
    done = warmup.wait_for_background_compile(timeout=float(sys.argv[1]))
    print(json.dumps(dict(before=before, after=warmup.native_kernels_cached(), done=done,
                          fit=fit, compiled=compiled_run, objective=m.objective_,
                          optimal=m.optimal_, tree=m.tree_.to_dict())))
""")


def _run(env, wait):
    out = subprocess.run([sys.executable, "-c", _FIT, str(wait)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


@pytest.mark.slow
@pytest.mark.skipif(not compiled._NB["cache"],
                    reason="numba cannot cache here (no writable cache folder)")
def test_fresh_install_fits_at_once_and_leaves_a_complete_cache(tmp_path):
    env = dict(os.environ)
    env.pop(W.ENV_BACKGROUND_COMPILE, None)
    env.update(NUMBA_CACHE_DIR=str(tmp_path / "numba"), HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), JAX_PLATFORMS="cpu",
               PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""))
    first, err = _run(env, wait=300)
    # numpy kernels at once, one line about the compiler, then a complete cache
    assert first["before"] is False and not first["compiled"]
    assert "compiling the fast tree kernels once, in a background process" in err
    assert len(err.strip().splitlines()) == 1
    assert first["done"] and first["after"] is True
    assert first["optimal"]
    # a later process loads the compiled kernels: same certified tree, nothing on stderr
    second, err2 = _run(env, wait=0)
    assert second["before"] is True and second["compiled"] and err2 == ""
    assert second["optimal"]
    assert second["objective"] == pytest.approx(first["objective"], rel=1e-9)
    assert second["tree"]["feature"] == first["tree"]["feature"]


def test_background_compile_can_be_turned_off(monkeypatch):
    for off in ("0", "false", "No", " off "):
        monkeypatch.setenv(W.ENV_BACKGROUND_COMPILE, off)
        assert not W.background_compile_enabled()
    monkeypatch.setattr(W, "_STATE", dict(W._STATE, process=None))
    assert W.start_background_compile() is False and W._STATE["process"] is None
    monkeypatch.setenv(W.ENV_BACKGROUND_COMPILE, "1")
    assert W.background_compile_enabled()
    monkeypatch.delenv(W.ENV_BACKGROUND_COMPILE)
    assert W.background_compile_enabled()


def test_compile_lock_is_exclusive_and_a_dead_owner_is_replaced(tmp_path):
    lock = str(tmp_path / "k.lock")
    assert W._take_lock(lock)
    with open(lock, "w") as f:
        f.write(str(os.getpid()))  # a live owner
    assert not W._take_lock(lock)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(lock, "w") as f:
        f.write(str(dead.pid))  # an owner that is gone
    assert W._take_lock(lock)
    with open(lock, "w") as f:
        f.write(str(os.getpid()))
    old = time.time() - 2 * W._STALE_LOCK_SECONDS
    os.utime(lock, (old, old))  # a live pid, but far too old: a compiler that hung
    assert W._take_lock(lock)


def test_a_fit_while_the_compiler_runs_uses_the_numpy_kernels(monkeypatch):
    """While this process's background compiler runs, fits do not touch numba's cache
    (nor load half-written kernels): numpy kernels, the same optimum."""

    class Running:
        def poll(self):
            return None

    monkeypatch.setattr(W, "_NATIVE_LOADED", [False])
    monkeypatch.setattr(W, "_STATE", dict(W._STATE, process=Running()))
    monkeypatch.setattr(W, "native_kernels_cached", lambda: pytest.fail("asked the cache"))
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, (120, 8))
    y = X @ rng.normal(size=8) + 0.2 * rng.normal(size=120)
    m = OptimalTreeRegressor(regularization=0.005, depth_budget=6, progress=False).fit(X, y)
    ref = OptimalTreeRegressor(regularization=0.005, depth_budget=6, progress=False,
                               backend="numpy")
    monkeypatch.setattr(W, "_STATE", dict(W._STATE, process=None))
    W.load_native_kernels()
    ref.fit(X, y)
    assert m.optimal_ and ref.optimal_
    assert m.objective_ == pytest.approx(ref.objective_, rel=1e-9)


def test_warmup_command(capsys):
    """``jaxsr warmup`` compiles (here: loads) every kernel into numba's cache."""
    from jaxsr.cli import main

    assert main(["warmup"]) == 0
    err = capsys.readouterr().err
    assert "tree kernels" in err
    if compiled._NB["cache"]:
        assert "in numba's cache" in err and W.native_kernels_cached() is True
        assert os.path.isfile(os.path.join(compiled.CACHE_FOLDER, W.COMPLETE_MARKER))


def test_a_long_first_search_goes_on_compiled_when_ready(monkeypatch, capsys):
    """A search that started on the numpy kernels (the engine's Python source; the
    compiler still at work) goes on compiled, from where it is, once the background
    process has filled the cache: one line says so, and the optimum is the one of the
    numpy search."""
    from jaxsr.trees import search as S

    class Compiler:  # running for its first three polls, then finished well
        def __init__(self):
            self.polls, self.returncode = 0, None

        def poll(self):
            self.polls += 1
            if self.polls > 3:
                self.returncode = 0
            return self.returncode

    rng = np.random.default_rng(4)
    X = rng.integers(0, 2, (300, 12))
    y = X @ rng.normal(size=12) + 2.0 * X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=300)
    kw = dict(regularization=0.002, depth_budget=6, progress=False)
    ref = OptimalTreeRegressor(**kw)
    monkeypatch.setattr(W, "_NATIVE_LOADED", [False])
    monkeypatch.setattr(W, "kernels_for_fit", lambda s=None: False)
    ref.fit(X, y)  # numpy kernels throughout
    monkeypatch.undo()
    monkeypatch.setattr(W, "_NATIVE_LOADED", [False])
    monkeypatch.setattr(W, "_STATE", dict(W._STATE, process=Compiler()))
    monkeypatch.setattr(W, "native_kernels_cached", lambda: True)
    monkeypatch.setattr(S, "_SWITCH_POLL_SECONDS", 0.0)
    m = OptimalTreeRegressor(**kw).fit(X, y)
    assert "goes on compiled" in capsys.readouterr().err
    assert W._NATIVE_LOADED[0]  # the rest of the search ran compiled
    assert m.optimal_ and ref.optimal_
    assert m.objective_ == pytest.approx(ref.objective_, rel=1e-9)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), rtol=1e-9)


def test_a_short_time_limit_still_starts_the_background_compile(monkeypatch):
    """A fit whose time limit affords not even a load from the cache runs the numpy
    kernels; the background compilation starts all the same unless the cache is complete
    (told without importing numba), so that a user of short fits gets the compiled kernels
    later and is told so."""
    from jaxsr.trees import kernel_cache

    started = []
    monkeypatch.setattr(W, "_NATIVE_LOADED", [False])
    monkeypatch.setattr(W, "start_background_compile", lambda: started.append(1) or True)
    monkeypatch.setattr(kernel_cache, "marker_exists", lambda: False)
    assert W.kernels_for_fit(0.5) is False and started == [1]
    monkeypatch.setattr(kernel_cache, "marker_exists", lambda: True)
    assert W.kernels_for_fit(0.5) is False and started == [1]
    monkeypatch.setattr(kernel_cache, "marker_exists", lambda: False)
    monkeypatch.setattr(kernel_cache, "cache_folder", lambda *a, **k: None)  # read-only
    assert W.kernels_for_fit(0.5) is False and started == [1]
