"""Progress of a long fit on stderr: a tqdm bar that shows JIT compilation as its own phase.

The library never prints to stdout. A fit opens a :class:`FitProgress`; nothing appears for
fits shorter than ``delay`` seconds. After that the bar reads, e.g.::

    SymbolicRegressor [compiling 3/8]: 0 it [00:03, compile=2.9 s]
    SymbolicRegressor: 7 it [00:05, MSE=1.179e-23, nodes=5, compile=3.4 s]

(no rate: the first iterations include compilation, so a rate would not tell the truth).
``compiling k/n``: the ``k``-th of the ``n`` programs the fit is expected to compile
(``programs``; a program loaded from JAX's persistent compilation cache counts as
compiled); without an expected count, ``compiling k``.

Compilation is observed through JAX's own monitoring events (``jax.monitoring``): the end of
tracing a jitted function starts the phase (lowering and XLA compilation follow), the end of
the backend compilation (or a hit in the persistent compilation cache) ends it, and their
durations add up to the ``compile`` seconds. A daemon thread refreshes the bar twice a second,
so a long compilation shows as it happens instead of after it. The first line appears once
``delay`` has passed; then a terminal or notebook redraws the line five times a second and a
log file gets a line at each phase change and every :data:`LOG_INTERVAL` seconds.

The engine's loop reports through the module functions :func:`update` and :func:`write`,
which reach the innermost open :class:`FitProgress` of the current thread (a context
variable), so the estimator holds no bar, thread or lock (it stays picklable and clonable).
"""

from __future__ import annotations

import contextvars
import sys
import threading
import time

__all__ = ["FitProgress", "update", "write"]

_CURRENT: contextvars.ContextVar[FitProgress | None] = contextvars.ContextVar(
    "jaxsr_progress", default=None
)


def update(n: int = 1, **postfix) -> None:
    """:meth:`FitProgress.update` of the open progress (nothing if none is open)."""
    p = _CURRENT.get()
    if p is not None:
        p.update(n, **postfix)


def write(line: str) -> None:
    """:meth:`FitProgress.write` of the open progress, else the line on stderr."""
    p = _CURRENT.get()
    if p is not None:
        p.write(line)
    else:
        print(line, file=sys.stderr, flush=True)


_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
_END_EVENTS = (
    "/jax/core/compile/backend_compile_duration",
    "/jax/compilation_cache/cache_retrieval_time_sec",
)
_BACKEND_EVENT = "/jax/core/compile/backend_compile_duration"  # compiled or loaded
_TIMED_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def _is_program(fun_name) -> bool:
    """Whether JAX's ``fun_name`` (``"jit(search_all)"``) names a jaxsr program."""
    from ._config import PROGRAM_NAMES

    name = str(fun_name or "")
    if name.startswith("jit(") and name.endswith(")"):
        name = name[4:-1]
    return name in PROGRAM_NAMES


LOG_INTERVAL = 10.0  # seconds between redraws when the stream is not a terminal


def _is_live(stream) -> bool:
    """Whether ``stream`` redraws a line in place: a terminal, or a Jupyter kernel's stream."""
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    return "ipykernel" in sys.modules and stream in (sys.stderr, sys.stdout)


class _LogLines:
    """A log file or captured stream as tqdm's file: each redraw of the bar (tqdm writes
    ``"\r" + line``, to overwrite it in place) becomes its own line, and the clearing
    writes (carriage returns and blanks) are dropped; a redraw the same as the line before
    is not repeated."""

    def __init__(self, stream):
        self.stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self._last = None

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()
        if not line or (text.startswith("\r") and line == self._last):
            return  # a clearing write, or a redraw that shows nothing new
        self.stream.write(line + "\n")
        self._last = line

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False


