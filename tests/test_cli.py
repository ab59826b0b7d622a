"""The ``jaxsr`` command, run in-process through ``jaxsr.cli.main``."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from jaxsr.cli import main


@pytest.fixture(autouse=True)
def _no_compilation_cache(monkeypatch):
    """The command keeps compiled kernels on disk; tests leave JAX's config alone."""
    monkeypatch.setenv("JAXSR_CACHE_DIR", "none")


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("jaxsr: error:")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def rational_csv(tmp_path):
    """y = 2.4*x1 - x2/x1 - 10 (exact-recovery example) with unusual column names."""
    x1 = np.arange(1.0, 101.0)
    x2 = np.arange(200.0, 0.0, -2.0)
    df = pd.DataFrame({"dose (mg)": x1, "weight.kg": x2, "response": 2.4 * x1 - x2 / x1 - 10})
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False, float_format="%.17g")
    return path, df


def test_library_warnings_print_as_one_line(tmp_path):
    """A test split whose rows reach beyond the training range: the model's
    ExtrapolationWarning prints as ``jaxsr: warning: ...``, not as a Python source line."""
    x = np.linspace(1.0, 10.0, 60)
    pd.DataFrame({"x": x, "y": 3.0 * x + 1.0}).to_csv(tmp_path / "line.csv", index=False)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxsr",
            "symbolic",
            str(tmp_path / "line.csv"),
            "--target",
            "y",
            "--test-size",
            "0.5",
            "--max-nodes",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAXSR_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr
    # the default seed's shuffle puts x = 1 .. 1.76 in the test half, below the training range
    warned = [ln for ln in proc.stderr.splitlines() if "outside the training range" in ln]
    assert warned and all(ln.startswith("jaxsr: warning: 5 of 30 rows") for ln in warned), warned
    assert "ExtrapolationWarning" not in proc.stderr and "cli.py" not in proc.stderr


# --------------------------------------------------------------------------------------
# errors: one line, exit code 2


def test_missing_file(capsys, tmp_path):
    rc, out, err = _run(capsys, "symbolic", str(tmp_path / "nope.csv"), "--target", "y")
    assert rc == 2 and out == ""
    assert "nope.csv: no such file" in _error_line(err)


def test_missing_target(capsys, rational_csv):
    path, _ = rational_csv
    rc, _, err = _run(capsys, "tree", str(path), "--target", "Response")
    assert rc == 2
    line = _error_line(err)
    assert "no column named 'Response'" in line and "dose (mg)" in line


def test_non_numeric_column(capsys, tmp_path):
    path = tmp_path / "d.csv"
    pd.DataFrame({"name": ["a", "b", "c"], "x": [1.0, 2.0, 3.0], "y": [1.0, 2.0, 4.0]}).to_csv(
        path, index=False
    )
    rc, _, err = _run(capsys, "tree", str(path), "--target", "y", "--binarize", "none")
    assert rc == 2 and "non-numeric" in _error_line(err)
    # a text target is an error too
    rc, _, err = _run(capsys, "symbolic", str(path), "--target", "name")
    assert rc == 2 and "y (column 'name') must be numeric" in _error_line(err)


def test_nan_values(capsys, tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,y\n1,2,3\n4,,6\n7,8,\n1,1,1\n")
    rc, _, err = _run(capsys, "symbolic", str(path), "--target", "y")
    assert rc == 2
    assert "NaN or infinite" in _error_line(err) and "'y'" in _error_line(err)
    assert _error_line(err).endswith("add --dropna to leave out the rows with a missing value")
    rc, _, err = _run(capsys, "tree", str(path), "--target", "y", "--drop", "b")
    assert rc == 2 and "'y'" in _error_line(err)
    path.write_text("a,b,y\n1,2,3\n4,,6\n")
    rc, _, err = _run(capsys, "tree", str(path), "--target", "y")
    line = _error_line(err)
    assert rc == 2 and "1 row(s)" in line and "'b'" in line


def test_empty_and_header_only(capsys, tmp_path):
    p1 = tmp_path / "empty.csv"
    p1.write_text("")
    rc, _, err = _run(capsys, "symbolic", str(p1), "--target", "y")
    assert rc == 2 and "is empty" in _error_line(err)
    p2 = tmp_path / "header.csv"
    p2.write_text("x,y\n")
    rc, _, err = _run(capsys, "symbolic", str(p2), "--target", "y")
    assert rc == 2 and "no data rows" in _error_line(err)


def test_drop_and_test_size_errors(capsys, rational_csv):
    path, _ = rational_csv
    rc, _, err = _run(capsys, "symbolic", str(path), "--target", "response", "--drop", "zz")
    assert rc == 2 and "unknown column(s) 'zz'" in _error_line(err)
    rc, _, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "response",
        "--drop",
        "dose (mg)",
        "--drop",
        "weight.kg",
    )
    assert rc == 2 and "no feature columns" in _error_line(err)
    rc, _, err = _run(capsys, "symbolic", str(path), "--target", "response", "--test-size", "1.5")
    assert rc == 2 and "--test-size" in _error_line(err)


