"""Datasets: generated physics laws, scikit-learn's diabetes data, and the shared CSV folder.

* :func:`make_newton_gravitation` -- Newton's law of universal gravitation, generated as in
  section 3 of the deterministic symbolic regression paper (Rivero et al., DoME).
* :func:`feynman_equation` -- samples of the AI Feynman benchmark equations (Udrescu &
  Tegmark 2020). By default those the paper's method can express exactly (``+ - * /``,
  variables and constants; squares written as products): 17 are built in and work
  anywhere; with the benchmark's ``FeynmanEquations.csv`` at hand, all of its 58 rational
  equations, and with ``rational_only=False`` all 100 (``sqrt, exp, ln, sin, cos, ...``).
* :func:`load_diabetes` -- scikit-learn's diabetes data (442 patients, real measurements).
* :func:`shared_data_dir` / :func:`load_shared_csv` -- read the CSVs of the project's
  ``shared/data`` folder in place, for tests and benchmarks, without copying them.

All generators are deterministic for a given ``seed`` and return float64 data.
"""

from __future__ import annotations

import ast
import csv
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "GRAVITATIONAL_CONSTANT",
    "FeynmanEquation",
    "feynman_equation",
    "feynman_equation_names",
    "get_feynman_equation",
    "load_diabetes",
    "load_shared_csv",
    "make_newton_gravitation",
    "shared_data_dir",
]

#: Newton's gravitational constant as used in the paper (m^3 kg^-1 s^-2), eq. 36.
GRAVITATIONAL_CONSTANT = 6.67392e-11

_ENV_VAR = "JAXSR_SHARED_DATA"


# --------------------------------------------------------------------------------------
# Newton's law of universal gravitation (paper section 3)
# --------------------------------------------------------------------------------------


def make_newton_gravitation(
    n_samples: int = 1000, seed: int = 0, *, as_frame: bool = False, physical_names: bool = False
):
    """Samples of Newton's law of universal gravitation, ``F = G * m1 * m2 / d**2``.

    As in section 3 (eq. 36) of the deterministic symbolic regression paper: two masses
    in ``[1e23, 1e25]`` kg and a distance in ``[1e8, 1e12]`` m, each drawn log-uniformly
    (uniform in the exponent) so that every decade is represented, and the target is the
    force with ``G = 6.67392e-11``. The targets span about ``1e12`` to ``1e24`` N, which is
    why the paper fits this data with a goal MSE equal to the mean target rather than 0.

    Args:
      n_samples: number of rows (the paper uses 1000).
      seed: seed of ``numpy.random.default_rng``; the same seed gives the same data.
      as_frame: return a pandas ``DataFrame`` and ``Series`` instead of numpy arrays.
      physical_names: name the columns ``m1, m2, d`` and the target ``F`` instead of the
        paper's ``x1, x2, x3`` and ``target``; needs ``as_frame=True``.

    Returns:
      ``(X, y)``: ``X`` of shape ``(n_samples, 3)`` (columns: mass 1 [kg], mass 2 [kg],
      distance [m]) and ``y`` of shape ``(n_samples,)`` (force [N]), float64.

    Raises:
      ValueError: ``n_samples < 1`` or ``physical_names`` without ``as_frame``.

    Example:
      >>> X, y = make_newton_gravitation(5, seed=0)
      >>> X.shape, y.shape
      ((5, 3), (5,))
    """
    n = _check_n_samples(n_samples)
    if physical_names and not as_frame:
        raise ValueError(
            "physical_names=True names the columns of a DataFrame; pass as_frame=True as well"
        )
    rng = np.random.default_rng(seed)
    exponents = rng.uniform(size=(n, 3))
    low = np.array([23.0, 23.0, 8.0])
    high = np.array([25.0, 25.0, 12.0])
    X = np.power(10.0, low + (high - low) * exponents)
    y = GRAVITATIONAL_CONSTANT * X[:, 0] * X[:, 1] / (X[:, 2] * X[:, 2])
    if not as_frame:
        return X, y
    names = ["m1", "m2", "d"] if physical_names else ["x1", "x2", "x3"]
    return _to_frame(X, y, names, "F" if physical_names else "target")


