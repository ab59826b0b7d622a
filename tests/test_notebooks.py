"""The notebooks are stored with their outputs (``notebooks/store_outputs.py``) and still run
top to bottom (nbclient, kernel ``python3``) in the test suite, printing what is stored."""

import copy
import importlib.util
import os
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ENGINES = {
    "symbolic_regression.ipynb": ("jaxsr.symbolic", "SymbolicRegressor"),
    "optimal_trees.ipynb": ("jaxsr.trees", "OptimalTreeRegressor"),
}


def _notebooks():
    return sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def test_every_notebook_is_listed():
    assert set(_notebooks()) == set(ENGINES)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_stored_with_their_outputs(name):
    """Readers see the results without running anything: every code cell ran, in order, by
    ``notebooks/store_outputs.py``, without an error, and the figures are stored."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), name
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no stored figure"
    # progress bars are stored collapsed to their last state
    assert not [o for o in outputs if o.get("output_type") == "stream" and "\r" in o.text]


def _doc_outputs():
    path = NOTEBOOKS.parent / "tools" / "doc_outputs.py"
    spec = importlib.util.spec_from_file_location("_doc_outputs_for_notebooks", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _code(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def _printed(cell) -> list[str]:
    """The lines a code cell shows as text: its standard output and its results'
    ``text/plain`` or ``text/latex`` (stderr, figures and HTML tables' markup left out)."""
    lines = []
    for out in cell.outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            lines += out.text.splitlines()
        elif out.get("output_type") in ("execute_result", "display_data"):
            data = out.get("data", {})
            text = data.get("text/latex") or data.get("text/plain")
            if text and "image/png" not in data:
                lines += (text if isinstance(text, str) else "".join(text)).splitlines()
    return lines


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_notebook_executes(name, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    # the kernel inherits the environment: jaxsr importable from the checkout; the notebooks
    # select matplotlib's inline backend themselves (MPLBACKEND=Agg would hide the figures)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    root = str(NOTEBOOKS.parent)
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            [root, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
        ),
    )
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    stored = copy.deepcopy(nb)
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        coalesce_streams=True,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    # what each cell prints (stdout, its value as text or LaTeX) is what the notebook stores;
    # progress on stderr, figures and times are not compared
    same = _doc_outputs().same
    stale = []
    for k, (old, new) in enumerate(zip(_code(stored), _code(nb), strict=True)):
        if not same(_printed(old), _printed(new)):
            stale.append(f"cell {k}: stored {_printed(old)[:12]}, prints {_printed(new)[:12]}")
    assert not stale, (
        "\n".join(stale) + f"\nrerun the notebook: python notebooks/store_outputs.py {name}"
    )
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.get("output_type") == "error"
    ]
    assert not errors
    # every plot cell produced a figure
    images = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert images, "no figure was drawn"