def test_usage_errors_exit_2(capsys, rational_csv):
    path, _ = rational_csv
    assert main(["symbolic", str(path)]) == 2  # --target missing
    assert "--target" in capsys.readouterr().err
    assert main(["tree", str(path), "--target", "response", "--depth-budget", "0"]) == 2
    assert main(["frobnicate"]) == 2
    assert main([]) == 2
    capsys.readouterr()
    assert main(["--version"]) == 0
    assert "jaxsr" in capsys.readouterr().out


def test_predict_bad_model_files(capsys, tmp_path, rational_csv):
    path, _ = rational_csv
    rc, _, err = _run(capsys, "predict", str(tmp_path / "none.json"), str(path))
    assert rc == 2 and "no such model file" in _error_line(err)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    rc, _, err = _run(capsys, "predict", str(bad), str(path))
    assert rc == 2 and "not valid JSON" in _error_line(err)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    rc, _, err = _run(capsys, "predict", str(other), str(path))
    assert rc == 2 and "not a jaxsr model file" in _error_line(err)


def test_python_dash_m(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "jaxsr", "symbolic", str(tmp_path / "x.csv"), "--target", "y"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "JAXSR_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("jaxsr: error:")
    assert proc.stdout == ""
    assert (tmp_path / "cache").is_dir()  # the command's on-disk cache of compiled kernels


# --------------------------------------------------------------------------------------
# fits (need the engines)


def test_symbolic_fit_save_predict(capsys, tmp_path, rational_csv):
    path, df = rational_csv
    model_path = tmp_path / "model.json"
    rc, out, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "response",
        "--max-nodes",
        "13",
        "--strategy",
        "1",
        "--output",
        str(model_path),
    )
    assert rc == 0, err
    # names of the columns in the expression (x2 = 200 - 2*x1: the law needs one of them)
    assert "dose (mg)" in out or "weight.kg" in out
    train_line = next(ln for ln in out.splitlines() if ln.startswith("train"))
    assert float(train_line.split()[2]) < 1e-18  # exact recovery, MSE printed
    assert "fitting SymbolicRegressor" in err  # progress on stderr
    doc = json.loads(model_path.read_text())
    assert doc["kind"] == "SymbolicRegressor" and doc["format_version"] == 1

    # predict: extra target column ignored, columns matched by name in any order
    shuffled = df[["response", "weight.kg", "dose (mg)"]]
    data2 = tmp_path / "new.csv"
    shuffled.to_csv(data2, index=False, float_format="%.17g")
    preds = tmp_path / "preds.csv"
    rc, _, err = _run(capsys, "predict", str(model_path), str(data2), "--output", str(preds))
    assert rc == 0, err
    got = pd.read_csv(preds)["prediction"].to_numpy()
    np.testing.assert_allclose(got, df["response"].to_numpy(), rtol=1e-9, atol=1e-9)
    rc, out, _ = _run(capsys, "predict", str(model_path), str(data2))
    assert rc == 0 and out.splitlines()[0] == "prediction" and len(out.splitlines()) == 101
    # a file without one of the model's columns
    data3 = tmp_path / "partial.csv"
    df[["dose (mg)"]].to_csv(data3, index=False)
    rc, out, err = _run(capsys, "predict", str(model_path), str(data3))
    assert rc == 2 and out == ""
    assert "needs column(s) 'weight.kg'" in _error_line(err)
    assert "no header" not in _error_line(err)
    # a headerless file for a model with named columns: it needs a header row
    df[["dose (mg)", "weight.kg"]].to_csv(data3, index=False, header=False)
    rc, out, err = _run(capsys, "predict", str(model_path), str(data3))
    assert rc == 2 and "needs a header row with the model's column names" in _error_line(err)


def test_symbolic_test_size(capsys, tmp_path):
    x1 = np.arange(1.0, 126.0)
    x2 = np.arange(250.0, 0.0, -2.0)
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": x1, "b": x2, "t": 2.4 * x1 - x2 / x1 - 10}).to_csv(path, index=False)
    rc, out, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "t",
        "--max-nodes",
        "13",
        "--strategy",
        "1",
        "--beam-width",
        "4",
        "--test-size",
        "0.2",
        "--seed",
        "1",
    )
    assert rc == 0, err
    train = next(ln for ln in out.splitlines() if ln.startswith("train"))
    test = next(ln for ln in out.splitlines() if ln.startswith("test"))
    assert "(n=100)" in train and "(n=25)" in test
    assert float(test.split()[2]) < 1e-18  # held-out rows predicted exactly


