"""Count XLA compilations with JAX's own compile events (``jax.monitoring``)."""

import contextlib

import jax

_COMPILE = "/jax/core/compile/backend_compile_duration"  # XLA compile (or cache load)
_TRACE = "/jax/core/compile/jaxpr_trace_duration"  # a jitted function traced


@contextlib.contextmanager
def count_compilations():
    """``with count_compilations() as n: ...``; then ``n["compile"]`` XLA compilations and
    ``n["trace"]`` traces happened inside the block."""
    from jaxsr._compilation_cache import wait_for_prefetches

    counts = {"compile": 0, "trace": 0}
    # compilations ahead (a fit's background thread) end inside the block they began in
    wait_for_prefetches()

    def listener(event, duration, **kwargs):
        if event == _COMPILE:
            counts["compile"] += 1
        elif event == _TRACE:
            counts["trace"] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counts
        wait_for_prefetches()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
