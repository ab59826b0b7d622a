"""The compiled tree kernels: on numba's disk cache or not, built ahead, or built once in
the background so that no fit waits in silence for the compiler.

The host search runs its kernels and its solver loop compiled by numba
(:mod:`jaxsr.trees.compiled`, :mod:`jaxsr.trees.engine`). Compiling them takes
about 25-50 CPU seconds, once: numba keeps them in its on-disk cache, in a folder named
after a digest of their sources (:data:`jaxsr.trees.compiled.CACHE_FOLDER`:
``jaxsr-trees-<digest>`` in ``NUMBA_CACHE_DIR`` when set, else in
``$XDG_CACHE_HOME/jaxsr/numba`` or ``~/.cache/jaxsr/numba``), from which a later process
loads them in about a second. A fit chooses its kernels with
:func:`kernels_for_fit`:

* the compiled kernels when they are loaded in this process, or on the cache (then loaded
  now, about a second, counted in a ``time_limit``);
* otherwise (a fresh install or an upgrade) the same engine run as Python on the numpy
  kernels (:mod:`jaxsr.trees.interpreted`) -- the same search and the same certified
  optimum, slower per subproblem -- while one detached background process
  compiles every kernel into numba's cache, at low priority, announced by one line on
  stderr. The fit neither waits for it nor is slowed by it beyond sharing the CPU (the
  compiler runs in its own process, so it holds none of this process's GIL); the process
  survives the interpreter's exit, so a short script still leaves a complete cache, and
  the next fit (in this process or a later one) loads the compiled kernels. A search
  that is still running when the cache is complete goes on compiled from where it is
  (:meth:`jaxsr.trees.search.OptimalTreeSearch.run`: the two engines share their arrays;
  the compiled one is 6-15x faster), when its time limit affords the load.

``JAXSR_BACKGROUND_COMPILE=0`` (also ``false``, ``no``, ``off``) turns the background
process off: the kernels are then compiled inside the first fit that needs them (announced
on stderr; a ``time_limit`` under :data:`COMPILE_SECONDS` runs the numpy kernels instead,
with a ``UserWarning`` once per process). :func:`warmup` (the ``jaxsr warmup`` command)
compiles everything ahead, e.g. when building a container image or a CI cache.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings

from .kernel_cache import COMPLETE_MARKER

__all__ = ["native_kernels_cached", "load_native_kernels", "warmup", "kernels_for_fit",
           "start_background_compile", "wait_for_background_compile", "compiling",
           "compiled_ready",
           "background_compile_enabled", "ENV_BACKGROUND_COMPILE"]

ENV_BACKGROUND_COMPILE = "JAXSR_BACKGROUND_COMPILE"
# loading the kernels from numba's cache takes ~1-2 s of wall time on a loaded machine
# (0.75 s on an idle core: 0.3 s numba's import, 0.45 s the load); a time limit below
# this runs the numpy kernels. 2 s: at limits of 1-2 s the compiled search reaches better
# trees even after the load (seoul-bike lambda 0.001 depth 7, 1 s: 0.3519 vs 0.3650 with
# the numpy kernels; enb-heat lambda 0.001, no depth budget, 2 s: certified in 1.24 s,
# else a gap of 0.012)
LOAD_SECONDS = 2.0
# compiling them in the fitting process (background process off): ~50 CPU seconds on a
# loaded machine; a smaller time limit runs the numpy kernels instead
COMPILE_SECONDS = 150.0
_STALE_LOCK_SECONDS = 900.0  # a lock older than this is a compiler that died

_NATIVE_LOADED = [False]  # the compiled kernels are loaded in this process
_STATE: dict = {"process": None, "announced": False, "warned": False, "lock": None}


def _compiled_functions():
    """Every compiled function a search calls from Python (the cache is complete when each
    has an entry; the functions they call are compiled into them)."""
    from . import compiled, engine

    return (compiled.support_subtree, compiled.support_leaf_loss, compiled.feature_lists,
            compiled.pack_rows, compiled.support_splits,
            engine.run_chunk, engine.lookup, engine.insert, engine.root_entry,
            engine.rebuild_table, engine.finish_expansion)




def _marker_path() -> str | None:
    """The file that says the cache folder holds every kernel (None: no on-disk cache)."""
    from . import compiled

    if not (compiled._NB["cache"] and compiled.CACHE_FOLDER):
        return None
    return os.path.join(compiled.CACHE_FOLDER, COMPLETE_MARKER)


def native_kernels_cached() -> bool | None:
    """Whether every compiled kernel is in numba's on-disk cache for this version of the
    sources (loading them then takes about a second, not a compilation): whether
    :func:`load_native_kernels` has run every one with the cache on and left the marker
    file ``complete`` in their cache folder (:data:`jaxsr.trees.compiled.CACHE_FOLDER`).

    Returns:
      True or False; ``None`` when the kernels cannot be cached here (no writable cache
      folder: a read-only home without ``NUMBA_CACHE_DIR``).
    """
    path = _marker_path()
    return None if path is None else os.path.exists(path)


def _mark_cache_complete() -> bool:
    """Write the marker of :func:`native_kernels_cached` (atomically: a reader sees it
    whole or not at all) when every function of :func:`_compiled_functions` went through
    the cache folder in this process: numba's public ``Dispatcher.stats`` shows it cached
    there (``cache_path``) and loaded from it or compiled and saved into it (a cache hit
    or miss). Returns whether the marker is there afterwards."""
    from . import compiled

    path = _marker_path()
    if path is None:
        return False
    for f in _compiled_functions():
        st = f.stats
        if not os.path.abspath(st.cache_path).startswith(compiled.CACHE_FOLDER + os.sep):
            return False
        if not (sum(st.cache_hits.values()) + sum(st.cache_misses.values())):
            return False
    if os.path.exists(path):
        return True
    try:
        fd, tmp = tempfile.mkstemp(dir=compiled.CACHE_FOLDER, prefix=".complete-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write("".join(f"{g.__module__}.{g.__name__}\n"
                                for g in _compiled_functions()))
            os.replace(tmp, path)
        except BaseException:
            os.remove(tmp)
            raise
    except OSError:
        return False
    return True


def load_native_kernels() -> None:
    """Load (or compile) the compiled kernels and solver loop in this process now, by a
    tiny search (16 classes, 6 levels) that calls each of them, so that numba's cache
    holds every one afterwards (then marked complete: :func:`native_kernels_cached`);
    later searches in the process use them with no load."""
    import numpy as np

    from . import engine
    from .search import OptimalTreeSearch

    X = ((np.arange(16)[:, None] >> np.arange(4)) & 1).astype(bool)
    y = np.sin(np.arange(16.0))
    # lambda > 0: with 0 the first bound solves the root and the solver loop never runs
    # (nor gets compiled and cached)
    search = OptimalTreeSearch(X, y, np.ones(16), regularization=0.01, depth_budget=6,
                               native=True)
    search.run()
    memo = engine._new_memo(4, 1)
    engine.rebuild_table(memo, 0)  # used only when a memo grows
    # called from Python only with backend="jax" (the device's entries)
    engine.insert(memo, engine._new_counters(), np.zeros(1, dtype=np.uint64), 2, 0.0,
                  0.0, -1, 0, -1, np.inf)
    # called from Python only with backend="jax" (after the device's part of an
    # expansion): on the finished search's root frame, its lower bounds and order again
    st = search.memo._ref[0]
    engine.finish_expansion(st.problem, st.memo, st.ctr, st.fst, st.frames, 0, False)
    _NATIVE_LOADED[0] = True
    _mark_cache_complete()


def warmup() -> bool | None:
    """Compile (or load) every compiled tree kernel now, in this process, into numba's
    on-disk cache: for container images, CI caches or a first run ahead of time
    (``jaxsr warmup`` on the command line). About 25-50 CPU seconds the first time, about
    a second afterwards.

    Returns:
      :func:`native_kernels_cached` afterwards (True: a later process loads them from
      the cache; None: numba cannot cache here, no writable cache folder).
    """
    load_native_kernels()
    return native_kernels_cached()


def background_compile_enabled() -> bool:
    """False when ``JAXSR_BACKGROUND_COMPILE`` is ``0``, ``false``, ``no`` or ``off``."""
    v = os.environ.get(ENV_BACKGROUND_COMPILE, "1").strip().lower()
    return v not in ("0", "false", "no", "off")


def _lock_path() -> str:
    """One lock per cache folder (sources, install, interpreter, cache location:
    :func:`jaxsr.trees.kernel_cache.cache_folder`, told without importing numba): two
    processes of the same install do not compile at once; numba's cache writes are atomic,
    so a lock lost in a race only costs a second compilation."""
    from . import kernel_cache

    h = hashlib.sha256(kernel_cache.sources_digest())
    for part in (kernel_cache.cache_folder(create=False) or "", sys.executable):
        h.update(part.encode() + b"\0")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"jaxsr-kernels-{uid}-{h.hexdigest()[:16]}.lock")


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _take_lock(path: str) -> bool:
    """Create ``path`` exclusively; a lock of a process that is gone, or older than
    :data:`_STALE_LOCK_SECONDS`, is taken over."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            try:
                with open(path) as f:
                    pid = int(f.read().strip() or 0)
                age = time.time() - os.path.getmtime(path)
            except (OSError, ValueError):
                pid, age = 0, _STALE_LOCK_SECONDS
            if _pid_alive(pid) and age < _STALE_LOCK_SECONDS:
                return False
            try:
                os.remove(path)
            except OSError:
                return False
            continue
        except OSError:  # no writable temporary folder: compile without a lock
            return True
        try:  # owned by this process until the compiler's pid replaces it
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
        return True
    return False


