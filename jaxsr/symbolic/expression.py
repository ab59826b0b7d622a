"""Expression trees of ``+ - * /`` over variables and constants, as flat pre-order arrays.

An :class:`Expression` with ``n`` nodes is three host-side numpy arrays in pre-order (node 1
of the paper is index 0): ``op`` (one of the codes below), ``value`` (the constant of a
constant node) and ``feature`` (the column index of a variable node). Children, parents and
subtree sizes follow from the pre-order layout. Edits (replacing a subtree) happen here, on
the host; every numeric pass runs on :class:`TreeArrays`, the same arrays padded to a
capacity bucket (16, 32, 64, ...) so that a growing tree recompiles only when it changes
bucket.

Feature names in printed forms: a name that is a plain identifier (``x1``, ``mass``) prints
as it is; any other name (spaces, operators, brackets, a leading digit, or a word the
printers use for a function or constant, :data:`RESERVED_NAMES`) prints bracketed,
``3*[T/R]/[Node Number]``, with a ``]`` inside the name doubled (``[a]]b]`` is the name
``a]b``), and in LaTeX as ``\\text{...}`` with LaTeX's special characters escaped
(:func:`format_name`, :func:`latex_name`). sympy symbols keep the real name
(``sympy.Symbol("T/R")``); only the printers (:func:`sympy_text`, :func:`sympy_latex`)
bracket it. :meth:`Expression.parse` reads the bracketed form back.

Paper: section 2 (trees of terminals and the four arithmetic operators, Figure 1).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

__all__ = [
    "PAD",
    "CONST",
    "VAR",
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "SQRT",
    "EXP",
    "LOG",
    "SIN",
    "COS",
    "OP_SYMBOLS",
    "UNARY_NAMES",
    "Expression",
    "TreeArrays",
    "capacity_bucket",
    "jax_graph",
    "round_constants",
    "drop_negligible_terms",
    "SIMPLIFY_MAX_NODES",
    "SYMPY_MAX_HEIGHT",
    "check_sympy_height",
    "RESERVED_NAMES",
    "name_is_plain",
    "format_name",
    "latex_name",
    "sympy_text",
    "sympy_latex",
]

# Operator codes (int32). PAD marks unused slots of a padded tree.
PAD, CONST, VAR, ADD, SUB, MUL, DIV = 0, 1, 2, 3, 4, 5, 6
OP_SYMBOLS = {ADD: "+", SUB: "-", MUL: "*", DIV: "/"}
# Unary operators (beyond the paper; one child, the ``left`` one, ``right`` is 0
# in :class:`TreeArrays`). The semantics kernel evaluates them; the node equations hold
# down to a unary node but not below it (see :mod:`jaxsr.symbolic.unary`).
SQRT, EXP, LOG, SIN, COS = 7, 8, 9, 10, 11
UNARY_NAMES = {SQRT: "sqrt", EXP: "exp", LOG: "log", SIN: "sin", COS: "cos"}
_UNARY_CODES = {v: k for k, v in UNARY_NAMES.items()}
_SYMBOL_OPS = {v: k for k, v in OP_SYMBOLS.items()}
MIN_CAPACITY = 16


def capacity_bucket(n_nodes: int, minimum: int = MIN_CAPACITY) -> int:
    """Smallest power of two ``>= max(n_nodes, minimum)`` (16, 32, 64, ...)."""
    cap = max(int(minimum), 1)
    while cap < n_nodes:
        cap *= 2
    return cap


class TreeArrays(NamedTuple):
    """A tree padded to ``capacity`` nodes, as device arrays (a JAX pytree).

    All arrays have shape ``(capacity,)``; entries at index ``>= n_nodes`` are padding
    (``op == PAD``). Indices refer to pre-order positions; for leaves and padding ``left``,
    ``right`` are 0 and for the root ``parent`` is 0 (use ``op`` / the index to mask).
    """

    op: np.ndarray  # int32 (capacity,): PAD, CONST, VAR, ADD, SUB, MUL, DIV, SQRT..COS
    left: np.ndarray  # int32 (capacity,): index of the first child (0 for leaves)
    right: np.ndarray  # int32 (capacity,): index of the second child (0 for leaves, unary)
    parent: np.ndarray  # int32 (capacity,): index of the parent (0 for the root)
    value: np.ndarray  # float (capacity,): constant of CONST nodes (0 elsewhere)
    feature: np.ndarray  # int32 (capacity,): column of VAR nodes (0 elsewhere)
    size: np.ndarray  # int32 (capacity,): number of nodes of the subtree rooted here
    depth: np.ndarray  # int32 (capacity,): depth (root = 0)
    height: np.ndarray  # int32 (capacity,): height of the subtree rooted here (leaf = 1)
    n_slots: np.ndarray  # int32 (capacity,): number of forbidden sets S of the node
    n_nodes: np.ndarray  # int32 (): number of real nodes


class Expression:
    """An expression tree as flat pre-order arrays (host side, immutable by convention).

    Args:
      op: int array ``(n,)`` of operator codes (``CONST, VAR, ADD, SUB, MUL, DIV``).
      value: float array ``(n,)``, the constant of each ``CONST`` node.
      feature: int array ``(n,)``, the variable (column) index of each ``VAR`` node.

    Raises:
      ValueError: if the arrays are not a valid pre-order binary tree.
    """

    __slots__ = (
        "op",
        "value",
        "feature",
        "_left",
        "_right",
        "_parent",
        "_size",
        "_depth",
        "_height",
    )

    def __init__(self, op, value, feature):
        self.op = np.asarray(op, dtype=np.int32).copy()
        self.value = np.asarray(value, dtype=np.float64).copy()
        self.feature = np.asarray(feature, dtype=np.int32).copy()
        n = self.op.shape[0]
        if n == 0 or self.value.shape != (n,) or self.feature.shape != (n,):
            raise ValueError(
                "an expression needs op, value and feature arrays of equal length >= 1"
            )
        self._structure()

    # ----------------------------------------------------------------- construction
    @classmethod
    def constant(cls, k: float) -> Expression:
        return cls([CONST], [float(k)], [0])

    @classmethod
    def variable(cls, j: int) -> Expression:
        return cls([VAR], [0.0], [int(j)])

    @classmethod
    def binary(cls, op: int | str, first: Expression, second: Expression) -> Expression:
        code = _SYMBOL_OPS[op] if isinstance(op, str) else int(op)
        if code not in OP_SYMBOLS:
            raise ValueError(f"unknown binary operator {op!r}")
        return cls(
            np.concatenate([[code], first.op, second.op]),
            np.concatenate([[0.0], first.value, second.value]),
            np.concatenate([[0], first.feature, second.feature]),
        )

    @classmethod
    def unary(cls, op: int | str, child: Expression) -> Expression:
        """``op(child)`` for a unary operator (a code of :data:`UNARY_NAMES` or its name,
        e.g. ``"sqrt"``)."""
        code = _UNARY_CODES.get(op) if isinstance(op, str) else int(op)
        if code not in UNARY_NAMES:
            raise ValueError(f"unknown unary operator {op!r}; known: {list(_UNARY_CODES)}")
        return cls(
            np.concatenate([[code], child.op]),
            np.concatenate([[0.0], child.value]),
            np.concatenate([[0], child.feature]),
        )

    @property
    def has_unary(self) -> bool:
        """True if the tree has a unary node."""
        return bool(np.any(self.op >= SQRT))

    def below_unary(self) -> np.ndarray:
        """bool ``(n_nodes,)``: True at the nodes strictly below a unary node. There the
        tree's MSE as a function of the node's output is not of equation 6's form, so the
        searches skip these nodes (:mod:`jaxsr.symbolic.unary`)."""
        out = np.zeros(self.n_nodes, bool)
        for i in range(1, self.n_nodes):
            p = self._parent[i]
            out[i] = out[p] or self.op[p] >= SQRT
        return out

    @classmethod
    def parse(cls, text: str, feature_names: list[str] | None = None) -> Expression:
        """Parse an infix expression over ``+ - * /``, parentheses, numbers and names.

        Names are looked up in ``feature_names`` (default ``x1, x2, ...`` meaning columns
        0, 1, ...). Any name can be written in square brackets, as :meth:`to_string` writes
        every name that is not a plain identifier: ``[T/R]``, ``[Node Number]``; inside the
        brackets a ``]`` of the name is written ``]]`` (``[a]]b]`` is ``a]b``). A name in
        backquotes is read too (the form of older saved models). The unary
        operators are calls: ``sqrt(...)``, ``exp``, ``log``, ``sin``, ``cos``; a bare
        ``inf`` or ``nan`` is a number. Usual precedence; ``-`` and ``/`` associate to the
        left. Parentheses nest to any depth: the parser keeps explicit stacks, no recursion,
        so everything :meth:`to_string` writes reads back, however high the tree.

        Raises:
          ValueError: on a syntax error, an unterminated bracketed name or an unknown name.
        """
        return _Parser(text, feature_names).parse()

    def _structure(self) -> None:
        n = self.op.shape[0]
        left = np.zeros(n, np.int32)
        right = np.zeros(n, np.int32)
        parent = np.zeros(n, np.int32)
        size = np.ones(n, np.int32)
        depth = np.zeros(n, np.int32)
        # Walk the pre-order with a stack of (node, children seen).
        stack: list[list[int]] = []
        for i in range(n):
            code = int(self.op[i])
            if code not in (CONST, VAR, ADD, SUB, MUL, DIV) and code not in UNARY_NAMES:
                raise ValueError(f"invalid operator code {code} at node {i}")
            if stack:
                p, seen, arity = stack[-1]
                parent[i] = p
                depth[i] = depth[p] + 1
                if seen == 0:
                    left[p] = i
                else:
                    right[p] = i
                stack[-1][1] += 1
                if stack[-1][1] == arity:
                    stack.pop()
            elif i > 0:
                raise ValueError("the arrays hold more than one tree (extra nodes after the root)")
            if code in OP_SYMBOLS:
                stack.append([i, 0, 2])
            elif code in UNARY_NAMES:
                stack.append([i, 0, 1])
        if stack:
            raise ValueError("incomplete tree: an operator is missing a child")
        height = np.ones(n, np.int32)
        for i in range(n - 1, -1, -1):
            if self.op[i] in OP_SYMBOLS:
                size[i] = 1 + size[left[i]] + size[right[i]]
                height[i] = 1 + max(height[left[i]], height[right[i]])
            elif self.op[i] in UNARY_NAMES:
                size[i] = 1 + size[left[i]]
                height[i] = 1 + height[left[i]]
        self._left, self._right, self._parent = left, right, parent
        self._size, self._depth, self._height = size, depth, height

    # ----------------------------------------------------------------- structure
    @property
    def n_nodes(self) -> int:
        return int(self.op.shape[0])

    @property
    def left(self) -> np.ndarray:
        return self._left

    @property
    def right(self) -> np.ndarray:
        return self._right

    @property
    def parent(self) -> np.ndarray:
        return self._parent

    @property
    def subtree_sizes(self) -> np.ndarray:
        return self._size

    @property
    def depths(self) -> np.ndarray:
        return self._depth

    def subtree_heights(self) -> np.ndarray:
        """Height of the subtree rooted at each node (leaf = 1), ``(n_nodes,)`` int32."""
        return self._height

    @property
    def height(self) -> int:
        return int(self._depth.max()) + 1

    def forbidden_slot_counts(self) -> np.ndarray:
        """Number of elements of ``S`` at each node: ancestors that are divisions whose
        second child is on the path (section 2, the S set grows by one there)."""
        n = self.n_nodes
        cnt = np.zeros(n, np.int32)
        for i in range(1, n):
            p = self._parent[i]
            cnt[i] = cnt[p] + int(self.op[p] == DIV and self._right[p] == i)
        return cnt

    def subtree(self, i: int) -> Expression:
        s = int(self._size[i])
        return Expression(self.op[i : i + s], self.value[i : i + s], self.feature[i : i + s])

    def replace(self, i: int, new: Expression) -> Expression:
        """Return a new expression with the subtree at pre-order index ``i`` replaced."""
        s = int(self._size[i])
        return Expression(
            np.concatenate([self.op[:i], new.op, self.op[i + s :]]),
            np.concatenate([self.value[:i], new.value, self.value[i + s :]]),
            np.concatenate([self.feature[:i], new.feature, self.feature[i + s :]]),
        )

    def with_constant(self, i: int, k: float) -> Expression:
        if self.op[i] != CONST:
            raise ValueError(f"node {i} is not a constant")
        value = self.value.copy()
        value[i] = float(k)
        return Expression(self.op, value, self.feature)

    def padded(self, capacity: int | None = None, dtype=np.float64) -> TreeArrays:
        """The tree padded to ``capacity`` (default: its bucket) as :class:`TreeArrays`."""
        n = self.n_nodes
        cap = capacity_bucket(n) if capacity is None else int(capacity)
        if cap < n:
            raise ValueError(f"capacity {cap} is smaller than the tree ({n} nodes)")

        def pad(a, dt):
            out = np.zeros(cap, dt)
            out[:n] = a
            return out

        return TreeArrays(
            op=pad(self.op, np.int32),
            left=pad(self._left, np.int32),
            right=pad(self._right, np.int32),
            parent=pad(self._parent, np.int32),
            value=pad(self.value, dtype),
            feature=pad(self.feature, np.int32),
            size=pad(self._size, np.int32),
            depth=pad(self._depth, np.int32),
            height=pad(self._height, np.int32),
            n_slots=pad(self.forbidden_slot_counts(), np.int32),
            n_nodes=np.asarray(n, np.int32),
        )

    def _fold(self, leaf, unary, binary):
        """Combine the tree bottom-up without recursion: ``leaf(i, code)`` at constants and
        variables, ``unary(code, a)`` and ``binary(code, a, b)`` at operators (``a`` the
        first child's result, ``b`` the second's); returns the root's result.

        In pre-order every child sits after its parent, so visiting the nodes from the last
        to the first finishes both children before their parent: a tree of any height
        (a model file may hold thousands of levels) costs no Python stack frames. A child's
        result is dropped once its parent has used it.
        """
        out: list = [None] * self.n_nodes
        op, left, right = self.op, self._left, self._right
        for i in range(self.n_nodes - 1, -1, -1):
            code = int(op[i])
            if code in (CONST, VAR):
                out[i] = leaf(i, code)
            elif code in UNARY_NAMES:
                a = int(left[i])
                out[i], out[a] = unary(code, out[a]), None
            else:
                a, b = int(left[i]), int(right[i])
                out[i], out[a], out[b] = binary(code, out[a], out[b]), None, None
        return out[0]

    # ----------------------------------------------------------------- evaluation
    def evaluate(self, X) -> np.ndarray:
        """Plain numpy evaluation (float64, IEEE: a zero denominator gives inf/nan).

        Args:
          X: ``(n_samples, n_features)`` array.

        Returns:
          ``(n_samples,)`` outputs of the root.
        """
        X = np.asarray(X, dtype=np.float64)
        n = self.n_nodes
        sem: list[np.ndarray | None] = [None] * n
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for i in range(n - 1, -1, -1):
                code = self.op[i]
                if code == CONST:
                    sem[i] = np.full(X.shape[0], self.value[i])
                elif code == VAR:
                    sem[i] = X[:, self.feature[i]].copy()
                elif code in UNARY_NAMES:
                    sem[i] = _NUMPY_UNARY[int(code)](sem[self._left[i]])
                else:
                    a, b = sem[self._left[i]], sem[self._right[i]]
                    sem[i] = _NUMPY_OPS[int(code)](a, b)
        return sem[0]

    def to_jax(self, dtype=None):
        """A pure JAX function ``f(X) -> (n_samples,)`` of ``X`` ``(n_samples, n_features)``.

        The function closes over the constants; it is jit-, vmap- and grad-able and
        computes exactly the operations of :meth:`evaluate` in the same order.

        Args:
          dtype: the dtype ``X`` and the constants are cast to (``None``: ``X``'s own float
            dtype; integer or boolean ``X`` becomes JAX's default float dtype, never an
            integer result).
        """
        import jax.numpy as jnp

        op, value, feature = self.op.copy(), self.value.copy(), self.feature.copy()
        left, right = self._left.copy(), self._right.copy()

        def f(X):
            X = jnp.asarray(X)
            dt = dtype
            if dt is None:
                dt = X.dtype if jnp.issubdtype(X.dtype, jnp.floating) else jnp.result_type(float)
            X = X.astype(dt)
            return jax_graph(
                op, feature, left, right, X, lambda i: jnp.full(X.shape[:-1], value[i], dtype=dt)
            )

        return f

    # ----------------------------------------------------------------- printing
    def to_string(self, feature_names: list[str] | None = None) -> str:
        """Fully parenthesised infix, e.g. ``((6.67e-11 / x3) * x1)``.

        Constants are printed with ``repr`` (all float64 digits); names that are not plain
        identifiers are bracketed, ``(3.0 * [T/R])`` (see :func:`format_name`), so that
        :meth:`parse` reads every name back exactly.
        """
        names = feature_names

        def name(j):
            return format_name(names[j] if names is not None else f"x{j + 1}")

        def leaf(i, code):
            return repr(float(self.value[i])) if code == CONST else name(int(self.feature[i]))

        return self._fold(
            leaf,
            lambda code, a: f"{UNARY_NAMES[code]}({a})",
            lambda code, a, b: f"({a} {OP_SYMBOLS[code]} {b})",
        )

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"Expression({self.to_string()!r})"

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Expression)
            and np.array_equal(self.op, other.op)
            and np.array_equal(self.feature * (self.op == VAR), other.feature * (other.op == VAR))
            and np.array_equal(self.value * (self.op == CONST), other.value * (other.op == CONST))
        )

    __hash__ = None  # mutable numpy arrays inside

    def sympy(self, feature_names: list[str] | None = None, evaluate: bool = False):
        """The expression as a ``sympy`` expression with its exact constants (sympy is
        imported lazily).

        Each variable becomes ``sympy.Symbol(name)`` whatever characters the name holds
        (a name shared by several columns gets the suffix ``_<column number>``);
        constants become ``sympy.Float`` with 17 significant digits, so they convert back to
        the same float64. With ``evaluate=False`` (default) the tree is built unevaluated so
        its structure is kept; with ``evaluate=True`` sympy's automatic simplification folds
        constants and collects like terms (still exact constants).

        Raises:
          ValueError: the tree is more than :data:`SYMPY_MAX_HEIGHT` levels high: sympy's
            own printing, hashing and substitution recurse about four Python frames per
            level and would fail with ``RecursionError``; :meth:`to_string`,
            :meth:`evaluate` and :meth:`to_jax` handle any height.
        """
        check_sympy_height(self)
        import sympy

        ev = bool(evaluate)

        def leaf(i, code):
            if code == CONST:
                return sympy.Float(float(self.value[i]), 17)
            return _symbol(feature_names, int(self.feature[i]))

        def unary(code, a):
            if code == SQRT:
                return sympy.Pow(a, sympy.Rational(1, 2), evaluate=ev)
            return _SYMPY_UNARY[code](a, evaluate=ev)

        def binary(code, a, b):
            if code == ADD:
                return sympy.Add(a, b, evaluate=ev)
            if code == SUB:
                return sympy.Add(a, sympy.Mul(-1, b, evaluate=ev), evaluate=ev)
            if code == MUL:
                return sympy.Mul(a, b, evaluate=ev)
            return sympy.Mul(a, sympy.Pow(b, -1, evaluate=ev), evaluate=ev)

        return self._fold(leaf, unary, binary)

    def readable(
        self,
        feature_names: list[str] | None = None,
        precision: int = 4,
        simplify: bool = True,
        X=None,
    ):
        """A readable sympy form: exact constants folded by sympy, simplified with
        ``sympy.simplify`` (trees of at most :data:`SIMPLIFY_MAX_NODES` nodes, where it is
        quick), then, given data ``X``, without the additive terms too small to show (see
        :func:`drop_negligible_terms`), then every constant rounded to ``precision``
        significant digits (a constant that rounds to an integer becomes that integer, so
        ``0.9999999999999997 * p`` reads ``p``). The result is for reading; predictions use
        the exact tree.

        Args:
          X: ``None`` or ``(n_samples, n_features)`` rows on which a dropped term must change
            no value beyond the ``precision``-th significant digit.

        Raises:
          ValueError: if ``precision`` is not an integer >= 1, or the tree is more than
            :data:`SYMPY_MAX_HEIGHT` levels high (see :meth:`sympy`).
        """
        import sympy

        expr = self.sympy(feature_names, evaluate=True)
        if simplify and self.n_nodes <= SIMPLIFY_MAX_NODES:
            expr = sympy.simplify(expr)
        if X is not None:
            expr = drop_negligible_terms(expr, X, feature_names, precision)
            if self.n_nodes <= EXPAND_MAX_NODES:
                # a sum hidden in products or quotients: expanded, its terms can be compared;
                # the expanded form is kept only if it loses a term
                expanded = sympy.expand(expr)
                pruned = drop_negligible_terms(expanded, X, feature_names, precision)
                if pruned != expanded:
                    expr = pruned
        return round_constants(expr, precision)

    def readable_string(
        self,
        feature_names: list[str] | None = None,
        precision: int = 4,
        simplify: bool = True,
        X=None,
    ) -> str:
        """:meth:`readable` as text, e.g. ``6.674e-11*x1*x2/x3**2`` (sympy's ``sstr``,
        constants without trailing zeros; a name that is not a plain identifier bracketed,
        ``3*[T/R]/[Node Number]``, see :func:`sympy_text`). A tree more than
        :data:`SYMPY_MAX_HEIGHT` levels high, beyond sympy's reach, reads as its exact
        :meth:`to_string` form."""
        if self.height > SYMPY_MAX_HEIGHT:
            return self.to_string(feature_names)
        return sympy_text(self.readable(feature_names, precision, simplify, X), full_prec=False)

    def to_dict(self) -> dict:
        return {
            "op": [int(v) for v in self.op],
            "value": [float(v) for v in self.value],
            "feature": [int(v) for v in self.feature],
        }

    @classmethod
    def from_dict(
        cls, d: dict, *, path: str = "expression", n_features: int | None = None
    ) -> Expression:
        """Rebuild an expression from :meth:`to_dict`, checking every field.

        Args:
          d: ``{"op": [...], "value": [...], "feature": [...]}``.
          path: the name of ``d`` in error messages (a saved model passes its field,
            ``tree`` or ``front.trees[2]``).
          n_features: the number of input columns, if known: variables must index one.

        Raises:
          ValueError: naming the field (``expression.value[3] is inf; constants must be
            finite``): not an object, a missing or non-list field, an unknown operator
            code, a non-finite constant, a negative (or, with ``n_features``, too large)
            variable index, lists of different lengths, or arrays that are not one tree.
        """
        from .._loading import field, int_array, mapping, real_array

        mapping(d, path)
        op = int_array(field(d, "op", path), f"{path}.op", min_length=1)
        n = op.shape[0]
        bad = np.flatnonzero(~np.isin(op, [CONST, VAR, *OP_SYMBOLS, *UNARY_NAMES]))
        if bad.size:
            raise ValueError(
                f"{path}.op[{bad[0]}] is {op[bad[0]]}, not an operator code "
                f"(CONST={CONST}, VAR={VAR}, + - * / = {ADD}..{DIV}, unary "
                f"{SQRT}..{COS})"
            )
        value = real_array(
            field(d, "value", path), f"{path}.value", length=n, what="constants must be finite"
        )
        top = None if n_features is None else n_features - 1
        feature = int_array(field(d, "feature", path), f"{path}.feature", length=n, min_value=0)
        var = np.flatnonzero(
            (op == VAR) & (feature > (top if top is not None else np.iinfo(np.int32).max))
        )
        if var.size:
            raise ValueError(
                f"{path}.feature[{var[0]}] is {feature[var[0]]}; a variable "
                f"indexes one of the {n_features} input columns "
                f"(0..{n_features - 1})"
            )
        try:
            return cls(op, value, feature)
        except ValueError as err:
            raise ValueError(f"{path} is not one expression tree in pre-order: {err}") from None


SIMPLIFY_MAX_NODES = 25  # sympy.simplify takes about a second or less up to here
# sympy's printers, hashing and xreplace recurse about four Python frames per level of an
# unevaluated tree: at Python's default recursion limit (1000) they fail near 250 levels, and
# the caller's own frames (a notebook, a test runner) come off that. 150 levels leave a wide
# margin and are far above any fitted model (max_nodes=50 allows at most 50 levels).
SYMPY_MAX_HEIGHT = 150


def check_sympy_height(expr: Expression) -> None:
    """Refuse a tree that sympy cannot handle (see :data:`SYMPY_MAX_HEIGHT`).

    Raises:
      ValueError: ``expr`` is more than :data:`SYMPY_MAX_HEIGHT` levels high.
    """
    if expr.height > SYMPY_MAX_HEIGHT:
        raise ValueError(
            f"the expression is {expr.height} levels high; its sympy form is "
            f"limited to SYMPY_MAX_HEIGHT = {SYMPY_MAX_HEIGHT} levels (sympy "
            "recurses per level): use to_string(), evaluate() or to_jax() for "
            "this tree"
        )


EXPAND_MAX_NODES = 61  # sympy.expand, to find negligible terms, only on trees this small


def jax_graph(op, feature, left, right, X, constant_of):
    """The traced JAX outputs of a tree given by its node arrays (the one tree-to-JAX
    builder: :meth:`Expression.to_jax` and the constant refinement of :mod:`.refine` use
    it, with different constants).

    Args:
      op, feature, left, right: ``(n_nodes,)`` int arrays of an :class:`Expression`
        (pre-order; ``left``/``right`` the children's positions).
      X: ``(..., n_features)`` JAX array the variables index.
      constant_of: ``i -> array`` broadcastable to ``X.shape[:-1]``: the value of the
        ``CONST`` node at position ``i``.

    Returns:
      ``X.shape[:-1]`` array: the operations of :meth:`Expression.evaluate`, in the same
      order (so the same rounding).

    The nodes are visited from the last to the first (pre-order puts children after their
    parent), as :meth:`Expression.evaluate` does: no recursion, so a tree of any height
    traces.
    """
    n = len(op)
    out: list = [None] * n
    for i in range(n - 1, -1, -1):
        code = int(op[i])
        if code == CONST:
            out[i] = constant_of(i)
        elif code == VAR:
            out[i] = X[..., int(feature[i])]
        elif code in UNARY_NAMES:
            a = int(left[i])
            out[i], out[a] = _jax_unary(code, out[a]), None
        else:
            a, b = int(left[i]), int(right[i])
            x, y = out[a], out[b]
            out[a] = out[b] = None
            if code == ADD:
                out[i] = x + y
            elif code == SUB:
                out[i] = x - y
            elif code == MUL:
                out[i] = x * y
            elif code == DIV:
                out[i] = x / y
            else:
                raise ValueError(f"unknown operator code {code} at node {i}")
    return out[0]


def _symbol(feature_names, j: int):
    """The sympy symbol of column ``j`` (a name shared by several columns gets ``_<j+1>``)."""
    import sympy

    name = feature_names[j] if feature_names is not None else f"x{j + 1}"
    if feature_names is not None and list(feature_names).count(name) > 1:
        name = f"{name}_{j + 1}"  # duplicate column names stay distinct
    return sympy.Symbol(name)


# Identifiers that print bracketed all the same: the names the printers use for functions and
# constants (the unary operators; the parser's ``inf`` and ``nan``; what sympy's printers may
# write for a simplified readable form: ``E`` for exp(1), ``I``, ``pi``, ``tan`` ...), so
# that ``sqrt*x1`` or ``E*x1`` never reads as a function or a constant.
RESERVED_NAMES = frozenset(UNARY_NAMES.values()) | frozenset(
    (
        "inf",
        "nan",
        "E",
        "I",
        "pi",
        "oo",
        "zoo",
        "tan",
        "cot",
        "sec",
        "csc",
        "sinh",
        "cosh",
        "tanh",
        "coth",
        "asin",
        "acos",
        "atan",
        "atan2",
        "Abs",
        "sign",
        "re",
        "im",
        "arg",
        "Min",
        "Max",
        "Piecewise",
        "exp_polar",
        "LambertW",
    )
)

# LaTeX's special characters in text mode and how ``\text{...}`` writes them.
_LATEX_ESCAPES = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "{": r"\{",
        "}": r"\}",
        "_": r"\_",
        "%": r"\%",
        "&": r"\&",
        "#": r"\#",
        "$": r"\$",
        "^": r"\textasciicircum{}",
        "~": r"\textasciitilde{}",
    }
)


def name_is_plain(name: str) -> bool:
    """True if the feature name ``name`` prints as it is: a Python identifier (``x1``,
    ``mass``, ``T_R``) that is not one of :data:`RESERVED_NAMES`."""
    return name.isidentifier() and _NAME.fullmatch(name) is not None and name not in RESERVED_NAMES


def format_name(name: str) -> str:
    """The feature name ``name`` as the text forms print it: as it is when it is plain
    (:func:`name_is_plain`), else in square brackets with each ``]`` of the name doubled,
    ``T/R -> [T/R]``, ``a]b -> [a]]b]``, which :meth:`Expression.parse` reads back."""
    name = str(name)
    return name if name_is_plain(name) else "[" + name.replace("]", "]]") + "]"


def latex_name(name: str) -> str:
    """The feature name ``name`` as LaTeX (math mode): ``\\text{...}`` with LaTeX's special
    characters escaped (``\\_``, ``\\%``, ``\\&``, ``\\#``, ``\\$``, ``\\{``, ``\\}``, and
    ``\\textbackslash{}``, ``\\textasciicircum{}``, ``\\textasciitilde{}``), e.g.
    ``\\text{T/R}``. Plain names are left to sympy (``x1 -> x_{1}``, ``alpha -> \\alpha``);
    this is the form of the others."""
    return r"\text{" + name.translate(_LATEX_ESCAPES) + "}"


def sympy_text(expr, **settings) -> str:
    """``sympy.sstr(expr, **settings)`` with every symbol whose name is not plain
    (:func:`name_is_plain`) bracketed as :func:`format_name` writes it:
    ``3*[T/R]/[Node Number]`` where ``sympy.sstr`` gives the ambiguous
    ``3*T/R/Node Number``."""
    return _name_printer()(settings).doprint(expr)


def sympy_latex(expr, **settings) -> str:
    """``sympy.latex(expr, **settings)`` with every symbol whose name is not plain written
    as :func:`latex_name` writes it: ``\\frac{3 \\text{T/R}}{\\text{Node Number}}`` where
    ``sympy.latex`` gives ``\\frac{3 T/R}{Node Number}``. Plain names print as sympy prints
    them."""
    import sympy

    names = {
        s: latex_name(s.name)
        for s in expr.atoms(sympy.Symbol)
        if type(s) is sympy.Symbol and not name_is_plain(s.name)
    }
    names.update(settings.pop("symbol_names", None) or {})
    return sympy.latex(expr, symbol_names=names, **settings)


_NAME_PRINTER = []


def _name_printer():
    """sympy's ``StrPrinter`` with bracketed symbol names (the class is made on first use:
    sympy is imported lazily)."""
    if not _NAME_PRINTER:
        from sympy.printing.str import StrPrinter

        class NamePrinter(StrPrinter):
            def _print_Symbol(self, expr):
                return format_name(expr.name)

        _NAME_PRINTER.append(NamePrinter)
    return _NAME_PRINTER[0]


def drop_negligible_terms(expr, X, feature_names=None, precision: int = 4):
    """``expr`` (a sympy sum) without the terms that change no value on ``X`` by more than half
    a unit of its ``precision``-th significant digit.

    Terms are dropped smallest first while, on every row of ``X``, the dropped ones add up to
    at most ``0.5 * 10**-precision * |expr(x)|``: printed to ``precision`` digits, the
    remaining sum gives the same values. A product or quotient is left whole.

    Args:
      expr: sympy expression over the symbols of :meth:`Expression.sympy`.
      X: ``(n_samples, n_features)`` float array.
    """
    import sympy

    if not isinstance(expr, sympy.Add):
        return expr
    X = np.asarray(X, dtype=np.float64)
    cols = {_symbol(feature_names, j): j for j in range(X.shape[1])}

    def values(term):
        syms = sorted(term.free_symbols, key=str)
        if any(s not in cols for s in syms):
            return None
        f = sympy.lambdify(syms, term, "numpy")
        with np.errstate(all="ignore"):
            v = np.broadcast_to(
                np.asarray(f(*[X[:, cols[s]] for s in syms]), np.float64), (X.shape[0],)
            )
        return v if np.all(np.isfinite(v)) else None

    terms = list(expr.args)
    vals = [values(t) for t in terms]
    if any(v is None for v in vals):
        return expr
    total = np.sum(vals, axis=0)
    budget = 0.5 * 10.0 ** (-int(precision)) * np.abs(total)
    order = sorted(
        range(len(terms)),
        key=lambda i: float(np.max(np.abs(vals[i]) / np.maximum(np.abs(total), 1e-300))),
    )
    dropped = np.zeros(X.shape[0])
    keep = set(range(len(terms)))
    for i in order[:-1]:  # never drop every term
        trial = dropped + vals[i]
        if np.all(np.abs(trial) <= budget):
            dropped = trial
            keep.discard(i)
        else:
            break
    return sympy.Add(*[terms[i] for i in sorted(keep)])


def round_constants(expr, precision: int = 4):
    """``expr`` (sympy) with every float rounded to ``precision`` significant digits; one
    that rounds to an integer of at most ``precision`` digits becomes a ``sympy.Integer``
    (``2.0000000001 -> 2``; ``104091.5 -> 1.041e+5``, whose last digits are not known).

    Raises:
      ValueError: if ``precision`` is not an integer >= 1.
    """
    import sympy

    if isinstance(precision, bool) or int(precision) != precision or precision < 1:
        raise ValueError(
            f"precision must be an integer >= 1 (significant digits); got {precision!r}"
        )
    p = int(precision)
    repl = {}
    for f in expr.atoms(sympy.Float):
        v = float(f"{float(f):.{p}g}")
        if np.isfinite(v) and v == np.round(v) and abs(v) < 10.0**p:
            repl[f] = sympy.Integer(int(v))
        else:
            repl[f] = sympy.Float(v, p)
    return expr.xreplace(repl)


def _div(a, b):
    return a / b


_NUMPY_OPS = {ADD: np.add, SUB: np.subtract, MUL: np.multiply, DIV: _div}
_NUMPY_UNARY = {SQRT: np.sqrt, EXP: np.exp, LOG: np.log, SIN: np.sin, COS: np.cos}


def _jax_unary(code, a):
    import jax.numpy as jnp

    return {SQRT: jnp.sqrt, EXP: jnp.exp, LOG: jnp.log, SIN: jnp.sin, COS: jnp.cos}[code](a)


class _SympyUnary(dict):
    def __missing__(self, code):
        import sympy

        fn = {EXP: sympy.exp, LOG: sympy.log, SIN: sympy.sin, COS: sympy.cos}[code]
        self[code] = fn
        return fn


_SYMPY_UNARY = _SympyUnary()
# A bare name: a word that does not start with a digit (every plain name, see
# name_is_plain). A bracketed name: ``[`` then characters other than ``]`` or the pair
# ``]]`` (one ``]`` of the name), then ``]`` not followed by another ``]``. ``inf`` and
# ``nan`` are numbers only as whole words (``info`` is a name).
_NAME = re.compile(r"[^\W\d]\w*")
_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?!\w)|nan(?!\w))"
    r"|(?P<name>[^\W\d]\w*)|\[(?P<bracketed>(?:[^\]]|\]\])*)\](?!\])|`(?P<quoted>[^`]*)`"
    r"|(?P<sym>[-+*/()]))"
)


class _Parser:
    """Infix text to an :class:`Expression`, with explicit stacks instead of recursion.

    Operator precedence parsing (Dijkstra's shunting yard): operands wait on one stack as
    pre-order ``(op, value, feature)`` lists, operators and open parentheses on another,
    so a nesting as deep as the text allows costs memory, not Python stack frames (a
    recursive descent parser fails with ``RecursionError`` near 300 nested parentheses). The
    grammar and the trees are those of the recursive form it replaces: ``+ -`` below
    ``* /``, both left-associative; a prefix ``-`` applies to one factor (``-x1*x2`` is
    ``(0 - x1) * x2``) and ``-`` before a number is a negative constant.
    """

    _PREC = {"+": 1, "-": 1, "*": 2, "/": 2}

    def __init__(self, text: str, feature_names):
        self.text = text
        self.names = None if feature_names is None else [str(n) for n in feature_names]
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                at = len(text) - len(text[pos:].lstrip())
                if text.startswith("[", at):
                    raise ValueError(
                        f"unterminated bracketed name at position {at} of "
                        f"{self.text!r}: a name is written [name], with each ] "
                        "inside it doubled (]])"
                    )
                raise ValueError(f"cannot parse {self.text!r} at position {pos}")
            kind = m.lastgroup
            tok = m.group(kind)
            if kind == "bracketed":
                kind, tok = "quoted", tok.replace("]]", "]")
            self.tokens.append((kind, tok))
            pos = m.end()

    def _missing(self, opener) -> ValueError:
        """The error for an opening ``(`` (or ``name(``) whose ``)`` never comes."""
        if opener[0] == "call":
            return ValueError(f"missing ')' after {opener[2]}( in {self.text!r}")
        return ValueError(f"missing ')' in {self.text!r}")

    def parse(self) -> Expression:
        operands: list[tuple[list, list, list]] = []
        # ("bin", symbol) | ("neg",) | ("(",) | ("call", code, name)
        operators: list[tuple] = []

        def reduce_one():
            top = operators.pop()
            if top[0] == "neg":  # 0 - operand
                o, v, f = operands.pop()
                operands.append(([SUB, CONST] + o, [0.0, 0.0] + v, [0, 0] + f))
            else:
                bo, bv, bf = operands.pop()
                ao, av, af = operands.pop()
                operands.append(([_SYMBOL_OPS[top[1]]] + ao + bo, [0.0] + av + bv, [0] + af + bf))

        def innermost_open():
            for entry in reversed(operators):
                if entry[0] in ("(", "call"):
                    return entry
            return None

        tokens = self.tokens
        n = len(tokens)
        i = 0
        expect_operand = True
        while True:
            kind, tok = tokens[i] if i < n else (None, None)
            if expect_operand:
                i += 1
                if kind == "sym" and tok == "(":
                    operators.append(("(",))
                elif kind == "sym" and tok == "-":
                    if i < n and tokens[i][0] == "num":
                        operands.append(([CONST], [-float(tokens[i][1])], [0]))
                        i += 1
                        expect_operand = False
                    else:
                        operators.append(("neg",))
                elif kind == "num":
                    operands.append(([CONST], [float(tok)], [0]))
                    expect_operand = False
                elif kind == "name" and tok in _UNARY_CODES and i < n and tokens[i] == ("sym", "("):
                    i += 1
                    operators.append(("call", _UNARY_CODES[tok], tok))
                elif kind in ("name", "quoted"):
                    operands.append(([VAR], [0.0], [self._lookup(tok)]))
                    expect_operand = False
                else:
                    raise ValueError(f"unexpected {tok!r} in {self.text!r}")
                continue
            # after an operand: a binary operator, a closing parenthesis or the end
            if kind == "sym" and tok in self._PREC:
                prec = self._PREC[tok]
                while operators and (
                    operators[-1][0] == "neg"
                    or (operators[-1][0] == "bin" and self._PREC[operators[-1][1]] >= prec)
                ):
                    reduce_one()
                operators.append(("bin", tok))
                expect_operand = True
                i += 1
                continue
            if kind == "sym" and tok == ")":
                while operators and operators[-1][0] in ("bin", "neg"):
                    reduce_one()
                if not operators:
                    raise ValueError(f"unexpected {tok!r} in {self.text!r}")
                opener = operators.pop()
                if opener[0] == "call":
                    o, v, f = operands.pop()
                    operands.append(([opener[1]] + o, [0.0] + v, [0] + f))
                i += 1
                continue
            opener = innermost_open()
            if opener is not None:
                raise self._missing(opener)
            if kind is not None:
                raise ValueError(f"unexpected {tok!r} in {self.text!r}")
            break
        while operators:
            reduce_one()
        o, v, f = operands.pop()
        return Expression(o, v, f)

    def _lookup(self, name: str) -> int:
        if self.names is not None:
            if name in self.names:
                return self.names.index(name)
            raise ValueError(f"unknown variable {name!r}; known: {list(self.names)}")
        m = re.fullmatch(r"x(\d+)", name)
        if m and int(m.group(1)) >= 1:
            return int(m.group(1)) - 1
        raise ValueError(f"unknown variable {name!r}; without feature_names use x1, x2, ...")
