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
