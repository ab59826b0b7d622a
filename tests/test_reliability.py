"""Reliability at the edges of normal use: files the command must not destroy, integers a
float cannot hold, processes forked after JAX ran, memory of wide data, saves that race,
dataframes of other libraries, CSV lines longer than their header, one estimator object
in two threads, where warnings point, Ctrl-C and exit, time limits. Most tests get an
error, a value or a file; those about time compare against a stand-in that the old code
waited for (a 120 s sleep, 85 fits slowed to 0.25 s each, the loading of JAX) with bounds
that a loaded machine cannot reach, and a subprocess that would hang has a generous
timeout."""

import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest

from jaxsr import Binarizer, OptimalTreeRegressor, SymbolicRegressor
from jaxsr._validation import PrecisionWarning, check_integer_precision
from jaxsr.cli import main
from jaxsr.io import load_model, save_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _no_compilation_cache(monkeypatch):
    monkeypatch.setenv("JAXSR_CACHE_DIR", "none")


def _python(code: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "JAXSR_CACHE_DIR": "none", **env},
    )


def _tree_data():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(40, 3))
    y = 1.0 * X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=40)
    return X, y


# ------------------------------------------------------------------ output = input
def test_command_refuses_an_output_that_is_one_of_its_inputs(tmp_path, capsys, monkeypatch):
    X, y = _tree_data()
    data = tmp_path / "data.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "y": y}).to_csv(data, index=False)
    original = data.read_bytes()
    link = tmp_path / "alias.csv"
    os.link(data, link)
    monkeypatch.chdir(tmp_path)
    small = ["--depth-budget", "2", "--n-thresholds", "2"]
    for argv in (
        ["tree", str(data), "--target", "y", "-o", str(data), *small],
        ["tree", "data.csv", "--target", "y", "-o", "./data.csv", *small],
        ["tree", str(data), "--target", "y", "-o", str(link), *small],
        ["symbolic", str(data), "--target", "y", "--output", str(data)],
    ):
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc == 2 and "is the input file" in err, err
        assert data.read_bytes() == original
    # predict: neither the model nor the data may be the output
    model = tmp_path / "model.json"
    assert main(["tree", str(data), "--target", "y", "-o", str(model), *small]) == 0
    assert "will be replaced" not in capsys.readouterr().err  # a new file: nothing to say
    saved = model.read_bytes()
    for out in (model, data):
        rc = main(["predict", str(model), str(data), "-o", str(out)])
        err = capsys.readouterr().err
        assert rc == 2 and "is the input file" in err, err
    assert model.read_bytes() == saved and data.read_bytes() == original
    # another existing file is replaced, and the command says so
    other = tmp_path / "old.json"
    other.write_text("{}")
    assert main(["tree", str(data), "--target", "y", "-o", str(other), *small]) == 0
    assert "old.json exists and will be replaced" in capsys.readouterr().err
    assert load_model(other).n_leaves_ >= 1
    rc = main(["tree", str(data), "--target", "y", "-o", str(tmp_path), *small])
    assert rc == 2 and "is a folder" in capsys.readouterr().err


# ------------------------------------------------------------------ integer precision
BIG = 2**62  # nanosecond timestamps and 64-bit ids live here


@pytest.mark.parametrize(
    "make",
    [
        lambda X, y: SymbolicRegressor(max_iterations=1).fit(X, y),
        lambda X, y: OptimalTreeRegressor(depth_budget=2).fit(X, y),
        lambda X, y: OptimalTreeRegressor(depth_budget=2, binarizer=Binarizer()).fit(
            pd.DataFrame({"t": X[:, 0]}), y
        ),
        lambda X, y: Binarizer().fit(X),
    ],
    ids=["symbolic", "tree", "tree-frame", "binarizer"],
)
def test_integers_beyond_the_float_range_of_exact_integers_are_refused(make):
    X = (BIG + np.arange(20, dtype=np.int64)).reshape(-1, 1)  # a constant column in float64
    with pytest.raises(ValueError, match=r"2\*\*53.*subtract an offset.*span 19, exact"):
        make(X, np.arange(20.0))