# --------------------------------------------------------------------------------------
# AI Feynman equations expressible with + - * /
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeynmanEquation:
    """One equation of the AI Feynman benchmark.

    Attributes:
      name: the benchmark's id (``Filename`` column), e.g. ``"I.12.4"``.
      formula: the formula as written in ``FeynmanEquations.csv`` (Python syntax).
      variables: ``((name, low, high), ...)`` in the CSV's order; each variable is sampled
        uniformly in ``[low, high]`` as in the benchmark.
      expression: the same formula with integer powers written as products (for a
        rational equation: over ``+ - * /`` only, what the paper's method can express).
      function: ``f(*columns) -> target``, vectorised over numpy arrays.
      rational: whether the formula uses only ``+ - * /`` and integer powers (else it
        calls some of ``sqrt, exp, ln, sin, cos, tan, arcsin, arccos, arctan, tanh``).
    """

    name: str
    formula: str
    variables: tuple[tuple[str, float, float], ...]
    expression: str
    function: Callable[..., np.ndarray]
    rational: bool = True

    @property
    def variable_names(self) -> list[str]:
        return [v[0] for v in self.variables]

    def sample(self, n_samples: int = 1000, seed: int = 0, *, as_frame: bool = False):
        """Draw ``(X, y)``; see :func:`feynman_equation`."""
        n = _check_n_samples(n_samples)
        rng = np.random.default_rng(seed)
        u = rng.uniform(size=(n, len(self.variables)))
        low = np.array([v[1] for v in self.variables], dtype=np.float64)
        high = np.array([v[2] for v in self.variables], dtype=np.float64)
        X = low + (high - low) * u
        y = np.asarray(self.function(*X.T), dtype=np.float64)
        y = np.broadcast_to(y, (n,)).copy()
        if not as_frame:
            return X, y
        return _to_frame(X, y, self.variable_names, "target")


def _u(lo: float, hi: float, *names: str) -> tuple[tuple[str, float, float], ...]:
    return tuple((n, float(lo), float(hi)) for n in names)


_PI = math.pi

