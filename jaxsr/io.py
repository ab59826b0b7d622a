"""Saving and loading fitted models as JSON.

A model file is one JSON object::

    {"format": "jaxsr-model", "format_version": 1, "jaxsr_version": "0.1.0",
     "kind": "SymbolicRegressor", "model": {...}}

where ``model`` is the estimator's own ``to_dict()`` and ``kind`` names the class whose
``from_dict`` reads it back (``SymbolicRegressor``, ``OptimalTreeRegressor`` or
``Binarizer``). Floats are written with Python's shortest round-trip representation, so a
loaded model predicts exactly what the saved one did.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_JSON_DEPTH",
    "load_model",
    "model_from_dict",
    "model_to_dict",
    "save_model",
]

FORMAT = "jaxsr-model"
FORMAT_VERSION = 1
# Deepest nesting of JSON arrays and objects that load_model reads. A model file nests
# about six levels (document, model, front, table, column, value; expressions and trees
# are flat pre-order arrays, whatever their height); Python's json reader recurses once per
# level and fails with RecursionError near a thousand, so a deeper file is refused first.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')

# kind -> (module, class name); imported lazily so that io works while an engine is absent.
_KINDS = {
    "SymbolicRegressor": ("jaxsr.symbolic", "SymbolicRegressor"),
    "OptimalTreeRegressor": ("jaxsr.trees", "OptimalTreeRegressor"),
    "Binarizer": ("jaxsr.trees", "Binarizer"),
}


def _class_for(kind: str):
    if kind not in _KINDS:
        raise ValueError(f"unknown model kind {kind!r}; expected one of {', '.join(_KINDS)}")
    module_name, cls_name = _KINDS[kind]
    import importlib

    try:
        module = importlib.import_module(module_name)
        return getattr(module, cls_name)
    except (ImportError, AttributeError) as err:
        raise ImportError(
            f"{kind} is not available in this installation of jaxsr ({module_name}): {err}"
        ) from err


def _kind_of(model) -> str:
    for kind, (module_name, cls_name) in _KINDS.items():
        for klass in type(model).__mro__:
            if klass.__name__ == cls_name and klass.__module__.startswith(module_name):
                return kind
    raise TypeError(f"cannot save a {type(model).__name__}; expected one of {', '.join(_KINDS)}")


def _jsonable(obj: Any) -> Any:
    """Recursively convert numpy / JAX values to plain JSON types."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, bool | str) or obj is None:
        return obj
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.dtype):
        return str(obj)
    if isinstance(obj, type) or type(obj).__name__ == "_ScalarMeta":
        # a dtype given as a class (np.float64, jnp.float32): written as its name
        try:
            return str(np.dtype(obj))
        except TypeError as err:
            raise TypeError(f"cannot write the class {obj!r} to a model file") from err
    if hasattr(obj, "__array__"):
        return _jsonable(np.asarray(obj).tolist())
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"cannot write a value of type {type(obj).__name__} to a model file")


def model_to_dict(model) -> dict:
    """The JSON-ready document of a fitted estimator (see the module docstring).

    Raises:
      TypeError: ``model`` is not a jaxsr estimator.
      ValueError: the estimator is not fitted (raised by its ``to_dict``).
    """
    from . import __version__

    kind = _kind_of(model)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "jaxsr_version": __version__,
        "kind": kind,
        "model": _jsonable(model.to_dict()),
    }


def model_from_dict(doc: dict):
    """Rebuild an estimator from :func:`model_to_dict`'s document. The estimator's
    ``from_dict`` checks every field of ``model``.

    Raises:
      ValueError: not a jaxsr model document, a newer format version, an unknown kind, or a
        field of ``model`` that a fitted estimator cannot hold (the message names it).
      ImportError: the method of this kind is not part of this installation.
    """
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError('not a jaxsr model file (missing "format": "jaxsr-model")')
    version = doc.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"invalid format_version {version!r} in the model file")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"the model file has format_version {version}; this jaxsr reads up to "
            f"{FORMAT_VERSION}. Upgrade jaxsr."
        )
    if "model" not in doc or not isinstance(doc["model"], dict):
        raise ValueError('the model file has no "model" object')
    cls = _class_for(doc.get("kind"))
    return cls.from_dict(doc["model"])


def save_model(model, path: str | os.PathLike) -> Path:
    """Write a fitted estimator to ``path`` as JSON.

    Args:
      model: a fitted ``SymbolicRegressor``, ``OptimalTreeRegressor`` or ``Binarizer``.
      path: the file to write (replaced if present). The model is written to a new
        temporary file in the same folder, then renamed over ``path`` in one atomic step:
        concurrent saves to one path all succeed (the last one wins) and a reader never
        sees a partial file.

    Returns:
      The path written.

    Raises:
      TypeError: not a jaxsr estimator.
      ValueError: the estimator is not fitted.
    """
    doc = model_to_dict(model)
    path = Path(path)
    text = json.dumps(doc, indent=1, allow_nan=True)
    # a temporary file of its own in the target's folder (same file system: the rename
    # is atomic), so that concurrent saves to one path never collide and a reader always
    # sees a whole model, the old one or a new one
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else "."
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's file is private (0600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    """The process's file mode creation mask (read from /proc where it is, else set and
    restored)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _json_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in the JSON text ``text`` (brackets inside
    strings do not count), without parsing it."""
    brackets = re.sub(r"[^\[\]{}]", "", _JSON_STRING.sub("", text))
    if not brackets:
        return 0
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def load_model(path: str | os.PathLike):
    """Read an estimator written by :func:`save_model`.

    Every field is checked by the estimator's ``from_dict`` (a damaged or edited file is
    refused with a ``ValueError`` that names the wrong field), and a file that nests JSON
    arrays and objects more than :data:`MAX_JSON_DEPTH` levels deep is refused before it is
    parsed (Python's JSON reader recurses once per level).

    Raises:
      FileNotFoundError: no such file.
      ValueError: the file is not UTF-8 JSON, nests deeper than :data:`MAX_JSON_DEPTH`, is
        not a jaxsr model file, or has a field that a saved model cannot hold.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {os.fspath(path)!r} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{os.fspath(path)} is not UTF-8 text ({err.reason} at byte "
            f"{err.start}); a model file is JSON written by save_model"
        ) from err
    depth = _json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(
            f"{os.fspath(path)} nests JSON arrays and objects {depth} levels "
            f"deep; a model file nests at most MAX_JSON_DEPTH = "
            f"{MAX_JSON_DEPTH} levels (is it a file written by save_model?)"
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{os.fspath(path)} is not valid JSON: {err}") from err
    except RecursionError as err:  # unbalanced brackets can hide depth from _json_depth
        raise ValueError(
            f"{os.fspath(path)} nests JSON arrays and objects deeper than "
            f"MAX_JSON_DEPTH = {MAX_JSON_DEPTH} levels; a model file nests "
            "about six"
        ) from err
    return model_from_dict(doc)
