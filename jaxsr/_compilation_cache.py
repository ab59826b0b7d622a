"""jaxsr's own persistent compilation cache: its programs' executables kept on disk.

On a CPU most of a first fit in a fresh process is XLA compilation (about 8 s for a
symbolic fit of 1000 samples on one core), and a notebook pays it again after every
restart. jaxsr's programs (:func:`jaxsr._config.program`) therefore keep their compiled
executables in a folder (:func:`jaxsr._config.default_cache_dir`), on by default, and a
new process loads them (about 0.1 s each) instead of compiling again.

Scope: only jaxsr's own programs, called at the top level on one device; JAX's global
configuration (``jax_compilation_cache_dir``) and the user's own jitted functions are left
alone. A call inside another trace (the user's ``jit`` / ``vmap``), with arrays placed on
several devices or on a device other than the default one, goes through plain
``jax.jit`` as before.

How an executable is found:

* in this process: by the call's signature (shapes, dtypes and weak types of the array
  arguments, the pytree structure, the values of the static arguments, the compile
  options and the ``jax_enable_x64`` / matmul-precision / promotion settings), as
  ``jax.jit``'s own cache does;
* on disk: by a SHA-256 of the lowered program text (StableHLO: the traced computation
  with every constant it captured), the compile options, the JAX and jaxlib versions, the
  backend's platform version, the device kind, ``XLA_FLAGS`` and the host CPU's model
  and feature flags (an XLA:CPU executable uses the instructions of the CPU it was
  compiled on). So the program is still traced once per process (about 0.1-0.4 s for the
  largest), never compiled again while none of these change; a change of jaxsr's code
  changes the text and so the key.

Compile ahead: :meth:`CachedProgram.prefetch` starts the executable of a later call on one
background thread (``jaxsr._config._Program.prefetch``: a fit compiles the programs it
needs next while it runs the current one); the call then takes it, or waits for it.

Files are written atomically (a temporary file, then ``os.replace``); the folder is kept
under :data:`MAX_BYTES` by deleting the least recently used files. Any failure of the
disk cache (read-only folder, a file from an incompatible version, a full disk) falls
back to compiling: a folder that cannot be written switches the disk cache off for the
process, an unreadable or incompatible file is compiled again with one warning per
process. A cache never fails a fit.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import pickle
import tempfile
import threading
import warnings
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import jax

__all__ = ["CachedProgram", "set_folder", "folder", "forget_in_memory", "wait_for_prefetches",
           "MAX_BYTES"]

MAX_BYTES = 2 * 2**30  # the folder is trimmed to this size (least recently used first)
_SUFFIX = ".jaxsr-xla"
_STATE = {"folder": None, "warned": False}
_LOCK = threading.Lock()
_INSTANCES: weakref.WeakSet[CachedProgram] = weakref.WeakSet()
_EXECUTOR: list[ThreadPoolExecutor] = []


def _executor() -> ThreadPoolExecutor:
    """The one worker thread of :meth:`CachedProgram.prefetch` (one compilation ahead at
    a time, beside the caller's own)."""
    with _LOCK:
        if not _EXECUTOR:
            _EXECUTOR.append(ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="jaxsr-compile"))
        return _EXECUTOR[0]


