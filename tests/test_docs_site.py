"""The documentation site's configuration: every page that ``mkdocs.yml`` lists exists.

The strict build itself (``mkdocs build --strict``, run by ``.ci/run``) checks the pages'
links and docstrings; this test needs no mkdocs, so it runs with the ``test`` extra."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, flags=re.MULTILINE)


def test_every_nav_page_exists():
    pages = _nav_pages()
    assert "index.md" in pages and len(pages) >= 10
    missing = [p for p in pages if not (ROOT / "docs" / p).is_file()]
    assert not missing, missing


def test_every_page_is_in_the_nav():
    pages = set(_nav_pages())
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk <= pages, sorted(on_disk - pages)
