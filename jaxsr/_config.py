"""Numeric and compilation configuration shared by both methods.

* dtypes and the scoped float64 context: jaxsr never flips ``jax_enable_x64`` globally
  behind the user's back. Estimators take a ``dtype`` (float64 by default, float32 as an
  option) and run their numeric passes inside :func:`precision`, a scoped
  ``jax.enable_x64`` context, so the user's own JAX code keeps its settings;
* sample-size buckets (:func:`sample_bucket`): the number of samples is padded up to one of
  a few sizes per octave, so datasets of similar size share their compiled kernels;
* jaxsr's programs (:func:`program`): ``jax.jit`` with, on the CPU, the compile options
  :data:`COMPILE_OPTIONS` (XLA's compile time down about 40%, kernels as fast);
* JAX's persistent compilation cache (:func:`enable_compilation_cache`), on by default
  unless the user configured one: compiled programs are kept on disk and a new process
  loads them instead of compiling again;
* fast compilation (:func:`fast_compilation`), opt-in: jaxsr's programs compile on the
  CPU with options that cut XLA's compile time about 4x more and make the compiled
  kernels 2-6x slower, for first fits in fresh processes.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import _lazy
from ._lazy import jax
from ._warn import warn_user

__all__ = [
    "resolve_dtype",
    "precision",
    "DEFAULT_DTYPE",
    "sample_bucket",
    "feature_bucket",
    "enable_compilation_cache",
    "default_cache_dir",
    "resolve_mesh",
    "fast_compilation",
    "CACHE_OFF",
    "COMPILE_OPTIONS",
    "FAST_COMPILE_OPTIONS",
    "program",
    "to_device",
]

DEFAULT_DTYPE = np.dtype(np.float64)
_ALLOWED = (np.dtype(np.float64), np.dtype(np.float32))


def resolve_dtype(dtype) -> np.dtype:
    """Return the numpy dtype for a user's ``dtype`` option.

    Args:
      dtype: ``None`` (float64), ``"float64"``, ``"float32"``, ``np.float64``, ``np.float32``
        or ``jnp.float64`` / ``jnp.float32``.

    Returns:
      ``np.dtype('float64')`` or ``np.dtype('float32')``.

    Raises:
      ValueError: for any other dtype (integers, float16, complex, ...).
    """
    if dtype is None:
        return DEFAULT_DTYPE
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise ValueError(f"dtype must be float64 or float32, got {dtype!r}") from err
    if dt not in _ALLOWED:
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    return dt


def to_device(x, dtype=None) -> jax.Array:
    """Host data as a JAX array on the default device, like ``jnp.asarray(x, dtype)``.

    ``jnp.asarray`` of a numpy array or a Python scalar (and ``jnp.zeros`` and the like)
    runs a small XLA program, compiled once per new shape and dtype (5-30 ms each, a
    dozen of them in a first fit); ``jax.device_put`` of the numpy array copies it
    without compiling anything. Same dtype rules as ``jnp.asarray`` (64-bit types only
    inside a float64 :func:`precision` block), never weakly typed; a JAX array is returned
    as it is (cast if ``dtype`` differs), not copied through the host.

    Args:
      x: array-like (numpy array, Python scalar or sequence, JAX array).
      dtype: the numpy dtype, or ``None`` for numpy's choice.

    Returns:
      a ``jax.Array`` of ``x``'s shape.
    """
    if isinstance(x, jax.Array):
        return x if dtype is None or x.dtype == np.dtype(dtype) else x.astype(dtype)
    return jax.device_put(np.asarray(x, dtype=dtype))


@contextlib.contextmanager
def precision(dtype=None) -> Iterator[np.dtype]:
    """Scoped numeric context: float64 enabled inside for ``dtype=float64``.

    Yields the resolved dtype. Inside the block, ``jnp.asarray(x, dtype)`` really has that
    dtype; the global ``jax_enable_x64`` flag is restored on exit.

    Raises:
      ValueError: if float64 is asked for and this JAX backend cannot provide it.
    """
    dt = resolve_dtype(dtype)
    with jax.enable_x64(dt == np.float64 or bool(jax.config.jax_enable_x64)):
        if dt == np.float64 and to_device(np.zeros((), dt)).dtype != np.float64:
            raise ValueError(
                "float64 was requested but this JAX backend does not provide it; "
                "pass dtype='float32'"
            )
        yield dt


def thread_settings():
    """The calling thread's scoped JAX settings, as a function that re-enters them in
    another thread: ``with thread_settings()():`` (JAX keeps ``enable_x64``, the default
    device, the matmul precision and the dtype promotion per thread, so work handed to a
    worker thread would otherwise run under the global ones).

    Returns:
      a function of no arguments returning a context manager.
    """
    cfg = jax.config
    x64, device = bool(cfg.jax_enable_x64), cfg.jax_default_device
    matmul, promotion = cfg.jax_default_matmul_precision, cfg.jax_numpy_dtype_promotion

    @contextlib.contextmanager
    def scoped():
        with contextlib.ExitStack() as stack:
            stack.enter_context(jax.enable_x64(x64))
            if device is not None:
                stack.enter_context(jax.default_device(device))
            if matmul is not None:
                stack.enter_context(jax.default_matmul_precision(matmul))
            stack.enter_context(jax.numpy_dtype_promotion(promotion))
            yield

    return scoped


# Buckets per octave of the sample-size padding: sizes m * 2**e with m in 4 .. 7, so at
# most 1/4 of a padded dataset is padding; and the smallest bucket, which every dataset
# of up to MIN_ROWS rows shares (small fits are dominated by calls, not rows).
_BUCKET_STEPS = 4
MIN_ROWS = 256
# The smallest feature bucket (:func:`feature_bucket`).
MIN_FEATURES = 4


def sample_bucket(n_samples: int, multiple: int = 1) -> int:
    """Padded number of samples for ``n_samples``: :data:`MIN_ROWS` (256) for up to that
    many, else the smallest ``m * 2**e >= n_samples`` with ``4 <= m <= 7``, rounded up to
    a multiple of ``multiple`` (e.g. the number of devices the samples are sharded over).

    Every dataset of up to 256 rows, and above that every dataset of one bucket (at most
    25 % of it padding), runs the same compiled programs: the programs' shapes follow the
    bucket, not the data (the padding rows have weight 0).

    Raises:
      ValueError: if ``n_samples < 1`` or ``multiple < 1``.
    """
    n, mult = int(n_samples), int(multiple)
    if n < 1 or mult < 1:
        raise ValueError(f"need n_samples >= 1 and multiple >= 1; got {n_samples}, {multiple}")
    b = _octave_bucket(max(n, MIN_ROWS))
    return -(-b // mult) * mult


def _octave_bucket(n: int) -> int:
    """The smallest ``m * 2**e >= n`` with ``4 <= m <= 7`` (every n up to 8 is its own)."""
    e = max(0, n.bit_length() - 1 - (_BUCKET_STEPS.bit_length() - 1))
    step = 1 << e
    return -(-n // step) * step


def feature_bucket(n_features: int) -> int:
    """Padded number of feature columns for ``n_features``: 4, 8 or 16 up to 16 columns,
    then four buckets per octave (20, 24, 28, 32, 40, ...: at most 25 % padding). The
    padding columns are constant, so no search ever uses them (constant columns are out of
    the variable pool).

    Raises:
      ValueError: if ``n_features < 0``.
    """
    m = int(n_features)
    if m < 0:
        raise ValueError(f"need n_features >= 0; got {n_features}")
    if m <= 16:
        return max(MIN_FEATURES, 1 << max(0, m - 1).bit_length())
    return _octave_bucket(m)


def resolve_mesh(mesh, axis_name: str):
    """The device mesh of an estimator's ``mesh`` parameter.

    Args:
      mesh: ``None`` (one device), ``"all"`` (a 1-D mesh over ``jax.local_devices()``,
        its axis named ``axis_name``) or a ``jax.sharding.Mesh`` (used as given).
      axis_name: name of the axis of the ``"all"`` mesh (``"samples"`` for the symbolic
        search, ``"classes"`` for the tree search).

    Returns:
      ``(mesh, axes)``: the ``Mesh`` and the tuple of all its axis names (the sharded
      array axis is split over all of them), or ``(None, None)``.

    Raises:
      ValueError: any other value.
    """
    if mesh is None:
        return None, None
    from jax.sharding import Mesh

    if isinstance(mesh, str) and mesh == "all":
        mesh = Mesh(np.array(jax.local_devices()), (axis_name,))
    if not isinstance(mesh, Mesh):
        raise ValueError(f"mesh must be None, 'all' or a jax.sharding.Mesh; got {mesh!r}")
    return mesh, tuple(mesh.axis_names)


# values of JAXSR_COMPILATION_CACHE / JAXSR_CACHE_DIR that switch the cache off
CACHE_OFF = frozenset({"0", "false", "no", "off", "none"})
_CACHE = {"folder": None}  # the folder jaxsr gave JAX's cache (None: not jaxsr's doing)


def default_cache_dir() -> Path:
    """``$JAXSR_CACHE_DIR`` if set (and not ``none``), else ``$XDG_CACHE_HOME/jaxsr`` or
    ``~/.cache/jaxsr``: the folder of :func:`enable_compilation_cache`."""
    env = os.environ.get("JAXSR_CACHE_DIR")
    if env and env.strip().lower() not in CACHE_OFF:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "jaxsr"


def _private_folder(path: Path) -> str | None:
    """``path`` created (mode 0700) if missing; the reason it cannot hold executables, or
    ``None``: JAX's cache is trusted code, so only a folder of this user that no one else
    can write is used (POSIX; elsewhere only its existence is checked)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as err:
        return f"it cannot be created ({err.strerror or err})"
    if not path.is_dir():
        return "it is not a folder"
    if hasattr(os, "getuid"):
        if st.st_uid != os.getuid():
            return "it belongs to another user"
        if st.st_mode & 0o022:
            return "others can write it (chmod 700 it)"
    if not os.access(path, os.W_OK):
        return "it is not writable"
    return None


