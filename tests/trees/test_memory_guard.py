"""The memory guard of OptimalTreeRegressor.fit: available memory (MemAvailable, not free
pages), the JAXSR_MEMORY_LIMIT override, and its errors."""

import os

import numpy as np
import pytest

from jaxsr import _memory as reg
from jaxsr.trees import OptimalTreeRegressor

_MEMINFO = """MemTotal:       16000000 kB
MemFree:          300000 kB
MemAvailable:    9000000 kB
Buffers:          100000 kB
Cached:          8000000 kB
"""


def test_meminfo_counts_reclaimable_page_cache(tmp_path):
    f = tmp_path / "meminfo"
    f.write_text(_MEMINFO)
    assert reg.meminfo_available(str(f)) == 9000000 * 1024.0
    # an old kernel without MemAvailable: free + buffers + page cache
    f.write_text("\n".join(ln for ln in _MEMINFO.splitlines() if "Avail" not in ln))
    assert reg.meminfo_available(str(f)) == (300000 + 100000 + 8000000) * 1024.0
    assert reg.meminfo_available(str(tmp_path / "missing")) is None


def test_cgroup_limit_caps_what_is_available(tmp_path):
    (tmp_path / "memory.max").write_text("4294967296\n")
    (tmp_path / "memory.current").write_text("1073741824\n")
    assert reg.cgroup_available(str(tmp_path)) == 3 * 1024.0**3
    (tmp_path / "memory.max").write_text("max\n")
    assert reg.cgroup_available(str(tmp_path)) is None


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="Linux only")
def test_available_memory_is_at_least_the_free_pages():
    avail = reg.probe_available_memory()
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert avail is not None and avail >= 0.9 * free  # the two are read moments apart


def test_the_probe_is_reused_for_a_second(monkeypatch):
    """available_memory_bytes probes once per _PROBE_SECONDS (fits in a loop), then again."""
    calls = []
    monkeypatch.setattr(reg, "probe_available_memory", lambda: calls.append(1) or 5e9)
    monkeypatch.setattr(reg, "_PROBE", [-np.inf, None])
    assert reg.available_memory_bytes() == 5e9 and len(calls) == 1
    assert reg.available_memory_bytes() == 5e9 and len(calls) == 1  # reused
    reg._PROBE[0] -= reg._PROBE_SECONDS  # as if a second had passed
    assert reg.available_memory_bytes() == 5e9 and len(calls) == 2


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("16G", 16 * 1024**3),
        ("512MB", 512 * 1024**2),
        ("2e9", 2e9),
        ("3KiB", 3072.0),
        (" 1t ", 1024.0**4),
    ],
)
def test_parse_size(text, size):
    assert reg.parse_size(text) == size


def _data():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(40, 6))
    return X, X[:, 0] * 2.0 + X[:, 1]


def test_env_override_refuses_allows_and_checks(monkeypatch):
    X, y = _data()
    m = OptimalTreeRegressor(regularization=0.05, depth_budget=3)
    monkeypatch.setenv(reg.MEMORY_LIMIT_ENV, "1K")
    with pytest.raises(
        ValueError,
        match=r"more than half of the memory available .*"
        r"JAXSR_MEMORY_LIMIT=1K.*'off'",
    ):
        m.fit(X, y)
    monkeypatch.setattr(reg, "available_memory_bytes", lambda: 1000.0)
    monkeypatch.setenv(reg.MEMORY_LIMIT_ENV, "off")
    assert m.fit(X, y).optimal_  # the guard is skipped, whatever is measured
    monkeypatch.setenv(reg.MEMORY_LIMIT_ENV, "8G")
    assert m.fit(X, y).optimal_  # the given size is used instead of the measured 1000 B
    monkeypatch.delenv(reg.MEMORY_LIMIT_ENV)
    with pytest.raises(ValueError, match=r"measured"):
        m.fit(X, y)
    monkeypatch.setenv(reg.MEMORY_LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match="JAXSR_MEMORY_LIMIT='lots' is not a size"):
        m.fit(X, y)
