"""The ``jaxsr`` command (also ``python -m jaxsr``).

Sub-commands::

    jaxsr demo                                   # both methods on data that needs no download
    jaxsr symbolic DATA.csv --target COLUMN [...] # deterministic symbolic regression
    jaxsr tree DATA.csv --target COLUMN [...]     # optimal sparse regression tree
    jaxsr predict MODEL.json DATA.csv [...]       # predictions of a saved model
    jaxsr warmup                                 # compile the symbolic programs

Data files are any delimited text that pandas reads: the separator is sniffed (``,`` ``;``
tab ``|`` or runs of blanks) or given with ``--sep``; ``--decimal ,`` reads ``0,66``;
``--no-header`` names the columns ``x1 .. xn``; ``--drop`` leaves columns out;
``--dropna`` leaves out the rows with a missing value. Text columns are one-hot encoded:
inside the model by ``jaxsr tree`` (its Binarizer), into 0/1 columns named ``column=value``
by ``jaxsr symbolic`` (``jaxsr predict`` rebuilds them from the same text column).

The estimators' options that the command line leaves out are not passed: the estimator's
own defaults apply. ``jaxsr symbolic --show-front`` prints the Pareto front as a table.
The engines (JAX) are imported by the sub-command that needs them, so ``--help`` and
usage errors answer at once.

Results go to stdout; progress (``--verbose``, and one line per step of a long run) goes
to stderr. Every user error (missing file, missing target column, non-numeric columns,
NaN, bad option) ends with a one-line ``jaxsr: error: ...`` message and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
import textwrap
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["main", "build_parser", "console"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class CLIError(Exception):
    """A user error: printed as one line, exit code 2."""


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _progress(msg: str) -> None:
    print(f"[jaxsr] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# terminal width: results fit the terminal (at most 80 columns), unless --wide
# --------------------------------------------------------------------------------------

MAX_WIDTH = 80


def _width(wide: bool = False) -> int | None:
    """Columns of the results: the terminal's width (``COLUMNS`` where set), at most 80;
    ``None`` (no wrapping) with ``--wide``, and for a pipe or a file when ``COLUMNS`` is
    not set, whose lines are data."""
    if wide:
        return None
    isatty = getattr(sys.stdout, "isatty", None)
    if "COLUMNS" not in os.environ and not (isatty is not None and isatty()):
        return None
    return max(40, min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns))


def _wrap_line(line: str, width: int | None, indent: str | None = None) -> list[str]:
    """``line`` in pieces of at most ``width`` columns, broken at spaces; a continuation is
    indented past the line's own indentation (spaces and the ``|   `` of a tree), or by
    ``indent``."""
    if width is None or len(line) <= width:
        return [line]
    if indent is None:
        lead = len(line) - len(line.lstrip(" |-*"))
        indent = line[:lead].replace("-", " ").replace("*", " ") + "    "
    indent = indent[: width // 2]
    return textwrap.wrap(
        line, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False
    ) or [line]


class _WrappingStream:
    """A text stream that writes each complete line of its target wrapped to ``width``."""

    def __init__(self, target, width: int | None):
        self._target, self._width, self._pending = target, width, ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self._target.write("\n".join(_wrap_line(line, self._width)) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._target.write("\n".join(_wrap_line(self._pending, self._width)))
            self._pending = ""
        self._target.flush()

    def __getattr__(self, name):
        return getattr(self._target, name)


@contextlib.contextmanager
def _wrapped_stdout(width: int | None):
    """Every line printed to stdout inside the block is wrapped to ``width`` columns."""
    if width is None:
        yield
        return
    stream = _WrappingStream(sys.stdout, width)
    with contextlib.redirect_stdout(stream):
        try:
            yield
        finally:
            stream.flush()


def _enable_compilation_cache() -> str | None:
    """JAX's persistent compilation cache for the command's process (as the library's
    import does: :func:`jaxsr.enable_compilation_cache`), so the first ``jaxsr demo``
    keeps its compiled programs and later runs load them. The folder is
    ``$JAXSR_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/jaxsr`` or ``~/.cache/jaxsr``;
    ``JAXSR_CACHE_DIR=none`` or ``JAXSR_COMPILATION_CACHE=0`` (or an empty value of
    either) leaves it off, and a cache folder the user gave JAX
    (``JAX_COMPILATION_CACHE_DIR``) is used as it is. Returns the folder in use or
    ``None``.
    """
    import jax

    from jaxsr._config import _cache_from_environment

    _cache_from_environment()
    return jax.config.jax_compilation_cache_dir or None


def _load_symbolic():
    try:
        from jaxsr.symbolic import SymbolicRegressor
    except ImportError as err:
        raise CLIError(
            "the symbolic regression engine (jaxsr.symbolic.SymbolicRegressor) is not "
            f"available in this installation: {err}"
        ) from err
    return SymbolicRegressor


def _load_trees():
    try:
        from jaxsr.trees import Binarizer, OptimalTreeRegressor
    except ImportError as err:
        raise CLIError(
            "the optimal tree engine (jaxsr.trees.OptimalTreeRegressor) is not available "
            f"in this installation: {err}"
        ) from err
    return OptimalTreeRegressor, Binarizer


_SEP_NAMES = {
    "tab": "\t",
    "\\t": "\t",
    "comma": ",",
    "semicolon": ";",
    "space": r"\s+",
    "whitespace": r"\s+",
    "pipe": "|",
}
# The choices of two SymbolicRegressor options, spelled here so that the parser (and --help)
# needs no engine import; a test checks them against jaxsr.symbolic.front.MODEL_SELECTIONS
# and jaxsr.symbolic.domain.DOMAINS.
MODEL_SELECTIONS = ("best", "accuracy", "score", "bic", "cv")
DOMAINS = ("box", "rows")
_MANY_CATEGORIES = 12  # a text column with more distinct values than this gets a warning


def _sniff_sep(p: Path, encoding: str) -> str | None:
    """The separator of a delimited text file, from its first 64 KB (``csv.Sniffer``).

    A single space means columns separated by runs of blanks (the regular expression
    ``\\s+``), as in UCI's ``.data`` files; ``None`` when no separator can be told (one
    column: any will do).
    """
    import csv

    with open(p, encoding=encoding, errors="replace", newline="") as fh:
        sample = fh.read(65536)
    lines = sample.splitlines()
    if len(lines) > 1 and not sample.endswith(("\n", "\r")):
        sample = "\n".join(lines[:-1])  # a line cut in the middle would mislead the sniffer
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=",;\t| ").delimiter
    except csv.Error:  # e.g. runs of blanks of varying length: same field count per line?
        counts = {len(ln.split()) for ln in sample.splitlines()[:100] if ln.strip()}
        return r"\s+" if len(counts) == 1 and counts.pop() > 1 else None
    return r"\s+" if sep == " " else sep


def _quotes_fields(p: Path, encoding: str) -> bool:
    """Whether the first 64 KB of the file hold a double-quoted field."""
    with open(p, encoding=encoding, errors="replace", newline="") as fh:
        return '"' in fh.read(65536)


MAX_EXTRA_FIELDS = 0
"""A data row may not have more fields than the first row (the header): pandas would turn
the extra leading fields into a row index, which takes minutes for a long line."""


def _check_field_counts(p: Path, sep: str | None, encoding: str) -> None:
    """Refuse, in one streaming pass (Python's C ``csv`` reader; about 1 s per 100 MB), a
    file with a row that has more fields than its first row: pandas reads such a row by
    making the extra fields an index, in time quadratic in their number (minutes for one
    line of a megabyte), and the columns would be shifted anyway.

    Raises:
      CLIError: naming the line, its number of fields and the first row's.
    """
    import csv

    with open(p, encoding=encoding, errors="replace", newline="") as fh:
        if sep == r"\s+":  # runs of blanks
            rows = (line.split() for line in fh)
        elif sep is not None and len(sep) > 1:  # another regular expression: pandas'
            return
        else:
            csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
            rows = csv.reader(fh, delimiter=sep or ",")
        first = None
        for i, row in enumerate(rows, start=1):
            if not row:
                continue
            if first is None:
                first = len(row)
            elif len(row) > first + MAX_EXTRA_FIELDS:
                raise CLIError(
                    f"{p}: line {i} has {len(row)} fields, but the first line "
                    f"has {first}; every row needs the same columns as the "
                    "header (is the separator right? give it with --sep)"
                )


def _read_csv(path: str, sep: str | None = None, decimal: str = ".", header: bool = True):
    """Read a delimited text file with pandas' reader (the command's only CSV reader).

    Args:
      path: the file (any extension).
      sep: the column separator; ``None`` sniffs it (``,`` ``;`` tab ``|`` or blanks). Names
        ``tab``, ``comma``, ``semicolon``, ``space``/``whitespace`` (runs of blanks) and
        ``pipe`` are accepted, and any other string goes to ``pandas.read_csv`` as it is.
      decimal: the decimal mark of the numbers (``.`` or ``,``).
      header: whether the first row holds the column names; without one the columns are
        named ``x1 .. xn`` (1-based, as in the papers).

    Column names are stripped of surrounding blanks (a UTF-8 byte-order mark is removed);
    columns without a name and without a single value (trailing separators) are left out,
    with a note on stderr.

    Raises:
      CLIError: missing file, a directory, empty, unreadable, or a header without data.
    """
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise CLIError(f"{path}: no such file")
    if p.is_dir():
        raise CLIError(f"{path} is a directory, not a CSV file")
    encoding = "utf-8-sig"
    if sep is not None:
        sep = _SEP_NAMES.get(sep.strip().lower(), sep) if sep.strip() else r"\s+"
    if decimal not in (".", ","):
        raise CLIError(f"--decimal must be '.' or ','; got {decimal!r}")
    try:
        if sep is None:
            sep = _sniff_sep(p, encoding)
        if sep is not None and sep == decimal and not _quotes_fields(p, encoding):
            # quoted fields ("1,5","2,5") can hold the separator: pandas reads them
            raise CLIError(
                f"{path}: the separator and the decimal mark are both {sep!r}; "
                'give --sep (or quote the numbers, "1,5")'
            )
        _check_field_counts(p, sep, encoding)
        df = pd.read_csv(
            p,
            sep=sep if sep is not None else ",",
            decimal=decimal,
            header=0 if header else None,
            encoding=encoding,
            engine="python" if sep is not None and len(sep) > 1 else "c",
        )
    except pd.errors.EmptyDataError as err:
        raise CLIError(f"{path} is empty") from err
    except UnicodeDecodeError as err:
        raise CLIError(
            f"{path} is not UTF-8 text ({err.reason} at byte {err.start}); "
            "convert it to UTF-8 first"
        ) from err
    except (pd.errors.ParserError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        hint = "" if sep is not None and sep != "," else " (give the separator with --sep)"
        raise CLIError(f"{path} could not be read as CSV: {first}{hint}") from err
    if df.shape[0] == 0:
        raise CLIError(f"{path} has a header but no data rows")
    if header:
        names = [str(c).strip() for c in df.columns]
        if len(set(names)) == len(names):
            df.columns = names
        else:
            df.columns = [str(c) for c in df.columns]
        empty = [c for c in df.columns if c.startswith("Unnamed: ") and bool(df[c].isna().all())]
        if empty:
            df = df.drop(columns=empty)
            _progress(
                f"{path}: left out {len(empty)} column(s) without a name or any value "
                "(trailing separators)"
            )
    else:
        df.columns = [f"x{j + 1}" for j in range(df.shape[1])]
    return df


def _decimal_comma_hint(df, columns) -> str:
    """' (...try --decimal ,)' when text columns hold numbers written with a decimal comma."""
    import re

    pattern = re.compile(r"^\s*[-+]?\d*,\d+([eE][-+]?\d+)?\s*$")
    for c in columns:
        values = df[c].dropna().astype(str).head(50)
        if len(values) and all(pattern.match(v) for v in values):
            return (
                f"; values such as {values.iloc[0]!r} in {c!r} look like numbers with a "
                "decimal comma: add --decimal ,"
            )
    return ""


def _value_hints(*frames) -> str:
    """The command's hint for a refused value: text columns that are decimal-comma numbers."""
    for df in frames:
        hint = _decimal_comma_hint(df, _non_numeric(df))
        if hint:
            return hint
    return ""