# name -> (CSV formula, variables in the CSV's order, rational expression, function).
# Formulas and ranges copied by hand from FeynmanEquations.csv; tests check every one
# against the CSV when it is available.
_BUILTIN_SPECS: dict[str, tuple[str, tuple, str, Callable[..., np.ndarray]]] = {
    "I.9.18": (
        "G*m1*m2/((x2-x1)**2+(y2-y1)**2+(z2-z1)**2)",
        (
            ("m1", 1.0, 2.0),
            ("m2", 1.0, 2.0),
            ("G", 1.0, 2.0),
            ("x1", 3.0, 4.0),
            ("x2", 1.0, 2.0),
            ("y1", 3.0, 4.0),
            ("y2", 1.0, 2.0),
            ("z1", 3.0, 4.0),
            ("z2", 1.0, 2.0),
        ),
        "G*m1*m2/((x2-x1)*(x2-x1)+(y2-y1)*(y2-y1)+(z2-z1)*(z2-z1))",
        lambda m1, m2, G, x1, x2, y1, y2, z1, z2: (
            G * m1 * m2 / ((x2 - x1) * (x2 - x1) + (y2 - y1) * (y2 - y1) + (z2 - z1) * (z2 - z1))
        ),
    ),
    "I.12.1": ("mu*Nn", _u(1, 5, "mu", "Nn"), "mu*Nn", lambda mu, Nn: mu * Nn),
    "I.12.4": (
        "q1*r/(4*pi*epsilon*r**3)",
        _u(1, 5, "q1", "epsilon", "r"),
        "q1*r/(4*pi*epsilon*r*r*r)",
        lambda q1, epsilon, r: q1 * r / (4 * _PI * epsilon * r * r * r),
    ),
    "I.12.5": ("q2*Ef", _u(1, 5, "q2", "Ef"), "q2*Ef", lambda q2, Ef: q2 * Ef),
    "I.13.12": (
        "G*m1*m2*(1/r2-1/r1)",
        _u(1, 5, "m1", "m2", "r1", "r2", "G"),
        "G*m1*m2*(1/r2-1/r1)",
        lambda m1, m2, r1, r2, G: G * m1 * m2 * (1 / r2 - 1 / r1),
    ),
    "I.14.3": ("m*g*z", _u(1, 5, "m", "g", "z"), "m*g*z", lambda m, g, z: m * g * z),
    "I.18.4": (
        "(m1*r1+m2*r2)/(m1+m2)",
        _u(1, 5, "m1", "m2", "r1", "r2"),
        "(m1*r1+m2*r2)/(m1+m2)",
        lambda m1, m2, r1, r2: (m1 * r1 + m2 * r2) / (m1 + m2),
    ),
    "I.25.13": ("q/C", _u(1, 5, "q", "C"), "q/C", lambda q, C: q / C),
    "I.27.6": (
        "1/(1/d1+n/d2)",
        _u(1, 5, "d1", "d2", "n"),
        "1/(1/d1+n/d2)",
        lambda d1, d2, n: 1 / (1 / d1 + n / d2),
    ),
    "I.29.4": ("omega/c", _u(1, 10, "omega", "c"), "omega/c", lambda omega, c: omega / c),
    "I.34.8": (
        "q*v*B/p",
        _u(1, 5, "q", "v", "B", "p"),
        "q*v*B/p",
        lambda q, v, B, p: q * v * B / p,
    ),
    "I.39.22": (
        "n*kb*T/V",
        _u(1, 5, "n", "T", "V", "kb"),
        "n*kb*T/V",
        lambda n, T, V, kb: n * kb * T / V,
    ),
    "I.43.16": (
        "mu_drift*q*Volt/d",
        _u(1, 5, "mu_drift", "q", "Volt", "d"),
        "mu_drift*q*Volt/d",
        lambda mu_drift, q, Volt, d: mu_drift * q * Volt / d,
    ),
    "II.2.42": (
        "kappa*(T2-T1)*A/d",
        _u(1, 5, "kappa", "T1", "T2", "A", "d"),
        "kappa*(T2-T1)*A/d",
        lambda kappa, T1, T2, A, d: kappa * (T2 - T1) * A / d,
    ),
    "II.3.24": (
        "Pwr/(4*pi*r**2)",
        _u(1, 5, "Pwr", "r"),
        "Pwr/(4*pi*r*r)",
        lambda Pwr, r: Pwr / (4 * _PI * r * r),
    ),
    "II.38.3": (
        "Y*A*x/d",
        _u(1, 5, "Y", "A", "d", "x"),
        "Y*A*x/d",
        lambda Y, A, d, x: Y * A * x / d,
    ),
    "II.38.14": (
        "Y/(2*(1+sigma))",
        _u(1, 5, "Y", "sigma"),
        "Y/(2*(1+sigma))",
        lambda Y, sigma: Y / (2 * (1 + sigma)),
    ),
}

_BUILTIN: dict[str, FeynmanEquation] = {
    name: FeynmanEquation(name, formula, tuple(variables), expression, fn)
    for name, (formula, variables, expression, fn) in _BUILTIN_SPECS.items()
}


def feynman_equation_names(*, include_csv: bool = False, rational_only: bool = True) -> list[str]:
    """Names of the available Feynman equations.

    Args:
      include_csv: also list the equations of ``FeynmanEquations.csv`` when the shared
        data folder is found (otherwise only the built-in ones).
      rational_only: ``True`` (default): only the equations over ``+ - * /`` and integer
        powers (what the paper's method can express); ``False``: all of the CSV (the 100
        equations of the benchmark), the built-in ones first.
    """
    names = list(_BUILTIN)
    if include_csv:
        path = _feynman_csv_path(required=False)
        if path is not None:
            for row in _read_feynman_csv(path).values():
                if row["name"] in _BUILTIN:
                    continue
                if _formula_ast(row["formula"], functions=not rational_only) is not None:
                    names.append(row["name"])
    return names


