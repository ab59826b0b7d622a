"""Count XLA compilations with JAX's own compile events (``jax.monitoring``)."""

import contextlib

import jax

_COMPILE = "/jax/core/compile/backend_compile_duration"  # XLA compile (or cache load)
_TRACE = "/jax/core/compile/jaxpr_trace_duration"  # a jitted function traced


@contextlib.contextmanager
def count_compilations():
    """``with count_compilations() as n: ...``; then ``n["compile"]`` XLA compilations and
    ``n["trace"]`` traces happened inside the block."""
    counts = {"compile": 0, "trace": 0}

    def listener(event, duration, **kwargs):
        if event == _COMPILE:
            counts["compile"] += 1
        elif event == _TRACE:
            counts["trace"] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counts
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


@contextlib.contextmanager
def compiled_names():
    """``with compiled_names() as names: ...``; then ``names`` lists the name of every
    function XLA compiled inside the block (from JAX's ``jax_log_compiles`` records), e.g.
    ``"search_all"`` for a jaxsr program or ``"broadcast_in_dim"`` for an eager
    ``jnp.zeros``."""
    import logging
    import re

    names = []
    pattern = re.compile(r"Compiling (?:jit\()?([^\s()]+)")

    class Collect(logging.Handler):
        def emit(self, record):
            m = pattern.match(record.getMessage())
            if m:
                names.append(m.group(1))

    logger = logging.getLogger("jax")
    handler = Collect(logging.DEBUG)
    logger.addHandler(handler)
    previous = jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    try:
        yield names
    finally:
        jax.config.update("jax_log_compiles", previous)
        logger.removeHandler(handler)


def jaxsr_programs(package="jaxsr.symbolic"):
    """The names of the jaxsr programs (``jaxsr._config.program``) defined in the modules
    of ``package``."""
    import importlib
    import pkgutil

    from jaxsr._config import _Program

    names = set()
    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        module = importlib.import_module(info.name)
        names |= {v.__name__ for v in vars(module).values() if isinstance(v, _Program)}
    return names