def _header_hint(df) -> str:
    """A hint when every column name reads as a number: the file likely has no header."""
    try:
        [float(str(c).replace(",", ".")) for c in df.columns]
    except ValueError:
        return ""
    return (
        "; the first row looks like data (every name is a number): if the file has no "
        "header, add --no-header and name the columns x1 .. xn"
    )


def _many_categories_warning(X) -> None:
    """Warn (stderr) about text columns that one-hot encoding turns into many features."""
    import shlex

    for c in _non_numeric(X):
        k = int(X[c].nunique(dropna=True))
        if k > _MANY_CATEGORIES:
            print(
                f"jaxsr: warning: text column {c!r} has {k} distinct values and is one-hot "
                f"encoded into {k} binary features (one per value), which slows the "
                f"search; leave it out with --drop {shlex.quote(c)} if it is an id, a date "
                "or free text",
                file=sys.stderr,
                flush=True,
            )


def _read_data(args):
    """``_read_csv`` with the command's CSV options (``--sep``, ``--decimal``,
    ``--no-header``)."""
    return _read_csv(args.data, sep=args.sep, decimal=args.decimal, header=not args.no_header)


def _non_numeric(df) -> list[str]:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return [
        c for c in df.columns if not (is_numeric_dtype(df[c].dtype) or is_bool_dtype(df[c].dtype))
    ]


def _features_and_target(df, path: str, target: str, drop: Sequence[str] | None):
    """The feature frame and the target column. Only the columns are chosen here: their
    values (non-numeric, NaN/inf, ...) are checked by the estimator, at the one boundary of
    :mod:`jaxsr._validation`, and its ValueError becomes the command's error line."""
    if target not in df.columns:
        cols = ", ".join(df.columns[:12]) + (", ..." if df.shape[1] > 12 else "")
        raise CLIError(
            f"{path}: no column named {target!r} (columns: {cols}); "
            "choose the target with --target" + _header_hint(df)
        )
    drop = list(drop or [])
    missing = [c for c in drop if c not in df.columns]
    if missing:
        raise CLIError(f"{path}: --drop names unknown column(s) {', '.join(map(repr, missing))}")
    if target in drop:
        raise CLIError("--drop must not name the target column")
    X = df.drop(columns=[target, *drop])
    y = df[target]
    if X.shape[1] == 0:
        raise CLIError(f"{path}: no feature columns left besides the target {target!r}")
    return X, y


def _drop_missing(X, y, path: str, active: bool):
    """With ``--dropna``: the rows of ``X`` and ``y`` without a missing value (NaN, an empty
    field) in any of the used columns; how many were left out, and in which columns, goes to
    stderr. Without it the frames are returned as they are (the estimator refuses missing
    values, and :func:`_fit` adds the hint)."""
    if not active:
        return X, y
    missing = X.isna().any(axis=1).to_numpy() | y.isna().to_numpy()
    n = int(missing.sum())
    if n:
        cols = [c for c in [*X.columns, y.name] if bool((X[c] if c in X else y).isna().any())]
        _progress(
            f"--dropna: left out {n} of {len(y)} rows with a missing value (in "
            f"{', '.join(map(repr, cols[:6]))}{', ...' if len(cols) > 6 else ''})"
        )
        if n == len(y):
            raise CLIError(
                f"{path}: every row has a missing value in a used column; leave "
                "such columns out with --drop"
            )
        X, y = X.loc[~missing], y.loc[~missing]
    return X, y


def _missing_hint(X, y) -> str:
    """The fix for missing values that the estimator refused: ``--dropna``."""
    if bool(X.isna().to_numpy().any()) or bool(y.isna().any()):
        return "; add --dropna to leave out the rows with a missing value"
    return ""


ONE_HOT_SEP = "="  # the one-hot feature of value v of text column c is named "c=v"