def _reset_jax_cache() -> None:
    # JAX decides once per process, at its first compilation, whether a cache is used:
    # start that decision again so a folder set after it takes effect
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()


def enable_compilation_cache(path=None) -> str | None:
    """JAX's persistent compilation cache for jaxsr's programs: on by default; choose its
    folder or switch it off.

    On a CPU most of a first fit in a fresh process is XLA compilation (seconds per new
    program shape, measured by ``benchmarks/bench_first_fit.py``). jaxsr therefore turns on
    JAX's own persistent compilation cache (``jax_compilation_cache_dir``, with
    ``jax_persistent_cache_min_compile_time_secs = 0`` and no minimum entry size) when
    its numeric code is first imported (the first use of an estimator; ``import jaxsr``
    alone imports no JAX), unless the user has configured one (then that one is used as it
    is) or switched it off with ``JAXSR_COMPILATION_CACHE=0`` or ``JAXSR_CACHE_DIR=none``
    (read at import). A new process then loads the executables instead of compiling
    them. The setting is JAX's global one: the user's own jitted functions are cached in
    the same folder while it is on.

    The folder holds executables (machine code, which JAX's cache trusts), so it is only
    used when it belongs to this user and no one else can write it (jaxsr creates it
    with mode 0700); any other folder is not used, with a warning.

    Args:
      path: ``None`` (the default folder :func:`default_cache_dir`, ``~/.cache/jaxsr``),
        a folder, or ``False`` to switch off the cache jaxsr turned on.

    Returns:
      The folder in use, or ``None`` when switched off or when the folder cannot be used
      (a cache is an optimisation only: this never raises for that).

    Example:
      >>> import jaxsr
      >>> folder = jaxsr.enable_compilation_cache("/tmp/jaxsr-cache")   # doctest: +SKIP
      >>> jaxsr.enable_compilation_cache(False)                        # doctest: +SKIP
    """
    if path is False:
        if (
            _CACHE["folder"] is not None
            and jax.config.jax_compilation_cache_dir == _CACHE["folder"]
        ):
            jax.config.update("jax_compilation_cache_dir", None)
            _reset_jax_cache()
        _CACHE["folder"] = None
        return None
    folder = Path(default_cache_dir() if path is None else path).expanduser()
    why = _private_folder(folder)
    if why is not None:
        warn_user(
            f"jaxsr's compilation cache is off: the folder {str(folder)!r} cannot "
            f"be used because {why}; programs compile in each new process "
            "(jaxsr.enable_compilation_cache(path) chooses another folder)",
            RuntimeWarning,
        )
        return enable_compilation_cache(False)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _reset_jax_cache()
    _CACHE["folder"] = str(folder)
    return str(folder)


