"""jaxsr's persistent compilation cache (``jaxsr._compilation_cache``): executables on
disk, loaded by a new process instead of compiled; JAX's global configuration untouched."""

import os

import jax
import numpy as np
import pytest
from compile_log import count_compilations

import jaxsr
from jaxsr import _compilation_cache as cc
from jaxsr.symbolic.expression import ADD, MUL, Expression
from jaxsr.symbolic.strategies import _check


@pytest.fixture
def restore_folder():
    previous = cc.folder()
    yield
    cc.set_folder(previous, create=False)


def _forget(program):
    """What a new process sees: none of ``program``'s executables in memory."""
    program._full_cached._memory.clear()
    program._fast_cached._memory.clear()


def test_forget_in_memory_reaches_every_program():
    from jaxsr.symbolic.searches import search_all

    assert search_all._full_cached in set(cc._INSTANCES)
    assert _check._fast_cached in set(cc._INSTANCES)


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    XT = rng.uniform(1.0, 2.0, size=(2, n))
    tree = Expression.binary(ADD, Expression.binary(MUL, Expression.variable(0),
                                                    Expression.variable(1)),
                             Expression.variable(0)).padded(8)
    return tree, XT, XT[0] * XT[1] + 0.1


def _files(folder):
    return sorted(folder.glob("*" + cc._SUFFIX))


def test_a_new_process_loads_the_executable_instead_of_compiling(tmp_path, restore_folder):
    folder = tmp_path / "cache"
    assert jaxsr.enable_compilation_cache(folder) == str(folder) and folder.is_dir()
    jax_dir = jax.config.jax_compilation_cache_dir
    tree, XT, y = _data(23)  # a sample size no other test uses
    _forget(_check)
    with count_compilations() as first:
        ref = _check(tree, XT, y)
    assert first["compile"] >= 1 and len(_files(folder)) == 1
    _forget(_check)
    with count_compilations() as again:
        out = _check(tree, XT, y)
    assert again["compile"] == 0, again  # loaded from the folder
    for r, o in zip(ref, out, strict=True):
        np.testing.assert_array_equal(np.asarray(r), np.asarray(o))
    assert float(out[0]) == pytest.approx(np.mean((XT[0] * XT[1] + XT[0] - y) ** 2),
                                          rel=1e-12)
    # another sample size is another executable; JAX's global cache is left alone
    _check(tree, XT[:, :21], y[:21])
    assert len(_files(folder)) == 2
    assert jax.config.jax_compilation_cache_dir == jax_dir


def test_a_broken_file_is_compiled_again_with_one_warning(tmp_path, restore_folder,
                                                          monkeypatch):
    folder = tmp_path / "cache"
    jaxsr.enable_compilation_cache(folder)
    tree, XT, y = _data(19, seed=1)
    _forget(_check)
    ref = _check(tree, XT, y)
    (path,) = _files(folder)
    path.write_bytes(b"not an executable")
    monkeypatch.setitem(cc._STATE, "warned", set())
    _forget(_check)
    with pytest.warns(RuntimeWarning, match="compilation cache ignored"):
        out = _check(tree, XT, y)
    assert float(out[0]) == float(ref[0]) and bool(out[1]) == bool(ref[1])
    assert path.stat().st_size > 100  # written again, whole


def test_false_or_an_unusable_folder_switch_the_disk_cache_off(tmp_path, restore_folder,
                                                               monkeypatch):
    assert jaxsr.enable_compilation_cache(False) is None and cc.folder() is None
    tree, XT, y = _data(17, seed=2)
    _forget(_check)
    ok = _check(tree, XT, y)  # compiled, kept in memory only
    assert bool(ok[1]) and not list(tmp_path.rglob("*" + cc._SUFFIX))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert jaxsr.enable_compilation_cache(blocker) is None  # not a folder
    # the environment switches read at import
    for name, value in (("JAXSR_COMPILATION_CACHE", "0"), ("JAXSR_CACHE_DIR", "none")):
        cc.set_folder(tmp_path, create=False)
        with monkeypatch.context() as m:
            m.setenv(name, value)
            jaxsr._config._cache_from_environment()
        assert cc.folder() is None, name
    monkeypatch.setenv("JAXSR_CACHE_DIR", str(tmp_path / "env"))
    jaxsr._config._cache_from_environment()
    assert cc.folder() == str(tmp_path / "env") and not (tmp_path / "env").exists()


