"""The one evaluator of a kernel module's constants, for the grammar and for the trusted parent alike.

The grammar hands it every module constant it accepts (and every default and @cuda.jit option, which Python also
works out when it imports the module); `module_constants` (TILE for the grader) returns what it found, so the parent
reads each constant the grammar passes, with the value Python gives it on import: the same operators, the same math
functions and the same NumPy conversions, run here on values that are bounded at every step (rules.MAX_INT_BITS,
MAX_VALUE, MAX_NESTING, MAX_WORK). What it does not work out is a finding that says what to write instead, never a
constant the parent silently leaves out. Values: Python's numbers, strings, None, tuples of values, NumPy scalars
(float32(0.5), np.ceil(x)) and `Dtype` for a dtype named as a constant (DT = float32).
"""
import ast
import math
import operator
import re

import numpy as np

from .rules import (DTYPES, MATH, MATH_VALUES, MAX_INT_BITS, MAX_NESTING, MAX_ROUND_DIGITS, MAX_STRING, MAX_VALUE,
                    MAX_WORK, PURE_CALLS)
from .text import _short

WRITE = "a module constant is made of numbers, arithmetic, tuples, math, dtypes and other constants (TILE = 32)"
DTYPE_USE = ("a dtype constant is named as it is (DT = float32) and used by the kernels; at module level it converts "
             "one number (ZERO = float32(0.0)) and takes part in no arithmetic, comparison or other call")
SHORT = (f"a kernel module's constants are numbers and short strings and tuples (under {MAX_VALUE:,} characters or "
         "elements, as BLOCK = (TILE, TILE))")
# What working a value out may raise: Python's and NumPy's errors (and their warnings where a test escalates them);
# whatever it is, the finding names it, and the parent goes on.
PYTHON_ERRORS = (Exception,)


class Dtype:
    """A dtype named at module level; `path` is its canonical name (numpy.float32, numba.types.float32)."""
    __slots__ = ("path",)

    def __init__(self, path):
        self.path = path

    def __repr__(self):
        return self.path.rsplit(".", 1)[-1]

    def __eq__(self, other):
        return isinstance(other, Dtype) and other.path == self.path

    def __hash__(self):
        return hash(self.path)


class TooBig(ArithmeticError):
    """A constant, or a step of working it out, past a bound (rules.MAX_*)."""


class TooLong(TooBig):
    """A value, or the work of working out the constants, past MAX_VALUE, MAX_NESTING, MAX_WORK or MAX_ROUND_DIGITS;
    the text says the whole of it."""


class Refused(Exception):
    """A construct Python could work out but a kernel module's constants do not use; the text says what to write."""


class _Unknown(Exception):
    """A value that depends on a name with no value here (a notebook's own constant, or one already refused)."""


def _checked(v):
    if type(v) is int and v.bit_length() > MAX_INT_BITS:
        raise TooBig(f"its value needs {v.bit_length():,} bits")
    return v


def _power(a, b):
    if type(a) is int and type(b) is int and b > MAX_INT_BITS and abs(a) > 1 \
            or type(a) is int and type(b) is int and b > 0 and (abs(a).bit_length() - 1) * b > MAX_INT_BITS:
        raise TooBig(f"its value needs more than {MAX_INT_BITS} bits (an exponent of {b})")
    return a ** b


def _shift(a, b):
    if type(b) is int and b > MAX_INT_BITS:
        raise TooBig(f"its value needs more than {MAX_INT_BITS} bits (a shift by {b})")
    return a << b


def _round(x, *n):
    digits = n[0] if n and n[0] is not None and not isinstance(n[0], (float, np.floating)) else 0
    if abs(operator.index(digits)) > MAX_ROUND_DIGITS:
        raise TooLong(f"round(x, n) takes n from -{MAX_ROUND_DIGITS} to {MAX_ROUND_DIGITS}")
    return round(x, *n)


OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
       ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: _power, ast.LShift: _shift,
       ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b,
           ast.NotIn: lambda a, b: a not in b}
BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "float": float, "round": _round}
assert set(BUILTINS) == PURE_CALLS
NUMBERS = (bool, int, float, np.bool_, np.number)
NUMPY_VALUES = {"inf", "nan", "pi", "e"}


def _dtype_cast(path):
    """What calling the dtype at `path` on one number gives, as numba and NumPy do it (numba casts with NumPy's type
    of the same name, its boolean with bool()), or None for a dtype that converts no number (void)."""
    module, name = path.rsplit(".", 1)
    if module == "numpy":
        return getattr(np, name, None)
    if name in ("boolean", "bool_"):
        return bool
    return getattr(np, {"intp": "int64", "uintp": "uint64"}.get(name, name), None)


def _finding(node, exc):
    """(line, "line N: <the statement>: why") for a value that could not be worked out."""
    if isinstance(exc, TooLong):
        why = str(exc)
    elif isinstance(exc, TooBig):
        why = f"{exc}; a kernel module's constants fit in {MAX_INT_BITS} bits (TILE = 16, BM = 2 * 64)"
    elif isinstance(exc, Refused):
        why = str(exc)
    else:
        text = re.sub(r"\s+", " ", str(exc))
        text = text if len(text) <= 80 else text[:77] + "..."
        why = (f"Python cannot work this out ({type(exc).__name__}: {text}); a module constant is a number a "
               "kernel can use (TILE = 16)")
    return node.lineno, f"line {node.lineno}: {_short(node)}: {why}"


