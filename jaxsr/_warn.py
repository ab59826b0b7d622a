"""Warnings attributed to the user's line.

``warnings.warn(..., stacklevel=k)`` names the frame ``k`` calls up, which is the user's
line only for one call depth: a warning issued from a helper reached along several paths,
from a ``fit`` wrapped by the thread guard (:func:`jaxsr._base.one_fit_at_a_time`), or
from a ``transform`` that scikit-learn wraps (``set_output``), would name a file of jaxsr
or of scikit-learn instead. :func:`warn_user` names the line that called into jaxsr, so
Python prints the user's file and line, and its ``"default"`` filter shows a warning once
per line of the user's code.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["warn_user"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# scikit-learn's wrappers around the methods of jaxsr's own classes (``transform`` and
# ``fit_transform`` of a transformer, for ``set_output``)
_WRAPPERS = (os.sep + os.path.join("sklearn", "utils", "_set_output.py"),)


def _inside(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE)


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the line that called into jaxsr:
    the caller of the outermost frame of the ``jaxsr`` package on the call stack (past
    scikit-learn's wrappers of jaxsr's methods), i.e. the user's call of ``fit``,
    ``predict`` or ``transform``, or the library's (scikit-learn's ``cross_val_score``)
    that called it. In a thread that jaxsr started, the outermost frame of the thread.

    Args:
      message: the warning's text.
      category: a ``Warning`` subclass.
    """
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        frames.append(frame.f_code.co_filename)
        frame = frame.f_back
    outer = max(i for i, name in enumerate(frames) if i == 0 or _inside(name))
    at = outer + 1
    while at < len(frames) and frames[at].endswith(_WRAPPERS):
        at += 1
    # stacklevel 2 is the frame that called warn_user (frames[0])
    warnings.warn(message, category, stacklevel=min(at, len(frames) - 1) + 2)