def _cache_from_environment() -> None:
    """On jaxsr's first use of JAX: JAX's persistent cache in :func:`default_cache_dir`
    unless the user configured one or switched it off (``JAXSR_COMPILATION_CACHE=0``,
    ``JAXSR_CACHE_DIR=none``, or an empty value of either)."""
    for name in ("JAXSR_COMPILATION_CACHE", "JAXSR_CACHE_DIR"):
        env = os.environ.get(name)
        if env is not None and (not env.strip() or env.strip().lower() in CACHE_OFF):
            return
    if jax.config.jax_compilation_cache_dir:  # the user's own cache: left as it is
        return
    try:
        enable_compilation_cache()
    except Exception:  # noqa: BLE001 - a cache never fails an import
        _CACHE["folder"] = None


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity; ``os.cpu_count()`` where unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


# XLA:CPU compiles each program's LLVM module in this many parts on its thread pool (XLA's
# default is 32 parts, whatever the cores): with fewer usable cores than parts, the parts
# only add work. As many parts as usable cores, measured on the first symbolic fit above
# (no cache): one core 4.35 -> 3.92 s of compilation (first fit 5.24 -> 4.79 s),
# two cores 3.60 -> 2.71 s, kernels and results the same to the bit (the 17 built-in Feynman
# fits hashed identical, warm medians 0.192 / 0.195 CPU-s).
_CODEGEN_SPLIT = {"xla_cpu_parallel_codegen_split_count": max(1, min(32, _usable_cpus()))}