def test_the_folder_is_trimmed_least_recently_used_first(tmp_path, restore_folder,
                                                         monkeypatch):
    folder = tmp_path / "cache"
    jaxsr.enable_compilation_cache(folder)
    tree, XT, y = _data(29, seed=3)
    _forget(_check)
    _check(tree, XT, y)
    (old,) = _files(folder)
    os.utime(old, (1e9, 1e9))  # long unused
    monkeypatch.setattr(cc, "MAX_BYTES", int(old.stat().st_size * 1.5))
    _check(tree, XT[:, :27], y[:27])
    (kept,) = _files(folder)
    assert kept != old and not old.exists()


def test_a_whole_fit_from_the_folder_equals_the_compiled_one(tmp_path, restore_folder,
                                                             monkeypatch):
    """Every program of a fit (analysis, searches, constant passes, polish, prediction)
    loaded from the folder gives the same fit to the bit, compiling none of them."""
    from jaxsr import SymbolicRegressor

    jaxsr.enable_compilation_cache(tmp_path / "cache")
    rng = np.random.default_rng(4)
    X = rng.uniform(1.0, 2.0, size=(31, 3))  # a sample size no other test uses
    y = 1.5 * X[:, 0] / (X[:, 1] + 0.5) + 0.1 * X[:, 2]
    params = dict(max_nodes=11, strategy=3, max_iterations=6, progress=False)
    cc.forget_in_memory()
    ref = SymbolicRegressor(**params).fit(X, y)
    ref_pred = np.asarray(ref.predict(X))
    assert len(_files(tmp_path / "cache")) >= 4
    from jax.experimental import serialize_executable

    loads = []
    load = serialize_executable.deserialize_and_load
    monkeypatch.setattr(serialize_executable, "deserialize_and_load",
                        lambda *a, **k: loads.append(1) or load(*a, **k))
    cc.forget_in_memory()
    with count_compilations() as again:
        fit = SymbolicRegressor(**params).fit(X, y)
        pred = np.asarray(fit.predict(X))
    assert again["compile"] == 0, again  # nothing compiled: every program loaded
    assert len(loads) >= 4
    assert str(fit.expression_) == str(ref.expression_) and fit.mse_ == ref.mse_
    np.testing.assert_array_equal(pred, ref_pred)
    assert [h["search"] for h in fit.history_] == [h["search"] for h in ref.history_]


def test_compile_ahead_gives_the_later_call_its_executable(restore_folder, monkeypatch):
    """A prefetched executable (compiled on jaxsr's background thread) is the one the later
    call uses: the call compiles nothing on its own thread and its results equal a plain
    compilation's to the bit; a prefetch that failed is compiled by the call; nothing is
    started with compiling ahead switched off or on one core."""
    import threading

    from jaxsr import _config

    jaxsr.enable_compilation_cache(False)  # compiled, not loaded: compile events
    monkeypatch.setitem(_config.COMPILE_AHEAD, "on", True)
    monkeypatch.setattr(_config, "_usable_cpus", lambda: 2)
    tree, XT, y = _data(25, seed=5)  # a sample size no other test uses
    threads = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            threads.append(threading.get_ident())

    _forget(_check)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        assert _check.prefetch(tree, XT, y)
        assert not _check.prefetch(tree, XT, y)  # under way already
        out = _check(tree, XT, y)  # waits for it
        cc.wait_for_prefetches()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert threads and threading.get_ident() not in threads  # compiled on the worker only
    assert float(out[0]) == pytest.approx(np.mean((XT[0] * XT[1] + XT[0] - y) ** 2),
                                          rel=1e-12) and bool(out[1])
    ref = _check._plain(tree, XT, y)  # jax.jit's own path
    for r, o in zip(ref, out, strict=True):
        np.testing.assert_array_equal(np.asarray(r), np.asarray(o))

    def broken(self, settings, values):
        raise RuntimeError("a failed compilation ahead")

    _forget(_check)
    with monkeypatch.context() as m:
        m.setattr(cc.CachedProgram, "_compile_with", broken)
        assert _check.prefetch(tree, XT, y)
        again = _check(tree, XT, y)  # compiled here instead
    assert float(again[0]) == float(ref[0]) and bool(again[1]) == bool(ref[1])
    _forget(_check)
    monkeypatch.setattr(_config, "_usable_cpus", lambda: 1)
    assert not _check.prefetch(tree, XT, y)
    monkeypatch.setattr(_config, "_usable_cpus", lambda: 2)
    monkeypatch.setitem(_config.COMPILE_AHEAD, "on", False)
    assert not _check.prefetch(tree, XT, y)


