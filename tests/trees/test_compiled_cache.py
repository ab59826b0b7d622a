"""numba's on-disk cache of the tree kernels is keyed on every file compiled into them.

numba stamps a cached function with its own file only, while the compiled solver loop has
the kernels of ``compiled.py``, the formulas of ``losses.py`` and the constants of
``solver.py`` compiled into it: an edit of one of them would leave the cached loop running
the old code. ``jaxsr.trees.compiled`` therefore caches its kernels, through numba's
documented ``NUMBA_CACHE_DIR`` setting, in a folder named after a digest of all of them
(``jaxsr.trees.kernel_cache``, which tells it without importing numba).
"""

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numba
import pytest

from jaxsr.trees import compiled, engine, kernel_cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
needs_cache = pytest.mark.skipif(not compiled._NB["cache"],
                                 reason="numba cannot cache here (no writable cache folder)")


def test_sources_digest_changes_with_each_source(tmp_path):
    for name in kernel_cache.CACHE_SOURCES:
        shutil.copy(f"{kernel_cache.HERE}/{name}", tmp_path / name)
    base = kernel_cache.sources_digest(str(tmp_path))
    assert base == kernel_cache.sources_digest()  # same contents, same digest
    seen = {base}
    for i, name in enumerate(kernel_cache.CACHE_SOURCES):
        sub = tmp_path / f"edit{i}"
        sub.mkdir()
        for other in kernel_cache.CACHE_SOURCES:
            shutil.copy(tmp_path / other, sub / other)
        with open(sub / name, "a") as f:
            f.write("\n# an edit\n")
        d = kernel_cache.sources_digest(str(sub))
        assert d not in seen
        seen.add(d)


def test_cache_sources_cover_the_modules_compiled_into_the_kernels():
    for name in ("compiled.py", "engine.py", "solver.py", "losses.py", "bounds.py",
                 "subtrees.py"):
        assert name in kernel_cache.CACHE_SOURCES


def test_cache_key_changes_with_contents_alone(tmp_path):
    """An edit that keeps the file's size and modification time still moves the cache."""
    for name in kernel_cache.CACHE_SOURCES:
        shutil.copy2(f"{kernel_cache.HERE}/{name}", tmp_path / name)
    before = kernel_cache.cache_key(str(tmp_path))
    assert before == kernel_cache.cache_key(str(tmp_path))
    path = tmp_path / "losses.py"
    st = os.stat(path)
    text = path.read_text()
    i = text.index("#")
    path.write_text(text[:i + 1] + ("x" if text[i + 1] != "x" else "y") + text[i + 2:])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size
    kernel_cache.sources_digest.cache_clear()  # (read once per folder and process)
    assert kernel_cache.cache_key(str(tmp_path)) != before


def test_another_digest_gives_another_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    here = kernel_cache.cache_folder()
    assert here == str(tmp_path / f"jaxsr-trees-{kernel_cache.cache_key()[:16]}")
    monkeypatch.setattr(kernel_cache, "sources_digest", lambda folder=None: b"edited")
    assert kernel_cache.cache_folder() not in (here, None)


def test_no_cache_folder_when_the_base_cannot_be_written(monkeypatch, tmp_path):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "a-file"))
    assert kernel_cache.cache_folder() is None


def test_the_folder_and_its_marker_are_told_without_numba(tmp_path):
    """kernel_cache computes the folder numba's kernels go to, and whether it is
    complete, in a process that has not imported numba: the same folder as compiled's."""
    code = textwrap.dedent("""
        import json, sys
        from jaxsr.trees import kernel_cache
        out = dict(folder=kernel_cache.cache_folder(create=False),
                   complete=kernel_cache.marker_exists(), numba="numba" in sys.modules)
        from jaxsr.trees import compiled
        out["compiled"] = compiled.CACHE_FOLDER
        print(json.dumps(out))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert not got["numba"] and got["complete"] is False
    assert got["folder"] == got["compiled"] and got["folder"].startswith(str(tmp_path))
    with open(os.path.join(got["folder"], "complete"), "w"):
        pass
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert json.loads(out.stdout.strip().splitlines()[-1])["complete"] is True


@needs_cache
def test_kernels_are_cached_in_the_digest_folder():
    assert os.path.basename(compiled.CACHE_FOLDER) == (
        f"jaxsr-trees-{kernel_cache.cache_key()[:16]}")
    for fn in (engine.run_chunk, engine._visit, engine._clock, compiled.support_subtree,
               compiled.kmeans_losses):
        path = os.path.abspath(fn.stats.cache_path)
        assert path.startswith(compiled.CACHE_FOLDER + os.sep), fn
    # numba's own setting is left as the user gave it
    assert numba.config.CACHE_DIR == os.environ.get("NUMBA_CACHE_DIR", "")


@needs_cache
def test_other_numba_functions_keep_numba_locators(tmp_path, monkeypatch):
    (tmp_path / "user_kernels.py").write_text(
        "import numba\n\n\n@numba.njit(cache=True)\ndef g(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("user_kernels")
    try:
        assert mod.g(1) == 2
        assert not os.path.abspath(mod.g.stats.cache_path).startswith(compiled.CACHE_FOLDER)
    finally:
        sys.modules.pop("user_kernels", None)


_LOAD = textwrap.dedent("""
    import json
    import numpy as np
    import numba
    from jaxsr.trees import compiled
    m = np.ones(4, dtype=np.bool_)
    compiled.support_leaf_loss(m, np.ones(4), np.arange(4.0), np.zeros(4))
    st = compiled.support_leaf_loss.stats
    print(json.dumps(dict(folder=compiled.CACHE_FOLDER, path=st.cache_path,
                          file=compiled.__file__, hits=sum(st.cache_hits.values()),
                          misses=sum(st.cache_misses.values()))))
""")


@needs_cache
def test_an_edited_source_loads_nothing_stale(tmp_path):
    """A copy of the package whose ``losses.py`` (inlined into the kernels, not their own
    file) gets a changed comment: its kernels go to a fresh folder, compiled anew."""
    pkg = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "jaxsr"), pkg / "jaxsr",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), JAX_PLATFORMS="cpu",
               PYTHONPATH=str(pkg))

    def run():
        out = subprocess.run([sys.executable, "-c", _LOAD], env=env, cwd=str(tmp_path),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first, again = run(), run()
    assert first["file"].startswith(str(pkg))
    assert first["folder"].startswith(str(tmp_path / "numba"))
    assert first["path"].startswith(first["folder"] + os.sep)
    assert (first["hits"], first["misses"]) == (0, 1)  # compiled and saved
    assert again["folder"] == first["folder"] and (again["hits"], again["misses"]) == (1, 0)
    losses = pkg / "jaxsr" / "trees" / "losses.py"
    losses.write_text(losses.read_text().replace("#", "# edited:", 1))
    edited = run()
    assert edited["folder"] != first["folder"]
    assert edited["path"].startswith(edited["folder"] + os.sep)
    assert (edited["hits"], edited["misses"]) == (0, 1)
