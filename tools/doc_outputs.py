"""Check, or rerun, every output printed in the README and the documentation pages.

Each page is read as a sequence of fenced blocks, and each output block is compared with
what the code shown before it prints today:

* a ``python`` block is run (every block of a page in order, in one fresh process whose
  working directory is an empty temporary folder, as a reader would paste them); the
  ``text`` block that follows it (blank lines only in between, or after a
  ``<!-- doc-check: output -->`` marker) is its standard output;
* a ``pycon`` block (``>>>`` prompts) is a doctest in the same namespace;
* a ``text`` or ``console`` block whose first line starts with ``$ `` is a shell transcript:
  each ``$ command`` runs (``bash``, in the same folder, an 80-column terminal) and the
  lines after it are its standard output, then its ``jaxsr: error: ...`` line and those
  lines of its standard error that the page shows (progress and notices vary);
* a warning raised by a page's Python prints as ``Category: message`` in its output,
  shown only where the page shows warnings of that category;
* ``<!-- doc-check: example examples/NAME.py -->`` before a ``text`` block: the standard
  output of that script;
* ``<!-- doc-check: excerpt FILE -->``: the block's lines are lines of FILE, in its order
  (a result file of ``benchmarks/results/``, or another page whose block is checked);
* ``<!-- doc-check: not run -->`` before a ``python`` block: shown only (an install step,
  code that needs several machines); ``<!-- doc-check: new process -->``: this block and
  the ones after it run in a fresh process (e.g. a flag that must be set before JAX is
  imported); ``<!-- doc-check: unchecked REASON -->`` before a ``text`` block: an output
  that depends on the machine (a time limit), said why.

A ``text`` block that is none of these fails the check, so a new output cannot be added
without one. What is compared (:func:`same`): the words in order, numbers up to rounding
(relative 1e-9), not the line breaks (the command wraps to the terminal's width), the times
(``3.84 s``) or the words ``(includes JIT compilation)``. The notebooks' stored outputs are
compared in the same way by ``tests/test_notebooks.py``. Usage, from the repository root::

    python tools/doc_outputs.py                 # check every page; exit 1 on a difference
    python tools/doc_outputs.py --update        # rewrite the output blocks with today's output
    python tools/doc_outputs.py docs/cli.md     # some pages only

``--update`` keeps an old block where it differs only in what is not compared, so a rerun
changes the pages only where the library's output changed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-check:\s*(?P<what>.*?)\s*-->\s*$")
TIMES = False  # --times: the seconds of each step on stderr
_SECONDS = re.compile(r" *\b\d+(?:\.\d+)? s\b")


@dataclass
class Block:
    """One fenced block of a page: lines ``start`` (the fence) to ``end`` (closing fence)."""

    page: str
    start: int
    end: int
    indent: str
    lang: str
    lines: list[str]
    marker: str = ""
    after_code: bool = False  # only blank lines since the previous block, a python one
    kind: str = ""  # code, doctest, output, transcript, example, excerpt, shown, unchecked
    session: int = 0
    actual: list[str] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.start + 1}"


def parse(page: str, text: str) -> list[Block]:
    """The fenced blocks of a page, each classified (``kind``) and given its session."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i, last_end, session = 0, -1, 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m["lang"] and not _is_open(lines, i):
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != indent + fence:
            j += 1
        body = [
            ln[len(indent) :] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1 : j]
        ]
        between = [ln for ln in lines[last_end + 1 : i] if ln.strip()]
        marker = ""
        if between and (mk := _MARKER.match(between[-1])):
            marker = mk["what"]
            between = between[:-1]
        b = Block(page, i, j, indent, m["lang"], body, marker)
        b.after_code = bool(blocks) and blocks[-1].lang == "python" and not between
        if marker == "new process":
            session += 1
        b.session = session
        b.kind = _kind(b)
        blocks.append(b)
        last_end = i = j
        i += 1
    return blocks


def _is_open(lines: list[str], i: int) -> bool:
    # a bare ``` opens a block when a closing fence of the same indent follows
    return any(ln.rstrip() == lines[i].rstrip() for ln in lines[i + 1 :])