def test_integer_target_and_float32_limits():
    X = np.arange(20.0).reshape(-1, 1)
    with pytest.raises(ValueError, match=r"^y holds integers.*subtract an offset"):
        OptimalTreeRegressor(depth_budget=2).fit(X, BIG + np.arange(20))
    with pytest.raises(ValueError, match=r"y \(column 'target'\).*2\*\*53"):
        SymbolicRegressor(max_iterations=1).fit(
            X, pd.Series(BIG + np.arange(20), name="target", dtype="Int64")
        )
    # float32 holds integers exactly up to 2**24
    with pytest.raises(ValueError, match=r"float32's exact range \(2\*\*24\)"):
        SymbolicRegressor(max_iterations=1, dtype="float32").fit(
            (2**25 + np.arange(20)).reshape(-1, 1), np.arange(20.0)
        )
    # rounded but still distinct: a warning with the fix; exact multiples: nothing
    with pytest.warns(PrecisionWarning, match="subtract an offset"):
        check_integer_precision(BIG + 1024 * np.arange(20) + 1, np.float64, "X column 0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_integer_precision(BIG + 1024 * np.arange(20), np.float64, "X column 0")
        check_integer_precision(np.array([2**53, -(2**53)]), np.float64, "y")
        check_integer_precision(
            np.array([2**63 - 1024 * k for k in range(1, 4)], dtype=np.uint64), np.float64, "y"
        )


@pytest.mark.parametrize(
    "offset,scale",
    [
        (0.0, 1.0),
        (1e10, 0.1),
        (1e200, 1e188),
        (2.0**62, 1000.0),
        (2.0**62, 3000.0),
        (1e17, 1.0),
        (0.0, 1e-300),
        (-1e15, 1.0),
    ],
)
def test_tree_certificate_is_consistent_at_extreme_scales(offset, scale):
    """``optimal_`` only where the bound meets the objective within the documented
    tolerance (1e-9 relative, plus the rounding of the leaf values up to
    ROUNDING_ALLOWANCE of the objective); a target whose offset swamps its signal is not
    certified, and says how to fix it."""
    from jaxsr.trees.regressor import ROUNDING_ALLOWANCE

    X, sig = _tree_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = OptimalTreeRegressor(regularization=0.01, depth_budget=3).fit(X, offset + scale * sig)
    assert m.lower_bound_ <= m.objective_ and m.gap_ == m.objective_ - m.lower_bound_
    tol = 1e-9 * max(1.0, m.objective_) + ROUNDING_ALLOWANCE * m.objective_
    if m.optimal_:
        assert m.gap_ <= tol
    else:
        assert any("subtract" in str(w.message) or "offset" in str(w.message) for w in caught), [
            str(w.message) for w in caught
        ]
    if offset == 2.0**62:  # 2**62 + 1000 * signal: the leaf values round by 1024
        assert not m.optimal_
    elif abs(offset) <= 1e10 or offset == 1e200:
        assert m.optimal_


# ------------------------------------------------------------------ fork
def test_fit_in_a_process_forked_after_jax_ran_raises_instead_of_hanging():
    code = """
        import multiprocessing as mp, warnings
        import numpy as np
        from jaxsr import SymbolicRegressor
        from jaxsr._fork import check_not_forked
        warnings.simplefilter("ignore", RuntimeWarning)  # JAX's own note on os.fork
        X = np.arange(1.0, 21.0).reshape(10, 2)
        y = 2 * X[:, 0]

        def child(q):
            try:
                SymbolicRegressor(max_iterations=1, progress=False).fit(X, y)
                q.put("fitted")
            except Exception as err:
                q.put(type(err).__name__ + ": " + str(err))

        def checked(q):
            try:
                check_not_forked()
                q.put("ok")
            except Exception as err:
                q.put(type(err).__name__)

        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=checked, args=(q,)); p.start(); p.join(60)
        print("before:", q.get(timeout=60))  # forked before JAX ran: nothing to refuse
        SymbolicRegressor(max_iterations=1, progress=False).fit(X, y)
        p = ctx.Process(target=child, args=(q,)); p.start(); p.join(120)
        print("after:", q.get(timeout=60))
    """
    proc = _python(code, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "before: ok" in proc.stdout
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("after:")][0]
    assert "ForkedAfterJAXError" in line and "'spawn'" in line and "'forkserver'" in line


# ------------------------------------------------------------------ memory
def test_edge_probes_of_wide_data_are_never_built_whole():
    """The selection's edge probes of 80 rows x 600 columns would be a (1200, 80, 600)
    array, 460 MB (5.8 GB at 3000 columns); each model is evaluated on the probes of the
    features it uses, with the same result as on the whole array."""
    from jaxsr.symbolic.domain import edge_probes
    from jaxsr.symbolic.expression import Expression
    from jaxsr.symbolic.front import edge_excursion

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, (80, 600))
    y = X[:, 0] * X[:, 1]
    models = [
        Expression.parse("x1 * x2"),
        Expression.parse("1.0 / (x3 - 1.0)"),
        Expression.parse("2.0"),
        Expression.parse("x600 + x7 * x7"),
    ]
    tracemalloc.start()
    try:
        got = edge_excursion(models, edge_probes(X), y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20e6, peak
    small = X[:, :12]
    small_models = [
        Expression.parse(t) for t in ("x1 * x2", "1.0 / (x3 - 1.0)", "2.0", "x12 + x7 * x7", "x5")
    ]
    probes = edge_probes(small)
    whole = np.asarray(probes)
    assert whole.shape == probes.shape == (2 * 12 * 80, 12)
    np.testing.assert_array_equal(
        edge_excursion(small_models, probes, y), edge_excursion(small_models, whole, y)
    )
    assert got[1] > 0 and got[2] == 0


def test_peak_memory_of_a_wide_symbolic_fit_stays_within_its_estimate():
    """The guard's estimate (plus the compiled programs, a fixed few hundred MB) bounds
    the peak resident memory of a fit on wide data, so the guard's ValueError comes before
    a fit that would not fit."""
    code = """
        import resource
        import numpy as np
        import jax.numpy as jnp
        from jaxsr import SymbolicRegressor
        from jaxsr.symbolic.regressor import peak_memory_bytes
        rng = np.random.default_rng(0)
        X = rng.uniform(1, 2, (80, 1500)); y = X[:, 0] * X[:, 1] + X[:, 2]
        jnp.zeros(3).block_until_ready()
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        m = SymbolicRegressor(max_iterations=2, progress=False).fit(X, y)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(peak - base, peak_memory_bytes(80, 1500, m.max_nodes))
    """
    proc = _python(code, timeout=500, JAXSR_MEMORY_LIMIT="off")
    assert proc.returncode == 0, proc.stderr[-3000:]
    grown, estimate = map(float, proc.stdout.split()[-2:])
    assert grown <= estimate + 0.6e9, (grown, estimate)


# ------------------------------------------------------------------ concurrent saves
def test_concurrent_saves_to_one_path_all_succeed_and_leave_a_whole_model(tmp_path):
    X, y = _tree_data()
    src = tmp_path / "src.json"
    save_model(OptimalTreeRegressor(depth_budget=2).fit(X, y), src)
    dst = tmp_path / "model.json"
    code = f"""
        import sys
        from jaxsr.io import load_model, save_model
        m = load_model({str(src)!r})
        for _ in range(150):
            save_model(m, {str(dst)!r})
            load_model({str(dst)!r}).predict([[0, 1, 0]])  # always a whole model
        print("done")
    """
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0 and "done" in out, err[-2000:]
    assert sorted(os.listdir(tmp_path)) == ["model.json", "src.json"]  # no temporaries left
    assert load_model(dst).predict(X).tolist() == load_model(src).predict(X).tolist()
    assert oct(os.stat(dst).st_mode & 0o777) == oct(os.stat(src).st_mode & 0o777)


# ------------------------------------------------------------------ other dataframes
@pytest.mark.parametrize("library", ["polars", "pyarrow"])
def test_dataframes_of_other_libraries_work_with_their_column_names(library):
    lib = pytest.importorskip(library)
    rng = np.random.default_rng(1)
    X = rng.uniform(1.0, 2.0, (30, 2))
    y = 3.0 * X[:, 0] * X[:, 1]
    data = {"mass": X[:, 0], "speed": X[:, 1]}
    frame = lib.DataFrame(data) if library == "polars" else lib.table(data)
    target = lib.Series("y", y) if library == "polars" else lib.chunked_array([y])
    sr = SymbolicRegressor(max_iterations=3, progress=False).fit(frame, target)
    assert list(sr.feature_names_in_) == ["mass", "speed"]
    assert set(str(sr.sympy().free_symbols)[1:-1].split(", ")) == {"mass", "speed"}
    np.testing.assert_allclose(sr.predict(frame), sr.predict(pd.DataFrame(data)))
    tree = OptimalTreeRegressor(depth_budget=2).fit(frame, target)
    assert list(tree.feature_names_in_) == ["mass", "speed"]
    assert "mass" in tree.export_text() or "speed" in tree.export_text()
    np.testing.assert_array_equal(tree.predict(frame), tree.predict(pd.DataFrame(data)))
    # a text column: named in the symbolic error, one-hot in the tree's binarizer
    words = {"mass": X[:, 0], "kind": ["u", "v"] * 15}
    text = lib.DataFrame(words) if library == "polars" else lib.table(words)
    with pytest.raises(ValueError, match="non-numeric column.*'kind'"):
        SymbolicRegressor(max_iterations=1).fit(text, y)
    tree = OptimalTreeRegressor(depth_budget=2).fit(text, y)
    assert "kind == u" in list(tree.binary_feature_names_)


# ------------------------------------------------------------------ CSV lines
def test_a_csv_line_with_more_fields_than_its_header_is_refused(tmp_path, capsys):
    """pandas turns extra leading fields into a row index, in time quadratic in their
    number (minutes for one line of a megabyte), and shifts the columns anyway."""
    path = tmp_path / "long.csv"
    path.write_text("a,b,y\n1,2,3\n" + ",".join(['"1,5"'] * 200_000) + "\n4,5,6\n")
    rc = main(["tree", str(path), "--target", "y"])
    err = capsys.readouterr().err
    assert rc == 2 and "line 3 has 200000 fields, but the first line has 3" in err, err
    # quoted decimal commas with a comma separator are read, not a dead end
    quoted = tmp_path / "quoted.csv"
    rows = "".join(f'"{a},5","{b},25"\n' for a, b in zip(range(30), range(30, 0, -1), strict=True))
    quoted.write_text("x,y\n" + rows)
    from jaxsr.cli import _read_csv

    df = _read_csv(str(quoted), decimal=",")
    assert df["x"].tolist()[:2] == [0.5, 1.5] and df["y"].tolist()[0] == 30.25


# ------------------------------------------------------------------ threads
@pytest.mark.parametrize("Estimator", [SymbolicRegressor, OptimalTreeRegressor])
def test_one_estimator_object_fitted_from_two_threads_is_refused(Estimator):
    started, release = threading.Event(), threading.Event()

    class Blocking(Estimator):  # the guard covers subclasses too
        def fit(self, X, y, sample_weight=None):
            started.set()
            release.wait(60)
            return super().fit(X, y, sample_weight)

    X, y = _tree_data()
    est = Blocking(
        **({"max_iterations": 1} if Estimator is SymbolicRegressor else {"depth_budget": 2})
    )
    worker = threading.Thread(target=est.fit, args=(X, y))
    worker.start()
    try:
        assert started.wait(60)
        from jaxsr._base import ConcurrentFitError

        with pytest.raises(ConcurrentFitError, match="clone"):
            est.fit(X, y)
    finally:
        release.set()
        worker.join(300)
    assert hasattr(est, "n_features_in_")  # the first fit finished
    est.fit(X, y)  # and the object can be fitted again


# ------------------------------------------------------------------ Ctrl-C
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_ends_the_command_promptly_even_while_compiling(tmp_path, presses):
    """Ctrl-C right after the fit starts (a cold compilation, which Python cannot
    interrupt): the process ends with code 130, well before the fit would have."""
    import signal
    import time

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 3.0, (3000, 12))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(12)])
    frame["y"] = np.sin(X[:, 0]) * X[:, 1] + X[:, 2] ** 3 / X[:, 3]
    data = tmp_path / "data.csv"
    frame.to_csv(data, index=False)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jaxsr",
            "symbolic",
            str(data),
            "--target",
            "y",
            "--max-nodes",
            "60",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JAXSR_CACHE_DIR": "none"},
    )
    try:
        for line in proc.stderr:  # the fit has started
            if "fitting SymbolicRegressor" in line:
                break
        for _ in range(presses):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.05)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=120)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    # 130, or killed by the signal itself (-2) when the second press finds the
    # interpreter already finalizing; never an abort (-6) or a hang
    assert proc.returncode in ((130,) if presses == 1 else (130, -2)), err[-2000:]
    assert "jaxsr: interrupted" in err
    assert waited < 20.0, waited  # the grace is 1 s; 20 s allows for a loaded machine