def get_feynman_equation(
    name: str, *, source: str = "auto", rational_only: bool = True
) -> FeynmanEquation:
    """Look up one Feynman equation.

    Args:
      name: the benchmark's id, e.g. ``"I.27.6"``.
      source: ``"builtin"`` (hard-coded formula and ranges, works anywhere), ``"csv"``
        (formula and ranges read from ``FeynmanEquations.csv`` in the shared data folder),
        or ``"auto"`` (the built-in table for the built-in names, so that their samples
        are the same on every machine -- the tests check that its formulas and ranges
        equal the CSV's -- and the CSV, when found, for the others).
      rational_only: ``True`` (default): refuse an equation that needs functions (sqrt,
        exp, sin, ...); ``False``: any equation of the CSV (evaluated with numpy's
        functions; ``ln`` is the natural logarithm).

    Raises:
      ValueError: unknown name, an equation that needs functions other than ``+ - * /``
        and integer powers (sqrt, exp, sin, ...) while ``rational_only``, or an unknown
        ``source``.
      FileNotFoundError: ``source="csv"`` and the shared data folder is missing.
    """
    if source not in ("auto", "builtin", "csv"):
        raise ValueError(f"source must be 'auto', 'builtin' or 'csv', got {source!r}")
    path = None
    if source == "csv" or (source == "auto" and name not in _BUILTIN):
        path = _feynman_csv_path(required=source == "csv")
    if path is None:
        if name not in _BUILTIN:
            raise ValueError(
                f"unknown Feynman equation {name!r}; built in: {', '.join(_BUILTIN)} "
                f"(more are read from feynman/FeynmanEquations.csv when the shared data "
                f"folder is found; set {_ENV_VAR})"
            )
        return _BUILTIN[name]
    rows = _read_feynman_csv(path)
    if name not in rows:
        raise ValueError(f"no equation named {name!r} in {path}")
    row = rows[name]
    tree = _formula_ast(row["formula"], functions=False)
    rational = tree is not None
    if tree is None and not rational_only:
        tree = _formula_ast(row["formula"], functions=True)
    if tree is None:
        raise ValueError(
            f"Feynman equation {name} ({row['formula']}) uses functions other than "
            "+ - * / and integer powers; the paper's method cannot express it (pass "
            "rational_only=False to sample it anyway)"
        )
    variables = tuple(row["variables"])
    var_names = [v[0] for v in variables]
    expression = _expand_powers(tree)
    code = compile(ast.Expression(tree), f"<feynman {name}>", "eval")

    def function(*columns):
        env = dict(zip(var_names, columns, strict=True))
        env["pi"] = _PI
        env.update(_FUNCTIONS)
        with np.errstate(all="ignore"):
            return eval(code, {"__builtins__": {}}, env)  # noqa: S307 - AST checked above

    return FeynmanEquation(name, row["formula"], variables, expression, function, rational)


def feynman_equation(
    name: str,
    n_samples: int = 1000,
    seed: int = 0,
    *,
    as_frame: bool = False,
    source: str = "auto",
    rational_only: bool = True,
):
    """Samples of one equation of the AI Feynman benchmark (by default a rational one).

    Each variable is drawn uniformly in the benchmark's ``[low, high]`` range (as in
    ``FeynmanEquations.csv``); the target is the formula evaluated in float64. Built-in
    equations: ``I.9.18`` (squares as products), ``I.12.1``, ``I.12.4``, ``I.12.5``,
    ``I.13.12``, ``I.14.3``, ``I.18.4``, ``I.25.13``, ``I.27.6``, ``I.29.4``, ``I.34.8``,
    ``I.39.22``, ``I.43.16``, ``II.2.42``, ``II.3.24``, ``II.38.3``, ``II.38.14``.

    Args:
      name: the benchmark's id, e.g. ``"I.18.4"``.
      n_samples: number of rows.
      seed: seed of ``numpy.random.default_rng``.
      as_frame: return a ``DataFrame`` (columns: the physical variable names) and a
        ``Series`` named ``target``.
      source: where formula and ranges come from; see :func:`get_feynman_equation`.
      rational_only: ``False`` also serves the equations with ``sqrt, exp, sin, ...``
        (read from the CSV); see :func:`get_feynman_equation`.

    Returns:
      ``(X, y)``: ``X`` of shape ``(n_samples, n_variables)`` in the CSV's variable
      order, ``y`` of shape ``(n_samples,)``, float64.

    Raises:
      ValueError: see :func:`get_feynman_equation`; ``n_samples < 1``.
    """
    return get_feynman_equation(name, source=source, rational_only=rational_only).sample(
        n_samples, seed, as_frame=as_frame
    )


