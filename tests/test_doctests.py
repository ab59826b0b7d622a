"""The ``>>>`` examples of the public docstrings run and print what they show.

Each module of ``jaxsr`` whose docstrings hold examples is run through :mod:`doctest`
(in the suite's numerics: float64, ``tests/conftest.py``). An example marked
``# doctest: +SKIP`` writes outside the test's folder or needs what a test machine lacks."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import jaxsr

PACKAGE = Path(jaxsr.__file__).resolve().parent


def _modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="jaxsr."):
        path = PACKAGE.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if source.is_file() and ">>>" in source.read_text(encoding="utf-8"):
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_the_examples_are_found():
    assert {"jaxsr.datasets", "jaxsr.symbolic.regressor", "jaxsr.trees.regressor"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    monkeypatch.setenv("JAXSR_CACHE_DIR", "none")
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, "".join(report)
