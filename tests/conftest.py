"""Numerics for the whole suite, set once (equinox / optimistix style).

* float64 on (the papers' examples span 1e-11 to 1e43);
* four fake CPU devices, so the sharding tests run on any machine;
* jaxsr's compilation cache in a fresh folder per session;
* the tests of shared data find ``../shared/data`` through ``jaxsr.datasets.shared_data_dir``.
"""

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
