"""Where the compiled tree kernels are cached, told without importing numba.

numba keys a cached function on its own source file only ("changes in symbols defined in
another file are not recognized", numba's caching notes), while the compiled code of the
tree search is one program: the solver loop (:mod:`~jaxsr.trees.engine`) has the kernels of
:mod:`~jaxsr.trees.compiled`, the formulas of :mod:`~jaxsr.trees.losses`, the plain
functions of :mod:`~jaxsr.trees.bounds` and :mod:`~jaxsr.trees.subtrees` compiled into it
and the constants of :mod:`~jaxsr.trees.solver` frozen in. So the kernels are cached in a
folder of their own, ``<base>/jaxsr-trees-<key>``, whose key digests all these files (and
what else numba stamps a cached function with): an edit or an upgrade gets a new, empty
folder. The base is numba's documented ``NUMBA_CACHE_DIR`` when set, else
``$XDG_CACHE_HOME/jaxsr/numba`` (``~/.cache/jaxsr/numba``).

A file ``complete`` in the folder says every kernel is there
(:func:`jaxsr.trees.warmup.native_kernels_cached`). This module reads only files and the
environment, so a fit can ask (:func:`marker_exists`, about a millisecond) before it pays
for importing numba (~0.2 s).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import sys
import tempfile

__all__ = ["CACHE_SOURCES", "COMPLETE_MARKER", "sources_digest", "cache_key", "cache_base",
           "cache_folder", "marker_exists"]

CACHE_SOURCES = ("compiled.py", "engine.py", "solver.py", "losses.py", "bounds.py",
                 "subtrees.py")
COMPLETE_MARKER = "complete"
HERE = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def sources_digest(folder: str = HERE) -> bytes:
    """SHA-256 of the files of :data:`CACHE_SOURCES` in ``folder`` (names and contents)."""
    h = hashlib.sha256()
    for name in CACHE_SOURCES:
        with open(os.path.join(folder, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    return h.digest()


def _numba_version() -> str:
    numba = sys.modules.get("numba")
    if numba is not None:
        return numba.__version__
    return importlib.metadata.version("numba")


def cache_key(folder: str = HERE) -> str:
    """Hex digest of everything the cached kernels of ``folder`` depend on: the sources'
    contents (:func:`sources_digest`); their sizes and modification times, which numba
    stamps each cached function with (a reinstall of the same files invalidates numba's
    entries, so it must not find an old folder called complete); the install's path (numba
    files each install's kernels apart inside the folder); numba's and Python's versions."""
    h = hashlib.sha256(sources_digest(folder))
    for name in CACHE_SOURCES:
        st = os.stat(os.path.join(folder, name))
        h.update(f"{name}\0{st.st_mtime_ns}\0{st.st_size}\0".encode())
    for part in (os.path.abspath(folder), _numba_version(), sys.version,
                 getattr(sys, "abiflags", "")):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def cache_base() -> str:
    """The user's ``NUMBA_CACHE_DIR`` when set (numba's setting once numba is imported,
    else the environment variable), else ``$XDG_CACHE_HOME/jaxsr/numba`` or
    ``~/.cache/jaxsr/numba``."""
    numba = sys.modules.get("numba")
    user = numba.config.CACHE_DIR if numba is not None else os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return os.path.abspath(os.path.expanduser(user))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxsr", "numba")


def cache_folder(folder: str = HERE, create: bool = True) -> str | None:
    """``<base>/jaxsr-trees-<key>`` (:func:`cache_base`, :func:`cache_key`); with
    ``create``, made and checked writable, None when it cannot be (a read-only home)."""
    try:
        path = os.path.join(cache_base(), f"jaxsr-trees-{cache_key(folder)[:16]}")
        if create:
            os.makedirs(path, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
    except (OSError, RuntimeError, importlib.metadata.PackageNotFoundError):
        return None
    return path


def marker_exists() -> bool:
    """Whether the ``complete`` file is in this install's cache folder (no numba import)."""
    path = cache_folder(create=False)
    return path is not None and os.path.exists(os.path.join(path, COMPLETE_MARKER))