def _one_hot(X, path: str):
    """Text columns of ``X`` as one 0/1 column per distinct value, named ``column=value``
    (pandas.get_dummies; every value kept), for the symbolic regressor, which takes numbers
    only (``jaxsr tree``'s Binarizer does the same inside the model). The expression shows
    such a name in brackets, ``[color=red]``. The names alone define the encoding, so
    ``jaxsr predict`` re-applies it to the same text columns (:func:`_re_encode`). Which
    columns were encoded goes to stderr.

    Raises:
      CLIError: a text column with a missing value (fix: ``--dropna``), or whose values
        look like numbers with a decimal comma (fix: ``--decimal ,``).
    """
    import pandas as pd

    cats = _non_numeric(X)
    if not cats:
        return X
    hint = _decimal_comma_hint(X, cats)
    if hint:
        raise CLIError(f"{path}: text column(s) {', '.join(map(repr, cats[:6]))}" + hint)
    gaps = [c for c in cats if bool(X[c].isna().any())]
    if gaps:
        raise CLIError(
            f"{path}: text column(s) {', '.join(map(repr, gaps[:6]))} have missing "
            "values; add --dropna to leave out those rows, or --drop the column"
        )
    _many_categories_warning(X)
    encoded = pd.get_dummies(X, columns=cats, prefix=cats, prefix_sep=ONE_HOT_SEP, dtype=np.float64)
    new = [c for c in encoded.columns if c not in X.columns]
    clash = [c for c in new if list(encoded.columns).count(c) > 1]
    if clash:
        raise CLIError(
            f"{path}: the one-hot feature name(s) {', '.join(map(repr, clash[:6]))} "
            "are also column names; rename or --drop those columns"
        )
    _progress(
        f"one-hot encoded text column(s) {', '.join(map(repr, cats))} into "
        f"{len(new)} 0/1 features: {', '.join(new[:8])}{', ...' if len(new) > 8 else ''}"
    )
    return encoded


def _re_encode(df, names: list[str], path: str):
    """``df`` with the one-hot columns ``column=value`` among the model's ``names`` that
    ``df`` lacks made from its text column ``column`` (1.0 where the value is ``value``),
    as :func:`_one_hot` made them for the fit. A value the fit did not see gets 0 in every
    indicator of its column (a warning says which)."""
    text = set(_non_numeric(df))
    made: dict[str, set] = {}
    columns = {}
    for name in names:
        if name in df.columns or ONE_HOT_SEP not in name:
            continue
        parents = [c for c in text if name.startswith(f"{c}{ONE_HOT_SEP}")]
        if not parents:
            continue
        col = max(parents, key=len)
        if bool(df[col].isna().any()):
            raise CLIError(
                f"{path}: text column {col!r} has missing values; the model's "
                f"one-hot features {col}=... need a value in every row"
            )
        value = name[len(col) + 1 :]
        columns[name] = (df[col].astype(str) == value).to_numpy(np.float64)
        made.setdefault(col, set()).add(value)
    if not columns:
        return df
    import pandas as pd

    for col, values in made.items():
        unseen = sorted(set(df[col].astype(str)) - values)
        if unseen:
            print(
                f"jaxsr: warning: text column {col!r} has value(s) "
                f"{', '.join(map(repr, unseen[:6]))} that the model was not fitted on: "
                "each of its one-hot features is 0 in those rows",
                file=sys.stderr,
                flush=True,
            )
    return pd.concat([df, pd.DataFrame(columns, index=df.index)], axis=1)


def _split(n: int, test_size: float, seed: int):
    """Deterministic shuffled split; returns (train_idx, test_idx)."""
    if not (0.0 <= test_size < 1.0):
        raise CLIError(f"--test-size must be in [0, 1), got {test_size}")
    if test_size == 0.0:
        return np.arange(n), np.arange(0)
    n_test = int(math.ceil(test_size * n))
    if n - n_test < 1:
        raise CLIError(f"--test-size {test_size} leaves no training rows out of {n}")
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _metrics(y_true, y_pred) -> tuple[float, float]:
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    mse = float(np.mean((y_true - y_pred) ** 2))
    var = float(np.var(y_true))
    r2 = 1.0 - mse / var if var > 0 else (1.0 if mse == 0 else 0.0)
    return mse, r2


def _fmt_metrics(label: str, y_true, y_pred) -> str:
    mse, r2 = _metrics(y_true, y_pred)
    return (
        f"{label:<6} MSE {mse:.6g}   RMSE {math.sqrt(mse):.6g}   R^2 {r2:.6f}   (n={len(y_true)})"
    )


@contextlib.contextmanager
def _stdout_to_stderr(active: bool):
    """Engine progress lines (verbose=True) go to stderr so stdout holds only results."""
    if not active:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def _fit(model, X, y, verbose: bool, what: str):
    _progress(f"fitting {what} on {X.shape[0]} rows x {X.shape[1]} features ...")
    t0 = time.perf_counter()
    try:
        with _stdout_to_stderr(True):
            model.fit(X, y)
    except ValueError as err:  # jaxsr._validation's message, plus the command's hints
        raise CLIError(
            f"{what}: {err}{_value_hints(X, y.to_frame())}{_missing_hint(X, y)}"
        ) from err
    seconds = time.perf_counter() - t0
    _progress(f"{what} fitted in {seconds:.2f} s")
    return seconds


def _check_output(output: str | None, *inputs: str) -> None:
    """Refuse an output file that is one of the command's input files (the same file by
    ``os.path.samefile``: also through another name, a link or ``./``), or a folder; say
    on stderr when an existing file will be replaced. Called before anything is read or
    fitted.

    Raises:
      CLIError: the output is an input file, or a folder.
    """
    if not output:
        return
    out = Path(output)
    if out.is_dir():
        raise CLIError(f"--output {output} is a folder; give a file name")
    if not out.exists():
        return
    for path in inputs:
        try:
            same = os.path.samefile(out, path)
        except OSError:  # an input that does not exist: its own error comes later
            same = False
        if same:
            raise CLIError(
                f"--output {output} is the input file {path}: writing there "
                "would replace it; choose another output file"
            )
    _progress(f"{output} exists and will be replaced")


def _save(model, output: str | None) -> None:
    if not output:
        return
    from .io import save_model

    try:
        save_model(model, output)
    except OSError as err:
        raise CLIError(f"cannot write {output}: {err.strerror or err}") from err
    print(f"model saved to {output}")


def _n_nodes(model) -> int | None:
    tree = getattr(model, "expression_tree_", None)  # the selected model of the front
    if tree is not None:
        return int(tree.n_nodes)
    hist = getattr(model, "history_", None) or []
    if hist and isinstance(hist[-1], dict) and "n_nodes" in hist[-1]:
        return int(hist[-1]["n_nodes"])
    return None


def _history(model) -> list[dict]:
    return [h for h in (getattr(model, "history_", None) or []) if isinstance(h, dict)]


def _stop_reason(model) -> str:
    reason = getattr(model, "stop_reason_", None)
    return f"   stopped: {reason}" if reason else ""


def _front_lines(model, width: int | None = None) -> list[str]:
    """The Pareto front ``model.equations_`` as a table, one row per model by increasing
    complexity: ``complexity``, ``loss`` (training MSE), ``validation`` (with a validation
    split) and the readable ``equation`` last, so a long equation does not push the other
    columns out; ``*`` marks the row that ``model_selection`` chose. A long equation wraps
    under its column at ``width`` columns."""
    front = model.equations_
    selected = int(model.selected_index_)
    cols = [("complexity", "complexity", "{:d}"), ("loss", "loss", "{:.6g}")]
    if "validation_loss" in front.columns:
        cols.append(("validation", "validation_loss", "{:.6g}"))
    rows = []
    for i, rec in enumerate(front.to_dict("records")):
        cells = [
            fmt.format(int(rec[key]) if fmt == "{:d}" else float(rec[key])) for _, key, fmt in cols
        ]
        rows.append(("*" if i == selected else " ", cells, str(rec["equation"])))
    widths = [
        max(len(title), *(len(r[1][j]) for r in rows)) for j, (title, _, _) in enumerate(cols)
    ]
    head = "  ".join(title.rjust(w) for (title, _, _), w in zip(cols, widths, strict=True))
    lines = [
        f"Pareto front ({len(rows)} models; * = chosen by "
        f"model_selection={model.model_selection!r}):",
        f"  {head}  equation",
    ]
    for mark, cells, equation in rows:
        body = "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        line = f"{mark} {body}  {equation}"
        lines += _wrap_line(line, width, indent=" " * (len(line) - len(equation)))
    return lines