def test_tree_fit_certificate_and_predict(capsys, tmp_path):
    rng = np.random.default_rng(0)
    n = 200
    temp = rng.integers(0, 40, n).astype(float)  # whole degrees: 39 midpoints
    city = np.where(rng.uniform(size=n) < 0.5, "north", "south")
    noise = rng.normal(0, 0.01, n)
    # two leaves on temperature, one more split on the city: the optimal tree has 3 leaves
    y = np.where(temp <= 20, 1.0, np.where(city == "north", 5.0, 9.0)) + noise
    df = pd.DataFrame({"temp C": temp, "city": city, "sales": y})
    path = tmp_path / "shop.csv"
    df.to_csv(path, index=False)
    model_path = tmp_path / "tree.json"
    rc, out, err = _run(
        capsys,
        "tree",
        str(path),
        "--target",
        "sales",
        "--regularization",
        "0.01",
        "--depth-budget",
        "3",
        "--binarize",
        "midpoints",
        "--output",
        str(model_path),
    )
    assert rc == 0, err
    assert "optimal: yes" in out
    assert "3 leaves" in out
    assert "temp C <= 20.5" in out and "city == " in out  # the split points of the truth
    rc, out, err = _run(capsys, "predict", str(model_path), str(path))
    assert rc == 0, err
    pred = pd.read_csv(__import__("io").StringIO(out))["prediction"].to_numpy()
    assert np.max(np.abs(pred - y)) < 0.05


def test_tree_on_binary_csv_auto_binarize(capsys, tmp_path):
    rng = np.random.default_rng(1)
    B = rng.integers(0, 2, size=(120, 4))
    y = 3.0 * B[:, 0] + 1.0 * (B[:, 0] == 0) * B[:, 2]
    df = pd.DataFrame(B, columns=["f a", "f b", "f c", "f d"]).assign(y=y)
    path = tmp_path / "bin.csv"
    df.to_csv(path, index=False)
    rc, out, err = _run(capsys, "tree", str(path), "--target", "y", "--regularization", "0.001")
    assert rc == 0, err
    assert "binarizer: none" in out and "optimal: yes" in out
    train = next(ln for ln in out.splitlines() if ln.startswith("train"))
    assert float(train.split()[2]) < 1e-20
    # the batched device backend certifies the same optimum
    rc, out_jax, err = _run(
        capsys, "tree", str(path), "--target", "y", "--regularization", "0.001", "--backend", "jax"
    )
    assert rc == 0, err

    def certificate(text):
        return next(ln for ln in text.splitlines() if ln.startswith("certificate"))

    assert certificate(out_jax).split()[2] == certificate(out).split()[2]  # objective


def test_demo(capsys):
    """The README's first command: both methods on Newton's law and the diabetes data."""
    pytest.importorskip("sklearn")
    rc, out, err = _run(capsys, "demo")
    assert rc == 0, err
    lines = out.splitlines()
    # Newton's law recovered within the paper's budget (Table 3: 4 iterations; issue: <= 6)
    iters = next(ln for ln in lines if ln.strip().startswith("iterations:"))
    assert 1 <= int(iters.split()[1]) <= 6
    rel = next(ln for ln in lines if "max relative error" in ln)
    assert float(rel.split("max relative error")[1].split(",")[0]) < 1e-9
    recovered = next(ln for ln in lines if "recovered: F =" in ln)
    assert all(v in recovered for v in ("x1", "x2", "x3"))
    # two certified optimal trees, the diabetes one printed as an index card
    assert sum("optimal: yes" in ln for ln in lines) == 2
    assert any(ln.strip().startswith("|--- ") and " <= " in ln for ln in lines)
    assert "time of each step:" in out and "total" in out


# --------------------------------------------------------------------------------------
# any CSV: --sep, --decimal, --no-header, sniffing, hints


def _last_train_n(out: str) -> int:
    train = next(ln for ln in out.splitlines() if ln.startswith("train"))
    return int(train.split("(n=")[1].rstrip(")"))


def _small_tree(*extra):
    return ("--depth-budget", "2", "--n-thresholds", "2", "--time-limit", "20", *extra)


def test_read_csv_separators_decimal_header_and_bom(tmp_path):
    from jaxsr.cli import _read_csv

    want = pd.DataFrame({"a b": [1.5, -2.25, 3.0], "c": [10.0, 20.0, 30.5]})
    files = {
        "semi.csv": ("a b;c\n1,5;10\n-2,25;20\n3;30,5\n", {"decimal": ","}),
        "tab.tsv": ("a b\tc\n1.5\t10\n-2.25\t20\n3\t30.5\n", {}),
        "bom.csv": ("\ufeffa b ,c\n1.5,10\n-2.25,20\n3,30.5\n", {}),  # BOM, blank in name
        "trail.csv": ("a b;c;;\n1,5;10;;\n-2,25;20;;\n3;30,5;;\n", {"decimal": ","}),
        "pipe.txt": ("a b|c\n1.5|10\n-2.25|20\n3|30.5\n", {"sep": "pipe"}),
    }
    for name, (text, kw) in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        got = _read_csv(str(tmp_path / name), **kw)
        pd.testing.assert_frame_equal(got.astype(float), want, check_dtype=False, obj=name)
    # no header, runs of blanks (sniffed) and tabs (given): columns x1 .. xn
    (tmp_path / "blank.data").write_text("1.5  10 7\n-2.25 20  8\n3 30.5 9\n")
    (tmp_path / "tabs.dat").write_text("1.5\t10\t7\n-2.25\t20\t8\n3\t30.5\t9\n")
    for name, kw in (("blank.data", {}), ("tabs.dat", {"sep": "tab"}), ("tabs.dat", {})):
        got = _read_csv(str(tmp_path / name), header=False, **kw)
        assert list(got.columns) == ["x1", "x2", "x3"], name
        np.testing.assert_array_equal(got.to_numpy(), [[1.5, 10, 7], [-2.25, 20, 8], [3, 30.5, 9]])


