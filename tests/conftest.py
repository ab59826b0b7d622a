"""Numerics for the whole suite, set once (equinox / optimistix style).

* float64 on (the papers' examples span 1e-11 to 1e43);
* four fake CPU devices, so the sharding tests run on any machine;
* jaxsr's compilation cache in a fresh folder per session;
* the tests of shared data find ``../shared/data`` through ``jaxsr.datasets.shared_data_dir``;
* ``frozen_heap``: the fixture of the tests that assert a time limit.
"""

import gc
import os

# Must happen before jax initialises its backends.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# jaxsr's compilation cache in a fresh folder per test session (shared with the
# subprocesses the tests start), never the user's own ~/.cache/jaxsr
if "JAXSR_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["JAXSR_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxsr-test-cache-")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def frozen_heap():
    """For the tests that assert a time limit (``fit_seconds_ <= 1.1 x limit + 0.5 s``).

    By the time the suite reaches them, its process holds every program the earlier tests
    compiled: hundreds of thousands of long-lived objects, and a full (generation 2)
    collection of Python's cyclic garbage collector then takes 0.4-1.1 s on two cores,
    landing inside whichever fit allocates at that moment (once in CI: a 0.02 s limit
    measured at 0.99 s). That pause is the test process's heap, not the fit's work: the
    objects alive now are collected once and frozen (``gc.freeze``, ignored by later
    collections) for the module, and unfrozen after it.
    """
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