def _certificate_lines(tree) -> list[str]:
    lb = float(tree.lower_bound_)
    obj = float(tree.objective_)
    gap = float(getattr(tree, "gap_", obj - lb))
    optimal = bool(tree.optimal_)
    return [
        f"certificate: objective {obj:.10g}   lower bound {lb:.10g}   gap {gap:.3g}   "
        f"optimal: {'yes' if optimal else 'no (time limit reached)'}",
        f"tree: {int(tree.n_leaves_)} leaves, depth {int(tree.depth_)} (levels, root = 1, "
        "as depth_budget)",
    ]


# --------------------------------------------------------------------------------------
# sub-commands
# --------------------------------------------------------------------------------------


def _given(args, **names) -> dict:
    """The estimator's keyword arguments that the command line gave: ``names`` maps each
    parameter to its option's attribute; an option left out (``None``) is not passed, so
    the estimator's own default applies."""
    return {
        param: getattr(args, attr)
        for param, attr in names.items()
        if getattr(args, attr) is not None
    }


def _cmd_symbolic(args) -> int:
    _check_output(args.output, args.data)
    df = _read_data(args)
    X, y = _features_and_target(df, args.data, args.target, args.drop)
    X, y = _drop_missing(X, y, args.data, args.dropna)
    X = _one_hot(X, args.data)
    train, test = _split(len(y), args.test_size, args.seed)
    SymbolicRegressor = _load_symbolic()
    params = dict(verbose=args.verbose, dtype=args.dtype)
    params.update(
        _given(
            args,
            max_nodes="max_nodes",
            strategy="strategy",
            min_improvement="min_improvement",
            max_iterations="max_iterations",
            goal_mse="goal_mse",
            max_time="max_time",
            max_height="max_height",
            model_selection="model_selection",
            validation_fraction="validation_fraction",
            beam_width="beam_width",
            unary_operators="unary_operators",
            domain="domain",
            precision="precision",
            refine_constants="refine_constants",
            mesh="mesh",
            backward_elimination="backward_elimination",
            rational_start="rational_start",
        )
    )
    for name in ("extrapolation_limit", "bic_patience", "search_sample"):  # None: off
        if hasattr(args, name):
            params[name] = getattr(args, name)
    try:
        model = SymbolicRegressor(**params)
    except ValueError as err:
        raise CLIError(str(err)) from err
    seconds = _fit(model, X.iloc[train], y.iloc[train], args.verbose, "SymbolicRegressor")
    print(
        f"SymbolicRegressor(strategy={model.strategy}, max_nodes={model.max_nodes}, "
        f"beam_width={model.beam_width}) "
        f"on {args.data}: target {args.target!r}, {X.shape[1]} features"
    )
    print(f"equation: {model}   (constants to {model.precision} significant digits)")
    print(f"exact:    {model.expression_}")
    front = getattr(model, "equations_", None)
    if args.show_front and front is not None:
        for line in _front_lines(model, _width(args.wide)):
            print(line)
    elif front is not None and len(front) > 1:
        print(
            f"front: {len(front)} models from {int(front['complexity'].min())} to "
            f"{int(front['complexity'].max())} nodes; row {model.selected_index_} chosen by "
            f"model_selection={model.model_selection!r} (--show-front lists them; save "
            "with --output to keep them)"
        )
    dropped = list(getattr(model, "dropped_features_", None) or [])
    if dropped:
        print(f"constant columns left out of the variable pool: {', '.join(map(str, dropped))}")
    nodes = _n_nodes(model)
    print(
        f"iterations: {model.n_iterations_}"
        + (f"   nodes: {nodes}" if nodes else "")
        + f"   fit time: {seconds:.2f} s"
        + _stop_reason(model)
    )
    print(_fmt_metrics("train", y.iloc[train], model.predict(X.iloc[train])))
    if len(test):
        print(_fmt_metrics("test", y.iloc[test], model.predict(X.iloc[test])))
    _save(model, args.output)
    return EXIT_OK


def _is_binary(X) -> bool:
    return not _non_numeric(X) and bool(np.isin(X.to_numpy(), (0.0, 1.0)).all())


def _make_binarizer(args, X, Binarizer):
    mode = args.binarize
    if mode == "auto":
        if _is_binary(X):
            mode = "none"
        elif args.n_thresholds is not None:
            mode = "quantile"
        else:  # the estimator's default binarizer (OptimalTreeRegressor's "auto")
            from jaxsr.trees.regressor import default_binarizer

            b = default_binarizer(X).set_params(max_features=args.max_features)
            what = (
                "gbdt (the thresholds of 40 boosted stumps)"
                if b.strategy == "gbdt"
                else f"{b.strategy}, {b.n_thresholds} thresholds per feature"
            )
            cats = _non_numeric(X)
            if cats:
                what += f", one-hot {', '.join(map(repr, cats[:6]))}"
            return b, what
    if mode == "none":
        # finite numbers other than 0/1 get the command's advice; non-numeric or missing
        # values are reported by the estimator's own checks
        numeric = not _non_numeric(X) and bool(np.isfinite(X.to_numpy(np.float64)).all())
        if numeric and not _is_binary(X):
            bad = [c for c in X.columns if not _is_binary(X[[c]])]
            raise CLIError(
                f"--binarize none needs 0/1 features, but {', '.join(map(repr, bad[:6]))} "
                "have other values; use --binarize quantile (or auto)"
            )
        return None, "none (features already binary)"
    try:
        binarizer = Binarizer(
            strategy=mode,
            max_features=args.max_features,
            **_given(args, n_thresholds="n_thresholds"),
        )
    except ValueError as err:
        raise CLIError(str(err)) from err
    detail = (
        f", {binarizer.n_thresholds} thresholds per feature"
        if mode in ("quantile", "uniform")
        else ""
    )
    cats = _non_numeric(X)
    if cats:
        detail += f", one-hot {', '.join(map(repr, cats[:6]))}"
    return binarizer, f"{mode}{detail}"


def _cv_model(args, params):
    """``--cv K``: OptimalTreeRegressorCV over the depth budget given (else its own
    depth budgets); returns it and the parameters of the tree it refits."""
    from jaxsr.trees import OptimalTreeRegressorCV

    if "regularization" in params:
        raise CLIError(
            "--cv chooses the regularization by cross-validation; leave out --regularization"
        )
    if "depth_budget" in params and params["depth_budget"] is None:
        raise CLIError(
            "--cv needs a depth budget (its paths start near lambda 0); leave out --no-depth-limit"
        )
    kw = {
        k: v
        for k, v in params.items()
        if k
        in (
            "binarizer",
            "loss",
            "normalize",
            "min_samples_leaf",
            "time_limit",
            "exact_levels",
            "dtype",
            "verbose",
        )
    }
    if "depth_budget" in params:
        kw["depth_budgets"] = (params["depth_budget"],)
    try:
        return OptimalTreeRegressorCV(cv=args.cv, **kw), params
    except ValueError as err:  # pragma: no cover - parameters are checked in fit
        raise CLIError(str(err)) from err


