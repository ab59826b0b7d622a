"""Execute the notebooks and store them with their outputs, figures included.

The notebooks are kept in the repository with their outputs so that a reader sees the
figures and results without running anything (GitHub renders them); the test suite executes
them again (``tests/test_notebooks.py``). After changing a notebook or the library, run from
the repository root::

    python notebooks/store_outputs.py                  # every notebook
    python notebooks/store_outputs.py symbolic_regression.ipynb

Progress bars are collapsed to their last state (``coalesce_streams``) and no execution
timestamps are recorded, so re-running changes only what really changed.
"""

import os
import sys
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent


def store(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     coalesce_streams=True, record_timing=False,
                                     resources={"metadata": {"path": str(HERE)}})
    client.execute()
    nb.metadata.pop("widgets", None)
    nbformat.validate(nb)
    nbformat.write(nb, path)
    print(f"stored {path.name}")


if __name__ == "__main__":
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE.parent), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
    os.environ.pop("MPLBACKEND", None)
    names = sys.argv[1:] or sorted(p.name for p in HERE.glob("*.ipynb"))
    for name in names:
        store(HERE / name)
