"""The ``jaxsr`` command's results fit an 80-column terminal (``--wide``: unwrapped)."""

import re

import numpy as np
import pandas as pd
import pytest

from jaxsr.cli import _wrap_line, main


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("JAXSR_CACHE_DIR", "none")


@pytest.fixture
def long_names_csv(tmp_path):
    """Long column names make every line of the report long."""
    rng = np.random.default_rng(0)
    a = rng.uniform(1.0, 5.0, 120)
    b = rng.uniform(1.0, 5.0, 120)
    df = pd.DataFrame(
        {
            "systolic_blood_pressure_at_rest": a,
            "body_mass_index_measured_twice": b,
            "disease_progression_after_one_year": 3.0 * a * b + 1.0 / a,
        }
    )
    path = tmp_path / "a_data_file_with_a_rather_long_name_for_the_report.csv"
    df.to_csv(path, index=False)
    return path


def _lines(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()


def test_wrap_line_keeps_words_and_indents():
    line = "   iteration 4: constant-variable search -> " + " * ".join(["x1"] * 30)
    pieces = _wrap_line(line, 80)
    assert len(pieces) > 1 and all(len(p) <= 80 for p in pieces)
    assert " ".join(p.strip() for p in pieces).split() == line.split()
    assert pieces[0].startswith("   iteration") and pieces[1].startswith(" " * 7)
    assert _wrap_line(line, None) == [line]  # --wide


@pytest.mark.parametrize(
    "command",
    [
        [
            "symbolic",
            "--max-nodes",
            "9",
            "--beam-width",
            "1",
            "--show-front",
            "--test-size",
            "0.25",
        ],
        ["tree", "--depth-budget", "3", "--regularization", "0.01"],
    ],
)
def test_results_fit_80_columns(capsys, long_names_csv, tmp_path, command):
    target = "disease_progression_after_one_year"
    model = tmp_path / "model.json"
    argv = [command[0], str(long_names_csv), "--target", target, *command[1:], "-o", str(model)]
    lines = _lines(capsys, *argv)
    assert max(map(len, lines)) <= 80, [ln for ln in lines if len(ln) > 80]
    wide = _lines(capsys, *argv, "--wide")
    assert max(map(len, wide)) > 80

    # the same text, only the line breaks (and the indentation after them) differ
    def text(lines):
        return re.sub(r"\d+\.\d+s", "", "".join("".join(lines).split()))

    assert text(lines) == text(wide)
    predictions = _lines(capsys, "predict", str(model), str(long_names_csv))
    assert predictions[0] == "prediction" and max(map(len, predictions)) <= 80
    # numbers in the shortest form that reads back to the same float
    assert all(repr(float(v)) == v for v in predictions[1:])
