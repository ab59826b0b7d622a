"""Every output printed in the README and the documentation pages is what the code prints.

``tools/doc_outputs.py`` runs each page's code (its Python blocks in one fresh process, its
``$ jaxsr ...`` transcripts, the examples it quotes) and compares each output block with
what was printed; ``python tools/doc_outputs.py --update`` rewrites the pages after a
change of the library. The pages are run once for the whole module (a few CPU minutes:
the command-line page fits both methods on the diabetes data and runs ``jaxsr demo``)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("doc_outputs", ROOT / "tools" / "doc_outputs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_outputs"] = module
    spec.loader.exec_module(module)
    return module


doc_outputs = _tool()


# ---- the tool itself, on small pages (no JAX)

PAGE = """# A page

```python
x = 6 * 7
print(x)
```

```text
42
```

<!-- doc-check: output -->
```text
```

```bash
pip install nothing
```

```text
$ python -c "print('a' * 3)"
aaa
$ python -c "import sys; sys.exit('jaxsr: error: no')"
jaxsr: error: no
$ echo $?
1
```
"""


def _check_page(tmp_path, text, name="page.md"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    parsed = {name: doc_outputs.parse(name, text)}
    doc_outputs.run_pages(parsed)
    return parsed, doc_outputs.check(parsed)


@pytest.fixture
def tool_at(tmp_path, monkeypatch):
    monkeypatch.setattr(doc_outputs, "ROOT", tmp_path)
    return tmp_path


def test_a_current_page_passes(tool_at):
    parsed, problems = _check_page(tool_at, PAGE)
    kinds = [b.kind for b in parsed["page.md"]]
    assert kinds == ["code", "output", "output", "shown", "transcript"], kinds
    # the second output block shows the code's output since the first one: nothing
    assert problems == [], problems


@pytest.mark.parametrize(
    "old, new",
    [
        ("```text\n42\n```", "```text\n43\n```"),  # a number changed
        ("aaa\n", "aaaa\n"),  # a command's output
        ("$ echo $?\n1\n", "$ echo $?\n0\n"),  # an exit status
        ("jaxsr: error: no\n", ""),  # a missing error line
    ],
)
def test_a_changed_output_fails_until_the_page_is_rerun(tool_at, old, new):
    stale = PAGE.replace(old, new)
    assert stale != PAGE
    _, problems = _check_page(tool_at, stale)
    assert len(problems) == 1 and "another output" in problems[0], problems
    # --update writes what the code prints: the page is current again
    parsed = {"page.md": doc_outputs.parse("page.md", stale)}
    doc_outputs.run_pages(parsed)
    doc_outputs.check(parsed)
    assert doc_outputs.update("page.md", parsed["page.md"])
    assert (tool_at / "page.md").read_text(encoding="utf-8") == PAGE


def test_an_output_without_a_check_fails(tool_at):
    page = "Some prose.\n\n```text\nnumbers nobody printed\n```\n"
    _, problems = _check_page(tool_at, page)
    assert len(problems) == 1 and "no check covers" in problems[0]
    marked = page.replace("```text", "<!-- doc-check: unchecked: a time limit -->\n```text")
    assert _check_page(tool_at, marked)[1] == []


def test_what_is_not_compared():
    same = doc_outputs.same
    assert same(["fit time: 3.84 s   stopped: goal"], ["fit time: 12.50 s   stopped: goal"])
    assert same(["gap 1.22e-15 optimal"], ["gap 3.44e-15 optimal"])  # rounding
    assert same(["0.6437782450550955 True"], ["0.6437782450550951 True"])
    assert same(["a long line that", "    wraps"], ["a long line that wraps"])
    assert same(["fit time: 1.00 s (includes JIT compilation)"], ["fit time: 0.20 s"])
    assert not same(["y = 1.637*bmi*s5 - s3"], ["y = 1.644*bmi*s5 - s3"])
    assert not same(["R^2 0.488138"], ["R^2 0.448009"])
    assert not same(["bic 2"], ["bic 3"])
    assert not same(["x2"], ["3.831"])


def test_excerpts_of_result_files(tool_at):
    (tool_at / "result.txt").write_text("head\nrow 1   0.5\nrow 2   0.7\ntail\n")
    page = (
        "<!-- doc-check: excerpt result.txt -->\n```text\nrow 1   0.5\n\ntail\n```\n"
        "<!-- doc-check: excerpt result.txt -->\n```text\nrow 2   0.8\n```\n"
    )
    _, problems = _check_page(tool_at, page)
    assert len(problems) == 1 and "-row 2   0.8" in problems[0], problems


# ---- the real pages, run once


@pytest.fixture(scope="module")
def pages():
    # a few CPU minutes (every page's code in fresh processes): CI runs the same check as
    # its own step (``python tools/doc_outputs.py`` in ``.ci/run``), so the test suite runs
    # it only when asked
    if os.environ.get("JAXSR_CHECK_PAGES", "") != "1":
        pytest.skip("the pages' outputs: set JAXSR_CHECK_PAGES=1, or run tools/doc_outputs.py")
    parsed = doc_outputs.collect(doc_outputs.PAGES)
    doc_outputs.run_pages(parsed)
    return parsed


@pytest.mark.slow
def test_every_printed_output_is_current(pages):
    problems = doc_outputs.check(pages)
    assert not problems, (
        "\n\n".join(problems) + "\n\nrerun the pages: python tools/doc_outputs.py --update"
    )
    checked = [
        b
        for blocks in pages.values()
        for b in blocks
        if b.kind in ("output", "transcript", "example", "excerpt", "doctest")
    ]
    assert len(checked) >= 40


@pytest.mark.slow
def test_a_stale_page_fails(pages):
    """One digit of one output of ``docs/symbolic.md`` changed, as a page left behind by a
    change of default would be: the check names that block."""
    blocks = pages["docs/symbolic.md"]
    target = next(
        b for b in blocks if b.kind == "output" and any(c.isdigit() for c in "".join(b.lines))
    )
    i = next(i for i, ln in enumerate(target.lines) if any(c.isdigit() for c in ln))
    j = next(j for j, c in enumerate(target.lines[i]) if c.isdigit())
    old = target.lines[i]
    target.lines[i] = old[:j] + str((int(old[j]) + 1) % 10) + old[j + 1 :]
    try:
        problems = doc_outputs.check({"docs/symbolic.md": blocks})
    finally:
        target.lines[i] = old
    assert [p for p in problems if p.startswith(target.where)], problems


@pytest.mark.slow
def test_the_command_fits_80_columns(pages):
    """``jaxsr symbolic``, ``tree``, ``predict`` and ``demo`` as the command-line page runs
    them (an 80-column terminal): no line over 80 columns."""
    transcripts = [b for b in pages["docs/cli.md"] if b.kind == "transcript"]
    seen = set()
    for b in transcripts:
        command = None
        for line in b.actual or []:
            if line.startswith("$ "):
                command = line.split()[2] if line.startswith("$ jaxsr ") else None
                seen.add(command)
            elif command in ("symbolic", "tree", "predict", "demo"):
                assert len(line) <= 80, (b.where, line)
    assert {"symbolic", "tree", "predict", "demo"} <= seen