def test_a_fit_compiles_its_constant_programs_ahead_and_is_unchanged(restore_folder,
                                                                     monkeypatch):
    """A fit starts its first analysis ahead (beside the check of the starting tree) and
    strategy 3 the constant optimisation's programs (constant passes, polish); the fit is
    the one without compiling ahead, to the bit."""
    from jaxsr import SymbolicRegressor, _config

    jaxsr.enable_compilation_cache(False)
    monkeypatch.setattr(_config, "_usable_cpus", lambda: 2)
    started = []
    prefetch = cc.CachedProgram.prefetch

    def record(self, *args, **kwargs):
        started.append(self._name.rsplit(".", 1)[-1])
        return prefetch(self, *args, **kwargs)

    monkeypatch.setattr(cc.CachedProgram, "prefetch", record)
    rng = np.random.default_rng(6)
    X = rng.uniform(1.0, 2.0, size=(27, 2))  # a sample size no other test uses
    y = 1.3 * X[:, 0] / (X[:, 1] + 0.4) - 0.2 * X[:, 1]
    params = dict(max_nodes=9, strategy=3, beam_width=1, max_iterations=5, progress=False,
                  rational_start=False)  # the searches from the mean: their programs
    monkeypatch.setitem(_config.COMPILE_AHEAD, "on", True)
    cc.forget_in_memory()
    ahead = SymbolicRegressor(**params).fit(X, y)
    assert {"_analyse", "constant_passes", "polish_steps"} <= set(started)
    monkeypatch.setitem(_config.COMPILE_AHEAD, "on", False)
    cc.forget_in_memory()
    plain = SymbolicRegressor(**params).fit(X, y)
    assert str(ahead.expression_) == str(plain.expression_) and ahead.mse_ == plain.mse_
    def steps(fit):
        return [{k: v for k, v in h.items() if k != "seconds"} for h in fit.history_]

    assert steps(ahead) == steps(plain) and len(steps(plain)) >= 2
    np.testing.assert_array_equal(np.asarray(ahead.predict(X)), np.asarray(plain.predict(X)))


def test_top_level_is_true_outside_traces_and_false_inside_or_without_the_trace_test(
        tmp_path, restore_folder, monkeypatch):
    """``_top_level`` (which picks the cached, option-compiled executables) is True outside
    any trace and False under ``jit`` / ``vmap`` / ``grad`` / ``shard_map``; where the test
    is missing or fails it answers False and a program still computes its result (plain ``jax.jit``,
    nothing kept in the cache)."""
    from jaxsr import _config

    assert _config._top_level() is True
    seen = []

    def inner(x):
        seen.append(_config._top_level())
        return x + 1

    jax.jit(inner)(1.0)
    jax.vmap(inner)(np.arange(3.0))
    jax.grad(inner)(1.0)
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("i",))
    spec = jax.sharding.PartitionSpec("i")
    jax.shard_map(inner, mesh=mesh, in_specs=spec, out_specs=spec)(
        np.arange(float(len(jax.devices()))))
    assert seen == [False, False, False, False]
    assert _config._top_level() is True
    tree, XT, y = _data(13, seed=7)  # a sample size no other test uses
    ref = _check._plain(tree, XT, y)

    def broken():
        raise AttributeError("an internal JAX change")

    jaxsr.enable_compilation_cache(tmp_path / "cache")
    for probe in (None, broken):
        monkeypatch.setattr(_config, "_TRACE_STATE_CLEAN", probe)
        assert _config._top_level() is False
        _forget(_check)
        out = _check(tree, XT, y)
        for r, o in zip(ref, out, strict=True):
            np.testing.assert_array_equal(np.asarray(r), np.asarray(o))
        assert not _check._full_cached._memory and not _files(tmp_path / "cache")