class FitProgress:
    """A context manager for one fit: ``with FitProgress("SymbolicRegressor", True) as p:``.

    Args:
      desc: the bar's label.
      enabled: ``False`` makes every method a no-op (no thread, no listener).
      delay: seconds before the bar first appears (short fits print nothing).
        On a stream that is not a terminal (a log file, a captured stream) the bar is
        redrawn at most every :data:`LOG_INTERVAL` seconds, each time on a new line.
      unit: tqdm unit of :meth:`update` (``"it"``: iterations).
      file: stream, default ``sys.stderr`` at entry.
      watch_jax: count JAX compilations (imports JAX); ``False`` for a fit that runs no
        JAX code (the tree search on the host).
      programs: the number of jaxsr programs (:func:`jaxsr._config.program`) the fit is
        expected to compile, or ``None`` where unknown.

    Attributes:
      compile_seconds: float, wall-clock seconds spent tracing, lowering and compiling
        during the fit (on any thread; overlapping compilations count once).
      first_display: float or ``None``, seconds from entry to the first line shown.
      compiled: int, jaxsr programs compiled (or loaded from the disk cache) so far.
    """

    def __init__(
        self,
        desc: str,
        enabled: bool = True,
        *,
        delay: float = 1.0,
        unit: str = "it",
        file=None,
        watch_jax: bool = True,
        programs: int | None = None,
    ):
        self.desc = desc
        self.programs = None if programs is None else int(programs)
        self.compiled = 0
        self.enabled = bool(enabled)
        self.delay = float(delay)
        self.unit = unit
        self.file = file
        self.watch_jax = bool(watch_jax)
        self.compile_seconds = 0.0
        self._intervals: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self.first_display: float | None = None
        self._compiling = False
        self._postfix: dict = {}
        self._bar = None
        self._stop = threading.Event()
        self._thread = None
        self._t0 = 0.0
        self._live = True
        self._interval = 0.2
        self._last_draw: float | None = None
        self._last_desc = ""

    # ------------------------------------------------------------------ context
    def __enter__(self) -> FitProgress:
        self._token = _CURRENT.set(self)
        if self.watch_jax:
            import jax

            # compile seconds are counted with or without the bar (the estimators'
            # warnings about a budget spent compiling read them)
            jax.monitoring.register_event_duration_secs_listener(self._on_duration)
        if not self.enabled:
            return self
        from tqdm import tqdm

        self._t0 = time.perf_counter()
        stream = self.file if self.file is not None else sys.stderr
        # a terminal or a notebook redraws the line in place; a log file gets a new line per
        # refresh, so there the bar is redrawn at most every LOG_INTERVAL seconds
        self._live = _is_live(stream)
        self._interval = 0.2 if self._live else LOG_INTERVAL
        self._bar = tqdm(
            total=None,
            desc=self.desc,
            unit=self.unit,
            delay=self.delay,
            file=stream if self._live else _LogLines(stream),
            dynamic_ncols=True,
            leave=True,
            mininterval=float("inf"),
            bar_format="{desc}: {n_fmt} " + self.unit + " [{elapsed}{postfix}]",
        )
        self._thread = threading.Thread(target=self._heartbeat, name="jaxsr-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._token)
        if self.watch_jax:
            import jax

            try:
                jax.monitoring.unregister_event_duration_listener(self._on_duration)
            except (AssertionError, ValueError, AttributeError):  # already gone
                pass
        if not self.enabled or self._bar is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._compiling = False
        self._render()
        self._bar.close()
        self._bar = self._thread = None

    # ------------------------------------------------------------------ use
    def update(self, n: int = 1, **postfix) -> None:
        """Advance by ``n`` (iterations) and show ``postfix`` (e.g. ``MSE=..., nodes=...``)."""
        if self._bar is None:
            return
        self._postfix.update(postfix)
        self._render(n=n)

    def write(self, line: str) -> None:
        """One line on the bar's stream without breaking the bar (``verbose`` lines)."""
        if self._bar is None or self.first_display is None:
            # no bar drawn yet: a plain line (tqdm's write would redraw the bar after it,
            # showing a short fit's bar that ``delay`` keeps hidden)
            stream = (
                self._bar.fp
                if self._bar is not None
                else (self.file if self.file is not None else sys.stderr)
            )
            print(line, file=stream, flush=True)
            return
        self._bar.write(line, file=self._bar.fp)

    # ------------------------------------------------------------------ internals
    def _on_duration(self, event: str, duration: float, fun_name=None, **_kw) -> None:
        """JAX's monitoring event ``event`` of ``duration`` seconds, just ended, in the
        thread that compiles. ``compile_seconds`` is wall-clock: the length of the union
        of the timed phases' intervals (compilations on several threads at the same time
        count once)."""
        if event in _TIMED_EVENTS:
            end = time.perf_counter()
            with self._lock:
                self._add_interval(end - float(duration), end)
        if event == _TRACE_EVENT:
            self._compiling = True
        elif event in _END_EVENTS:
            self._compiling = False
            if event == _BACKEND_EVENT and _is_program(fun_name):
                self.compiled += 1

    def _add_interval(self, start: float, end: float) -> None:
        """Merge ``[start, end]`` into the disjoint sorted intervals and update
        ``compile_seconds``."""
        merged = []
        for a, b in self._intervals:
            if b < start or a > end:
                merged.append((a, b))
            else:
                start, end = min(a, start), max(b, end)
        merged.append((start, end))
        merged.sort()
        self._intervals = merged
        self.compile_seconds = sum(b - a for a, b in merged)

    def _heartbeat(self) -> None:
        while not self._stop.wait(0.5):
            self._render()

    def _render(self, n: int = 0) -> None:
        """Count ``n`` more units and redraw when due: the first time once ``delay`` has
        passed, at a phase change, then every ``_interval`` seconds."""
        bar = self._bar
        if bar is None:
            return
        desc = self.desc
        if self._compiling:
            k, total = self.compiled + 1, self.programs  # k: the one in progress
            desc += f" [compiling {k}]" if total is None else f" [compiling {k}/{max(total, k)}]"
        post = dict(self._postfix)
        if self.compile_seconds >= 0.05:
            post["compile"] = f"{self.compile_seconds:.1f} s"
        now = time.perf_counter()
        with bar.get_lock():
            if n:
                bar.update(n)  # counts only: tqdm's own redraws are switched off
            bar.set_description_str(desc, refresh=False)
            bar.set_postfix(post, refresh=False)
            if now - self._t0 < self.delay:
                return
            if (
                self._last_draw is None
                or desc != self._last_desc
                or now - self._last_draw >= self._interval
            ):
                bar.refresh()
                bar.last_print_t = bar._time()  # tqdm's close() then leaves the last line
                self._last_draw, self._last_desc = now, desc
                if self.first_display is None:
                    self.first_display = now - self._t0