_ALLOWED_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


# the functions of FeynmanEquations.csv (and their usual spellings), as numpy ufuncs
_FUNCTIONS = {
    "sqrt": np.sqrt,
    "exp": np.exp,
    "ln": np.log,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "tanh": np.tanh,
}


def _formula_ast(formula: str, *, functions: bool = False) -> ast.expr | None:
    """Parse ``formula``; ``None`` unless it uses only ``+ - * /``, integer powers, names,
    numbers and ``pi`` (and, with ``functions``, one-argument calls of
    :data:`_FUNCTIONS` and powers with any numeric exponent)."""
    try:
        tree = ast.parse(formula, mode="eval").body
    except SyntaxError:
        return None
    callees = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (
                functions
                and isinstance(node.func, ast.Name)
                and node.func.id in _FUNCTIONS
                and len(node.args) == 1
                and not node.keywords
            ):
                return None
            callees.add(id(node.func))
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, _ALLOWED_BINOPS):
                return None
            if isinstance(node.op, ast.Pow) and not functions:
                exp = node.right
                if not (
                    isinstance(exp, ast.Constant) and isinstance(exp.value, int) and exp.value >= 1
                ):
                    return None
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd):
                return None
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float):
                return None
        elif isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                return None
            if node.id in _FUNCTIONS and id(node) not in callees:
                return None  # a function name used as a variable
        elif not isinstance(node, ast.operator | ast.unaryop | ast.expr_context):
            return None
    return tree