def _cmd_tree(args) -> int:
    _check_output(args.output, args.data)
    df = _read_data(args)
    X, y = _features_and_target(df, args.data, args.target, args.drop)
    X, y = _drop_missing(X, y, args.data, args.dropna)
    _many_categories_warning(X)
    train, test = _split(len(y), args.test_size, args.seed)
    OptimalTreeRegressor, Binarizer = _load_trees()
    binarizer, how = _make_binarizer(args, X.iloc[train], Binarizer)
    params = dict(binarizer=binarizer, verbose=args.verbose, dtype=args.dtype)
    params.update(
        _given(
            args,
            regularization="regularization",
            depth_budget="depth_budget",
            loss="loss",
            normalize="normalize",
            min_samples_leaf="min_samples_leaf",
            time_limit="time_limit",
            max_steps="max_steps",
            exact_levels="exact_levels",
            backend="backend",
            mesh="mesh",
        )
    )
    if args.no_depth_limit:
        params["depth_budget"] = None
    cv = None
    if args.cv is not None:
        cv, params = _cv_model(args, params)
    try:
        model = OptimalTreeRegressor(**params)
    except ValueError as err:
        raise CLIError(str(err)) from err
    if cv is None:
        seconds = _fit(model, X.iloc[train], y.iloc[train], args.verbose, "OptimalTreeRegressor")
    else:
        seconds = _fit(cv, X.iloc[train], y.iloc[train], args.verbose, "OptimalTreeRegressorCV")
        model = cv.best_estimator_
        r = cv.cv_results_
        print(
            f"{cv.n_splits_}-fold cross-validation over the exact regularization paths: "
            f"regularization {cv.regularization_:.6g}, depth budget {cv.depth_budget_} "
            f"(mean held-out loss {r['mean_test_loss'][cv.best_index_]:.6g}, "
            f"{len(r['mean_test_loss'])} intervals of lambda x depth budget)"
        )
    print(
        f"OptimalTreeRegressor(regularization={model.regularization}, "
        f"depth_budget={model.depth_budget}, loss={model.loss}) on {args.data}: "
        f"target {args.target!r}, {X.shape[1]} features; binarizer: {how}"
    )
    print(model.export_text().rstrip())
    for line in _certificate_lines(model):
        print(line)
    print(f"fit time: {seconds:.2f} s")
    print(_fmt_metrics("train", y.iloc[train], model.predict(X.iloc[train])))
    if len(test):
        print(_fmt_metrics("test", y.iloc[test], model.predict(X.iloc[test])))
    _save(model, args.output)
    return EXIT_OK


def _model_feature_names(model) -> list[str] | None:
    for attr in ("feature_names_in_", "feature_names_"):
        names = getattr(model, attr, None)
        if names is not None:
            return [str(n) for n in names]
    binarizer = getattr(model, "binarizer", None)
    if binarizer is not None:
        names = getattr(binarizer, "feature_names_in_", None)
        if names is not None:
            return [str(n) for n in names]
    return None


def _predict_header_hint(df, names: list[str]) -> str:
    """The fitting commands' hint for a file whose first row is data, for ``predict``:
    ``--no-header`` when the model's columns are ``x1 .. xn`` (a model fitted with
    ``--no-header``), else a header row with the model's column names."""
    if not _header_hint(df):
        return ""
    if all(n == f"x{j + 1}" for j, n in enumerate(names)):
        return (
            "; the first row looks like data (every name is a number): if the file has "
            "no header, add --no-header (the columns are then named x1 .. xn)"
        )
    return (
        "; the first row looks like data (every name is a number): the file needs a "
        "header row with the model's column names"
    )


def _cmd_predict(args) -> int:
    from .io import load_model

    _check_output(args.output, args.model, args.data)
    try:
        model = load_model(args.model)
    except FileNotFoundError as err:
        raise CLIError(f"{args.model}: no such model file") from err
    except (ValueError, ImportError) as err:
        raise CLIError(f"{args.model}: {err}") from err
    if not hasattr(model, "predict"):
        raise CLIError(f"{args.model} holds a {type(model).__name__}, not a regression model")
    df = _read_data(args)
    names = _model_feature_names(model)
    if names is not None:
        df = _re_encode(df, names, args.data)
    if names is not None and not (len(names) == df.shape[1] and list(df.columns) == names):
        missing = [n for n in names if n not in df.columns]
        if missing:
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            raise CLIError(
                f"{args.data}: the model needs column(s) {', '.join(map(repr, missing[:6]))} "
                f"that the file lacks (the model's columns: {shown})"
                + _predict_header_hint(df, names)
            )
        df = df[names]
    try:  # the model checks the values (jaxsr._validation)
        pred = np.asarray(model.predict(df), dtype=np.float64)
    except ValueError as err:
        raise CLIError(f"{args.data}: {err}{_value_hints(df)}") from err
    # each number in the shortest form that reads back to the same float (repr)
    text = "prediction\n" + "".join(
        ("" if math.isnan(v) else repr(v)) + "\n" for v in pred.tolist()
    )
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as err:
            raise CLIError(f"cannot write {args.output}: {err.strerror or err}") from err
        _progress(f"{len(pred)} predictions written to {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


# --------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------


WARMUP_FEATURES = (4, 8, 16)
"""The feature buckets ``jaxsr warmup`` compiles the symbolic programs for by default (at
up to 256 rows, ``max_nodes`` 50, float64)."""


def _warm_symbolic(n_rows: int, n_features: int, max_nodes: int | None) -> int:
    """Compile (or load from JAX's persistent cache) the programs of a default
    :class:`~jaxsr.SymbolicRegressor` fit whose data fall in the buckets of ``n_rows`` x
    ``n_features``: one fit on generated data that takes every step of a default fit.
    Returns the number of jaxsr programs compiled or loaded."""
    import jax
    import numpy as np

    from jaxsr import SymbolicRegressor
    from jaxsr._progress import _is_program

    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, (n_rows, n_features))
    x0, x1 = X[:, 0], X[:, min(1, n_features - 1)]
    y = 1.5 * x0 * x1 - 0.7 / x1 + 0.3 * x0 + 0.05 * rng.standard_normal(n_rows)
    count = [0]

    def listener(event, duration, fun_name=None, **kw):
        if event == "/jax/core/compile/backend_compile_duration" and _is_program(fun_name):
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            SymbolicRegressor(max_nodes=max_nodes, progress=False).fit(X, y)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return count[0]


def _cmd_warmup(args) -> int:
    import jax

    t0 = time.perf_counter()
    if args.rows < 1 or args.max_nodes < 1 or any(m < 1 for m in args.features or ()):
        raise CLIError("--rows, --features and --max-nodes must be positive integers")
    folder = jax.config.jax_compilation_cache_dir
    _progress(
        "compiling the symbolic programs into JAX's compilation cache "
        f"({folder or 'off: programs compile in each new process'}) ..."
    )
    for m in args.features or list(WARMUP_FEATURES):
        t = time.perf_counter()
        k = _warm_symbolic(args.rows, m, args.max_nodes)
        _progress(
            f"symbolic programs for {args.rows} rows x {m} features: {k} compiled "
            f"or loaded in {time.perf_counter() - t:.1f} s"
        )
    _progress("optimal trees: the engine was compiled at install, nothing to do")
    _progress(f"warmup done after {time.perf_counter() - t0:.1f} s")
    return EXIT_OK