def test_csv_options_on_the_command_and_their_hints(capsys, tmp_path):
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 10, 60)
    y = np.where(x > 5, 2.0, -1.0)
    rows = [f"{a:.6f};{b:.1f}\n".replace(".", ",") for a, b in zip(x, y, strict=True)]
    text = "x;y\n" + "".join(rows)
    path = tmp_path / "comma.csv"
    path.write_text(text)
    # without --decimal: the numbers are text; the error says what to add
    rc, out, err = _run(capsys, "tree", str(path), "--target", "y")
    assert rc == 2
    assert "decimal comma: add --decimal ," in _error_line(err)
    rc, out, err = _run(
        capsys, "tree", str(path), "--target", "y", "--decimal", ",", "--sep", ";", *_small_tree()
    )
    assert rc == 0, err
    assert "optimal: yes" in out and _last_train_n(out) == 60
    # the separator and the decimal mark cannot be one character
    rc, out, err = _run(capsys, "tree", str(path), "--target", "y", "--decimal", ",", "--sep", ",")
    assert rc == 2 and "both ','" in _error_line(err)
    # no header: the error for a missing target says so; --no-header names them x1..xn
    raw = tmp_path / "raw.data"
    raw.write_text("".join(f"{a:.6f} {b:.1f}\n" for a, b in zip(x, y, strict=True)))
    rc, out, err = _run(capsys, "tree", str(raw), "--target", "x2")
    assert rc == 2 and "add --no-header" in _error_line(err)
    model = tmp_path / "m.json"
    rc, out, err = _run(
        capsys,
        "tree",
        str(raw),
        "--no-header",
        "--target",
        "x2",
        "--output",
        str(model),
        "--binarize",
        "midpoints",
        *_small_tree(),
    )
    assert rc == 0, err
    assert _last_train_n(out) == 60 and "x1 <= " in out
    # predict on the headerless file without --no-header: the same hint
    rc, out, err = _run(capsys, "predict", str(model), str(raw))
    assert rc == 2 and out == ""
    assert "needs column(s) 'x1'" in _error_line(err)
    assert "if the file has no header, add --no-header" in _error_line(err)
    # predict reads the same kind of file with the same options (x2 is not needed)
    rc, out, err = _run(capsys, "predict", str(model), str(raw), "--no-header")
    assert rc == 0, err
    pred = pd.read_csv(__import__("io").StringIO(out))["prediction"].to_numpy()
    np.testing.assert_allclose(pred, y)


def test_warning_for_a_text_column_with_many_values(capsys, tmp_path):
    n = 80
    day = [f"2024-01-{1 + i % 20:02d}" for i in range(n)]  # 20 distinct dates
    size = np.arange(n) % 7 * 1.0
    df = pd.DataFrame(
        {
            "day": day,
            "colour": np.where(np.arange(n) % 2, "red", "blue"),
            "size": size,
            "y": size * 2,
        }
    )
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    rc, out, err = _run(capsys, "tree", str(path), "--target", "y", *_small_tree())
    assert rc == 0, err
    warnings = [ln for ln in err.splitlines() if ln.startswith("jaxsr: warning:")]
    assert len(warnings) == 1  # colour has 2 values: no warning
    assert "'day' has 20 distinct values" in warnings[0] and "20 binary features" in warnings[0]
    assert "--drop day" in warnings[0]
    rc, out, err = _run(capsys, "tree", str(path), "--target", "y", "--drop", "day", *_small_tree())
    assert rc == 0 and "warning" not in err