# XLA:CPU options of every jaxsr program (:func:`program`): the older (non-MLIR) fusion
# emitters and the code generation split above. The emitters, measured on a first
# symbolic fit (N = 1000, 5 variables, 20 nodes, strategy 3, one core):
# 12.7 -> 7.9 CPU-s, XLA's compile time down about 40%, with kernels as fast (warm fits
# 0.22 / 0.16 s at N = 1000, 0.66 / 0.62 s at N = 2e4, 3.25 / 3.33 s at N = 1e5).
# LLVM at -O2 (``xla_backend_optimization_level: 2``; XLA's default is 3) was tried:
# 12% less compile time on that fit (median 8.2 -> 7.2 s), kernels as fast,
# but the expanded closed-form sums of the searches round differently enough that the
# constant-variable ``k`` left the one-by-one oracle's rtol 1e-7 and a fit's search path
# changed against the fast (-O0) compilation: not taken.
# ``JAXSR_COMPILE_OPTIONS`` (a JSON object, read at import; ``{}`` for XLA's own defaults)
# replaces them.
COMPILE_OPTIONS = {"xla_cpu_use_fusion_emitters": False, **_CODEGEN_SPLIT}
if os.environ.get("JAXSR_COMPILE_OPTIONS", "").strip():
    import json as _json

    try:
        COMPILE_OPTIONS = _json.loads(os.environ["JAXSR_COMPILE_OPTIONS"])
    except ValueError as _err:
        raise ValueError(
            "JAXSR_COMPILE_OPTIONS must be a JSON object of XLA options, e.g. "
            "'{\"xla_cpu_use_fusion_emitters\": false}' or '{}'"
        ) from _err
    if not isinstance(COMPILE_OPTIONS, dict):
        raise ValueError(
            f"JAXSR_COMPILE_OPTIONS must be a JSON object of XLA options, got {COMPILE_OPTIONS!r}"
        )

# XLA:CPU options of :func:`fast_compilation`: the older fusion emitters and LLVM at -O0.
# Measured on the programs of a first symbolic fit (N = 1024, capacity 32, one core):
# 26.7 -> 5.6 CPU-s of compilation (either option alone: 23.6 / 15.1 s), the kernels
# 1.5-6x slower (measured with benchmarks/bench_symbolic_iteration.py).
FAST_COMPILE_OPTIONS = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_backend_optimization_level": 0,
    **_CODEGEN_SPLIT,
}
_FAST = {
    "on": os.environ.get("JAXSR_FAST_COMPILE", "").strip().lower() in ("1", "true", "yes", "on")
}


def fast_compilation(enabled: bool = True) -> bool:
    """Compile jaxsr's own programs for compile time rather than run time (opt-in).

    On a CPU most of a first fit in a fresh process is XLA compilation (8-10 s for a
    symbolic fit of 1000 samples on one core with :data:`COMPILE_OPTIONS`, under 2 s
    once :func:`enable_compilation_cache`'s folder holds the kernels). With this switched
    on, the programs jaxsr compiles from then on (:func:`program`) pass
    :data:`FAST_COMPILE_OPTIONS` to XLA through ``jax.jit(..., compiler_options=...)``:
    about 2.5x less compile time than the defaults, kernels 1.5-3x slower; the results
    agree to rounding (sums vectorised differently), not to the bit. Worth it for a few
    small fits in a process that has no cached kernels; not for long or repeated fits.
    Its executables are cached too (apart from the default ones: the options are part
    of the cache key).
    Only jaxsr's programs and only the CPU backend are affected: the user's own JAX
    code and ``XLA_FLAGS`` are untouched. Also set by the environment variable
    ``JAXSR_FAST_COMPILE=1`` before importing jaxsr.

    Args:
      enabled: switch on (True) or off (False).

    Returns:
      The previous setting.

    Example:
      >>> import jaxsr
      >>> previous = jaxsr.fast_compilation(True)   # doctest: +SKIP
    """
    previous = _FAST["on"]
    _FAST["on"] = bool(enabled)
    return previous