# ------------------------------------------------------------------ warnings' location
def test_warnings_from_fit_point_at_the_line_that_called_fit():
    """A warning that ``fit`` raises (its own, the input checks', the certificate's) is
    attributed to the user's line that called ``fit`` (``filename``/``lineno``, which
    Python prints and by which its filters deduplicate), never to jaxsr's own files
    (the thread guard around ``fit`` shifted them to ``_base.py``)."""
    import jax
    import jaxlib
    from sklearn.exceptions import ConvergenceWarning, DataConversionWarning

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    X["id"] = (2**60 + 1001 * rng.integers(0, 20, 300)).astype(np.int64)  # rounded
    y = np.sin(3 * X["a"]) + X["b"] * X["c"] + 0.1 * rng.normal(size=300)
    here = os.path.abspath(__file__)

    def records(fit):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = fit.__code__.co_firstlineno
            fit()
        # every warning but JAX's own (its deprecations and compilation notes)
        return line, [
            w
            for w in caught
            if not os.path.abspath(w.filename).startswith(
                (os.path.dirname(jax.__file__), os.path.dirname(jaxlib.__file__))
            )
        ]

    est = OptimalTreeRegressor(
        max_steps=0, regularization=0.001, depth_budget=None, progress=False
    )  # stopped before its certificate
    line, caught = records(lambda: est.fit(X, y.to_numpy()[:, None]))
    kinds = {w.category for w in caught}
    assert {PrecisionWarning, ConvergenceWarning, DataConversionWarning} <= kinds, caught
    for w in caught:
        assert (os.path.abspath(w.filename), w.lineno) == (here, line), (w.category, w.filename)

    line, caught = records(lambda: Binarizer().fit_transform(X[["id"]]))  # set_output's
    assert PrecisionWarning in {w.category for w in caught}, caught  # wrapper
    for w in caught:
        assert (os.path.abspath(w.filename), w.lineno) == (here, line), (w.category, w.filename)

    x = np.linspace(0.0, 1.0, 30)
    sr = SymbolicRegressor(max_nodes=3, progress=False)  # y close to its rounding level
    line, caught = records(lambda: sr.fit(x[:, None], (1e12 + 1e-3 * x)[:, None]))
    assert any("rounding level" in str(w.message) for w in caught), caught
    assert DataConversionWarning in {w.category for w in caught}, caught
    for w in caught:
        assert (os.path.abspath(w.filename), w.lineno) == (here, line), (w.category, w.filename)


