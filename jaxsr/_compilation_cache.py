"""jaxsr's own persistent compilation cache: its programs' executables kept on disk.

On a CPU most of a first fit in a fresh process is XLA compilation (about 8 s for a
symbolic fit of 1000 samples on one core), and a notebook pays it again after every
restart. jaxsr's programs (:func:`jaxsr._config.program`) therefore keep their compiled
executables in a folder (:func:`jaxsr._config.default_cache_dir`), on by default, and a
new process loads them (about 0.1 s each) instead of compiling again.

Scope: only jaxsr's own programs, called at the top level on one device; JAX's global
configuration (``jax_compilation_cache_dir``) and the user's own jitted functions are left
alone. A call inside another trace (the user's ``jit`` / ``vmap``), with arrays placed on
several devices or on a device other than the default one, or inside a mesh context
(``jax.set_mesh``), goes through plain ``jax.jit`` as before.

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

Security model. A file of the folder is an XLA executable (native machine code on a CPU)
inside a pickle written by ``jax.experimental.serialize_executable``: loading one runs
whatever its writer put there, so only files this user's jaxsr wrote are ever loaded.

* Trusted: the current user's account, and the folder if only this user can write it.
  Nothing else: not the files in it, not their names.
* The folder (POSIX): before anything in it is read, it must be a directory owned by the
  current user and not writable by group or others (a symlinked folder is judged by
  its target). jaxsr creates it with mode 0700. If it fails, the disk cache is off for
  that folder (nothing read or written; one warning per process saying why and how to
  fix it: ``chmod 700`` the folder, or ``jaxsr.enable_compilation_cache(False)``), and
  programs compile as without a cache.
* The key: a per-user secret of 32 random bytes (``secrets``) in the file
  :data:`_KEY_NAME` of the folder, created with ``O_CREAT | O_EXCL`` and mode 0600. It
  must be a regular file (not a symlink) owned by the current user with no access for
  group or others, else the disk cache is off as above.
* Each file: opened without following symlinks, it must be a regular file owned by the
  current user; it starts with :data:`_MAGIC` and an HMAC-SHA256 under the key of the
  magic, the file's name and the rest (compared with ``hmac.compare_digest``). Before any
  unpickling, the rest (JAX's pickle) is read without running it (``pickletools``) and
  every class or function it would import must be one of :data:`_ALLOWED_GLOBALS`, the
  ones JAX's serialized executables contain; the pytree structures come from the traced
  call itself (``jax.stages.Lowered.in_tree`` / ``out_tree``), so jaxsr unpickles
  nothing of its own. A file that fails any of this (planted, truncated, tampered with,
  written under another key, a symlink) is ignored with one warning per process, and
  the program is compiled again and its file written anew.
* Written files are created with mode 0600 (``tempfile.mkstemp``) and MAC'd the same
  way; an executable whose pickle names a class outside :data:`_ALLOWED_GLOBALS` (a
  JAX version that serializes something new) is not kept on disk.

Not covered: another process running as the same user (it can do what it likes with
this user's files anyway), and the folder's parent folders (a parent writable by others
without the sticky bit lets them swap the folder; the key check then turns the cache
off, since they cannot create a key file owned by this user). On platforms without
POSIX ownership (Windows) only the MAC and the allowed classes are checked.

Storing the executables without pickle was considered: JAX's own persistent cache
(``jax_compilation_cache_dir``) stores XLA's serialized executables without pickle, but
it is global to the process (set up once, at the first compilation, for every jitted
function) and can be scoped to jaxsr's programs only through JAX's private
``reset_cache``; the backend's ``serialize_executable`` bytes become a callable
``jax.stages.Compiled`` only through JAX's private executable classes. Both would also
load native code as trusting as the pickle, so the checks above are needed either way.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import inspect
import os
import pickletools
import queue
import secrets
import stat
import tempfile
import threading
import time
import warnings
import weakref
from concurrent.futures import Future
from pathlib import Path

from ._lazy import jax

__all__ = ["CachedProgram", "set_folder", "folder", "forget_in_memory", "wait_for_prefetches",
           "MAX_BYTES"]

MAX_BYTES = 2 * 2**30  # the folder is trimmed to this size (least recently used first)
_SUFFIX = ".jaxsr-xla"
_FORMAT = "jaxsr-xla-2"  # part of each file's name: files of another layout are not looked up
_MAGIC = b"jaxsr-xla-2\n"  # the start of each file, then its MAC, then JAX's payload
_MAC_BYTES = 32  # HMAC-SHA256
_KEY_NAME = "jaxsr-cache.key"  # the per-user secret, in the folder
_KEY_BYTES = 32
_POSIX = os.name == "posix" and hasattr(os, "getuid")
# classes and functions the pickle of ``jax.experimental.serialize_executable`` imports
# for jaxsr's programs (read from real files with ``pickletools``): a file naming any other
# is not loaded, and an executable whose pickle names another is not written
_ALLOWED_GLOBALS = frozenset({
    ("jax", "P"),
    ("jax._src.core", "ManualAxisType"),
    ("jax._src.core", "MemorySpace"),
    ("jax._src.core", "ShapedArray"),
    ("jax._src.interpreters.pxla", "AllArgsInfo"),
    ("jax._src.interpreters.pxla", "UnloadedMeshExecutable"),
    ("jax._src.layout", "Layout"),
    ("jax._src.linear_util", "DebugInfo"),
    ("jax._src.mesh", "AbstractMesh"),
    ("jax._src.named_sharding", "_unpickle_named_sharding"),
    ("jax._src.sharding_impls", "_unpickle_single_device_sharding"),
    ("jax._src.stages", "ArgInfo"),
    ("jaxlib._jax", "DeviceList"),
    ("numpy", "dtype"),
})
# "warned": the kinds of warning given in this process (one of each); "keys": the key of
# each folder that passed the checks, or None for one that failed them
_STATE = {"folder": None, "warned": set(), "keys": {}}
_LOCK = threading.Lock()
_INSTANCES: weakref.WeakSet[CachedProgram] = weakref.WeakSet()
_EXECUTOR: list[_CompileWorker] = []


class _CompileWorker:
    """One daemon thread that runs the submitted calls in order, each into a
    ``concurrent.futures.Future``.

    Not a ``ThreadPoolExecutor``: the interpreter joins an executor's threads at exit after
    every queued call, so compilations started ahead for a fit that had ended (or was
    interrupted with Ctrl-C) kept the process alive for seconds after the user's last
    line. Here, at exit (:func:`atexit`, which runs before the interpreter stops daemon
    threads), the queued calls are cancelled and only the one in flight is waited for: a
    daemon thread stopped inside XLA's native code aborts the process.
    """

    def __init__(self):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._current: Future | None = None
        self._closing = False
        threading.Thread(target=self._work, name="jaxsr-compile", daemon=True).start()
        atexit.register(self.shutdown)

    def submit(self, fn, *args) -> Future:
        fut: Future = Future()
        self._jobs.put((fut, fn, args))
        return fut

    def shutdown(self) -> None:
        """Start nothing more, cancel the queued calls and wait for the one in flight."""
        with self._lock:
            self._closing = True
            current = self._current
        while True:
            try:
                fut, _, _ = self._jobs.get_nowait()
            except queue.Empty:
                break
            fut.cancel()
        if current is not None:
            with contextlib.suppress(BaseException):
                current.exception()  # waits for it to end

    def _work(self) -> None:
        while True:
            fut, fn, args = self._jobs.get()
            with self._lock:
                if self._closing:
                    fut.cancel()
                if not fut.set_running_or_notify_cancel():
                    continue
                self._current = fut
            try:
                fut.set_result(fn(*args))
            except BaseException as err:  # noqa: BLE001 - handed to the waiting caller
                fut.set_exception(err)
            finally:
                with self._lock:
                    self._current = None


def _executor() -> _CompileWorker:
    """The one worker thread of :meth:`CachedProgram.prefetch` (one compilation ahead at
    a time, beside the caller's own)."""
    with _LOCK:
        if not _EXECUTOR:
            _EXECUTOR.append(_CompileWorker())
        return _EXECUTOR[0]


def set_folder(path, create: bool = True) -> str | None:
    """Use ``path`` (a folder, created now if ``create``, else when first used; mode 0700)
    for the disk cache, or switch the disk cache off with ``None``. Returns the folder in
    use, ``None`` if off or if ``path`` cannot be created or written (never raises for
    that). The folder's ownership and permissions are checked when it is first read
    (again after each call here): one that fails is not used, with a warning."""
    if path is None:
        _STATE["folder"] = None
        return None
    target = Path(path).expanduser()
    with _LOCK:
        _STATE["keys"].pop(str(target), None)  # checked again (its mode may have been fixed)
    if not create:
        _STATE["folder"] = target
        return str(target)
    try:
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    """A file that passed the checks could not be loaded (another JAX, a broken file)."""
    if "load" not in _STATE["warned"]:
        _STATE["warned"].add("load")
        warnings.warn(f"jaxsr's compilation cache could not be used ({type(err).__name__}: "
                      f"{err}); compiling instead. jaxsr.enable_compilation_cache(False) "
                      "switches it off.", RuntimeWarning, stacklevel=4)


class _Untrusted(Exception):
    """The folder or its key fails the ownership / permission checks: no disk cache."""


class _Rejected(Exception):
    """A file fails its checks (owner, type, MAC, classes): ignored, compiled again."""


def _warn_untrusted(target: Path, err: _Untrusted) -> None:
    if "untrusted" not in _STATE["warned"]:
        _STATE["warned"].add("untrusted")
        warnings.warn(f"jaxsr's compilation cache folder {target} is not used: {err}. Only a "
                      "folder that no other user can write is read. Fix: chmod 700 "
                      f"'{target}' (owned by you), choose another folder with "
                      "jaxsr.enable_compilation_cache(path), or switch the cache off with "
                      "jaxsr.enable_compilation_cache(False). Compiling instead.",
                      RuntimeWarning, stacklevel=5)


def _warn_rejected(path: Path, err: _Rejected) -> None:
    if "rejected" not in _STATE["warned"]:
        _STATE["warned"].add("rejected")
        warnings.warn(f"jaxsr's compilation cache ignored {path}: {err}. It was not written "
                      "by jaxsr under this user's key, or was changed since; compiling "
                      "instead (and writing it again).", RuntimeWarning, stacklevel=4)


def _check_owned(st, what: str, private: bool) -> None:
    """Raise ``_Untrusted`` unless ``st`` (an ``os.stat_result``) is owned by the current
    user and not writable (``private``: not accessible at all) by group or others. POSIX
    only: elsewhere there is nothing to check."""
    if not _POSIX:
        return
    if st.st_uid != os.getuid():
        raise _Untrusted(f"{what} is owned by user id {st.st_uid}, not by you "
                         f"(user id {os.getuid()})")
    mask = 0o077 if private else 0o022
    if st.st_mode & mask:
        raise _Untrusted(f"{what} has mode {stat.S_IMODE(st.st_mode):#o}: "
                         + ("readable or writable by group or others" if private
                            else "writable by group or others"))


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted under a file's name: no hang
_BINARY = getattr(os, "O_BINARY", 0)


def _read_own_file(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a symlink) owned by the current
    user; ``None`` if it does not exist; else ``_Rejected``. ``limit``: read at most this
    many bytes. The checks are made on the opened file (``fstat``), not on the name."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
    except FileNotFoundError:
        return None
    except OSError as err:  # ELOOP: a symlink
        raise _Rejected(f"it cannot be opened as a plain file ({err.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise _Rejected("it is not a regular file")
        if _POSIX and st.st_uid != os.getuid():
            raise _Rejected(f"it is owned by user id {st.st_uid}, not by you")
        return fh.read() if limit is None else fh.read(limit)


def _create_key(path: Path) -> None:
    """Write a new key (``O_CREAT | O_EXCL``, mode 0600): nothing if one exists already."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(_KEY_BYTES))
    except OSError:
        path.unlink(missing_ok=True)
        raise


def _folder_key(target: Path) -> bytes | None:
    """The key of folder ``target`` (created with the folder if missing) once the folder
    and the key pass the checks of the module's security model; ``None`` (with one
    warning per process) where they fail. Checked once per folder until :func:`set_folder`
    names it again. Raises ``OSError`` where the folder cannot be created or the key
    written."""
    name = str(target)
    with _LOCK:
        if name in _STATE["keys"]:
            return _STATE["keys"][name]
        try:
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = os.stat(target)
            if not stat.S_ISDIR(st.st_mode):
                raise _Untrusted("it is not a folder")
            _check_owned(st, "the folder", private=False)
            key_path = target / _KEY_NAME
            for _ in range(200):
                try:
                    fd = os.open(key_path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
                except FileNotFoundError:
                    _create_key(key_path)
                    continue
                except OSError as err:
                    raise _Untrusted(f"its key file {_KEY_NAME} cannot be opened as a plain "
                                     f"file ({err.strerror})") from None
                with os.fdopen(fd, "rb") as fh:
                    kst = os.fstat(fh.fileno())
                    if not stat.S_ISREG(kst.st_mode):
                        raise _Untrusted(f"its key file {_KEY_NAME} is not a regular file")
                    _check_owned(kst, f"its key file {_KEY_NAME}", private=True)
                    key = fh.read(_KEY_BYTES + 1)
                if len(key) == _KEY_BYTES:
                    break
                if len(key) > _KEY_BYTES:
                    raise _Untrusted(f"its key file {_KEY_NAME} is not {_KEY_BYTES} bytes "
                                     "long (delete it to make a new one)")
                time.sleep(0.005)  # another process is writing it
            else:
                raise _Untrusted(f"its key file {_KEY_NAME} is incomplete (delete it to "
                                 "make a new one)")
        except _Untrusted as err:
            _warn_untrusted(target, err)
            key = None
        _STATE["keys"][name] = key
        return key


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    msg = hmac.new(key, _MAGIC, hashlib.sha256)
    msg.update(name.encode())
    msg.update(b"\0")
    msg.update(payload)
    return msg.digest()


_STRING_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
                         "STRING", "BINSTRING", "SHORT_BINSTRING"})
_GET_OPS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})


def _pickle_globals(data: bytes) -> set:
    """The ``(module, name)`` of every class or function the pickle ``data`` would import,
    found by reading its opcodes (``pickletools.genops``) without running any. Raises
    ``_Rejected`` where that cannot be known for sure: a ``STACK_GLOBAL`` whose two
    arguments are not the strings pushed just before it, or the copyreg extension codes.

    Sound because a ``STACK_GLOBAL`` takes the two topmost stack items, and only string
    pushes (or memo reads of strings) with nothing but memo writes between them are
    accepted as those two."""
    found = set()
    memo = {}
    pushed = []  # the items pushed since the last other stack operation (None: unknown)
    try:
        for op, arg, _ in pickletools.genops(data):
            name = op.name
            if name in ("GLOBAL", "INST"):
                module, _, qualname = arg.partition(" ")
                found.add((module, qualname))
                pushed = []
            elif name == "STACK_GLOBAL":
                if len(pushed) < 2 or not all(isinstance(v, str) for v in pushed[-2:]):
                    raise _Rejected("its pickle imports a class it does not name plainly")
                found.add((pushed[-2], pushed[-1]))
                pushed = []
            elif name in ("EXT1", "EXT2", "EXT4"):
                raise _Rejected("its pickle uses copyreg extension codes")
            elif name in _STRING_OPS:
                pushed.append(arg)
            elif name in _GET_OPS:
                pushed.append(memo.get(arg))
            elif name == "MEMOIZE":
                memo[len(memo)] = pushed[-1] if pushed else None
            elif name in _PUT_OPS:
                memo[arg] = pushed[-1] if pushed else None
            elif name != "FRAME":
                pushed = []
    except (ValueError, KeyError, IndexError, TypeError) as err:  # not a whole pickle
        raise _Rejected(f"its pickle is malformed ({err})") from None
    return found


def _check_globals(payload: bytes) -> None:
    """Raise ``_Rejected`` unless every import of JAX's pickle ``payload`` is allowed."""
    extra = _pickle_globals(payload) - _ALLOWED_GLOBALS
    if extra:
        shown = ", ".join(sorted(f"{m}.{n}" for m, n in extra)[:3])
        raise _Rejected(f"its pickle imports {shown}, not among the classes of JAX's "
                        "serialized executables")


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
        from ._config import thread_settings

        self._memory[key] = _executor().submit(self._compile_with, thread_settings(), values)
        return True

    def _compile_with(self, settings, values):
        """:meth:`_load_or_compile` on a worker thread, under the caller's scoped JAX
        settings (``settings``: :func:`jaxsr._config.thread_settings`; they are per
        thread)."""
        with settings():
            return self._load_or_compile(values)

    def _key(self, args, kwargs):
        """``(key, values, dynamic)`` of a call (its signature as ``jax.jit``'s cache keys
        it, every argument in order, the non-static ones), or ``NotImplemented``."""
        if self._names is None:
            return NotImplemented
        # inside a mesh context (``jax.set_mesh``: a sharded fit) the traced program holds
        # sharding constraints over that mesh, which this key does not record
        if not jax.sharding.get_abstract_mesh().empty:
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

        try:
            key = _folder_key(target)
        except OSError:  # a folder that cannot be created or a key not written
            _STATE["folder"] = None
            return lowered.compile()
        if key is None:  # a folder or key that fails the checks: no disk cache
            return lowered.compile()
        path = None
        try:
            h = hashlib.sha256()
            for part in (_FORMAT, self._name, repr(sorted(self._options.items())),
                         _host_key(), lowered.as_text()):
                h.update(part.encode())
                h.update(b"\0")
            path = target / (h.hexdigest()[:40] + _SUFFIX)
            data = _read_own_file(path)
            if data is not None:
                head = len(_MAGIC) + _MAC_BYTES
                if len(data) <= head or not data.startswith(_MAGIC):
                    raise _Rejected("it is not a file of this cache")
                payload = data[head:]
                if not hmac.compare_digest(data[len(_MAGIC):head],
                                           _mac(key, path.name, payload)):
                    raise _Rejected("its MAC does not verify")
                _check_globals(payload)
                compiled = serialize_executable.deserialize_and_load(
                    payload, lowered.in_tree, lowered.out_tree,
                    execution_devices=[_default_device()])
                os.utime(path)  # recently used
                return compiled
        except _Rejected as err:
            _warn_rejected(path, err)
        except Exception as err:  # noqa: BLE001 - a stale or broken file: compile
            _warn_once(err)
        compiled = lowered.compile()
        if path is not None:
            try:
                payload, in_tree, out_tree = serialize_executable.serialize(compiled)
                # the trees are the traced call's (so nothing of jaxsr's is pickled), and
                # only an executable made of the allowed classes is kept
                if in_tree != lowered.in_tree or out_tree != lowered.out_tree:
                    return compiled
                _check_globals(payload)
                blob = _MAGIC + _mac(key, path.name, payload) + payload
                with _LOCK:
                    fd, tmp = tempfile.mkstemp(dir=target, suffix=".tmp")  # mode 0600
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(blob)
                    os.replace(tmp, path)
                    _trim(target)
            except OSError:  # not writable, full disk: no disk cache in this process
                _STATE["folder"] = None
            except _Rejected:  # classes this JAX serializes that the loader would refuse
                pass
            except Exception as err:  # noqa: BLE001 - never fail a fit because of a cache
                _warn_once(err)
        return compiled