def _announce(text: str) -> None:
    from .. import _progress

    _progress.write(f"jaxsr: {text}")


def start_background_compile() -> bool:
    """Start (once per process) the detached process that compiles every kernel into
    numba's cache, unless one is running already (this process's or another's).

    The child runs :func:`warmup` at low priority (``nice`` 10) with its output discarded,
    in a new session, so it outlives this interpreter; one line on stderr announces it.

    Returns:
      True when a compilation is under way (started now or before), False when the
      background process is turned off (``JAXSR_BACKGROUND_COMPILE=0``) or cannot start.
    """
    p = _STATE["process"]
    if p is not None:
        return p.poll() is None
    if not background_compile_enabled():
        return False
    lock = _lock_path()
    if not _take_lock(lock):
        if not _STATE["announced"]:
            _STATE["announced"] = True
            _announce("another process is compiling the fast tree kernels (numba, once "
                      "per install); this fit runs the numpy kernels (same optimum).")
        return True
    pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = (f"import sys; sys.path.insert(0, {pkg_parent!r}); "
            f"from jaxsr.trees.warmup import _background_main; _background_main({lock!r})"
            )
    env = dict(os.environ)
    env[ENV_BACKGROUND_COMPILE] = "0"
    env.setdefault("JAX_PLATFORMS", "cpu")  # the kernels are host code: no device needed
    kw: dict = {}
    if os.name == "posix":
        kw["start_new_session"] = True
    else:  # pragma: no cover - Windows
        kw["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    try:
        p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             close_fds=True, env=env, **kw)
    except OSError:
        try:
            os.remove(lock)
        except OSError:
            pass
        return False
    try:
        with open(lock, "w") as f:
            f.write(str(p.pid))
    except OSError:
        pass
    _STATE["process"], _STATE["lock"] = p, lock
    # reaps the child when it ends (no zombie, no ResourceWarning); a daemon: never holds
    # up the interpreter's exit, and the child goes on without this process
    threading.Thread(target=p.wait, name="jaxsr-kernel-compile", daemon=True).start()
    _STATE["announced"] = True
    _announce("compiling the fast tree kernels once, in a background process (numba, "
              "under a minute of CPU); until then fits run the numpy kernels (same optimum, "
              f"slower on large problems). {ENV_BACKGROUND_COMPILE}=0 turns this off.")
    return True