# The 8 raw OSRT datasets (shared/data/osrt/raw, formats in its README): the options that
# read each, the rows and feature columns that must come out. Small settings: one split.
_OSRT_RAW = {
    "airfoil": ("airfoil/airfoil_self_noise.dat", ["--no-header", "--target", "x6"], 1503, 5),
    "garment": (
        "garment/garments_worker_productivity.csv",
        ["--target", "actual_productivity", "--drop", "date", "--drop", "wip"],
        1197,
        12,
    ),
    "optical": (
        "optical/optical.csv",
        ["--decimal", ",", "--target", "Channel Utilization"],
        640,
        9,
    ),
    "real_estate": (
        "real_estate/real_estate.csv",
        ["--target", "Y house price of unit area", "--drop", "No"],
        414,
        6,
    ),
    "seoul_bike": ("seoul_bike/seoul_bike.csv", ["--target", "Rented Bike Count"], 8760, 12),
    "servo": ("servo/servo.data", ["--target", "class"], 167, 4),
    "sync": (
        "sync/synchronous_machine.csv",
        ["--sep", ";", "--decimal", ",", "--target", "If"],
        557,
        4,
    ),
    "yacht": ("yacht/yacht_hydrodynamics.data", ["--no-header", "--target", "x7"], 308, 6),
}


@pytest.mark.parametrize("name", sorted(_OSRT_RAW))
def test_every_raw_osrt_dataset_is_readable_by_jaxsr_tree(capsys, name):
    from jaxsr.datasets import shared_data_dir

    data = shared_data_dir(required=False)
    if data is None or not (data / "osrt" / "raw").is_dir():
        pytest.skip("shared/data/osrt/raw not found")
    rel, options, n_rows, n_features = _OSRT_RAW[name]
    path = data / "osrt" / "raw" / rel
    rc, out, err = _run(capsys, "tree", str(path), *options, *_small_tree())
    assert rc == 0, err
    assert _last_train_n(out) == n_rows
    assert f"{n_features} features" in out
    assert "certificate:" in out and "jaxsr: warning" not in err
    train = next(ln for ln in out.splitlines() if ln.startswith("train"))
    assert float(train.split("R^2")[1].split()[0]) > 0.0  # the one split explains something


def _predict_subprocess(tmp_path, model, data):
    return subprocess.run(
        [sys.executable, "-m", "jaxsr", "predict", str(model), str(data)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAXSR_CACHE_DIR": "none"},
    )


def test_predict_deep_and_damaged_model_files(tmp_path):
    import io

    from jaxsr.io import model_to_dict
    from jaxsr.symbolic import Expression, SymbolicRegressor
    from jaxsr.symbolic.regressor import _FORMAT, _VERSION

    data = tmp_path / "data.csv"
    pd.DataFrame({"x1": [1.0, 1.5, 2.0], "x2": [0.0, 1.0, 2.0]}).to_csv(data, index=False)
    # a 1200-level expression: ((((x1 + 0.001) * 0.999) + 0.001) * 0.999 ...)
    e = Expression.variable(0)
    for k in range(1200):
        e = Expression.binary(
            "+" if k % 2 == 0 else "*", e, Expression.constant(0.001 if k % 2 == 0 else 0.999)
        )
    doc = model_to_dict(
        SymbolicRegressor.from_dict(
            {
                "format": _FORMAT,
                "version": _VERSION,
                "params": {},
                "tree": e.to_dict(),
                "feature_names": ["x1", "x2"],
                "n_features_in_": 2,
                "mse_": 0.0,
                "n_iterations_": 1,
            }
        )
    )
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(doc))
    proc = _predict_subprocess(tmp_path, deep, data)
    assert proc.returncode == 0, proc.stderr
    v = np.array([1.0, 1.5, 2.0])
    for k in range(1200):
        v = v + 0.001 if k % 2 == 0 else v * 0.999
    np.testing.assert_allclose(pd.read_csv(io.StringIO(proc.stdout))["prediction"], v, rtol=1e-12)
    # JSON nested 5000 levels, a constant turned inf, a contradictory certificate: one line
    nested = tmp_path / "nested.json"
    nested.write_text('{"format": "jaxsr-model", "model": ' + "[" * 5000 + "]" * 5000 + "}")
    doc["model"]["tree"]["value"][-1] = float("inf")
    inf = tmp_path / "inf.json"
    inf.write_text(json.dumps(doc, allow_nan=True))
    for path, message in (
        (nested, "nests JSON arrays and objects 5001 levels deep"),
        (inf, "tree.value[2400] is inf; constants must be finite"),
    ):
        proc = _predict_subprocess(tmp_path, path, data)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"jaxsr: error: {path}: "), proc.stderr
        assert message in lines[0]
        assert proc.stdout == ""


def test_help_does_not_import_jax(tmp_path):
    """``jaxsr --help`` (and any argument error) answers before the engines are imported:
    JAX is loaded only by the sub-command that fits or predicts."""
    for argv in (["--help"], ["symbolic", "--help"], ["tree", str(tmp_path / "x.csv")]):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "jaxsr", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "JAXSR_CACHE_DIR": "none"},
        )
        assert proc.returncode == (0 if "--help" in argv else 2), proc.stderr[-2000:]
        modules = {
            ln.split("|")[-1].strip()
            for ln in proc.stderr.splitlines()
            if ln.startswith("import time:")
        }
        assert "jaxsr.cli" in modules  # the measurement works
        heavy = sorted(
            m for m in modules if m.split(".")[0] in ("jax", "jaxlib", "sympy", "sklearn")
        )
        assert not heavy, (argv, heavy[:10])