# ---- the security model: only files this user's jaxsr wrote, under its key, are loaded

class _Touch:
    """A pickle that creates the file ``marker`` when it is unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import pathlib

        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def _evil_pickles(marker):
    import pickle

    evil = pickle.dumps(_Touch(marker))
    probe = marker.with_name("probe")
    pickle.loads(pickle.dumps(_Touch(probe)))  # the pickle really runs code when loaded
    assert probe.exists()
    probe.unlink()
    # the old layout (a bare pickle) and the new one with a MAC that does not verify
    return evil, cc._MAGIC + bytes(cc._MAC_BYTES) + evil


def _fit(params, X, y):
    from jaxsr import SymbolicRegressor

    cc.forget_in_memory()
    fit = SymbolicRegressor(**params).fit(X, y)
    return str(fit.expression_), fit.mse_, np.asarray(fit.predict(X))


def _cache_warnings(record):
    return [w for w in record if "compilation cache" in str(w.message)]


def _in_new_process(script, *args):
    """Run ``script`` (Python source) in a new interpreter with jaxsr and the test helpers
    importable; returns its last line of output."""
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(here.parent.parent), str(here), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


_PLANTED_FIT = """
import json, sys, warnings
import numpy as np
import jaxsr
jaxsr.enable_compilation_cache(sys.argv[1])
from test_sr_compilation_cache import _fit, _planted_problem
params, X, y = _planted_problem()
with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always")
    expression, mse, pred = _fit(params, X, y)
