"""Fork safety: a fit in a child process that ``fork`` made from a process using JAX.

XLA runs thread pools that ``os.fork`` does not copy: in the child, the first computation
waits forever for threads that do not exist (at 0% CPU, inside ``ArrayImpl._value``).
That is what ``multiprocessing``'s default start method on Linux (``fork``; Python 3.14
changed it to ``forkserver``) and joblib's ``multiprocessing`` backend do. A child forked
before the parent ran anything on JAX works; after that, :func:`check_not_forked`, called
by every estimator at its input boundary (:mod:`jaxsr._validation`), raises a clear error
instead of hanging. Processes started with ``spawn`` or ``forkserver`` (or joblib's
default ``loky`` backend) import jaxsr afresh and are not affected.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ForkedAfterJAXError", "check_not_forked", "jax_started"]


class ForkedAfterJAXError(RuntimeError):
    """A jaxsr estimator was used in a process forked after its parent had run JAX.

    Raised by ``fit`` and ``predict`` in such a child, where JAX would wait forever for
    threads that ``fork`` did not copy (:func:`check_not_forked`). Start worker processes
    with the ``spawn`` or ``forkserver`` method, or joblib's default ``loky`` backend, or
    fork them before the first fit. A ``RuntimeError``; ``jaxsr.ForkedAfterJAXError``.
    """


_FORKED_FROM_PID: list[int | None] = [None]  # the parent's pid once forked after JAX ran


def jax_started() -> bool:
    """Whether this process has started JAX's runtime (its backends, and their threads).

    Importing JAX starts no threads; the first computation (or device query) does."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # noqa: BLE001 - a JAX without the function: assume it ran
        return True


def _before_fork() -> None:
    _BEFORE[0] = jax_started()


_BEFORE = [False]


def _after_fork_in_child() -> None:
    if _BEFORE[0]:
        _FORKED_FROM_PID[0] = os.getppid()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def check_not_forked() -> None:
    """Raise :class:`ForkedAfterJAXError` in a process forked (``os.fork``,
    ``multiprocessing``'s ``fork`` start method) after its parent had run JAX: JAX would
    hang there.

    Raises:
      ForkedAfterJAXError: a ``RuntimeError`` naming the start methods that work.
    """
    if _FORKED_FROM_PID[0] is not None:
        raise ForkedAfterJAXError(
            f"this process was forked from process {_FORKED_FROM_PID[0]} after that one "
            "had used JAX, whose threads do not survive a fork: a fit here would hang. "
            "Start worker processes with the 'spawn' or 'forkserver' method instead "
            "(multiprocessing.get_context('spawn'), ProcessPoolExecutor(mp_context=...), "
            "or joblib's default 'loky' backend), or fork them before the first fit."
        )
