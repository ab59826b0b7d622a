"""Ending the process promptly while a fit's worker thread is still inside native code.

A symbolic fit runs its search in a daemon worker thread (``jaxsr-fit``). When ``fit``
returns at ``max_time``, or is interrupted by Ctrl-C, the worker is asked to stop; it ends
at its next check, but an XLA compilation (or a long kernel) in flight cannot be
interrupted and may take tens of seconds on a busy machine. Python's shutdown cannot
simply leave such a thread behind: the thread would take the interpreter's lock after
shutdown began, which ends it by a forced unwinding through native frames that aborts the
process, and JAX's own exit hook clears the backend that the compilation uses. The exit
hook of :mod:`jaxsr.symbolic.regressor` therefore waits for the workers, at most
:data:`EXIT_GRACE_SECONDS`, then ends the process with :func:`end_process_now`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

__all__ = ["EXIT_GRACE_SECONDS", "end_process_now", "record_exit_status"]

EXIT_GRACE_SECONDS = 1.0
"""At interpreter exit, the longest wait for fits' worker threads that were asked to stop;
after it, a worker still inside a compilation or a kernel is left to the operating system
(:func:`end_process_now`)."""

_STATUS: list = []  # the argument of the last sys.exit call, once recorded


def record_exit_status() -> None:
    """From now on, remember the argument of ``sys.exit`` (wrapped, otherwise unchanged),
    so that :func:`end_process_now` exits with the status the program asked for. Called
    when a fit leaves its worker running (``max_time``, Ctrl-C); idempotent."""
    if getattr(sys.exit, "_jaxsr_records_status", False):
        return
    original = sys.exit

    def exit(status=None):  # noqa: A001 - sys.exit's own name, for tracebacks
        _STATUS[:] = [status]
        original(status)

    exit.__doc__ = original.__doc__
    exit._jaxsr_records_status = True
    sys.exit = exit


def _status_code(status) -> int:
    """The process exit code of ``SystemExit(status)``, as Python computes it."""
    if status is None:
        return 0
    if isinstance(status, int):
        return status & 0xFF
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{status}\n")
    return 1


def end_process_now() -> None:
    """End the process at once (``os._exit``), as Python's own exit would have ended it.

    Standard output and error, and the ``logging`` handlers, are flushed first. The exit
    status is the one Python would have used: killed by ``SIGINT`` after an uncaught
    ``KeyboardInterrupt`` (Ctrl-C; the shell shows 130), 1 after another uncaught
    exception, the argument of ``sys.exit`` when the program called it after
    :func:`record_exit_status`, else 0. Exit hooks registered before jaxsr was imported,
    and object finalizers, do not run; a ``raise SystemExit(n)`` statement (rather than
    ``sys.exit(n)``) is not seen and exits with 0.
    """
    with contextlib.suppress(Exception):
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()
    interactive = hasattr(sys, "ps1") or sys.flags.interactive
    last = None if interactive else getattr(sys, "last_value", None)
    if isinstance(last, KeyboardInterrupt) and hasattr(signal, "SIGINT"):
        with contextlib.suppress(Exception):
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(130)
    if last is not None:
        os._exit(1)
    os._exit(_status_code(_STATUS[0]) if _STATUS else 0)