def _cmd_demo(args) -> int:
    from . import datasets

    steps: list[tuple[str, float]] = []
    skipped: list[str] = []
    t_start = time.perf_counter()

    def step(name: str, seconds: float) -> None:
        steps.append((name, seconds))

    print("jaxsr demo: the two methods on data that needs no download")
    print("=" * 78)

    # 1. Newton's law of gravitation, as in section 3 of the symbolic regression paper.
    try:
        SymbolicRegressor = _load_symbolic()
    except CLIError as err:
        SymbolicRegressor = None
        skipped.append(str(err))
    X_train, y_train = datasets.make_newton_gravitation(1000, seed=args.seed)
    X_test, y_test = datasets.make_newton_gravitation(1000, seed=args.seed + 1)
    print("\n1. Newton's law of universal gravitation F = G*m1*m2/d^2 (paper, section 3)")
    print(
        "   1000 samples: masses x1, x2 log-uniform in [1e23, 1e25] kg, distance x3 in "
        "[1e8, 1e12] m"
    )
    if SymbolicRegressor is not None:
        goal = float(np.mean(y_train))
        # the paper's greedy search from the mean (section 3, Table 3), not the rational start
        print(
            f"\n   1a. SymbolicRegressor(strategy=1, rational_start=False, "
            f"goal_mse=mean(target)={goal:.4g})"
        )
        sr = SymbolicRegressor(strategy=1, rational_start=False, goal_mse=goal, max_time=120.0)
        _progress("Newton: symbolic regression (compiles the kernels on a first run) ...")
        t0 = time.perf_counter()
        with _stdout_to_stderr(True):
            sr.fit(X_train, y_train)
        sec = time.perf_counter() - t0
        step("Newton: symbolic regression fit", sec)
        print(f"   iteration 0: the mean of the target, {float(goal)!r}")
        from .symbolic.expression import Expression

        for rec in _history(sr):
            # sympy's readable form: its own order of factors, whichever order of equal
            # moves (to rounding) the search took on this machine
            tree = Expression.parse(rec["expression"])
            mse = float(rec.get("mse", 0.0))
            # an exact law's MSE is rounding, which differs from machine to machine:
            # shown as what it is
            shown = f"{mse:.4e}" if mse > sr._loss_floor_ else "at rounding"
            print(
                f"   iteration {rec.get('iteration')}: {rec.get('search')} search -> "
                f"{tree.readable_string(precision=4, simplify=False)}   MSE {shown}"
            )
        print(f"   recovered: F = {str(sr).removeprefix('y = ')}")
        exact = sr.expression_tree_.readable_string(precision=15, simplify=False)
        print(f"   constants to 15 digits: {exact}")
        print(
            f"   iterations: {sr.n_iterations_} (the paper's Table 3: 4)   fit time: {sec:.2f} s "
            "(includes JIT compilation)"
        )
        from .symbolic.regressor import ExtrapolationWarning

        with warnings.catch_warnings():  # fresh samples of the same ranges: a few fall a
            # hair outside the training box, which the recovered law does not mind
            warnings.simplefilter("ignore", ExtrapolationWarning)
            pred_test = np.asarray(sr.predict(X_test))
        rel = np.abs(pred_test - y_test) / np.abs(y_test)
        train_mse = _metrics(y_train, sr.predict(X_train))[0]
        shown = f"{train_mse:.4g}" if train_mse > sr._loss_floor_ else "at rounding"
        print(f"   train MSE {shown} (goal {goal:.4g})")
        print(
            f"   test (1000 fresh samples): max relative error {rel.max():.3g}, "
            f"R^2 {_metrics(y_test, pred_test)[1]:.12f}"
        )

    try:
        OptimalTreeRegressor, Binarizer = _load_trees()
    except CLIError as err:
        OptimalTreeRegressor = Binarizer = None
        skipped.append(str(err))
    if OptimalTreeRegressor is not None:
        print(
            "\n   1b. The same data with an optimal tree, for contrast: "
            "OptimalTreeRegressor(regularization=0.02,"
        )
        print("       depth_budget=4, binarizer=Binarizer(quantile, 4 thresholds))")
        tree_n = OptimalTreeRegressor(
            regularization=0.02,
            depth_budget=4,
            binarizer=Binarizer(strategy="quantile", n_thresholds=4),
            time_limit=60.0,
        )
        _progress("Newton: optimal tree ...")
        t0 = time.perf_counter()
        with _stdout_to_stderr(True):
            tree_n.fit(X_train, y_train)
        sec = time.perf_counter() - t0
        step("Newton: optimal tree fit", sec)
        print(
            f"   {int(tree_n.n_leaves_)} leaves, optimal: {'yes' if tree_n.optimal_ else 'no'}, "
            f"fit time {sec:.2f} s; test R^2 {_metrics(y_test, tree_n.predict(X_test))[1]:.4f}"
            " (a piecewise constant approximation)"
        )

    # 2 and 3. Diabetes: real measurements, 75/25 split.
    try:
        X, y = datasets.load_diabetes()
    except ImportError as err:
        X = y = None
        skipped.append(f"the diabetes part: {err}")
    if X is not None:
        train, test = _split(len(y), 0.25, args.seed)
        Xtr, Xte, ytr, yte = X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]
        print(
            "\n2. scikit-learn's diabetes data: 442 patients, 10 measurements "
            "(age, sex, bmi, bp, s1..s6),"
        )
        print(
            f"   target = disease progression after one year; {len(train)} train / "
            f"{len(test)} test rows"
        )
        A = np.column_stack([np.ones(len(train)), Xtr.to_numpy()])
        coef, *_ = np.linalg.lstsq(A, ytr.to_numpy(), rcond=None)
        ols_test = np.column_stack([np.ones(len(test)), Xte.to_numpy()]) @ coef
        print(
            f"   reference, ordinary least squares on all 10 features: "
            f"test R^2 {_metrics(yte, ols_test)[1]:.4f}"
        )

        if SymbolicRegressor is not None:
            print("\n   2a. SymbolicRegressor(max_nodes=15, strategy=2)")
            sr_d = SymbolicRegressor(max_nodes=15, strategy=2, max_time=120.0)
            _progress("diabetes: symbolic regression (new shapes: compiled on a first run) ...")
            t0 = time.perf_counter()
            with _stdout_to_stderr(True):
                sr_d.fit(Xtr, ytr)
            sec = time.perf_counter() - t0
            step("diabetes: symbolic regression fit", sec)
            print(f"   target = {str(sr_d).removeprefix('y = ')}")
            nodes = _n_nodes(sr_d)
            print(
                f"   iterations: {sr_d.n_iterations_}"
                + (f"   nodes: {nodes}" if nodes else "")
                + f"   fit time: {sec:.2f} s"
            )
            print("   " + _fmt_metrics("train", ytr, sr_d.predict(Xtr)))
            print("   " + _fmt_metrics("test", yte, sr_d.predict(Xte)))

        if OptimalTreeRegressor is not None:
            print(
                "\n   2b. OptimalTreeRegressor(regularization=0.02, depth_budget=4, "
                "binarizer=Binarizer(quantile, 4 thresholds))"
            )
            tree = OptimalTreeRegressor(
                regularization=0.02,
                depth_budget=4,
                binarizer=Binarizer(strategy="quantile", n_thresholds=4),
                time_limit=60.0,
            )
            _progress("diabetes: optimal tree ...")
            t0 = time.perf_counter()
            with _stdout_to_stderr(True):
                tree.fit(Xtr, ytr)
            sec = time.perf_counter() - t0
            step("diabetes: optimal tree fit", sec)
            print("   the optimal tree, as an index card:")
            for line in tree.export_text().rstrip().splitlines():
                print("     " + line)
            for line in _certificate_lines(tree):
                print("   " + line)
            print(f"   fit time: {sec:.2f} s")
            print("   " + _fmt_metrics("train", ytr, tree.predict(Xtr)))
            print("   " + _fmt_metrics("test", yte, tree.predict(Xte)))

    total = time.perf_counter() - t_start
    print("\n" + "=" * 78)
    print("time of each step:")
    for name, sec in steps:
        print(f"   {name:<40} {sec:8.2f} s")
    print(f"   {'total (with data loading and printing)':<40} {total:8.2f} s")
    if skipped:
        for msg in skipped:
            print(f"jaxsr: skipped: {msg}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


# --------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from err
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _non_negative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from err
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return v


def _positive_float(text: str) -> float:
    v = _non_negative_float(text)
    if v == 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return v


def _open_fraction(text: str) -> float:
    v = _non_negative_float(text)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1), got {text}")
    return v


def _strategies(text: str) -> int | tuple[int, ...]:
    """``3`` -> 3, ``1,3`` -> (1, 3): one strategy or a portfolio of distinct ones."""
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"expected 1, 2, 3 or 4, or several separated by commas; got {text!r}"
        ) from err
    if any(v not in (1, 2, 3, 4) for v in values) or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(
            f"expected distinct strategies from 1, 2, 3, 4; got {text!r}"
        )
    return values[0] if len(values) == 1 else values


def _widths(text: str) -> int | tuple[int, ...]:
    """``4`` -> 4, ``4,16`` -> (4, 16): one beam width or an increasing schedule."""
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer, or several increasing ones separated by commas; "
            f"got {text!r}"
        ) from err
    if any(v < 1 for v in values) or any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise argparse.ArgumentTypeError(f"expected positive, increasing beam widths; got {text!r}")
    return values[0] if len(values) == 1 else values


def _patience(text: str) -> int | None:
    """``10`` -> 10; ``none`` -> None."""
    if text.strip().lower() == "none":
        return None
    return _positive_int(text)


def _sample(text: str) -> int | str | None:
    """``20000`` -> 20000; ``auto`` -> "auto"; ``none`` -> None."""
    word = text.strip().lower()
    if word in ("auto", "none"):
        return None if word == "none" else "auto"
    value = _positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2 rows; got {text!r}")
    return value