print(json.dumps([expression, mse, pred.tolist(), [str(w.message) for w in record]]))
"""


def _planted_problem():
    rng = np.random.default_rng(8)
    X = rng.uniform(1.0, 2.0, size=(33, 2))  # a sample size no other test uses
    y = 1.2 * X[:, 0] * X[:, 1] + 0.3
    return dict(max_nodes=9, strategy=3, beam_width=1, max_iterations=4, progress=False), X, y


def test_a_planted_pickle_is_never_unpickled_and_the_fit_is_unchanged(tmp_path,
                                                                      restore_folder):
    """Files replaced by pickles that would run code (under the exact names the next fit
    looks up) are ignored by the next process's fit with one warning: the code does not
    run, the fit equals a fit without cache, and the files are written again, whole and
    authenticated."""
    import json

    params, X, y = _planted_problem()
    folder = tmp_path / "cache"
    jaxsr.enable_compilation_cache(folder)
    _fit(params, X, y)
    files = _files(folder)
    assert len(files) >= 3
    marker = tmp_path / "marker"
    bare, with_header = _evil_pickles(marker)
    for i, path in enumerate(files):
        path.write_bytes(bare if i % 2 else with_header)
    expression, mse, pred, messages = json.loads(_in_new_process(_PLANTED_FIT, folder))
    assert not marker.exists()
    assert len(messages) == 1 and "compilation cache ignored" in messages[0], messages
    jaxsr.enable_compilation_cache(False)
    ref = _fit(params, X, y)  # compiled without any cache
    assert (expression, mse) == ref[:2]
    np.testing.assert_array_equal(np.asarray(pred), ref[2])
    key = (folder / cc._KEY_NAME).read_bytes()
    head = len(cc._MAGIC) + cc._MAC_BYTES
    for path in files:  # written again by the new process, under the key
        data = path.read_bytes()
        assert data.startswith(cc._MAGIC) and len(data) > 1000
        assert data[len(cc._MAGIC):head] == cc._mac(key, path.name, data[head:])


@pytest.fixture
def loads(monkeypatch):
    """The number of executables loaded from the folder (``loads[0]``). JAX keeps the
    executables it compiled in memory, so a compilation count cannot tell a load from a
    program compiled earlier in the process."""
    from jax.experimental import serialize_executable

    count = [0]
    load = serialize_executable.deserialize_and_load

    def counted(*args, **kwargs):
        count[0] += 1
        return load(*args, **kwargs)

    monkeypatch.setattr(serialize_executable, "deserialize_and_load", counted)
    return count


def test_a_file_with_a_valid_mac_but_foreign_classes_is_not_unpickled(tmp_path,
                                                                      restore_folder,
                                                                      monkeypatch):
    """Behind the MAC, the pickle's imports are read without running it: one outside
    JAX's serialized executables (here with a MAC made with the real key, as if the key
    had leaked) is refused before unpickling."""
    folder = tmp_path / "cache"
    jaxsr.enable_compilation_cache(folder)
    tree, XT, y = _data(37, seed=9)
    _forget(_check)
    ref = _check(tree, XT, y)
    (path,) = _files(folder)
    marker = tmp_path / "marker"
    evil, _ = _evil_pickles(marker)
    key = (folder / cc._KEY_NAME).read_bytes()
    path.write_bytes(cc._MAGIC + cc._mac(key, path.name, evil) + evil)
    monkeypatch.setitem(cc._STATE, "warned", set())
    _forget(_check)
    with pytest.warns(RuntimeWarning, match="imports pathlib.Path.touch"):
        out = _check(tree, XT, y)
    assert not marker.exists()
    assert float(out[0]) == float(ref[0]) and bool(out[1]) == bool(ref[1])
    # what JAX's executables do contain passes; anything unusual is refused
    assert cc._pickle_globals(path.read_bytes()[len(cc._MAGIC) + cc._MAC_BYTES:]) \
        <= cc._ALLOWED_GLOBALS
    for bad in (b"\x80\x04c" + b"os\nsystem\n" + b".", b"\x80\x04\x82\x01.", b"\x80\x04"):
        with pytest.raises(cc._Rejected):
            cc._check_globals(bad)


def _flip(data, at):
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]


@pytest.mark.parametrize("change", ["payload byte", "mac byte", "truncated", "other key",
                                    "symlink", "other owner"])
def test_a_tampered_file_is_rejected_and_written_again(tmp_path, restore_folder,
                                                       monkeypatch, loads, change):
    folder = tmp_path / "cache"
    jaxsr.enable_compilation_cache(folder)
    tree, XT, y = _data(39, seed=10)
    _forget(_check)
    ref = _check(tree, XT, y)
    (path,) = _files(folder)
    data = path.read_bytes()
    head = len(cc._MAGIC) + cc._MAC_BYTES
    if change == "payload byte":
        path.write_bytes(_flip(data, head + (len(data) - head) // 2))
    elif change == "mac byte":
        path.write_bytes(_flip(data, len(cc._MAGIC) + 5))
    elif change == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif change == "other key":
        payload = data[head:]
        path.write_bytes(cc._MAGIC + cc._mac(b"k" * 32, path.name, payload) + payload)
    elif change == "symlink":  # a valid file, but reached through a link
        elsewhere = tmp_path / "elsewhere"
        elsewhere.write_bytes(data)
        path.unlink()
        path.symlink_to(elsewhere)
    else:
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(path, 54321, -1)
    monkeypatch.setitem(cc._STATE, "warned", set())
    _forget(_check)
    with pytest.warns(RuntimeWarning, match="compilation cache ignored") as record:
        out = _check(tree, XT, y)
    assert len(_cache_warnings(record)) == 1
    assert loads[0] == 0  # not loaded: compiled again
    assert float(out[0]) == float(ref[0]) and bool(out[1]) == bool(ref[1])
    assert not path.is_symlink() and path.read_bytes().startswith(cc._MAGIC)
    if change != "other owner":  # written again: the next process loads it
        assert path.read_bytes()[head:] != b""
        _forget(_check)
        _check(tree, XT, y)
        assert loads[0] == 1


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o757])
def test_a_folder_others_can_write_is_not_read(tmp_path, restore_folder, monkeypatch, loads,
                                               mode):
    """A cache folder writable by group or others is neither read nor written (one warning
    saying how to fix it); the program compiles and computes as without a cache."""
    folder = tmp_path / "cache"
    jaxsr.enable_compilation_cache(folder)
    tree, XT, y = _data(41, seed=11)
    _forget(_check)
    ref = _check(tree, XT, y)
    (path,) = _files(folder)
    before = path.read_bytes(), path.stat().st_mtime_ns
    folder.chmod(mode)
    monkeypatch.setitem(cc._STATE, "keys", {})  # a new process: the folder checked again
    monkeypatch.setitem(cc._STATE, "warned", set())
    _forget(_check)
    with pytest.warns(RuntimeWarning, match="chmod 700") as record:
        out = _check(tree, XT, y)
        _check(tree, XT[:, :40], y[:40])  # another executable: not written either
    assert len(_cache_warnings(record)) == 1
    assert "writable by group or others" in str(record[0].message)
    assert loads[0] == 0
    assert float(out[0]) == float(ref[0]) and bool(out[1]) == bool(ref[1])
    assert _files(folder) == [path] and (path.read_bytes(), path.stat().st_mtime_ns) == before
    folder.chmod(0o700)  # fixed as the warning says: used again once named again
    jaxsr.enable_compilation_cache(folder)
    _forget(_check)
    again = _check(tree, XT, y)
    assert loads[0] == 1 and float(again[0]) == float(ref[0])


def test_a_folder_created_by_jaxsr_is_private(tmp_path, restore_folder):
    folder = tmp_path / "new" / "cache"
    cc.set_folder(folder, create=False)
    tree, XT, y = _data(43, seed=12)
    _forget(_check)
    _check(tree, XT, y)
    key = folder / cc._KEY_NAME
    if os.name == "posix":
        assert folder.stat().st_mode & 0o777 == 0o700
        assert key.stat().st_mode & 0o777 == 0o600
    assert len(key.read_bytes()) == cc._KEY_BYTES and len(_files(folder)) == 1


@pytest.mark.parametrize("fault", ["readable by others", "symlink", "wrong size",
                                   "other owner", "folder of another owner"])
def test_a_key_or_folder_that_fails_the_checks_switches_the_disk_cache_off(
        tmp_path, restore_folder, monkeypatch, fault):
    if os.name != "posix":
        pytest.skip("ownership and modes are checked on POSIX only")
    if "owner" in fault and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    key = folder / cc._KEY_NAME
    if fault == "symlink":
        real = tmp_path / "real.key"
        real.write_bytes(os.urandom(32))
        real.chmod(0o600)
        key.symlink_to(real)
    else:
        key.write_bytes(os.urandom(40 if fault == "wrong size" else 32))
        key.chmod(0o644 if fault == "readable by others" else 0o600)
        if fault == "other owner":
            os.chown(key, 54321, -1)
        elif fault == "folder of another owner":
            os.chown(folder, 54321, -1)
    jaxsr.enable_compilation_cache(folder)
    monkeypatch.setitem(cc._STATE, "warned", set())
    tree, XT, y = _data(45, seed=13)
    _forget(_check)
    with pytest.warns(RuntimeWarning, match="is not used") as record:
        out = _check(tree, XT, y)
    assert len(_cache_warnings(record)) == 1
    assert bool(out[1]) and not _files(folder)


_NEW_PROCESS = """
import sys, time
import numpy as np
import jaxsr
from compile_log import count_compilations
from jaxsr.symbolic.expression import ADD, MUL, Expression
from jaxsr.symbolic.strategies import _check
jaxsr.enable_compilation_cache(sys.argv[1])
rng = np.random.default_rng(14)
XT = rng.uniform(1.0, 2.0, size=(2, 47))
tree = Expression.binary(ADD, Expression.binary(MUL, Expression.variable(0),
                                                Expression.variable(1)),
                         Expression.variable(0)).padded(8)
with count_compilations() as n:
    t = time.perf_counter()
    out = _check(tree, XT, XT[0] * XT[1] + 0.1)
    seconds = time.perf_counter() - t
print(n["compile"], repr(float(out[0])), seconds)
"""


def test_a_file_written_by_one_process_loads_in_the_next(tmp_path, restore_folder):
    """The key and the files persist: a second process loads the executable the first
    one wrote (no compilation) and gets the same result."""
    folder = tmp_path / "cache"
    first = _in_new_process(_NEW_PROCESS, folder).split()
    second = _in_new_process(_NEW_PROCESS, folder).split()
    assert int(first[0]) >= 1 and int(second[0]) == 0, (first, second)
    assert second[1] == first[1]
    assert len(_files(folder)) == 1
