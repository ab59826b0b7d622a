import importlib

import jaxsr


def test_public_names_are_the_documented_objects_of_their_modules():
    """Every name of ``jaxsr.__all__`` is the object of the module that defines it (not a
    stale copy), documented, and the estimators are scikit-learn regressors."""
    from sklearn.base import is_regressor

    for name in jaxsr.__all__:
        obj = getattr(jaxsr, name)
        if name == "__version__":
            continue
        assert getattr(importlib.import_module(obj.__module__), name) is obj, name
        assert obj.__module__.startswith("jaxsr.") and len(obj.__doc__.strip()) > 40, name
    for est in (jaxsr.SymbolicRegressor(), jaxsr.OptimalTreeRegressor()):
        assert is_regressor(est)
    assert issubclass(jaxsr.ExtrapolationWarning, UserWarning)


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    assert jaxsr.__version__ == version("jaxsr")
    assert all(part.isdigit() for part in jaxsr.__version__.split(".")[:2])


def test_errors_and_warnings_that_users_catch_are_public_and_load_lazily():
    """The error and warning classes the estimators raise are importable from ``jaxsr``
    (the same objects as where they are raised), listed in ``__all__`` and on the API page,
    and ``import jaxsr`` still loads none of their modules (nor JAX, nor scikit-learn)."""
    import subprocess
    import sys
    from pathlib import Path

    from jaxsr._base import ConcurrentFitError
    from jaxsr._fork import ForkedAfterJAXError
    from jaxsr._validation import PrecisionWarning
    from jaxsr.symbolic import ExtrapolationWarning

    public = {
        "ConcurrentFitError": (ConcurrentFitError, RuntimeError),
        "ForkedAfterJAXError": (ForkedAfterJAXError, RuntimeError),
        "PrecisionWarning": (PrecisionWarning, UserWarning),
        "ExtrapolationWarning": (ExtrapolationWarning, UserWarning),
    }
    page = (Path(__file__).parent.parent / "docs" / "api" / "config.md").read_text()
    for name, (cls, base) in public.items():
        assert name in jaxsr.__all__ and name in dir(jaxsr), name
        assert getattr(jaxsr, name) is cls and issubclass(cls, base), name
        assert f"::: jaxsr.{name}" in page, name
    code = (
        "import sys, jaxsr; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jax', 'sklearn') or m in ('jaxsr._base', 'jaxsr._fork', 'jaxsr._validation')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]", out