# ------------------------------------------------------------------ time limits
def test_max_time_bounds_the_rational_start_too(monkeypatch):
    """``max_time`` counts the rational starting structures, which ran to the end of their
    library whatever the budget (``max_time=3`` took 8-18 s on 3000 x 12): each support's
    fit is slowed to 0.25 s here (85 of them, 21 s in all), and the fit still ends within
    ``1.1 * max_time + 1`` s plus an allowance for a loaded machine. No other timing is
    asserted: the rest of the fit is bounded by its own deadline (the worker's)."""
    import time

    from jaxsr.symbolic import rational

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, (200, 3))
    y = np.exp(X[:, 0]) * np.sin(3 * X[:, 1]) + X[:, 2] + 0.01 * rng.normal(size=200)
    original, fits = rational._fit_support, []

    def slow(*args, **kwargs):
        fits.append(1)
        time.sleep(0.25)
        return original(*args, **kwargs)

    monkeypatch.setattr(rational, "_fit_support", slow)
    assert rational.rational_candidates(X, y, deadline=time.perf_counter()) == []
    assert not fits  # a deadline already passed fits nothing
    est = SymbolicRegressor(max_time=2.0, progress=False)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    wall = time.perf_counter() - t0
    assert len(fits) < 20, len(fits)  # stopped at its share of max_time (85 without)
    assert wall < 1.1 * 2.0 + 1.0 + 6.0, wall  # 6 s allows for a loaded machine


def test_time_limit_of_a_tree_counts_the_first_fits_loading_of_jax():
    """``time_limit`` counts the whole fit: on a process's first fit that includes loading
    the search's modules and JAX (about 2 s, which the clock started after). Measured as
    ``fit_seconds_`` against the caller's own clock, in a fresh process, so no load can
    break it: the two differ by the call's overhead only."""
    out = _python("""
        import sys, time, warnings
        import numpy as np
        from jaxsr import OptimalTreeRegressor
        assert "jax" not in sys.modules
        rng = np.random.default_rng(0)
        X = rng.integers(0, 2, size=(200, 6))
        y = X @ rng.normal(size=6) + 0.1 * rng.normal(size=200)
        est = OptimalTreeRegressor(time_limit=60.0, progress=False)
        t0 = time.perf_counter()
        est.fit(X, y)
        print(time.perf_counter() - t0, est.fit_seconds_, "jax" in sys.modules)
    """)
    assert out.returncode == 0, out.stderr[-2000:]
    wall, counted, loaded = out.stdout.split()
    assert loaded == "True"  # the fit loaded JAX
    assert float(wall) - float(counted) < 0.3, (wall, counted)