def set_folder(path, create: bool = True) -> str | None:
    """Use ``path`` (a folder, created now if ``create``, else when first written) for
    the disk cache, or switch the disk cache off with ``None``. Returns the folder in use,
    ``None`` if off or if ``path`` cannot be created or written (never raises for that)."""
    if path is None:
        _STATE["folder"] = None
        return None
    target = Path(path).expanduser()
    if not create:
        _STATE["folder"] = target
        return str(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
        if not os.access(target, os.W_OK):
            _STATE["folder"] = None
            return None
    except OSError:
        _STATE["folder"] = None
        return None
    _STATE["folder"] = target
    return str(target)


def wait_for_prefetches() -> None:
    """Wait until every compilation started by :meth:`CachedProgram.prefetch` has ended
    (the worker runs them in order). For tests and benchmarks that count compilations."""
    with _LOCK:
        pool = _EXECUTOR[0] if _EXECUTOR else None
    if pool is not None:
        pool.submit(lambda: None).result()


def forget_in_memory() -> None:
    """Drop this process's executables of every jaxsr program (not the folder's): the
    next calls see what a new process sees and load them from the folder. For tests and
    benchmarks of the cache."""
    for program in list(_INSTANCES):
        program._memory.clear()


def folder() -> str | None:
    """The folder of the disk cache in use, ``None`` when it is off."""
    return None if _STATE["folder"] is None else str(_STATE["folder"])


def _warn_once(err) -> None:
    if not _STATE["warned"]:
        _STATE["warned"] = True
        warnings.warn(f"jaxsr's compilation cache could not be used ({type(err).__name__}: "
                      f"{err}); compiling instead. jaxsr.enable_compilation_cache(False) "
                      "switches it off.", RuntimeWarning, stacklevel=4)


_HOST = {}


def _host_key() -> str:
    """What the disk key needs of the machine and the libraries (computed once)."""
    if "key" not in _HOST:
        import jaxlib

        parts = [jax.__version__, getattr(jaxlib, "__version__", ""),
                 os.environ.get("XLA_FLAGS", "")]
        try:
            dev = jax.devices()[0]
            parts += [dev.platform, getattr(dev, "device_kind", ""),
                      str(getattr(dev.client, "platform_version", ""))]
        except Exception:  # noqa: BLE001 - a key without them is only less specific
            parts.append("?")
        try:
            with open("/proc/cpuinfo") as fh:
                seen = set()
                for line in fh:
                    name = line.split(":", 1)[0].strip()
                    if name in ("model name", "flags", "Features") and name not in seen:
                        seen.add(name)
                        parts.append(line.strip())
        except OSError:
            import platform

            parts += [platform.machine(), platform.processor()]
        _HOST["key"] = "\n".join(parts)
    return _HOST["key"]


def _leaf_signature(x):
    try:
        return (x.shape, x.dtype, getattr(x, "weak_type", False))
    except AttributeError:
        return type(x)  # a Python scalar: weakly typed, any value


def _default_device():
    default = jax.config.jax_default_device
    if default is None or isinstance(default, str):
        if "device" not in _HOST:
            _HOST["device"] = jax.devices()[0]
        default = _HOST["device"]
    return default


def _single_default_device(leaves) -> bool:
    """True when every JAX array argument lives on the default device alone."""
    default = None
    for x in leaves:
        if isinstance(x, jax.Array):
            if default is None:
                default = _default_device()
            try:
                devices = x.sharding.device_set
            except Exception:  # noqa: BLE001 - a tracer or an unusual array: plain jit
                return False
            if len(devices) != 1 or default not in devices:
                return False
    return True


def _trim(target: Path) -> None:
    """Delete the least recently used files until the folder is under MAX_BYTES, and
    temporary files a crashed writer left behind (older than a day)."""
    import time

    try:
        for p in target.glob("*.tmp"):
            if p.stat().st_mtime < time.time() - 86400:
                p.unlink(missing_ok=True)
        files = [(p.stat(), p) for p in target.glob("*" + _SUFFIX)]
        total = sum(st.st_size for st, _ in files)
        if total <= MAX_BYTES:
            return
        for st, p in sorted(files, key=lambda sp: sp[0].st_mtime):
            p.unlink(missing_ok=True)
            total -= st.st_size
            if total <= MAX_BYTES:
                return
    except OSError:
        return


class CachedProgram:
    """The executables of one jitted function ``jitted`` (``jax.jit(fun, ...)``) with
    compile options ``options``, kept in memory and on disk.

    ``__call__`` returns the function's result computed by the cached executable, or
    ``NotImplemented`` when the call is one this cache does not serve (the caller then
    uses ``jitted`` itself): arguments on several or non-default devices, an argument
    that is not an array, a Python scalar or ``None``, or arguments that do not bind to
    ``fun``'s signature.
    """

    def __init__(self, fun, jitted, options, static_argnames=()):
        self._sig = inspect.signature(fun)
        params = self._sig.parameters.values()
        # positional calls only: a compiled executable called with keywords takes JAX's
        # slow path (about 1 ms a call, against 10 us)
        self._names = tuple(p.name for p in params) if all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) else None
        self._defaults = tuple(p.default for p in params)
        self._jitted = jitted
        self._options = dict(options or {})
        self._static = frozenset(static_argnames or ())
        self._name = f"{fun.__module__}.{fun.__qualname__}"
        self._memory = {}
        _INSTANCES.add(self)

    def __call__(self, *args, **kwargs):
        found = self._key(args, kwargs)
        if found is NotImplemented:
            return NotImplemented
        key, values, dynamic = found
        compiled = self._memory.get(key)
        if isinstance(compiled, Future):  # compiled ahead (:meth:`prefetch`)
            try:
                compiled = compiled.result()
            except Exception:  # noqa: BLE001 - compile here instead (its errors raise here)
                compiled = None
            self._memory[key] = compiled
        if compiled is None:
            compiled = self._load_or_compile(values)
            self._memory[key] = compiled
        return compiled(*dynamic)

    def prefetch(self, *args, **kwargs) -> bool:
        """Load or compile, on a background thread, the executable a later call with
        arguments like these (the same shapes, dtypes and static values; the values of
        the arrays do not matter) will use, so that a program needed later in a fit
        compiles while the current one runs. The call then waits for it if it is not
        ready. Returns False (nothing started) when the call is one this cache does not
        serve or its executable is already there or under way."""
        found = self._key(args, kwargs)
        if found is NotImplemented:
            return False
        key, values, _ = found
        if key in self._memory:
            return False
        cfg = jax.config
        settings = (bool(cfg.jax_enable_x64), cfg.jax_default_matmul_precision,
                    cfg.jax_numpy_dtype_promotion)
        self._memory[key] = _executor().submit(self._compile_with, settings, values)
        return True

    def _compile_with(self, settings, values):
        """:meth:`_load_or_compile` on a worker thread, under the caller's scoped JAX
        settings (they are per thread)."""
        x64, matmul, promotion = settings
        with contextlib.ExitStack() as stack:
            stack.enter_context(jax.enable_x64(x64))
            if matmul is not None:
                stack.enter_context(jax.default_matmul_precision(matmul))
            stack.enter_context(jax.numpy_dtype_promotion(promotion))
            return self._load_or_compile(values)

    def _key(self, args, kwargs):
        """``(key, values, dynamic)`` of a call (its signature as ``jax.jit``'s cache keys
        it, every argument in order, the non-static ones), or ``NotImplemented``."""
        if self._names is None:
            return NotImplemented
        n_args = len(args)
        if not kwargs and n_args <= len(self._names) and all(
                d is not inspect.Parameter.empty for d in self._defaults[n_args:]):
            values = args + self._defaults[n_args:]
        else:
            try:
                bound = self._sig.bind(*args, **kwargs)
            except TypeError:
                return NotImplemented
            bound.apply_defaults()
            values = tuple(bound.arguments[name] for name in self._names)
        pairs = tuple(zip(self._names, values, strict=True))
        static = tuple((name, v) for name, v in pairs if name in self._static)
        dynamic = tuple(v for name, v in pairs if name not in self._static)
        leaves, treedef = jax.tree_util.tree_flatten(dynamic)
        if not _single_default_device(leaves):
            return NotImplemented
        cfg = jax.config
        key = (treedef, tuple(map(_leaf_signature, leaves)), static,
               bool(cfg.jax_enable_x64), str(cfg.jax_default_matmul_precision),
               str(cfg.jax_numpy_dtype_promotion))
        try:
            hash(key)
        except TypeError:  # an unhashable static value: plain jit reports it
            return NotImplemented
        return key, values, dynamic

    def _load_or_compile(self, values):
        lowered = self._jitted.lower(*values)
        target = _STATE["folder"]
        if target is None:
            return lowered.compile()
        from jax.experimental import serialize_executable

        path = None
        try:
            h = hashlib.sha256()
            for part in (self._name, repr(sorted(self._options.items())), _host_key(),
                         lowered.as_text()):
                h.update(part.encode())
                h.update(b"\0")
            path = target / (h.hexdigest()[:40] + _SUFFIX)
            if path.exists():
                with open(path, "rb") as fh:
                    payload, in_tree, out_tree = pickle.load(fh)
                compiled = serialize_executable.deserialize_and_load(
                    payload, in_tree, out_tree, execution_devices=[_default_device()])
                os.utime(path)  # recently used
                return compiled
        except Exception as err:  # noqa: BLE001 - a stale or broken file: compile
            _warn_once(err)
        compiled = lowered.compile()
        if path is not None:
            try:
                blob = pickle.dumps(serialize_executable.serialize(compiled),
                                    protocol=pickle.HIGHEST_PROTOCOL)
                with _LOCK:
                    target.mkdir(parents=True, exist_ok=True)
                    fd, tmp = tempfile.mkstemp(dir=target, suffix=".tmp")
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(blob)
                    os.replace(tmp, path)
                    _trim(target)
            except OSError:  # not writable, full disk: no disk cache in this process
                _STATE["folder"] = None
            except Exception as err:  # noqa: BLE001 - never fail a fit because of a cache
                _warn_once(err)
        return compiled
