"""The memory guard of the estimators: the memory a fit may use, and a clear error
before a fit that would not fit in it.

A fit that runs out of memory is killed by the operating system with no message (or
swaps the machine to a halt). Each estimator estimates its peak from the sizes of its
input before it allocates anything and calls :func:`check_memory`, which raises a
``ValueError`` that says what to change when the estimate exceeds the memory available.
"""

from __future__ import annotations

import math
import os
import time

__all__ = ["MEMORY_LIMIT_ENV", "available_memory_bytes", "check_memory", "parse_size"]

MEMORY_LIMIT_ENV = "JAXSR_MEMORY_LIMIT"
"""Environment variable that overrides the memory guard of every estimator's ``fit``:
a size (``"16G"``, ``"512M"``, ``"2e9"`` bytes; suffixes K, M, G, T are powers of 1024) to
use instead of the measured available memory, or ``"off"`` (or ``"0"``) to skip the
guard."""

_SIZE_SUFFIX = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def parse_size(text: str) -> float:
    """Bytes of a size such as ``"16G"``, ``"512MB"``, ``"2e9"``; ValueError if unreadable."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _SIZE_SUFFIX else ""
    try:
        value = float(t[: len(t) - len(unit)] if unit else t)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"{MEMORY_LIMIT_ENV}={text!r} is not a size; give bytes or a size "
            "such as 16G or 512M, or 'off' to skip the memory guard"
        )
    return value * _SIZE_SUFFIX[unit]


def meminfo_available(path: str = "/proc/meminfo") -> float | None:
    """``MemAvailable`` of Linux's ``/proc/meminfo`` in bytes: free memory plus the page cache
    and other memory the kernel can reclaim. Kernels before 3.14 lack it: then
    ``MemFree + Buffers + Cached``. ``None`` if the file cannot be read."""
    try:
        with open(path) as fh:
            fields = {}
            for line in fh:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts:
                    fields[key.strip()] = float(parts[0]) * 1024.0  # the file says kB
    except (OSError, ValueError):
        return None
    if "MemAvailable" in fields:
        return fields["MemAvailable"]
    if "MemFree" in fields:
        return fields["MemFree"] + fields.get("Buffers", 0.0) + fields.get("Cached", 0.0)
    return None


def cgroup_available(root: str = "/sys/fs/cgroup") -> float | None:
    """What a cgroup-v2 memory limit (containers) leaves: ``memory.max - memory.current``."""
    try:
        with open(os.path.join(root, "memory.max")) as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(root, "memory.current")) as fh:
            current = float(fh.read().strip())
        return max(float(limit) - current, 0.0)
    except (OSError, ValueError):
        return None


_PROBE_SECONDS = 1.0  # a probe of the available memory is reused this long
_PROBE: list = [-math.inf, None]  # (perf_counter of the last probe, its result)


def available_memory_bytes() -> float | None:
    """Bytes of memory a fit can use without swapping, or ``None`` if unknown.

    A probe costs ~0.1 ms (a tenth of a small fit): its result is reused for
    :data:`_PROBE_SECONDS` (fits in a loop, cross-validation) and then measured again.

    ``psutil.virtual_memory().available`` when psutil is installed, else ``MemAvailable``
    from ``/proc/meminfo`` (free pages *and* reclaimable page cache: counting free pages
    only refuses fits on machines with gigabytes available), capped by a cgroup memory
    limit if one applies; else the total physical memory (the guard then stops only what
    cannot fit at all); else ``None`` (no guard).
    """
    now = time.perf_counter()
    if now - _PROBE[0] < _PROBE_SECONDS:
        return _PROBE[1]
    _PROBE[1] = probe_available_memory()
    _PROBE[0] = time.perf_counter()
    return _PROBE[1]


def probe_available_memory() -> float | None:
    avail = None
    try:
        import psutil

        avail = float(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - not installed, or no support on this platform
        avail = meminfo_available()
    cgroup = cgroup_available()
    if cgroup is not None:
        avail = cgroup if avail is None else min(avail, cgroup)
    if avail is None:
        try:
            avail = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
            return None
    return avail


def check_memory(need: float, what: str, fixes: str, *, fraction: float = 1.0) -> None:
    """Refuse a fit whose estimated peak ``need`` (bytes) exceeds ``fraction`` of the
    memory available (:func:`available_memory_bytes`, or the size in
    :data:`MEMORY_LIMIT_ENV`; ``"off"`` there skips the check).

    Args:
      need: the fit's estimated peak memory in bytes.
      what: the start of the message, naming the input and the part that needs it
        (``"X has 20 rows and 100000 columns: the symbolic fit"``).
      fixes: a sentence of what to change (``"Use fewer columns ..."``).
      fraction: the share of the available memory the estimate may take.

    Raises:
      ValueError: ``need`` exceeds it, with the sizes, ``fixes`` and the override; or
        :data:`MEMORY_LIMIT_ENV` is not a size.
    """
    env = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if env.lower() in ("off", "none", "no", "false", "0"):
        return
    avail = parse_size(env) if env else available_memory_bytes()
    if avail is not None and need > fraction * avail:
        where = f"{MEMORY_LIMIT_ENV}={env}" if env else "measured"
        share = {1.0: "more than ", 0.5: "more than half of "}.get(
            fraction, f"more than {fraction:g} of "
        )
        raise ValueError(
            f"{what} needs about {need / 1e9:.1f} GB, {share}the memory "
            f"available ({avail / 1e9:.1f} GB, {where}). {fixes}, or set the environment "
            f"variable {MEMORY_LIMIT_ENV} to the memory to assume (e.g. 64G) or to 'off'."
        )