class Constants:
    """The values of one module's constants, worked out in the module's order. `resolve(node)` is the grammar's: the
    canonical path of a name of an import ("numpy.float32"), or the plain name. `found` is {name: (value, line)}."""

    def __init__(self, resolve, unknown=()):
        self.resolve, self.found, self.unknown = resolve, {}, set(unknown)
        self.work, self.sizes = 0, {}  # sizes: id -> (tuple, size, depth, holds a dtype), the tuple kept alive

    # -- what the grammar asks -------------------------------------------------------------------
    def assign(self, node):
        """Work out the assignment `node` (Assign or AnnAssign) and bind its plain names; returns the finding
        "line N: ...: why" where its value cannot be worked out, else None."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        finding = None
        try:
            value = self.value(node.value)
            for t in targets:
                self.bind(t, value, node.lineno)
            return None
        except _Unknown:
            pass
        except PYTHON_ERRORS + (Refused,) as exc:
            finding = _finding(node, exc)
        self.forget(node)
        return finding

    def forget(self, node):
        """The grammar refused the assignment: its names have no value here (and cost no second finding)."""
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            for name in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(name, ast.Name):
                    self.found.pop(name.id, None)
                    self.unknown.add(name.id)

    def check(self, node, at):
        """A default or a @cuda.jit option, which Python works out on import: the finding (shown as `at`), or None."""
        try:
            self.value(node)
        except _Unknown:
            pass
        except PYTHON_ERRORS + (Refused,) as exc:
            return _finding(at, exc)
        return None

    def bind(self, target, value, line):
        if isinstance(target, ast.Name):
            self.found[target.id] = (value, line)
            self.unknown.discard(target.id)
        elif isinstance(target, ast.Tuple):
            if isinstance(value, Dtype) or self.holds_dtype(value) is None:
                raise Refused(DTYPE_USE) if isinstance(value, Dtype) else \
                    TypeError(f"cannot unpack non-iterable {type(value).__name__} object")
            items = tuple(value)
            if len(items) != len(target.elts):
                raise ValueError(f"{'too many' if len(items) > len(target.elts) else 'not enough'} values to unpack "
                                 f"(expected {len(target.elts)}, got {len(items)})")
            for t, v in zip(target.elts, items):
                self.bind(t, v, line)
        # other targets: the grammar's findings (module constants are plain names)

    # -- bounds ---------------------------------------------------------------------------------
    def charge(self, pieces):
        self.work += pieces
        if self.work > MAX_WORK:
            raise TooLong(f"working out the module's constants touches more than {MAX_WORK:,} pieces of values (long "
                         "strings or tuples built over and over)")

    def size(self, v):
        """Pieces of `v` (a string's characters, a tuple's elements in full); a new tuple is checked and kept."""
        if isinstance(v, (str, bytes)):
            return max(1, len(v))
        if type(v) is not tuple:
            return 1
        hit = self.sizes.get(id(v))
        if hit is None or hit[0] is not v:
            parts = [self.sizes_of(e) for e in v]
            hit = (v, 1 + sum(p[0] for p in parts), 1 + max((p[1] for p in parts), default=0),
                   any(p[2] for p in parts))
            self.sizes[id(v)] = hit
        return hit[1]

    def sizes_of(self, v):
        self.size(v)
        if type(v) is tuple:
            return self.sizes[id(v)][1:]
        return self.size(v), 0, isinstance(v, Dtype)

    def holds_dtype(self, v):
        """True if `v` is or holds a dtype, False if not, None for a value that is not a sequence or a dtype."""
        if isinstance(v, Dtype):
            return True
        if type(v) is tuple:
            self.size(v)
            return self.sizes[id(v)][3]
        return False if isinstance(v, (str, bytes)) else None

    def result(self, v):
        """`v` within the bounds (else TooLong or TooBig), and a value a constant may hold (else Refused)."""
        if type(v) is tuple or isinstance(v, (str, bytes)):
            size = self.size(v)
            if size > MAX_VALUE:
                raise TooLong(f"a value of {size:,} pieces; {SHORT}")
            if type(v) is tuple and self.sizes[id(v)][2] > MAX_NESTING:
                raise TooLong(f"tuples nested more than {MAX_NESTING} deep; {SHORT}")
            self.charge(size)
        elif isinstance(v, complex) and not isinstance(v, np.generic):
            pass
        elif isinstance(v, np.ndarray):
            raise Refused("a NumPy number with a tuple makes an array; a module constant is a number or a tuple of "
                          "numbers (BLOCK = (TILE, TILE))")
        elif not isinstance(v, NUMBERS + (Dtype, type(None), type(Ellipsis))):
            raise Refused(f"its value is {type(v).__name__}, not a number; {WRITE}")
        return _checked(v)

    def no_dtype(self, *values):
        for v in values:
            self.charge(self.size(v))
            if self.holds_dtype(v):
                raise Refused(DTYPE_USE)

    # -- values ---------------------------------------------------------------------------------
    def value(self, node):
        """The value of expression `node`, as Python gives it on import; raises where Python would, past a bound
        (TooBig), for a construct constants do not use (Refused), or where it depends on an unknown name."""
        self.charge(1)
        if isinstance(node, ast.Constant):
            v = node.value
            if type(v) is int and v.bit_length() > MAX_INT_BITS or isinstance(v, (str, bytes)) and len(v) > MAX_STRING:
                raise _Unknown  # a literal past a bound: the reader names it
            return self.result(v)
        if isinstance(node, ast.Tuple):
            return self.result(tuple(self.value(e) for e in node.elts))
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.named(node)
        if isinstance(node, ast.BinOp) and type(node.op) in OPS:
            return self.binary(node.op, self.value(node.left), self.value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            v = self.value(node.operand)
            if not isinstance(node.op, ast.Not):
                self.no_dtype(v)
            return self.result(UNARY[type(node.op)](v))
        if isinstance(node, ast.BoolOp):
            v = None
            for operand in node.values:
                v = self.value(operand)
                if bool(v) == isinstance(node.op, ast.Or):
                    break
            return v
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if self.value(node.test) else self.value(node.orelse)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise Refused(WRITE)

    def named(self, node):
        if isinstance(node, ast.Name) and node.id in self.found:
            return self.found[node.id][0]
        if isinstance(node, ast.Name) and node.id in self.unknown:
            raise _Unknown
        path = self.resolve(node)
        if isinstance(node, ast.Attribute) and (path is None or "." not in path):
            raise Refused(f"a module constant reads no attributes (.{node.attr} of {_short(node.value)}): write the "
                          "value itself (TILE = 32)")
        module, _, name = (path or "").rpartition(".")
        if module == "math" and name in MATH_VALUES or module == "numpy" and name in NUMPY_VALUES:
            return float(getattr(math if module == "math" else np, name))
        if module in ("numpy", "numba", "numba.types") and name in DTYPES | {"void"}:
            return Dtype(("numba.types." if module.startswith("numba") else "numpy.") + name)
        if module in ("math", "numpy"):
            raise Refused(f"{_short(node)} is a function: call it (X = {_short(node)}(...)), or use it in a kernel")
        raise Refused(WRITE)  # a name the grammar refuses too

    def binary(self, op, a, b):
        self.no_dtype(a, b)
        if isinstance(op, ast.Mod) and isinstance(a, (str, bytes)):
            raise Refused("% formats a string; a kernel module's strings are literals (print the values separately)")
        if isinstance(op, ast.Mult):
            for seq, n in ((a, b), (b, a)):
                if isinstance(seq, (str, bytes, tuple)) and not isinstance(n, (str, bytes, tuple)):
                    try:
                        n = operator.index(n)
                    except TypeError:
                        break  # Python's own TypeError, below
                    if n > 1 and (self.size(seq) - (type(seq) is tuple)) * n > MAX_VALUE:
                        raise TooLong(f"a value of more than {MAX_VALUE:,} pieces; {SHORT}")
        with np.errstate(all="ignore"):  # NumPy warns and goes on (int32 overflow wraps) on import too
            return self.result(OPS[type(op)](a, b))

    def compare(self, node):
        if any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            raise Refused("is compares objects, not values: write == or !=")
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node)
            self.no_dtype(left, right)
            with np.errstate(all="ignore"):
                result = self.result(COMPARE[type(op)](left, right))
            if not result:
                return result  # Python's chain gives the comparison's own value (np.False_ for NumPy scalars)
            left = right
        return result

    def subscript(self, node):
        v = self.value(node.value)
        if isinstance(v, Dtype):
            raise Refused(DTYPE_USE + " (an array type goes in a signature: @cuda.jit('void(float32[:, ::1], ...)'))")
        s = node.slice
        if isinstance(s, ast.Slice):
            index = slice(*(None if p is None else self.value(p) for p in (s.lower, s.upper, s.step)))
        else:
            index = self.value(s)
        self.no_dtype(index)
        return self.result(v[index])

    def call(self, node):
        if node.keywords:
            raise Refused(WRITE)
        path = self.resolve(node.func)
        module, _, name = (path or "").rpartition(".")
        args = [self.value(a) for a in node.args]
        if module in ("numpy", "numba", "numba.types") and name in DTYPES | {"void"}:
            cast = _dtype_cast(f"{module}.{name}")
            if cast is None or len(args) != 1 or not isinstance(args[0], NUMBERS):
                raise Refused(DTYPE_USE)
            with np.errstate(all="ignore"):
                return self.result(cast(args[0]))
        self.no_dtype(*args)
        if not module and name in BUILTINS:
            return self.result(BUILTINS[name](*args))
        if module == "math" and name in MATH:
            return self.result(getattr(math, name)(*args))
        if module == "numpy" and name in ("ceil", "floor"):
            if len(args) != 1 or not isinstance(args[0], NUMBERS):
                raise Refused(f"np.{name} takes one number in a module constant (BLOCKS = int(np.{name}(1000 / TILE)))")
            with np.errstate(all="ignore"):
                return self.result(getattr(np, name)(args[0]))
        raise Refused(WRITE)
