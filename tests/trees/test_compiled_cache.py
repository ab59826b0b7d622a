"""numba's on-disk cache of the tree kernels is keyed on every file compiled into them.

numba stamps a cached function with its own file's contents only, while the compiled
solver loop has the kernels of ``compiled.py`` and the constants of ``solver.py`` compiled
into it: an edit of either (or cache files left behind by an upgrade) would leave the
cached loop running the old code. ``jaxsr.trees.compiled`` installs cache locators that
stamp this package's compiled functions with a digest of all three files.
"""

import importlib
import shutil
import sys

import pytest

from jaxsr.trees import compiled, engine


def test_sources_digest_changes_with_each_source(tmp_path):
    for name in compiled._CACHE_SOURCES:
        shutil.copy(f"{compiled._HERE}/{name}", tmp_path / name)
    base = compiled._sources_digest(str(tmp_path))
    assert base == compiled._sources_digest()  # same contents, same digest
    seen = {base}
    for i, name in enumerate(compiled._CACHE_SOURCES):
        sub = tmp_path / f"edit{i}"
        sub.mkdir()
        for other in compiled._CACHE_SOURCES:
            shutil.copy(tmp_path / other, sub / other)
        with open(sub / name, "a") as f:
            f.write("\n# an edit\n")
        d = compiled._sources_digest(str(sub))
        assert d not in seen
        seen.add(d)


@pytest.mark.skipif(not (compiled._NB["cache"] and compiled._CACHE_KEYED_ON_ALL_SOURCES),
                    reason="numba cannot cache here, or its locator list is not there")
def test_compiled_functions_are_stamped_with_all_sources():
    digest = compiled._sources_digest()
    for fn in (engine.run_chunk, engine._visit, compiled.support_subtree,
               compiled.kmeans_losses):
        cache = fn._cache
        assert getattr(type(cache._impl.locator), "_jaxsr_sources", False), fn
        assert cache._cache_file._source_stamp == digest, fn


@pytest.mark.skipif(not compiled._CACHE_KEYED_ON_ALL_SOURCES,
                    reason="numba's locator list is not there")
def test_other_numba_functions_keep_numba_locators(tmp_path, monkeypatch):
    (tmp_path / "user_kernels.py").write_text(
        "import numba\n\n\n@numba.njit(cache=True)\ndef g(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("user_kernels")
    try:
        assert mod.g(1) == 2
        assert not getattr(type(mod.g._cache._impl.locator), "_jaxsr_sources", False)
    finally:
        sys.modules.pop("user_kernels", None)


def test_locators_installed_once():
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    before = list(impl._locator_classes)
    assert compiled._install_cache_locators() == compiled._CACHE_KEYED_ON_ALL_SOURCES
    assert list(impl._locator_classes) == before