def _limit(text: str) -> float | None:
    """``8`` -> 8.0; ``none`` -> None."""
    if text.strip().lower() == "none":
        return None
    return _non_negative_float(text)


def _name_list(text: str) -> tuple[str, ...]:
    """``sqrt, exp`` -> ("sqrt", "exp"); ``none`` or an empty string -> () (the names are
    checked by the estimator)."""
    names = tuple(t.strip().lower() for t in text.split(",") if t.strip())
    return () if names == ("none",) else names


def _add_csv_options(p: argparse.ArgumentParser) -> None:
    """How the data file is read (pandas' reader): separator, decimal mark, header."""
    p.add_argument(
        "--sep",
        default=None,
        metavar="SEP",
        help="column separator: a character, 'tab', 'semicolon', 'space' (runs of "
        "blanks) or a regular expression (default: sniffed from the file)",
    )
    p.add_argument(
        "--decimal",
        default=".",
        choices=(".", ","),
        help="decimal mark of the numbers (default '.'; ',' for files such as "
        "'0,66' with --sep ';')",
    )
    p.add_argument(
        "--no-header",
        action="store_true",
        help="the first row is data, not names: the columns are named x1 .. xn (e.g. --target x6)",
    )


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "data",
        help="delimited text file (CSV, TSV, whitespace-separated ...), "
        "by default with a header row",
    )
    p.add_argument(
        "--target",
        required=True,
        metavar="COLUMN",
        help="name of the target column; every other column is a feature",
    )
    p.add_argument(
        "--drop",
        action="append",
        metavar="COLUMN",
        default=None,
        help="a column to leave out of the features (ids, text, ...); repeatable",
    )
    p.add_argument(
        "--dropna",
        action="store_true",
        help="leave out the rows with a missing value (an empty field, NaN) in "
        "the target or a feature column (not in --drop columns); how many goes "
        "to stderr",
    )
    p.add_argument(
        "--test-size",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="fraction of rows held out for a test score (default 0: fit on all)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test shuffle")
    p.add_argument(
        "--output",
        "-o",
        metavar="MODEL.json",
        default=None,
        help="save the fitted model as JSON (read it back with `jaxsr predict`)",
    )
    p.add_argument(
        "--dtype",
        choices=("float64", "float32"),
        default="float64",
        help="floating point precision (default float64)",
    )
    p.add_argument(
        "--verbose", "-v", action="store_true", help="progress lines of the search on stderr"
    )
    _add_wide(p)
    _add_csv_options(p)