def _find_trace_state_clean():
    """A test for "no trace is active" on JAX's public extension API, or ``None`` where
    this JAX lacks it.

    ``jax.core`` exports ``Trace`` and ``Tracer`` only, and ``isinstance(x, Tracer)`` on
    the arguments misses a trace whose arguments are concrete (arrays closed over by the
    user's ``jit``, where a nested jit must not take compile options). The current trace,
    read with ``jax.extend.core.take_current_trace`` (the API JAX documents for extension
    authors), is JAX's eager ``EvalTrace`` exactly at the top level, and another one
    under ``jit``, ``vmap``, ``grad`` or ``shard_map``. A JAX where that function moved or
    was renamed makes :func:`_top_level` answer the conservative False."""
    try:
        from jax.extend.core import take_current_trace
    except ImportError:
        return None

    def trace_state_clean() -> bool:
        with take_current_trace() as trace:  # nothing runs inside: just read it
            return type(trace).__name__ == "EvalTrace"

    return trace_state_clean


_UNSET = object()
_TRACE_STATE_CLEAN = _UNSET  # found on first use (importing JAX), by _top_level


def _top_level() -> bool:
    """True outside any JAX trace (a call that compiles a program of its own).

    False inside another trace, and also where the test of the current trace is missing or
    fails (:func:`_find_trace_state_clean`): a call then goes through plain ``jax.jit``, without
    jaxsr's compile options and compilation cache, which is correct at any level, only
    slower to compile at the top level."""
    global _TRACE_STATE_CLEAN
    if _TRACE_STATE_CLEAN is _UNSET:
        _TRACE_STATE_CLEAN = _find_trace_state_clean()
    probe = _TRACE_STATE_CLEAN
    if probe is None:
        return False
    try:
        return bool(probe())
    except Exception:  # noqa: BLE001 - an internal JAX change: the answer that is always safe
        return False


class _Program:
    """A jitted program of jaxsr: ``jax.jit`` three times (XLA's defaults,
    :data:`COMPILE_OPTIONS` and :data:`FAST_COMPILE_OPTIONS`), the one in use chosen at
    each call: the options only on the CPU backend and at the top level (a call inside
    another trace is inlined with XLA's defaults: JAX refuses options on a nested jit),
    the fast ones when :func:`fast_compilation` is on."""

    def __init__(self, fun, **jit_kwargs):
        functools.update_wrapper(self, fun)
        self._plain = jax.jit(fun, **jit_kwargs)
        self._full = (
            jax.jit(fun, compiler_options=COMPILE_OPTIONS, **jit_kwargs)
            if COMPILE_OPTIONS
            else self._plain
        )
        self._fast = jax.jit(fun, compiler_options=FAST_COMPILE_OPTIONS, **jit_kwargs)

    def _pick(self):
        # under an outer trace (jit, vmap, grad) this is inlined: options are the outer
        # program's (JAX refuses them on a nested jit)
        if jax.default_backend() != "cpu" or not _top_level():
            return self._plain
        return self._fast if _FAST["on"] else self._full

    def __call__(self, *args, **kwargs):
        return self._pick()(*args, **kwargs)

    def lower(self, *args, **kwargs):
        return self._pick().lower(*args, **kwargs)

    def __getattr__(self, name):  # trace, eval_shape, _cache_size, ...
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._pick(), name)


PROGRAM_NAMES: set[str] = set()
"""The names of jaxsr's programs (:func:`program`), as JAX's compile events name them."""


def program(fun=None, *, static_argnames=None):
    """``jax.jit`` for jaxsr's own programs (the entry points the estimators call), so
    :func:`fast_compilation` can choose their compile options; used as ``@program`` or
    ``@program(static_argnames=(...))``. Called inside another jitted function it is
    inlined as any jitted function (the outer program's options apply)."""
    if fun is None:
        return functools.partial(program, static_argnames=static_argnames)
    PROGRAM_NAMES.add(fun.__name__)
    kwargs = {} if static_argnames is None else {"static_argnames": static_argnames}
    return _Program(fun, **kwargs)


_lazy.after_import(_cache_from_environment)  # on jaxsr's first use of JAX