def compiling() -> bool:
    """Whether this process's background compilation is running."""
    p = _STATE["process"]
    return p is not None and p.poll() is None


def compiled_ready() -> bool:
    """Whether this process's background compilation has ended well and numba's cache
    now holds every kernel (then :func:`kernels_for_fit` loads them)."""
    p = _STATE["process"]
    return (p is not None and p.poll() is not None and p.returncode == 0
            and native_kernels_cached() is True)


def wait_for_background_compile(timeout: float | None = None) -> bool:
    """Wait for this process's background compilation (if any) to end.

    Returns:
      True when none is running any more (finished, or never started), False when
      ``timeout`` seconds passed first.
    """
    p = _STATE["process"]
    if p is None:
        return True
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _background_main(lock: str) -> None:
    """The background process: compile everything at low priority, then free the lock."""
    try:
        os.nice(10)
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        pass
    try:
        warmup()
    finally:
        try:
            with open(lock) as f:
                ours = f.read().strip() in ("", str(os.getpid()))
            if ours:
                os.remove(lock)
        except OSError:
            pass


def kernels_for_fit(seconds_left=None):
    """The ``native`` argument of a host search (either loss) that is about to run,
    the compiled kernels' load counted in ``seconds_left`` (None: no limit).

    * loaded in this process: compiled;
    * on numba's cache: loaded now (about a second) when ``seconds_left`` affords
      :data:`LOAD_SECONDS`, compiled; else the numpy kernels;
    * not on the cache: the numpy kernels, and the background compilation is started
      (:func:`start_background_compile`);
    * not on the cache with the background process off, or when the kernels cannot be
      cached here: compiled in this process now (announced on stderr) when ``seconds_left``
      affords :data:`COMPILE_SECONDS`; else the numpy kernels, with a ``UserWarning`` once
      per process.

    Returns:
      ``None`` (compiled: loaded now if they were not) or ``False`` (numpy kernels); the
      optimum is the same either way.
    """
    if _NATIVE_LOADED[0]:
        return None
    if seconds_left is not None and seconds_left < LOAD_SECONDS:
        # not even a load from the cache fits: the numpy kernels. Unless the cache is
        # complete, the background compilation starts all the same, so that later fits
        # get the compiled kernels (a file check and a process start, a few ms: numba is
        # not imported here; nothing when the kernels cannot be cached)
        from . import kernel_cache

        if (not kernel_cache.marker_exists() and kernel_cache.cache_folder() is not None
                and os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES") is None):
            start_background_compile()
        return False
    p = _STATE["process"]
    if p is not None and p.poll() is None:
        return False  # our compiler is still at work
    cached = native_kernels_cached()
    if cached:
        load_native_kernels()
        return None
    if cached is False and start_background_compile():
        return False
    if seconds_left is None or seconds_left >= COMPILE_SECONDS:
        from . import compiled

        if cached is False:
            _announce("compiling the fast tree kernels in this process (numba, under a minute "
                      "once; later processes load them from its cache in about a second).")
        elif not compiled._NB["cache"]:
            _announce("compiling the fast tree kernels in this process (numba, under a minute; "
                      "numba has no writable cache folder here, so every process compiles "
                      "them: set NUMBA_CACHE_DIR to a writable folder).")
        load_native_kernels()
        return None
    if cached is False and not _STATE["warned"]:
        _STATE["warned"] = True
        warnings.warn(
            "jaxsr's compiled tree kernels are not in numba's on-disk cache yet and "
            f"compiling them (about 50 CPU seconds, once) does not fit in this time limit "
            f"({seconds_left:.3g} s left): the search runs the numpy kernels, 5-30x slower "
            "per subproblem. Run `jaxsr warmup` (or jaxsr.trees.warmup.warmup()) once, or "
            f"leave {ENV_BACKGROUND_COMPILE} unset so that a background process builds them.",
            UserWarning, stacklevel=3)
    return False


if __name__ == "__main__":  # python -m jaxsr.trees.warmup
    print(f"compiled tree kernels cached: {warmup()}")