# --------------------------------------------------------------------------------------
# the estimators' options on the command line


@pytest.fixture
def sqrt_csv(tmp_path):
    """y = 2*sqrt(x1) + x1*x2: exact with the unary operator sqrt, not without it."""
    x1 = np.linspace(1.0, 9.0, 24)
    x2 = np.tile([0.5, 1.5, 2.5], 8)
    df = pd.DataFrame({"x1": x1, "x2": x2, "y": 2.0 * np.sqrt(x1) + x1 * x2})
    path = tmp_path / "sqrt.csv"
    df.to_csv(path, index=False, float_format="%.17g")
    return path, df


def test_option_choices_are_the_estimators():
    from jaxsr.cli import DOMAINS, MODEL_SELECTIONS
    from jaxsr.symbolic import domain, front

    assert MODEL_SELECTIONS == front.MODEL_SELECTIONS and DOMAINS == domain.DOMAINS


def test_option_errors_are_usage_errors(capsys, sqrt_csv):
    path, _ = sqrt_csv
    for bad in (
        ["--strategy", "5"],
        ["--strategy", "1,1"],
        ["--beam-width", "0"],
        ["--beam-width", "4,2"],
        ["--beam-width", "4,x"],
        ["--extrapolation-limit", "-1"],
        ["--bic-patience", "0"],
        ["--search-sample", "1"],
        ["--search-sample", "all"],
        ["--validation-fraction", "1"],
        ["--model-selection", "aic"],
        ["--max-time", "0"],
    ):
        assert main(["symbolic", str(path), "--target", "y", *bad]) == 2, bad
        assert "error: argument" in capsys.readouterr().err
    # unknown unary operator names: the estimator's check, as one error line
    rc, _, err = _run(
        capsys, "symbolic", str(path), "--target", "y", "--unary-operators", "sqrt,tan"
    )
    assert rc == 2 and "unary_operators" in _error_line(err) and "tan" in _error_line(err)


_SYMBOLIC_OPTIONS = {
    "greedy strategy 3": (["--strategy", "3", "--beam-width", "1"], dict(strategy=3, beam_width=1)),
    "unary sqrt": (
        ["--unary-operators", "sqrt", "--beam-width", "1"],
        dict(unary_operators=("sqrt",), beam_width=1),
    ),
    "portfolio, accuracy": (
        ["--strategy", "1,3", "--model-selection", "accuracy", "--no-rational-start"],
        dict(strategy=(1, 3), model_selection="accuracy", rational_start=False),
    ),
    "validation split": (
        ["--validation-fraction", "0.25", "--beam-width", "2"],
        dict(validation_fraction=0.25, beam_width=2),
    ),
    "widening, guard off": (
        ["--strategy", "3", "--beam-width", "1,2", "--extrapolation-limit", "none"],
        dict(strategy=3, beam_width=(1, 2), extrapolation_limit=None),
    ),
    "guard limit": (["--extrapolation-limit", "2.5"], dict(extrapolation_limit=2.5)),
    "no stop, no elimination": (
        ["--bic-patience", "none", "--no-backward-elimination"],
        dict(bic_patience=None, backward_elimination=False),
    ),
    "patience": (
        ["--bic-patience", "4", "--backward-elimination"],
        dict(bic_patience=4, backward_elimination=True),
    ),
    "search sample": (
        ["--search-sample", "12", "--beam-width", "1"],
        dict(search_sample=12, beam_width=1),
    ),
    "exact search": (
        ["--search-sample", "none", "--beam-width", "1"],
        dict(search_sample=None, beam_width=1),
    ),
}


@pytest.mark.parametrize("case", sorted(_SYMBOLIC_OPTIONS))
def test_symbolic_options_give_the_estimators_model(capsys, tmp_path, sqrt_csv, case):
    """Each option reaches SymbolicRegressor: the command's saved model is the model of the
    estimator fitted with the same parameters on the same data."""
    from jaxsr.io import load_model
    from jaxsr.symbolic import SymbolicRegressor

    path, df = sqrt_csv
    argv, params = _SYMBOLIC_OPTIONS[case]
    model_path = tmp_path / "m.json"
    rc, out, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "y",
        "--max-nodes",
        "7",
        *argv,
        "--output",
        str(model_path),
    )
    assert rc == 0, err
    saved = load_model(model_path)
    want = SymbolicRegressor(max_nodes=7, progress=False, **params).fit(df[["x1", "x2"]], df["y"])
    for name, value in params.items():  # JSON keeps a tuple as a list
        got = saved.get_params()[name]
        assert (tuple(got) if isinstance(got, list) else got) == value, name
    assert saved.expression_ == want.expression_
    assert saved.selected_index_ == want.selected_index_
    pd.testing.assert_frame_equal(
        saved.equations_.reset_index(drop=True), want.equations_.reset_index(drop=True)
    )
    assert f"exact:    {want.expression_}" in out
    if "unary_operators" in params:
        assert "sqrt(x1)" in want.expression_ and want.mse_ < 1e-20
    if params.get("model_selection") == "accuracy":
        assert want.selected_index_ == len(want.equations_) - 1
        # the portfolio at the first width, then (the default schedule) at the second
        assert [(s["strategy"], s["beam_width"]) for s in want.searches_][:2] == [(1, 4), (3, 4)]
    if "validation_fraction" in params:
        assert "validation_loss" in want.equations_.columns
    if params.get("beam_width") == (1, 2):
        assert [s["beam_width"] for s in want.searches_][0] == 1