def _add_wide(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wide",
        action="store_true",
        help="do not wrap the results to the terminal's width (at most 80 columns)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``jaxsr`` command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="jaxsr",
        description="Interpretable regression on accelerators: deterministic symbolic "
        "regression and provably optimal sparse regression trees, in JAX.",
    )
    parser.add_argument("--version", action="version", version=f"jaxsr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("demo", help="both methods on Newton's law and the diabetes data")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated data and split")
    _add_wide(p)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser(
        "symbolic",
        help="fit a closed-form expression (+ - * /, optional unary operators) to a CSV",
        description="Deterministic symbolic regression (DoME) on a CSV file.",
    )
    _add_common(p)
    est = "SymbolicRegressor's"
    p.add_argument(
        "--max-nodes",
        type=_positive_int,
        default=None,
        help=f"largest number of nodes of the expression (default: {est})",
    )
    p.add_argument(
        "--strategy",
        type=_strategies,
        default=None,
        metavar="S[,S...]",
        help="search strategy 1-4 of section 2.8 of the paper, or several "
        "separated by commas (a portfolio run in that order, e.g. 1,3; "
        f"default: {est})",
    )
    p.add_argument(
        "--beam-width",
        type=_widths,
        default=None,
        metavar="B[,B...]",
        help="trees kept per iteration: 1 is the paper's greedy search, more is "
        "a beam search over the B best distinct trees; several increasing "
        "widths separated by commas are a widening schedule (e.g. 4,16: a "
        f"search with 16 runs when the one with 4 is not exact) (default: {est})",
    )
    p.add_argument(
        "--unary-operators",
        type=_name_list,
        default=None,
        metavar="OP[,OP...]",
        help="unary operators offered to the search besides + - * /, separated "
        "by commas, from sqrt, exp, log, sin, cos (e.g. sqrt,exp; 'none' for "
        f"none; default: {est})",
    )
    p.add_argument(
        "--model-selection",
        choices=MODEL_SELECTIONS,
        default=None,
        help="which model of the Pareto front is reported, saved and used to "
        "predict: bic (Bayesian information criterion), best (highest score "
        "among the models with a loss below 1.5 times the lowest), accuracy "
        f"(lowest loss), score (highest score) or cv (lowest 5-fold "
        f"cross-validated loss) (default: {est})",
    )
    p.add_argument(
        "--validation-fraction",
        type=_open_fraction,
        default=None,
        metavar="FRACTION",
        help="hold out this fraction of the training rows "
        "(a fixed shuffle) and choose the model of the front by its loss on "
        f"them (default: {est}: none held out)",
    )
    p.add_argument(
        "--max-iterations",
        type=_positive_int,
        default=None,
        help=f"stop after this many accepted changes (default: {est})",
    )
    p.add_argument(
        "--max-time",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="wall-clock budget of the fit, compilation included; the best "
        f"model found by then is returned (default: {est})",
    )
    p.add_argument(
        "--min-improvement",
        type=_non_negative_float,
        default=None,
        help=f"stop when the relative MSE reduction falls below this (default: {est})",
    )
    p.add_argument(
        "--goal-mse",
        type=_non_negative_float,
        default=None,
        help=f"stop when the training MSE reaches this value (default: {est})",
    )
    p.add_argument(
        "--max-height",
        type=_positive_int,
        default=None,
        metavar="LEVELS",
        help=f"largest height of the expression tree (default: {est})",
    )
    p.add_argument(
        "--domain",
        choices=DOMAINS,
        default=None,
        help="where a model must be free of poles: box (the whole box spanned "
        "by the training data, proved by interval arithmetic) or rows (the "
        f"training rows only, as in the paper) (default: {est})",
    )
    p.add_argument(
        "--extrapolation-limit",
        type=_limit,
        default=argparse.SUPPRESS,
        metavar="WIDTHS",
        help="the selection passes over models whose "
        "predictions just outside the training range leave the target's range "
        "by more than this many times its width ('none': off) "
        f"(default: {est})",
    )
    p.add_argument(
        "--bic-patience",
        type=_patience,
        default=argparse.SUPPRESS,
        metavar="NODES",
        help="end the search once its tree has grown this many "
        "nodes past its tree of lowest BIC ('none': run to the other limits) "
        f"(default: {est})",
    )
    p.add_argument(
        "--search-sample",
        type=_sample,
        default=argparse.SUPPRESS,
        metavar="ROWS",
        help="with more training rows than this, the search "
        "runs on this many rows (stratified on the target) and every change it "
        "keeps is checked on all rows ('auto': 10000; 'none': the exact search "
        f"on every row) (default: {est})",
    )
    p.add_argument(
        "--backward-elimination",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"after the search, delete nodes while the BIC falls (default: {est})",
    )
    p.add_argument(
        "--rational-start",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start the first search at the best rational "
        f"structure P(x)/Q(x) of a linear-in-parameters fit (default: {est})",
    )
    p.add_argument(
        "--refine-constants",
        action="store_true",
        default=None,
        help="refine all constants of the final tree jointly (L-BFGS), kept "
        "only if the training MSE drops",
    )
    p.add_argument(
        "--precision",
        type=_positive_int,
        default=None,
        metavar="DIGITS",
        help=f"significant digits of the printed equation (default: {est})",
    )
    p.add_argument(
        "--all-devices",
        dest="mesh",
        action="store_const",
        const="all",
        default=None,
        help="shard the samples over all local devices",
    )
    p.add_argument(
        "--show-front",
        action="store_true",
        help="print the Pareto front: one row per model (complexity, training "
        "loss, validation loss with --validation-fraction, equation), the chosen "
        "one marked with *",
    )
    p.set_defaults(func=_cmd_symbolic)

    p = sub.add_parser(
        "tree",
        help="fit a provably optimal sparse regression tree to a CSV",
        description="Optimal sparse regression tree (OSRT) on a CSV file.",
    )
    _add_common(p)
    est = "OptimalTreeRegressor's"
    p.add_argument(
        "--regularization",
        type=_non_negative_float,
        default=None,
        metavar="LAMBDA",
        help=f"penalty per leaf, in units of the normalised loss (default: {est})",
    )
    p.add_argument(
        "--depth-budget",
        type=_positive_int,
        default=None,
        help=f"levels of the tree counting the root as 1: 2 allows one split (default: {est})",
    )
    p.add_argument(
        "--no-depth-limit",
        action="store_true",
        help="no depth budget (may take long with a small regularization)",
    )
    p.add_argument(
        "--cv",
        type=_positive_int,
        default=None,
        metavar="K",
        help="choose the regularization (and, without --depth-budget, the depth "
        "budget) by K-fold cross-validation over the exact regularization path "
        "(OptimalTreeRegressorCV), then refit on the training rows",
    )
    p.add_argument(
        "--loss",
        choices=("squared_error", "absolute_error"),
        default=None,
        help=f"the loss of the leaves' predictions (default: {est})",
    )
    p.add_argument(
        "--raw-loss",
        dest="normalize",
        action="store_const",
        const=False,
        default=None,
        help="the loss as mean squared (absolute) error instead "
        "of normalised by the one-leaf tree's; --regularization is then in units "
        "of the target squared (of the target)",
    )
    p.add_argument(
        "--min-samples-leaf",
        type=_positive_int,
        default=None,
        help=f"fewest training rows in a leaf (default: {est})",
    )
    p.add_argument(
        "--binarize",
        choices=("auto", "none", "quantile", "uniform", "midpoints", "gbdt"),
        default="auto",
        help="how real features become binary ones (auto: none "
        "when every feature is 0/1, else OptimalTreeRegressor's default, the "
        "thresholds of boosted stumps (gbdt), or quantile with --n-thresholds); "
        "text columns are one-hot encoded",
    )
    p.add_argument(
        "--n-thresholds",
        type=_positive_int,
        default=None,
        help="thresholds per feature for quantile/uniform binarization (default: Binarizer's)",
    )
    p.add_argument(
        "--max-features",
        type=_positive_int,
        default=None,
        help="keep at most this many binary features",
    )
    p.add_argument(
        "--time-limit",
        type=_non_negative_float,
        default=None,
        metavar="SECONDS",
        help="stop the search and report the best tree with its gap",
    )
    p.add_argument(
        "--max-steps",
        type=_positive_int,
        default=None,
        help="stop the search after this many solver steps and report the best "
        "tree with its gap (as --time-limit, but reproducible)",
    )
    p.add_argument(
        "--exact-levels",
        type=int,
        choices=(0, 1, 2, 3),
        default=None,
        help="split levels solved at once by the exact shallow-subtree kernels "
        "(default: the largest that fits in memory)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "numpy", "jax"),
        default=None,
        help="search backend: host kernels (numpy) or batched device calls (jax); "
        f"auto: numpy (jax only with --all-devices). Same optimum (default: {est})",
    )
    p.add_argument(
        "--all-devices",
        dest="mesh",
        action="store_const",
        const="all",
        default=None,
        help="split the batched device calls over all local devices (implies the jax backend)",
    )
    p.set_defaults(func=_cmd_tree)

    p = sub.add_parser(
        "predict",
        help="predictions of a saved model on a CSV",
        description="Predict with a model saved by --output.",
    )
    p.add_argument("model", help="model file written by `jaxsr symbolic/tree --output`")
    p.add_argument("data", help="CSV file with the model's feature columns (others ignored)")
    p.add_argument(
        "--output",
        "-o",
        default=None,
        metavar="PREDICTIONS.csv",
        help="write the predictions here (default: stdout)",
    )
    _add_csv_options(p)
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser(
        "warmup",
        help="compile the symbolic programs into JAX's persistent compilation cache",
        description="Compile (or load) now the programs of a symbolic fit "
        "(JAX's persistent compilation cache: every dataset of "
        "the same row, feature and node buckets reuses them), e.g. "
        "when building a container image or a CI cache. The "
        "optimal-tree engine needs nothing here: it is compiled "
        "when the package is installed.",
    )
    p.add_argument(
        "--rows",
        type=int,
        default=256,
        metavar="N",
        help="rows of the symbolic data (default 256: the bucket of every "
        "dataset of up to 256 rows)",
    )
    p.add_argument(
        "--features",
        type=int,
        nargs="+",
        default=None,
        metavar="M",
        help="feature counts of the symbolic data (default: "
        f"{' '.join(map(str, WARMUP_FEATURES))}, the buckets of 1-16 "
        "features)",
    )
    p.add_argument(
        "--max-nodes",
        type=int,
        default=50,
        metavar="K",
        help="max_nodes of the symbolic fits (default 50, the estimator's)",
    )
    p.set_defaults(func=_cmd_warmup)
    return parser


@contextlib.contextmanager
def _plain_warnings():
    """Warnings of the library (extrapolation, convergence, ...) print as one line
    ``jaxsr: warning: <message>`` on stderr, as the command's own warnings do, instead of
    Python's ``file.py:NNN: Category: ...`` with a source line."""
    original = warnings.formatwarning
    warnings.formatwarning = lambda message, category, *args, **kwargs: (
        f"jaxsr: warning: {message}\n"
    )
    try:
        yield
    finally:
        warnings.formatwarning = original


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``jaxsr`` command; returns the exit code (0 ok, 1 failure, 2 user error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or an argparse usage error (code 2)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    if args.command in ("demo", "symbolic", "tree", "warmup"):
        _enable_compilation_cache()
    try:
        with _plain_warnings(), _wrapped_stdout(_width(getattr(args, "wide", False))):
            return args.func(args)
    except CLIError as err:
        print(f"jaxsr: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        _INTERRUPTED[0] = True
        print("jaxsr: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `jaxsr predict ... | head`
        with contextlib.suppress(Exception):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK


_INTERRUPTED = [False]  # main() has reported a Ctrl-C
INTERRUPT_GRACE_SECONDS = 1.0
"""After Ctrl-C the command's process ends within this many seconds, whatever it was doing
(a compilation or a kernel in native code, which Python cannot interrupt, or threads that
would be waited for at exit); a second Ctrl-C ends it at once."""


def _install_interrupt_watchdog() -> None:
    """Ctrl-C that always ends the process promptly.

    Python raises ``KeyboardInterrupt`` only when the main thread next runs Python code:
    inside a compilation that can take tens of seconds. The C-level signal handler also
    writes the signal's number to a pipe (:func:`signal.set_wakeup_fd`); a daemon thread
    reading it gives the ordinary ``KeyboardInterrupt`` :data:`INTERRUPT_GRACE_SECONDS` to
    end the process, then ends it itself (exit code 130, ``jaxsr: interrupted`` on
    stderr); a second Ctrl-C ends it at once. It stays installed until the process ends
    (threads waited for at exit are covered too).
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "set_wakeup_fd"
    ):
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):  # not the main interpreter, or no signals here
        os.close(r)
        os.close(w)
        return

    def hard_exit():
        with contextlib.suppress(Exception):
            if not _INTERRUPTED[0]:
                sys.stderr.write("jaxsr: interrupted\n")
            sys.stderr.flush()
            sys.stdout.flush()
        os._exit(130)

    def watch():
        seen = 0
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if not data:
                return
            for code in data:
                if code == signal.SIGINT:
                    seen += 1
                    if seen >= 2:
                        hard_exit()
                    timer = threading.Timer(INTERRUPT_GRACE_SECONDS, hard_exit)
                    timer.daemon = True
                    timer.start()

    threading.Thread(target=watch, name="jaxsr-interrupt", daemon=True).start()


def console() -> None:
    """The ``jaxsr`` console script and ``python -m jaxsr``: :func:`main` with a Ctrl-C
    that ends the process within :data:`INTERRUPT_GRACE_SECONDS` (once or twice, in a
    compilation or a search), then ``sys.exit`` with its code."""
    _install_interrupt_watchdog()
    sys.exit(main())