def _expand_powers(tree: ast.expr) -> str:
    """Unparse with every ``e**k`` (integer ``k >= 1``) written as ``e*e*...*e``."""

    class _Expand(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            k = node.right.value if isinstance(node.right, ast.Constant) else None
            if isinstance(node.op, ast.Pow) and isinstance(k, int) and k >= 1:
                out = node.left
                for _ in range(k - 1):
                    out = ast.BinOp(left=out, op=ast.Mult(), right=node.left)
                return out
            return node

    import copy

    return ast.unparse(_Expand().visit(copy.deepcopy(tree))).replace(" ", "")


def _feynman_csv_path(*, required: bool) -> Path | None:
    root = shared_data_dir(required=required)
    if root is None:
        return None
    path = root / "feynman" / "FeynmanEquations.csv"
    if not path.is_file():
        if required:
            raise FileNotFoundError(f"{path} not found in the shared data folder")
        return None
    return path


def _read_feynman_csv(path: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            name = (row.get("Filename") or "").strip()
            if not name:
                continue
            n = int(float(row["# variables"]))
            variables = [
                (row[f"v{k}_name"].strip(), float(row[f"v{k}_low"]), float(row[f"v{k}_high"]))
                for k in range(1, n + 1)
            ]
            rows[name] = {"name": name, "formula": row["Formula"].strip(), "variables": variables}
    return rows


# --------------------------------------------------------------------------------------
# scikit-learn's diabetes data
# --------------------------------------------------------------------------------------


def load_diabetes(*, scaled: bool = False, as_frame: bool = True):
    """scikit-learn's diabetes data: 442 patients, 10 baseline measurements, and a
    quantitative measure of disease progression one year later (Efron et al. 2004).

    Args:
      scaled: ``False`` (default) gives the original measurements (age in years, sex
        coded 1/2, BMI, blood pressure, six blood serum measurements ``s1..s6``);
        ``True`` gives scikit-learn's mean-centred, norm-scaled version.
      as_frame: return a ``DataFrame`` (columns ``age, sex, bmi, bp, s1..s6``) and a
        ``Series`` named ``target``; else numpy arrays.

    Returns:
      ``(X, y)`` with ``X`` of shape ``(442, 10)`` and ``y`` of shape ``(442,)``, float64.

    Raises:
      ImportError: scikit-learn is not installed (``pip install scikit-learn``).
    """
    try:
        from sklearn.datasets import load_diabetes as _sk_load_diabetes
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "load_diabetes needs scikit-learn: pip install scikit-learn "
            "(or pip install -e '.[test]')"
        ) from err
    X, y = _sk_load_diabetes(return_X_y=True, as_frame=True, scaled=scaled)
    X = X.astype(np.float64)
    y = y.astype(np.float64).rename("target")
    if as_frame:
        return X, y
    return X.to_numpy(), y.to_numpy()


# --------------------------------------------------------------------------------------
# The shared data folder
# --------------------------------------------------------------------------------------


def shared_data_dir(*, required: bool = True) -> Path | None:
    """Locate the project's shared data folder (``shared/data``).

    The environment variable ``JAXSR_SHARED_DATA`` wins when set. Otherwise the folder
    ``shared/data`` is looked for in every parent of this package's directory and of the
    current working directory (so a checkout next to ``shared/`` finds ``../shared/data``).

    Args:
      required: raise when the folder is not found (else return ``None``).

    Returns:
      The folder's absolute path, or ``None`` when it is missing and not ``required``.

    Raises:
      FileNotFoundError: ``JAXSR_SHARED_DATA`` names a missing folder, or ``required`` and
        no ``shared/data`` folder was found.
    """
    env = os.environ.get(_ENV_VAR)
    if env:
        path = Path(env).expanduser().resolve()
        if path.is_dir():
            return path
        if required:
            raise FileNotFoundError(f"{_ENV_VAR}={env!r} is not a directory")
        return None
    starts = [Path(__file__).resolve().parent, Path.cwd().resolve()]
    for start in starts:
        for parent in (start, *start.parents):
            candidate = parent / "shared" / "data"
            if candidate.is_dir():
                return candidate
    if required:
        raise FileNotFoundError(
            "the shared data folder (shared/data) was not found above the jaxsr package "
            f"or the current directory; set {_ENV_VAR}=/path/to/shared/data"
        )
    return None


def load_shared_csv(
    relative_path: str | os.PathLike, *, target: str | None = None, **read_csv_kwargs
):
    """Read one CSV of the shared data folder in place.

    Args:
      relative_path: path inside the shared data folder, e.g.
        ``"osrt/binarized/airfoil.csv"``.
      target: name of the target column; default: the last column.
      **read_csv_kwargs: passed to ``pandas.read_csv`` (e.g. ``sep=r"\\s+"``,
        ``header=None`` for the raw ``.dat`` files).

    Returns:
      ``(X, y)``: a ``DataFrame`` of the other columns and the target ``Series``.

    Raises:
      FileNotFoundError: the shared data folder or the file is missing.
      ValueError: the file has fewer than two columns, or ``target`` is not a column.
    """
    import pandas as pd

    root = shared_data_dir(required=True)
    path = root / Path(relative_path)
    if not path.is_file():
        raise FileNotFoundError(f"{relative_path} not found in the shared data folder {root}")
    df = pd.read_csv(path, **read_csv_kwargs)
    if df.shape[1] < 2:
        raise ValueError(f"{path} has {df.shape[1]} column(s); need features and a target")
    if target is None:
        target = df.columns[-1]
    elif target not in df.columns:
        raise ValueError(
            f"target column {target!r} is not in {path} "
            f"(columns: {', '.join(map(str, df.columns))})"
        )
    return df.drop(columns=[target]), df[target]


# --------------------------------------------------------------------------------------


def _check_n_samples(n_samples) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer):
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be at least 1, got {n_samples}")
    return int(n_samples)


def _to_frame(X: np.ndarray, y: np.ndarray, names: list[str], target: str):
    import pandas as pd

    return pd.DataFrame(X, columns=names), pd.Series(y, name=target)