def _kind(b: Block) -> str:
    if b.lang == "python":
        return "shown" if b.marker == "not run" else "code"
    if b.lang == "pycon":
        return "doctest"
    if b.lang not in ("text", "console"):
        return "shown"  # bash install commands, yaml, ...
    if b.marker.startswith("unchecked"):
        return "unchecked"
    if b.marker.startswith("example "):
        return "example"
    if b.marker.startswith("excerpt "):
        return "excerpt"
    if b.lines and b.lines[0].startswith("$ "):
        return "transcript"
    if b.marker == "output" or b.after_code:
        return "output"
    return "unknown"


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def same(page: list[str], actual: list[str]) -> bool:
    """Whether an output block shows ``actual``: the same words in the same order (line
    breaks and runs of blanks aside: the command wraps to the terminal's width, and a time
    of another width moves a break), numbers equal up to rounding (relative 1e-9, or
    absolute 1e-12: a certificate's gap of 1e-15 is rounding)."""
    a, b = _tokens(page), _tokens(actual)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if not (isinstance(x, float) and isinstance(y, float)):
            return False
        if not abs(x - y) <= 1e-9 * max(abs(x), abs(y)) + 1e-12:
            return False
    return True


def _tokens(lines: list[str]) -> list:
    text = " ".join(normalise(lines))
    text = re.sub(r"\s*\(includes\s+JIT\s+compilation\)", "", text)
    out: list = []
    for word in text.split():
        pos = 0
        for m in _NUMBER.finditer(word):
            if m.start() > pos:
                out.append(word[pos : m.start()])
            out.append(float(m.group()))
            pos = m.end()
        if pos < len(word):
            out.append(word[pos:])
    return out


def normalise(lines: list[str]) -> list[str]:
    """What is compared: no times, no trailing blanks, no compilation remark."""
    out = []
    for ln in lines:
        ln = ln.replace(" (includes JIT compilation)", "")
        out.append(_SECONDS.sub(" <t> s", ln).rstrip())
    while out and not out[-1]:
        out.pop()
    return out


# --------------------------------------------------------------------------------------
# running a session: one fresh process per (page, session), driven by _SESSION_DRIVER

_SESSION_DRIVER = r"""
import contextlib, doctest, io, json, os, subprocess, sys, textwrap, time, warnings
steps = json.load(open(sys.argv[1]))
results = []
ns = {"__name__": "__main__"}

def show(message, category, filename, lineno, file=None, line=None):
    print(textwrap.fill(f"{category.__name__}: {message}", 80, subsequent_indent="  "))

warnings.showwarning = show
env = dict(os.environ, COLUMNS="80", LINES="24")
rc = 0
for kind, payload in steps:
    buf = io.StringIO()
    t0 = time.perf_counter()
    if kind == "code":
        with contextlib.redirect_stdout(buf):
            try:
                exec(compile(payload, "<doc>", "exec"), ns)
            except Exception as err:  # the page's output then shows the error
                print(f"{type(err).__name__}: {err}")
    elif kind == "doctest":
        test = doctest.DocTestParser().get_doctest(payload, ns, "doc", "<doc>", 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test, out=buf.write, clear_globs=False)
    elif kind == "shell":
        if payload.startswith("echo $?"):
            payload = f"(exit {rc}); " + payload
        p = subprocess.run(["bash", "-c", payload], capture_output=True, text=True, env=env)
        rc = p.returncode
        buf.write(p.stdout + "\0" + p.stderr)
    elif kind == "script":
        p = subprocess.run([sys.executable, payload], capture_output=True, text=True, env=env)
        buf.write(p.stdout)
        if p.returncode:
            buf.write(f"(exit status {p.returncode})\n" + p.stderr[-2000:])
    results.append(buf.getvalue())
    print(f"{time.perf_counter() - t0:7.1f} s  {kind} {payload[:60]!r}", file=sys.stderr)
json.dump(results, open(sys.argv[2], "w"))
"""