def test_tree_options_reach_the_estimator(capsys, tmp_path):
    from jaxsr.io import load_model

    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, size=(60, 3)).astype(float)
    y = 4.0 * X[:, 0] + 2.0 * X[:, 1] * X[:, 2] + rng.normal(0, 0.1, 60)
    path = tmp_path / "b.csv"
    pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y).to_csv(path, index=False)
    model_path = tmp_path / "t.json"
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="node limit"):
        rc, out, err = _run(
            capsys,
            "tree",
            str(path),
            "--target",
            "y",
            "--max-steps",
            "1",
            "--raw-loss",
            "--exact-levels",
            "0",
            "--loss",
            "absolute_error",
            "--min-samples-leaf",
            "3",
            "--depth-budget",
            "3",
            "--output",
            str(model_path),
        )
    assert rc == 0, err
    m = load_model(model_path)
    params = m.get_params()
    assert (
        params["max_steps"],
        params["normalize"],
        params["exact_levels"],
        params["loss"],
        params["min_samples_leaf"],
        params["depth_budget"],
    ) == (1, False, 0, "absolute_error", 3, 3)
    assert not m.optimal_ and m.gap_ > 0 and "optimal: no" in out  # stopped at 1 step
    assert m.normalizer_ == pytest.approx(60.0)  # raw loss: the normaliser is n
    # options left out: the estimator's defaults, not copies of them
    rc, out, err = _run(capsys, "tree", str(path), "--target", "y", "--output", str(model_path))
    assert rc == 0, err
    from jaxsr.trees import OptimalTreeRegressor

    defaults = OptimalTreeRegressor().get_params()
    got = load_model(model_path).get_params()
    for name in (
        "regularization",
        "depth_budget",
        "loss",
        "normalize",
        "min_samples_leaf",
        "time_limit",
        "max_steps",
        "exact_levels",
        "backend",
        "mesh",
    ):
        assert got[name] == defaults[name], name


def test_show_front(capsys, tmp_path, sqrt_csv):
    """--show-front prints the whole front, one row per model, the equation column whole and
    the selected row marked; with a validation split its loss is a column too."""
    from jaxsr.io import load_model

    path, _ = sqrt_csv
    model_path = tmp_path / "m.json"
    rc, out, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "y",
        "--max-nodes",
        "7",
        "--validation-fraction",
        "0.25",
        "--show-front",
        "--output",
        str(model_path),
    )
    assert rc == 0, err
    model = load_model(model_path)
    front = model.equations_
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Pareto front"))
    header = lines[start + 1].split()
    assert header == ["complexity", "loss", "validation", "equation"]
    rows = lines[start + 2 : start + 2 + len(front)]
    assert len(front) > 1
    for i, (line, rec) in enumerate(zip(rows, front.to_dict("records"), strict=True)):
        assert line.startswith("*" if i == model.selected_index_ else " "), line
        cells = line[1:].split(maxsplit=3)
        assert int(cells[0]) == rec["complexity"]
        assert float(cells[1]) == pytest.approx(rec["loss"], rel=1e-5)
        assert float(cells[2]) == pytest.approx(rec["validation_loss"], rel=1e-5)
        assert cells[3] == rec["equation"]  # whole, not cut by a wide expression column
    chosen = rows[model.selected_index_]
    assert chosen.endswith(str(model).removeprefix("y = "))


