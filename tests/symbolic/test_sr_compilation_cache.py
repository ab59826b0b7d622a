"""JAX's persistent compilation cache as jaxsr configures it
(``jaxsr.enable_compilation_cache``): on at import unless the user configured one or
switched it off; a new process loads the programs an earlier one compiled."""

import os
import subprocess
import sys

import jax
import pytest

import jaxsr
from jaxsr import _config


@pytest.fixture
def restore_cache():
    """The suite's cache settings (conftest: a fresh folder per session) after the test."""
    before = (jax.config.jax_compilation_cache_dir, dict(_config._CACHE))
    yield
    jax.config.update("jax_compilation_cache_dir", before[0])
    _config._CACHE.clear()
    _config._CACHE.update(before[1])
    _config._reset_jax_cache()


def test_the_import_turned_on_jax_cache_in_the_default_folder():
    # conftest sets JAXSR_CACHE_DIR to a fresh folder before jaxsr is imported
    folder = os.environ["JAXSR_CACHE_DIR"]
    assert jax.config.jax_compilation_cache_dir == folder
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0
    assert jax.config.jax_persistent_cache_min_entry_size_bytes == -1
    assert str(_config.default_cache_dir()) == folder


def test_a_folder_is_chosen_switched_off_and_others_write_access_refused(tmp_path, restore_cache):
    folder = tmp_path / "cache"
    assert jaxsr.enable_compilation_cache(folder) == str(folder)
    assert folder.is_dir() and jax.config.jax_compilation_cache_dir == str(folder)
    if hasattr(os, "getuid"):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert jaxsr.enable_compilation_cache(False) is None
    assert jax.config.jax_compilation_cache_dir is None
    # a folder others can write would let them run code in this process: not used
    if hasattr(os, "getuid"):
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o777)
        with pytest.warns(RuntimeWarning, match="others can write it"):
            assert jaxsr.enable_compilation_cache(shared) is None
        assert jax.config.jax_compilation_cache_dir is None
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.warns(RuntimeWarning, match="cannot be used"):
        assert jaxsr.enable_compilation_cache(blocker) is None


def test_switching_off_leaves_the_users_own_cache_alone(tmp_path, restore_cache):
    jaxsr.enable_compilation_cache(False)
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))  # the user's own
    assert jaxsr.enable_compilation_cache(False) is None
    assert jax.config.jax_compilation_cache_dir == str(tmp_path)


_CHILD = """
import json, sys
import jax
import numpy as np
events = {"hits": 0, "programs": 0}
def on_event(event, **kw):
    events["hits"] += event == "/jax/compilation_cache/cache_hits"
jax.monitoring.register_event_listener(on_event)
from jaxsr import SymbolicRegressor
from jaxsr._progress import _is_program
def on_compile(event, duration, fun_name=None, **kw):
    if event == "/jax/core/compile/backend_compile_duration" and _is_program(fun_name):
        events["programs"] += 1
jax.monitoring.register_event_duration_secs_listener(on_compile)
X = np.linspace(1.0, 2.0, 30)[:, None] * np.array([[1.0, 0.5]]) + np.arange(30)[:, None] % 3
y = X[:, 0] * X[:, 1] + 2.0
m = SymbolicRegressor(max_iterations=2, beam_width=1, progress=False).fit(X, y)
print(json.dumps({**events, "cache": jax.config.jax_compilation_cache_dir,
                  "expression": m.expression_}))
"""


def _run_child(env):
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
    )
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_the_programs_and_the_opt_out_is_honoured(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXSR_")}
    env["JAXSR_CACHE_DIR"] = str(tmp_path / "cache")
    first = _run_child(env)
    second = _run_child(env)
    assert first["cache"] == second["cache"] == str(tmp_path / "cache")
    assert first["programs"] > 0 and second["programs"] == first["programs"]
    # every program of the second process came from the disk, with the same model
    assert second["hits"] >= second["programs"]
    assert second["expression"] == first["expression"]
    env["JAXSR_COMPILATION_CACHE"] = "0"
    off = _run_child(env)
    assert off["cache"] is None and off["hits"] == 0
    assert off["expression"] == first["expression"]