def _steps(blocks: list[Block]) -> list[tuple[str, str, Block, int]]:
    """(kind, payload, block, command index) in run order; transcripts give one per $ line."""
    steps = []
    for b in blocks:
        if b.kind == "code":
            steps.append(("code", "\n".join(b.lines), b, 0))
        elif b.kind == "doctest":
            steps.append(("doctest", "\n".join(b.lines) + "\n", b, 0))
        elif b.kind == "transcript":
            for k, cmd in enumerate(ln[2:] for ln in b.lines if ln.startswith("$ ")):
                steps.append(("shell", cmd, b, k))
        elif b.kind == "example":
            steps.append(("script", str(ROOT / b.marker.split(None, 1)[1]), b, 0))
    return steps


def run_session(steps: list[tuple[str, str]], timeout: float = 1800) -> list[str]:
    """Run the steps in one fresh Python process in an empty folder; their outputs."""
    with tempfile.TemporaryDirectory(prefix="jaxsr-docs-") as tmp:
        tmpd = Path(tmp)
        (tmpd / "steps.json").write_text(json.dumps(steps))
        (tmpd / "driver.py").write_text(_SESSION_DRIVER)
        work = tmpd / "work"
        work.mkdir()
        path = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = dict(os.environ, COLUMNS="80", MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(path))
        p = subprocess.run(
            [
                sys.executable,
                str(tmpd / "driver.py"),
                str(tmpd / "steps.json"),
                str(tmpd / "out.json"),
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if p.returncode:
            raise RuntimeError(f"the page's code failed:\n{p.stderr[-4000:]}")
        if TIMES:
            print(
                "".join(
                    ln + "\n"
                    for ln in p.stderr.splitlines()
                    if ln[:9].strip().replace(".", "").isdigit()
                ),
                file=sys.stderr,
                end="",
            )
        return json.loads((tmpd / "out.json").read_text())


# --------------------------------------------------------------------------------------


def collect(pages: list[str]) -> dict[str, list[Block]]:
    return {page: parse(page, (ROOT / page).read_text(encoding="utf-8")) for page in pages}


def run_pages(parsed: dict[str, list[Block]]) -> None:
    """Fill ``actual`` of every checked block (sessions that repeat a longer one's code are
    answered from it: the README's quickstart is the start of the getting-started page's)."""
    sessions = []
    for blocks in parsed.values():
        for s in sorted({b.session for b in blocks}):
            steps = _steps([b for b in blocks if b.session == s])
            if steps:
                sessions.append(steps)
    sessions.sort(key=len, reverse=True)
    keys = [[(k, p) for k, p, _, _ in steps] for steps in sessions]
    runs: list[list[tuple[str, str]]] = []  # the sessions to run: none a prefix of another
    for key in keys:
        if not any(other[: len(key)] == key for other in runs):
            runs.append(key)
    # the sessions are separate processes: as many at once as the machine has cores
    workers = max(1, min(len(runs), os.cpu_count() or 1, 4))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        outputs = list(pool.map(run_session, runs))
    for steps, key in zip(sessions, keys, strict=True):
        outs = next(o for other, o in zip(runs, outputs, strict=True) if other[: len(key)] == key)
        _assign(steps, outs)
    for blocks in parsed.values():
        for b in blocks:
            if b.kind == "excerpt":
                src = ROOT / b.marker.split(None, 1)[1]
                hay = normalise(src.read_text(encoding="utf-8").split("\n")) if src.exists() else []
                hay = [ln.strip() for ln in hay]
                need = [ln.strip() for ln in normalise(b.lines)]
                b.actual = b.lines if _contains(hay, need) else [f"(not an excerpt of {src.name})"]


def _assign(steps, outs) -> None:
    """Give each block its part of a session's outputs."""
    for (kind, payload, b, k), out in zip(steps, outs, strict=False):
        if kind == "code":
            b.last_output = out  # type: ignore[attr-defined]
        elif kind == "doctest" and out:
            b.problems.append(out)
        elif kind == "shell":
            if k == 0:
                b.actual = []
            assert b.actual is not None
            stdout, _, stderr = out.partition("\0")
            shown = {ln.strip() for ln in normalise(b.lines)}
            # standard error: the command's errors, and the other lines the page shows
            # (progress, notices and timings vary from run to run)
            own = [
                ln
                for ln in stderr.splitlines()
                if ln.startswith("jaxsr: error") or normalise([ln])[0].strip() in shown
            ]
            b.actual += ["$ " + payload, *stdout.splitlines(), *own]
        elif kind == "script":
            b.actual = out.rstrip("\n").split("\n")


def attach_outputs(blocks: list[Block]) -> None:
    """An output block shows the standard output of the code blocks before it (since the
    previous output block)."""
    pending: list[str] = []
    for b in blocks:
        if b.kind == "code":
            pending.append(getattr(b, "last_output", ""))
        elif b.kind == "output":
            b.actual = _shown_warnings("".join(pending).rstrip("\n").split("\n"), b.lines)
            pending = []
        elif b.lang in ("text", "console"):
            pending = []


_WARNING = re.compile(r"^(\w+Warning): ")


def _shown_warnings(actual: list[str], page: list[str]) -> list[str]:
    """The warnings in ``actual`` (each a paragraph ``Category: message``, wrapped) where
    the page shows that category's warnings; the others are left out."""
    shown = {m[1] for ln in page if (m := _WARNING.match(ln))}
    out, skipping = [], False
    for ln in actual:
        m = _WARNING.match(ln)
        if m:
            skipping = m[1] not in shown
        elif not ln.startswith("  "):  # a warning's lines after the first are indented
            skipping = False
        if not skipping:
            out.append(ln)
    return out


def _contains(hay: list[str], need: list[str]) -> bool:
    """Every non-blank line of ``need`` is a line of ``hay``, in the same order."""
    it = iter(hay)
    return all(any(h == ln for h in it) for ln in need if ln)


def check(parsed: dict[str, list[Block]]) -> list[str]:
    """Every difference, as readable messages (empty: the pages are current)."""
    messages = []
    for blocks in parsed.values():
        attach_outputs(blocks)
        for b in blocks:
            if b.kind == "unknown":
                messages.append(
                    f"{b.where}: a text block that no check covers (put the code "
                    "that prints it before it, or a <!-- doc-check: ... --> marker)"
                )
            for p in b.problems:
                messages.append(f"{b.where}: doctest failed\n{p}")
            if b.kind in ("output", "transcript", "example", "excerpt") and b.actual is not None:
                if not same(b.lines, b.actual):
                    diff = difflib.unified_diff(
                        normalise(b.lines), normalise(b.actual), "page", "output", lineterm="", n=1
                    )
                    messages.append(f"{b.where}: the page shows another output\n" + "\n".join(diff))
    return messages


def _breaks(lines: list[str]) -> list[list[str]]:
    """Where the lines break: the first word of each (the check ignores line breaks, an
    update writes them as the command prints them)."""
    return [ln.split()[:1] for ln in normalise(lines)]


def update(page: str, blocks: list[Block]) -> bool:
    """Write today's outputs into the page; True if it changed."""
    path = ROOT / page
    lines = path.read_text(encoding="utf-8").split("\n")
    changed = False
    for b in sorted(blocks, key=lambda b: -b.start):
        if b.kind not in ("output", "transcript", "example") or b.actual is None:
            continue
        if same(b.lines, b.actual) and _breaks(b.lines) == _breaks(b.actual):
            continue
        lines[b.start + 1 : b.end] = [(b.indent + ln).rstrip() if ln else "" for ln in b.actual]
        changed = True
    if changed:
        path.write_text("\n".join(lines), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="*", help="pages to check (default: README.md, docs/*.md)")
    ap.add_argument("--update", action="store_true", help="rewrite the outputs in the pages")
    ap.add_argument("--times", action="store_true", help="print the seconds of each step")
    args = ap.parse_args(argv)
    global TIMES
    TIMES = args.times
    pages = args.pages or PAGES
    parsed = collect(pages)
    run_pages(parsed)
    messages = check(parsed)
    if args.update:
        for page, blocks in parsed.items():
            if update(page, blocks):
                print(f"updated {page}")
        messages = [m for m in messages if "another output" not in m]
    for m in messages:
        print(m, end="\n\n")
    n = sum(b.kind not in ("shown", "code", "unchecked") for bs in parsed.values() for b in bs)
    print(f"{n} outputs in {len(pages)} pages: {len(messages)} problems", file=sys.stderr)
    return 1 if messages else 0


if __name__ == "__main__":
    sys.exit(main())
