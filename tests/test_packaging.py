"""The package as a user installs it: the license ships, the metadata is PEP 639's, and
``.ci/run`` runs the README's two commands as the README writes them."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_license_file_and_pep639_metadata():
    project = _project()
    assert project["license"] == "BSD-3-Clause"  # an SPDX expression, not a table
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License") and "The jaxsr developers" in text
    # PEP 639: no license classifier beside a license expression
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert project["authors"] and project["requires-python"] == ">=3.11"
    versions = [
        c.rsplit(" ", 1)[-1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions and min(versions, key=lambda v: int(v.split(".")[1])) == "3.11"


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Install, and the two commands") :]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)[:2]


def test_readme_commands_are_the_ones_ci_runs():
    main_job, tests = _readme_commands()
    # the main job installs the package alone (no test tool chain), the tests the test extra
    assert main_job.endswith("pip install -e . && jaxsr demo"), main_job
    assert tests.endswith("pip install -e '.[test]' && pytest"), tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    for command in (main_job, tests):
        venv_and_install, _, run = command.rpartition(" && ")
        venv_and_install = venv_and_install.replace(".venv", "{venv}")
        assert any(_same(step, venv_and_install) for step in steps), (command, steps)
        assert run in steps, (run, steps)


def _same(step: str, pattern: str) -> bool:
    return re.fullmatch(re.escape(pattern).replace(r"\{venv\}", r"\.venv[\w-]*"), step) is not None