def test_dropna(capsys, tmp_path):
    """--dropna leaves out exactly the rows with a missing value in a used column (not in a
    --drop column) and says how many on stderr; the fit then sees only complete rows."""
    x = np.arange(1.0, 21.0)
    df = pd.DataFrame({"x": x, "note": 1.0, "y": 2.0 * x + 1.0})
    df.loc[[2, 7], "x"] = np.nan
    df.loc[11, "y"] = np.nan
    df.loc[[3, 4], "note"] = np.nan  # a dropped column: these rows stay
    path = tmp_path / "gaps.csv"
    df.to_csv(path, index=False)
    for cmd, extra in (
        ("symbolic", ("--max-nodes", "5")),
        ("tree", ("--depth-budget", "2", "--n-thresholds", "2")),
    ):
        rc, _, err = _run(capsys, cmd, str(path), "--target", "y", "--drop", "note", *extra)
        assert rc == 2 and "add --dropna" in _error_line(err), cmd
        rc, out, err = _run(
            capsys, cmd, str(path), "--target", "y", "--drop", "note", "--dropna", *extra
        )
        assert rc == 0, err
        assert "--dropna: left out 3 of 20 rows with a missing value (in 'x', 'y')" in err
        assert _last_train_n(out) == 17
    # the symbolic fit is exact on the complete rows
    rc, out, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "y",
        "--drop",
        "note",
        "--dropna",
        "--max-nodes",
        "5",
    )
    assert float(next(ln for ln in out.splitlines() if ln.startswith("train")).split()[2]) < 1e-20
    # every row incomplete: an error, not an empty fit
    df.assign(x=np.nan).to_csv(path, index=False)
    rc, _, err = _run(capsys, "tree", str(path), "--target", "y", "--dropna")
    assert rc == 2 and "every row has a missing value" in _error_line(err)


def test_symbolic_one_hot_text_columns(capsys, tmp_path):
    """jaxsr symbolic one-hot encodes a text column into 0/1 features named column=value,
    which the equation uses by name; predict re-applies the encoding to the same column."""
    from jaxsr.io import load_model

    n = 30
    x = np.linspace(1.0, 5.0, n)
    color = np.array(["red", "blue", "green"])[np.arange(n) % 3]
    y = 2.0 * x + np.where(color == "red", 3.0, 0.0)
    path = tmp_path / "c.csv"
    pd.DataFrame({"x": x, "color": color, "y": y}).to_csv(path, index=False)
    model_path = tmp_path / "m.json"
    rc, out, err = _run(
        capsys,
        "symbolic",
        str(path),
        "--target",
        "y",
        "--max-nodes",
        "7",
        "--output",
        str(model_path),
    )
    assert rc == 0, err
    assert (
        "one-hot encoded text column(s) 'color' into 3 0/1 features: color=blue, "
        "color=green, color=red"
    ) in err
    model = load_model(model_path)
    assert list(model.feature_names_in_) == ["x", "color=blue", "color=green", "color=red"]
    assert "[color=red]" in model.expression_ and "4 features" in out
    train = next(ln for ln in out.splitlines() if ln.startswith("train"))
    assert float(train.split()[2]) < 1e-20  # the law with the indicator, exactly
    # predict: the text column of a new file encoded the same way; an unseen value warns
    new = tmp_path / "new.csv"
    pd.DataFrame({"color": ["red", "blue", "violet"], "x": [1.0, 2.0, 3.0]}).to_csv(
        new, index=False
    )
    rc, out, err = _run(capsys, "predict", str(model_path), str(new))
    assert rc == 0, err
    pred = pd.read_csv(__import__("io").StringIO(out))["prediction"].to_numpy()
    np.testing.assert_allclose(pred, [5.0, 4.0, 6.0], rtol=1e-12)
    assert "'color' has value(s) 'violet' that the model was not fitted on" in err
    # a text column with a gap: the --dropna hint; decimal-comma numbers: the --decimal hint
    pd.DataFrame({"x": x[:4], "color": ["red", None, "blue", "red"], "y": y[:4]}).to_csv(
        path, index=False
    )
    rc, _, err = _run(capsys, "symbolic", str(path), "--target", "y")
    assert rc == 2 and "'color' have missing values; add --dropna" in _error_line(err)
    pd.DataFrame({"x": ["1,5", "2,5", "3,0"], "y": [1.0, 2.0, 3.0]}).to_csv(path, index=False)
    rc, _, err = _run(capsys, "symbolic", str(path), "--target", "y")
    assert rc == 2 and "add --decimal ," in _error_line(err)


def test_tree_cv_chooses_the_regularization(capsys, tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(120, 2))
    y = np.where(x[:, 0] > 0.3, 2.0, 0.0) + 0.1 * rng.normal(size=120)
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": y}).to_csv(path, index=False)
    rc, out, err = _run(
        capsys,
        "tree",
        str(path),
        "--target",
        "y",
        "--cv",
        "3",
        "--depth-budget",
        "3",
        "--n-thresholds",
        "4",
    )
    assert rc == 0, err
    assert "3-fold cross-validation over the exact regularization paths" in out
    assert "certificate:" in out and "depth budget 3" in out
    rc, out, err = _run(
        capsys, "tree", str(path), "--target", "y", "--cv", "3", "--regularization", "0.01"
    )
    assert rc != 0 and "leave out --regularization" in _error_line(err)


def test_warmup_compiles_the_symbolic_programs_of_a_bucket(capsys):
    rc, out, err = _run(capsys, "warmup", "--rows", "40", "--features", "2")
    assert rc == 0 and out == ""
    assert "symbolic programs for 40 rows x 2 features:" in err and "warmup done" in err
    rc, out, err = _run(capsys, "warmup", "--rows", "0")
    assert rc == 2 and "must be positive" in _error_line(err)
