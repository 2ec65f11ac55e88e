"""Trusted parent side: the grammar of a kernel module, checked on its text before any child runs.

An allowlist, not a denylist. A kernel module may hold:
- imports of ``math``, of ``numpy`` (its dtypes and constants) and of ``numba``, ``numba.cuda`` and
  ``numba.types`` (the CUDA kernel API and dtypes); no other module and no other submodule;
- module constants made of literals, arithmetic, tuples and other constants;
- ``@cuda.jit`` kernels and ``@cuda.jit(device=True)`` helpers, whose bodies use locals, array
  subscripts, arithmetic, ``if``/``for ... in range``/``while``/``return`` and calls to the CUDA kernel
  API, ``math``, dtypes, a few builtins and the module's device functions;
- plain functions (launchers and their helpers) that read ``.shape``/``.size``/``.dtype`` of their arguments,
  compute a grid (``math.ceil`` or ``np.ceil``), launch kernels as ``kernel[grid, block](A, B, C)`` and may call
  ``cuda.synchronize()`` (a no-op while the grader records the launches: child/launches.py);
- a student's own test under ``if __name__ == "__main__":`` (that exact test, no ``else``), which is not read:
  grading children import the module under its stage's name, so the block never runs there.
Every attribute is allowed by name for the kind of object it is read from; every name must be defined
in the module or be one of a few builtins. Nothing can assign to an attribute or to anything outside a
function's locals, and there are no dunder names, classes, lambdas, ``try``, ``with``, ``global``,
comprehensions, starred calls, format strings or names built from strings. Student Python that would
reach the grader from inside the child (``sys.modules`` through numba's own modules, frames, ``gc``,
``ctypes``) needs one of those, so a module that passes cannot reach it; in the simulator tier, where
kernel bodies run as Python, this grammar is the whole defence.

``violations(source)`` lists "line N: <construct>: <rule>" findings; any finding zeroes the stage
(checks/shortcuts.py). The parent reads a module within bounds (MAX_SOURCE_CHARS and the other MAX_ names below):
text past them, or that Python itself cannot read (nesting too deep for its parser, an integer past its digit
limit), is a finding too, never a crash or a hang of the grader. ``module_constants(source)`` works out the
number constants (TILE) within the same bounds.
"""
import ast
import copy
import re

from .reading.source import lines as source_lines

DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "complex64", "complex128", "boolean", "bool_", "intp", "uintp"}
VECTOR_TYPES = {f"{t}x{n}" for t in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                     "uint32", "uint64") for n in (1, 2, 3, 4)}
MATH = {"ceil", "floor", "trunc", "sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "pow", "fabs",
        "fmod", "copysign", "isnan", "isinf", "isfinite", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
        "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "hypot", "erf", "erfc", "gamma", "lgamma", "ldexp",
        "frexp", "modf", "remainder", "degrees", "radians", "gcd", "isqrt"}
MATH_VALUES = {"pi", "e", "tau", "inf", "nan"}
# The CUDA kernel API a kernel may call: each one compiles for the GPU and runs in the simulator tier too (the warp
# functions and the cache-hint loads and stores through autograder/sim/warp.py; tests/test_warp.py checks each
# against a NumPy model). cuda.activemask() is left out (WARP_REFUSED says why).
CUDA_CALLS = {"grid", "gridsize", "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or",
              "syncwarp", "threadfence", "threadfence_block", "threadfence_system", "fma", "cbrt", "brev", "clz",
              "ffs", "popc", "selp", "lanemask_lt", "shfl_sync", "shfl_up_sync", "shfl_down_sync",
              "shfl_xor_sync", "all_sync", "any_sync", "eq_sync", "ballot_sync", "match_any_sync",
              "match_all_sync", "ldca", "ldcg", "ldcs", "ldlu", "ldcv", "stcg", "stcs", "stwb", "stwt"}
WARP_REFUSED = {"activemask": "reports which lanes of a warp the GPU happens to run together at that moment, which the "
                              "simulator tier cannot know, so its results there would not be the GPU's: name the "
                              "lanes yourself (0xFFFFFFFF for a whole warp, or a mask worked out from cuda.laneid)"}
ATOMICS = {"add", "sub", "and_", "or_", "xor", "max", "min", "nanmax", "nanmin", "inc", "dec", "exch",
           "compare_and_swap", "cas"}
DIM3 = ("threadIdx", "blockIdx", "blockDim", "gridDim")

# Where a name of an allowed module may be used: "kernel" (in kernel bodies), "any" (anywhere: dtypes, math),
# "namespace" (only as the base of a longer name), "jit" (only as a decorator).
PATHS = {"math": "namespace", "numpy": "namespace", "numba": "namespace", "numba.cuda": "namespace",
         "numba.types": "namespace", "numba.cuda.shared": "namespace", "numba.cuda.local": "namespace",
         "numba.cuda.const": "namespace", "numba.cuda.atomic": "namespace", "numba.cuda.jit": "jit",
         "numba.cuda.shared.array": "kernel", "numba.cuda.local.array": "kernel",
         "numba.cuda.const.array_like": "kernel", "numba.cuda.laneid": "kernel", "numba.cuda.warpsize": "kernel"}
PATHS.update({f"math.{n}": "any" for n in MATH | MATH_VALUES})
PATHS.update({f"numpy.{n}": "any" for n in DTYPES - {"boolean"} | {"inf", "nan", "pi", "e"}})
PATHS.update({f"{m}.{n}": "any" for m in ("numba", "numba.types") for n in DTYPES | {"void"}})
PATHS.update({f"numba.cuda.{n}": "kernel" for n in CUDA_CALLS | VECTOR_TYPES | set(DIM3)})
PATHS.update({f"numba.cuda.{d}.{a}": "kernel" for d in DIM3 for a in "xyz"})
PATHS.update({f"numba.cuda.atomic.{n}": "kernel" for n in ATOMICS})
# "host": called in a launcher or a constant only (np.ceil for a grid); "sync": called as cuda.synchronize() in a
# launcher only, which waits for nothing while the grader records the launches (child/launches.py).
PATHS.update({"numpy.ceil": "host", "numpy.floor": "host", "numba.cuda.synchronize": "sync"})
MODULES = {"math", "numpy", "numba", "numba.cuda", "numba.types"}

# Attributes of anything that is not a module: an array's shape and size, a dim3's or vector's fields.
VALUE_ATTRS = {"shape", "size", "ndim", "dtype", "x", "y", "z", "w"}
KERNEL_BUILTINS = {"range", "min", "max", "abs", "int", "float", "bool", "len", "round", "print"}
HOST_BUILTINS = {"range", "min", "max", "abs", "int", "float", "bool", "len", "round", "print", "divmod"}
EXCEPTIONS = {"NotImplementedError", "ValueError", "IndexError", "TypeError", "RuntimeError", "AssertionError"}
PURE_CALLS = {"min", "max", "abs", "int", "float", "round"}
BUILTIN_KEYWORDS = {"print": {"sep", "end", "flush"}}
JIT_OPTIONS = {"device", "fastmath", "inline", "forceinline", "max_registers", "lineinfo", "opt", "debug",
               "launch_bounds", "shared_memory_carveout"}

# The student contract in short (the feedback page shows it; README's table says the same): rule, example.
CONTRACT = [
    ("imports of math, numpy's dtypes, numba, numba.cuda and numba.types", "from numba import cuda, float32"),
    ("module constants of literals, arithmetic and other constants", "TILE_PAD = TILE + 1"),
    ("@cuda.jit kernels and @cuda.jit(device=True) helpers", "@cuda.jit(device=True, inline=True)"),
    ("in kernels: locals, array elements, if, for ... in range, while, cuda.*, math.*, dtypes, min, max, abs, "
     "print and the module's device functions", "acc += sA[ty, k] * sB[k, tx]"),
    ("launchers that read .shape, .size and .dtype and launch the module's kernels",
     "matmul_tiled_kernel[blocks, (TILE, TILE)](A, B, C)"),
    ("your own test, if you keep one, under if __name__ == \"__main__\": (it never runs when the grader imports "
     "the module, so the grammar does not read it)", "if __name__ == \"__main__\":"),
    ("nothing else: no other import, attribute assignment, __dunder__ name, class, lambda, try, with, "
     "comprehension, f-string or code that runs at import", "not A.copy_to_host(), np.zeros(...), "
                                                          "matmul_naive(A, B, C) at module level"),
]

# Why an attribute or name a student may reach for is not in a kernel module (the common honest mistakes first).
EXPLAIN = {
    "copy_to_host": "copies an operand to the host", "copy_to_device": "writes host data into a device array",
    "to_device": "moves host data to the GPU: the kernels get A, B and C only",
    "device_array": "allocates memory of its own: the kernels get A, B and C only",
    "synchronize": "is the grader's: it synchronises and times the launches (a launcher may call "
                   "cuda.synchronize(), or leave it out)",
    "event": "is the grader's: it times the launches",
    "stream": "makes a stream of its own: launch on the default stream",
    "matmul": "multiplies matrices on the host", "dot": "multiplies matrices on the host",
    "einsum": "multiplies matrices on the host", "tensordot": "multiplies matrices on the host",
    "linalg": "uses a host linear-algebra library",
    "cudadrv": "reaches the CUDA driver API (raw memory, streams, persisting-L2 windows): kernels and launches only",
    "_ary": "reaches into the simulator's host array",
    "T": "transposes on the host: read B's elements in the order you need inside the kernel",
    "astype": "converts an array on the host: for a number write int(x) or float32(x)",
}
EXPLAIN.update({n: "allocates an array of its own: the kernels get A, B and C only (the grader allocates C; your "
                   "kernel writes each of its elements)" for n in (
    "zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like", "asarray",
    "ascontiguousarray")})
EXPLAIN.update(WARP_REFUSED)
CALL_EXPLAIN = {n: "which a kernel module does not need" for n in (
    "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "vars", "locals", "open",
    "input", "breakpoint", "memoryview", "type", "object", "super", "id", "hasattr", "isinstance", "iter", "next",
    "dir", "help", "exit", "quit")}
NODE_NAMES = {
    ast.ClassDef: "a class", ast.Lambda: "a lambda", ast.Try: "try", ast.With: "with", ast.AsyncWith: "with",
    ast.Global: "global", ast.Nonlocal: "nonlocal", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression", ast.JoinedStr: "a format string",
    ast.Starred: "a starred argument", ast.NamedExpr: "the := operator", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Await: "await", ast.AsyncFunctionDef: "an async function", ast.Delete: "del",
    ast.Dict: "a dict", ast.Set: "a set", ast.List: "a list (use a tuple)", ast.Import: "an import",
    ast.ImportFrom: "an import", ast.FunctionDef: "a nested function", ast.Match: "match",
    ast.Expr: "an expression statement", ast.AugAssign: "an augmented assignment", ast.If: "if", ast.For: "a loop", ast.While: "a loop",
    ast.Attribute: "an attribute", ast.Subscript: "an index",
}
if hasattr(ast, "TryStar"):
    NODE_NAMES[ast.TryStar] = "try"
CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # PEP 263
NOT_IN_A_MODULE = "a kernel module holds only imports, constants, kernels and launchers"
STATE = "a kernel module may not change numba's, NumPy's or the grader's objects"

# Bounds on what the trusted parent reads (the course's modules stay far inside them: a few KB, nesting under 25,
# constants under 2**32), so that no student text can hang or crash the grader.
MAX_SOURCE_CHARS = 1_000_000   # the module's text (a notebook's graded cells joined)
MAX_NODES = 100_000            # nodes of its syntax tree
MAX_DEPTH = 100                # nesting of the syntax tree, statements and expressions together (1+1+...+1 nests:
#                                a 64-term unrolled sum in a loop is about 75; the grammar recurses ~3 frames a level)
MAX_STRING = 100_000           # characters of one string literal (docstrings included)
MAX_SIGNATURE = 1_000          # characters of a signature string, which the grammar parses as a type expression
MAX_INT_BITS = 128             # an integer literal, a constant's value and every step of working it out


def is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _path(node):
    """The dotted name of a Name/Attribute chain ("cuda.shared.array"), or None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


class _Module:
    """What the module's top level binds: imports (name -> canonical path), constants and functions by role."""

    def __init__(self):
        self.imports, self.constants, self.functions = {}, set(), {}  # functions: name -> kernel/device/host

    def defined(self):
        return set(self.imports) | self.constants | set(self.functions)


class Grammar:
    """One module's check; `findings` holds "line N: construct: rule" strings."""

    def __init__(self, tree, predefined=None):
        self.tree, self.findings, self.m, self.current, self.tuples = tree, [], _Module(), None, {}
        for name, role in (predefined or {}).items():  # names the self-check finds in a notebook's namespace
            if role in ("kernel", "device", "host"):
                self.m.functions[name] = role
            elif role == "constant":
                self.m.constants.add(name)
            else:
                self.m.imports[name] = role

    def flag(self, node, construct, rule):
        self.findings.append((getattr(node, "lineno", 0), f"line {getattr(node, 'lineno', '?')}: {construct}: {rule}"))

    # -- the top level --------------------------------------------------------------------
    def check(self):
        body = self.tree.body
        for node in body:  # every function is known before any body is read: they may call each other
            if isinstance(node, ast.FunctionDef):
                self.bind(node, node.name, self.function_role(node))
        for node in body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                continue  # a docstring or a comment written as a string
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.check_import(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self.check_constant(node)
            elif isinstance(node, ast.FunctionDef):
                self.check_function(node)
            elif isinstance(node, ast.If) and _is_main_guard(node.test):
                # A student's own test: never run where the grader imports the module (a grading child names it
                # after its stage, and nothing in a module that passes can rebind __name__), so it is not read;
                # nothing it defines is defined for the rest of the module. An else branch would run: not allowed.
                if node.orelse:
                    self.flag(node.orelse[0], "an else branch of if __name__ == \"__main__\"",
                              "it runs when the grader imports the module: delete it (the test under the if may "
                              "stay)")
            elif isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                                  for n in ast.walk(node.test)):
                self.flag(node, f"if {_short(node.test)}",
                          "only the exact test if __name__ == \"__main__\": keeps a test from running when the "
                          "grader imports the module: write that, or move the test to the notebook")
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                self.flag(node, f"a call at module level ({_short(node.value)})",
                          "a kernel module runs nothing when it is imported: call your launcher from the self-check "
                          "or a file of its own")
            else:
                self.flag(node, _construct(node), NOT_IN_A_MODULE)
        return sorted(set(self.findings))

    def bind(self, node, name, role):
        if is_dunder(name):
            self.flag(node, f"the name {name}", "dunder names reach Python's internals")
        elif name in self.m.defined():
            self.flag(node, f"{name} defined twice", "each module-level name is defined once")
        elif name in HOST_BUILTINS | KERNEL_BUILTINS | EXCEPTIONS:
            self.flag(node, f"the name {name}", f"it would hide Python's {name}: choose another name")
        elif role == "constant":
            self.m.constants.add(name)
        elif role in ("kernel", "device", "host"):
            self.m.functions[name] = role
        else:
            self.m.imports[name] = role

    def check_import(self, node):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "__future__" and not node.level and all(a.name == "annotations" for a in node.names):
                return
            if node.level or module not in MODULES:
                self.flag(node, f"imports from {'.' * node.level}{module}", _why_import(module))
                return
            for alias in node.names:
                path = f"{module}.{alias.name}"
                if alias.name == "*":
                    self.flag(node, f"from {module} import *", "import the names you use, one by one")
                elif path in MODULES or path in PATHS:
                    self.bind(node, alias.asname or alias.name, path)
                else:
                    self.flag(node, f"imports {path}", _not_allowed(path))
            return
        for alias in node.names:
            if alias.name not in MODULES:
                self.flag(node, f"imports {alias.name}", _why_import(alias.name))
            elif alias.asname:
                self.bind(node, alias.asname, alias.name)
            else:
                root = alias.name.split(".")[0]
                if self.m.imports.get(root) != root:
                    self.bind(node, root, root)

    def check_constant(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if isinstance(node, ast.AnnAssign):
            self.annotation(node.annotation)
            if node.value is None:
                self.flag(node, "a declaration without a value", "give the constant its value")
        if node.value is not None:
            self.constant_expr(node.value)
        for target in targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            for t in names:
                if isinstance(t, ast.Name):
                    self.bind(t, t.id, "constant")
                elif isinstance(t, (ast.Attribute, ast.Subscript)):
                    self.flag(t, f"assignment to {_short(t)}", STATE)
                else:
                    self.flag(t, f"assignment to {_short(t)}", "module constants are plain names")

    def constant_expr(self, node):
        """Literals, arithmetic, tuples, other constants, dtypes and pure calls (math, min, max, int, dtypes)."""
        if isinstance(node, ast.Call):
            func = self.resolve(node.func)
            if not (func in PURE_CALLS or (isinstance(func, str) and PATHS.get(func) in ("any", "host"))) \
                    or node.keywords:
                self.flag(node, f"a call at module level ({_short(node)})",
                          "module constants are made of literals, arithmetic and other constants")
                return
            for a in node.args:
                self.constant_expr(a)
        elif isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple)):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                self.flag(node, f"the @ operator ({_short(node)})", "a host-side matrix product")
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.constant_expr(child)
        else:
            self.expr(node, "host", set())

    # -- functions ----------------------------------------------------------------------------
    def function_role(self, node):
        """kernel, device (a @cuda.jit(device=True) helper) or host (a launcher or its helper). numba reads `device`
        as true or false (``if device:``), so device=1 or device="yes" declares a device function as device=True
        does: a kernel calls it, a launcher never launches it."""
        if not node.decorator_list:
            return "host"
        dec = node.decorator_list[0]
        call = dec if isinstance(dec, ast.Call) else None
        for k in call.keywords if call else ():
            if k.arg == "device":
                try:
                    return "device" if ast.literal_eval(k.value) else "kernel"
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return "device"  # not a literal, which check_decorators flags: never a kernel to launch
        return "kernel"

    def check_decorators(self, node):
        if len(node.decorator_list) > 1:
            self.flag(node.decorator_list[1], "a second decorator", "kernels take one decorator, @cuda.jit")
        for dec in node.decorator_list[:1]:
            func = dec.func if isinstance(dec, ast.Call) else dec
            if self.resolve(func) != "numba.cuda.jit":
                self.flag(dec, f"the decorator @{_short(dec)}", "the one decorator a kernel module uses is @cuda.jit")
                continue
            if not isinstance(dec, ast.Call):
                continue
            for arg in dec.args:
                self.signature(arg)
            for kw in dec.keywords:
                if kw.arg not in JIT_OPTIONS:
                    self.flag(dec, f"cuda.jit({kw.arg or '**'}=...)",
                              f"the options a kernel may set are {', '.join(sorted(JIT_OPTIONS))}")
                elif not all(isinstance(v, (ast.Constant, ast.Tuple)) for v in [kw.value]):
                    self.flag(dec, f"cuda.jit({kw.arg}=...)", "an option's value is a literal")
                else:
                    self.constant_expr(kw.value)

    def signature(self, node):
        """An explicit signature: a type expression, or a string holding one (numba evaluates such strings)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            quoted = repr(node.value[:40] + ("..." if len(node.value) > 40 else ""))
            if len(node.value) > MAX_STRING:
                return  # named as a string past MAX_STRING (_bounded_tree)
            if len(node.value) > MAX_SIGNATURE:
                self.flag(node, f"the signature {quoted}", f"a signature string of {len(node.value):,} characters; "
                          "a signature names the argument types only, as 'void(float32[:, ::1], float32[:, ::1], "
                          "float32[:, ::1])'")
                return
            try:
                parsed = ast.parse(node.value.strip(), mode="eval")
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                parsed = None
            if parsed is None or _bounded_tree(parsed, [])[0] is None:
                self.flag(node, f"the signature {quoted}", "not a type expression: write one as "
                                                           "'void(float32[:, ::1], float32[:, ::1], float32[:, ::1])'")
                return
            parsed = parsed.body
            names = {n: f"numba.types.{n}" for n in DTYPES | {"void"}}
            self.type_expr(parsed, lambda n: names.get(n.id) if isinstance(n, ast.Name) else None, node)
        else:
            self.type_expr(node, self.resolve, node)

    def type_expr(self, node, resolve, at):
        ok = True
        if isinstance(node, (ast.Name, ast.Attribute)):
            path = resolve(node)
            ok = isinstance(path, str) and path.rsplit(".", 1)[-1] in DTYPES | {"void"} and PATHS.get(path) == "any"
        elif isinstance(node, ast.Call):
            ok = not node.keywords
            self.type_expr(node.func, resolve, at)
            for a in node.args:
                self.type_expr(a, resolve, at)
        elif isinstance(node, ast.Subscript):
            self.type_expr(node.value, resolve, at)
            dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            ok = all(isinstance(d, ast.Slice) and all(p is None or (isinstance(p, ast.Constant) and
                                                                    isinstance(p.value, int))
                                                      for p in (d.lower, d.upper, d.step)) for d in dims)
        elif isinstance(node, ast.Tuple):
            for e in node.elts:
                self.type_expr(e, resolve, at)
        else:
            ok = False
        if not ok:
            self.flag(at, f"the signature part {_short(node)}",
                      "a signature names dtypes and array types only, as void(float32[:, ::1], ...)")

    def check_function(self, node):
        self.current = node.name
        role = self.m.functions.get(node.name)
        self.check_decorators(node)
        ctx = "host" if role == "host" else "kernel"
        args = node.args
        if args.vararg or args.kwarg:
            self.flag(node, f"*args or **kwargs in {node.name}", "list the parameters by name")
        params = [a for a in args.posonlyargs + args.args + args.kwonlyargs]
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.constant_expr(default)
        for a in params:
            if a.annotation is not None:
                self.annotation(a.annotation)
        if node.returns is not None:
            self.annotation(node.returns)
        if getattr(node, "type_params", None):
            self.flag(node, "type parameters", NOT_IN_A_MODULE)
        local = {a.arg for a in params}
        for sub in ast.walk(node):
            if sub is not node and isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
        for name in sorted(local):
            if is_dunder(name):
                self.flag(node, f"the name {name}", "dunder names reach Python's internals")
            elif name in self.m.imports or name in self.m.functions:
                self.flag(node, f"the local name {name} in {node.name}",
                          f"it hides the module's {name}: choose another name")
        self.tuples = {}  # local name -> True while every assignment to it is a tuple literal or a .shape
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                value = getattr(sub, "value", None)
                plain = isinstance(value, ast.Tuple) or (isinstance(value, ast.Attribute) and value.attr == "shape")
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.tuples[t.id] = self.tuples.get(t.id, True) and plain and not isinstance(sub, ast.For)
        for a in params:
            self.tuples[a.arg] = False
        self.block(node.body, ctx, local)

    def annotation(self, node):
        """Type hints: names, dotted names, strings, None and X | Y, X[Y]; nothing that calls."""
        for sub in ast.walk(node):
            if not isinstance(sub, (ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.BitOr, ast.Subscript,
                                    ast.Tuple, ast.Load)):
                self.flag(node, f"the type hint {_short(node)}", "type hints are names, as A: DeviceNDArray")
                return
            if isinstance(sub, ast.Name) and is_dunder(sub.id) or isinstance(sub, ast.Attribute):
                self.flag(node, f"the type hint {_short(node)}", "type hints are plain names, as A: DeviceNDArray")
                return

    def block(self, body, ctx, local):
        for stmt in body:
            self.statement(stmt, ctx, local)

    def statement(self, node, ctx, local):
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return
            if not isinstance(node.value, ast.Call):
                self.flag(node, _short(node), "a statement that does nothing")
            self.expr(node.value, ctx, local)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                self.target(t, ctx, local)
            if isinstance(node, ast.AnnAssign):
                self.annotation(node.annotation)
            if node.value is not None:
                self.expr(node.value, ctx, local)
        elif isinstance(node, ast.For):
            self.target(node.target, ctx, local)
            if not (isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)
                    and node.iter.func.id == "range" and "range" not in local):
                self.flag(node, f"for ... in {_short(node.iter)}", "loops run over range(...)")
            self.expr(node.iter, ctx, local)
            self.block(node.body + node.orelse, ctx, local)
        elif isinstance(node, (ast.While, ast.If)):
            self.expr(node.test, ctx, local)
            self.block(node.body + node.orelse, ctx, local)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.expr(node.value, ctx, local)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
            pass
        elif isinstance(node, ast.Assert):
            self.expr(node.test, ctx, local)
            if node.msg is not None:
                self.expr(node.msg, ctx, local)
        elif isinstance(node, ast.Raise):
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if node.cause is not None or not (isinstance(exc, ast.Name) and exc.id in EXCEPTIONS):
                self.flag(node, _short(node), f"raise one of {', '.join(sorted(EXCEPTIONS))}")
            if isinstance(node.exc, ast.Call):
                for a in node.exc.args:
                    self.expr(a, ctx, local)
                if node.exc.keywords:
                    self.flag(node, _short(node), "an exception takes its message only")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.flag(node, "an import inside a function", "imports go at the top of the module")
            names = {a.asname or a.name.split(".")[0] for a in node.names}
            if not names & self.m.defined():
                self.check_import(node)  # so that what it imports is judged where it is used
        else:
            self.flag(node, _construct(node), "a function body holds assignments, if, for ... in range, while, "
                                              "return and calls only")

    def target(self, node, ctx, local):
        if isinstance(node, ast.Name):
            return
        if isinstance(node, ast.Tuple):
            for e in node.elts:
                self.target(e, ctx, local)
        elif isinstance(node, ast.Subscript) and ctx == "kernel":
            if not (isinstance(node.value, ast.Name) and node.value.id in local):
                self.flag(node, f"assignment to {_short(node)}", "a kernel writes elements of its own arrays only")
            self.expr(node.value, ctx, local)
            self.expr(node.slice, ctx, local)
        elif isinstance(node, ast.Subscript):
            self.flag(node, f"assignment to {_short(node)}",
                      "a launcher writes no array elements: the product must come from your kernel")
        elif isinstance(node, ast.Attribute):
            self.flag(node, f"assignment to {_short(node)}", STATE)
        else:
            self.flag(node, f"assignment to {_short(node)}", "assign to plain names or array elements")

    # -- expressions ----------------------------------------------------------------------------
    def resolve(self, node):
        """The canonical path of a module name ("numba.cuda.shared.array"), the name of a builtin, or None."""
        path = _path(node)
        if path is None:
            return None
        root, _, rest = path.partition(".")
        if root in self.m.imports:
            return self.m.imports[root] + ("." + rest if rest else "")
        return path if not rest else None

    def expr(self, node, ctx, local):
        if isinstance(node, ast.Call):
            self.call(node, ctx, local)
        elif isinstance(node, ast.Name):
            self.name(node, ctx, local)
        elif isinstance(node, ast.Attribute):
            self.attribute(node, ctx, local)
        elif isinstance(node, ast.Subscript):
            if ctx == "host" and not self.host_indexable(node.value):
                self.flag(node, _short(node), "a launcher reads only .shape and .size of the arrays: indexing them "
                                              "on the host copies data off the GPU")
            self.expr(node.value, ctx, local)
            self.expr(node.slice, ctx, local)
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                self.flag(node, f"the @ operator ({_short(node)})", "a host-side matrix product")
            self.expr(node.left, ctx, local)
            self.expr(node.right, ctx, local)
        elif isinstance(node, ast.Constant):
            pass
        elif isinstance(node, (ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.Slice)):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child, ctx, local)
        else:
            self.flag(node, _construct(node), "not part of a kernel module's grammar")

    def host_indexable(self, node):
        """What a launcher may index: an array's .shape, a module constant, or a local tuple built in the launcher
        (every assignment to it a tuple literal or a .shape): never an array, whose elements live on the GPU."""
        if isinstance(node, ast.Attribute):
            return node.attr == "shape"
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.m.constants and node.id not in self.tuples:
            return True
        return node.id in self.tuples and self.tuples[node.id]

    def name(self, node, ctx, local):
        n = node.id
        if is_dunder(n):
            self.flag(node, f"the name {n}", "dunder names reach Python's internals")
        elif n in local or n in self.m.constants:
            return
        elif n in self.m.imports:
            self.use_path(node, self.m.imports[n], ctx)
        elif n in self.m.functions:
            self.flag(node, f"{n} used as a value", "call a function or launch a kernel by its name; do not pass "
                                                    "functions around")
        elif n in HOST_BUILTINS | KERNEL_BUILTINS | EXCEPTIONS:
            self.flag(node, f"{n} used as a value", f"call {n}(...) directly; do not pass it around")
        elif n in CALL_EXPLAIN:
            self.flag(node, f"the name {n}", "reaches Python's machinery, which a kernel module does not need")
        else:
            self.flag(node, f"the name {n}", "not defined in this module (a kernel module may use its own names, "
                                             "its imports and range, min, max, abs, int, float, len, print)")

    def attribute(self, node, ctx, local):
        path = self.resolve(node)
        if path is not None and _path(node).split(".")[0] in self.m.imports:  # a name of an imported module
            self.use_path(node, path, ctx)
            return
        if is_dunder(node.attr) or node.attr not in VALUE_ATTRS:
            why = EXPLAIN.get(node.attr, "dunder names reach Python's internals" if is_dunder(node.attr) else
                              f"the attributes a kernel module reads are {', '.join(sorted(VALUE_ATTRS))} "
                              "and names of math, numpy dtypes and numba.cuda")
            self.flag(node, f".{node.attr} of {_short(node.value)}", why)
        self.expr(node.value, ctx, local)

    def use_path(self, node, path, ctx, called=False):
        role = PATHS.get(path)
        short = _short(node)
        if role is None:
            self.flag(node, short, _not_allowed(path))
        elif role == "namespace":
            self.flag(node, f"{short} on its own", "use the module's names (cuda.grid, math.ceil), not the module")
        elif role == "jit":
            self.flag(node, short, "cuda.jit is used as a decorator only")
        elif role == "kernel" and ctx == "host":
            self.flag(node, short, "part of the CUDA kernel API: it runs inside a kernel, not in a launcher"
                                   + (f" (is {self.current} a kernel? decorate it with @cuda.jit)"
                                      if self.current else ""))
        elif role == "host" and ctx != "host":
            self.flag(node, short, f"a NumPy function, which runs on the host: in a kernel write "
                                   f"math.{path.rsplit('.', 1)[-1]}(...)")
        elif role == "sync" and ctx != "host":
            self.flag(node, short, "a host function: in a kernel, cuda.syncthreads() waits for the block's threads")
        elif role == "sync" and not called:
            self.flag(node, short, "a launcher calls it as cuda.synchronize(), with no arguments, or leaves it out "
                                   "(the grader synchronises after your launches)")

    def call(self, node, ctx, local):
        func = node.func
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.flag(a, "a starred argument", "pass arguments by position or name")
                self.expr(a.value, ctx, local)
            else:
                self.expr(a, ctx, local)
        for kw in node.keywords:
            if kw.arg is None:
                self.flag(node, "a **keyword argument", "pass arguments by position or name")
            elif is_dunder(kw.arg):
                self.flag(node, f"the keyword {kw.arg}", "dunder names reach Python's internals")
            self.expr(kw.value, ctx, local)
        if isinstance(func, ast.Subscript):  # kernel[grid, block](...)
            kernel = func.value
            if ctx == "host" and isinstance(kernel, ast.Name) and self.m.functions.get(kernel.id) == "kernel" \
                    and kernel.id not in local:
                config = func.slice.elts if isinstance(func.slice, ast.Tuple) else [func.slice]
                if not 2 <= len(config) <= 4:
                    self.flag(node, _short(func), "a launch is kernel[blocks, threads](A, B, C)")
                for c in config:
                    self.expr(c, ctx, local)
                return
            device = isinstance(kernel, ast.Name) and self.m.functions.get(kernel.id) == "device"
            self.flag(node, f"the launch {_short(func)}",
                      f"{kernel.id} is a device function (@cuda.jit(device=...)): no GPU launches one; call it from "
                      "a kernel" if device else
                      "a launcher launches the module's kernels by name, as kernel[blocks, threads](A, B, C)"
                      if ctx == "host" else "kernels are launched from a launcher, not from a kernel")
            return
        if isinstance(func, ast.Name) and func.id not in local and func.id not in self.m.imports \
                and func.id not in self.m.constants:
            n = func.id
            role = self.m.functions.get(n)
            if role is not None:
                want = "host" if ctx == "host" else "device"
                if role != want:
                    self.flag(node, f"the call {n}(...)",
                              {"kernel": f"{n} is a kernel: launch it from a launcher as {n}[blocks, threads](A, B, C)",
                               "device": f"{n} is a device function: call it from a kernel",
                               "host": f"{n} is a plain Python function: a kernel may call only @cuda.jit(device=True)"
                                       " functions"}[role])
                return
            allowed = KERNEL_BUILTINS if ctx == "kernel" else HOST_BUILTINS
            if n in allowed:
                keywords = BUILTIN_KEYWORDS.get(n, set())
                for kw in node.keywords:
                    if kw.arg not in keywords:
                        self.flag(node, f"{n}({kw.arg}=...)", f"{n} takes no such keyword in a kernel module")
                return
            self.flag(node, f"calls {n}()", CALL_EXPLAIN.get(n, "not a function a kernel module may call"))
            return
        path = self.resolve(func)
        if path is not None and _path(func).split(".")[0] in self.m.imports:
            self.use_path(func, path, ctx, called=not node.args and not node.keywords)
            return
        if isinstance(func, ast.Attribute) and func.attr not in VALUE_ATTRS:
            self.expr(func, ctx, local)  # the attribute itself is what is not allowed: one finding
            return
        self.flag(node, f"the call {_short(node)}", "a kernel module calls its own functions, range, min, max, abs, "
                                                    "int, float, len, math, dtypes and the CUDA kernel API only")


_IMPORTS = "a kernel module may import only math, numpy (dtypes) and numba (numba.cuda, numba.types)"


def _why_import(module):
    known = [part for part in module.split(".") if part in EXPLAIN]
    return f"it {EXPLAIN[known[0]]}; {_IMPORTS}" if known else _IMPORTS


def _not_allowed(path):
    known = [part for part in path.split(".")[1:] if part in EXPLAIN]
    if known and not path.startswith("numpy."):
        return f"{path} {EXPLAIN[known[-1]]}"
    if path.startswith("numpy."):
        return ((f"{path} {EXPLAIN[known[-1]]}; " if known else "")
                + "numpy may only name dtypes and constants (the product must be computed by your kernel)")
    if path.startswith("math."):
        return "not a math function a kernel module uses"
    if path.startswith("numba."):
        return ("not part of the CUDA kernel API a kernel module uses (cuda.jit, cuda.grid, cuda.threadIdx, "
                "cuda.shared.array, cuda.syncthreads, cuda.atomic, ... and numba's dtypes)")
    return _IMPORTS


def _short(node, limit=60):
    """The node as source, cut to `limit`; long strings shown as '...' (a report never repeats a student's text)."""
    try:
        node = copy.deepcopy(node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, (str, bytes)) and len(sub.value) > 12:
                sub.value = "..."
            elif isinstance(sub, ast.Constant) and type(sub.value) is int and sub.value.bit_length() > MAX_INT_BITS:
                sub.value = ...  # shown as "..." (an integer past Python's digit limit cannot be written out)
        text = ast.unparse(node)
    except Exception:  # an odd node, or one too large to copy: say what it is
        return type(node).__name__
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _construct(node):
    return NODE_NAMES.get(type(node), type(node).__name__.lower())


def _is_main_guard(test):
    """True for exactly ``__name__ == "__main__"``, the test that is false wherever the grader imports a module."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def violations(source, predefined=None):
    """Every "line N: construct: rule" finding of a kernel module's source, in line order (empty: it passes).
    `predefined` names module-level names defined elsewhere (the self-check passes a notebook's: name -> a
    canonical module path such as "numba.cuda", or "constant", "kernel", "device", "host")."""
    for number, line in enumerate(source_lines(source)[:2], 1):
        cookie = CODING.match(line)
        if cookie and cookie.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
            return [f"line {number}: the coding declaration {cookie.group(1)}: a kernel module is UTF-8 text; another "
                    "declaration makes Python read different code than the grader checked"]
    tree, findings, _ = _read(source)
    if tree is not None:
        try:
            findings += Grammar(tree, predefined).check()
            findings += _Constants().run(tree).problems
        except (RecursionError, MemoryError) as exc:  # past the bounds all the same: a finding, not a crash
            findings.append((1, f"line 1: the file: too deeply nested for the grader to read ({type(exc).__name__}); "
                                "write long expressions in shorter steps"))
    return [text for _, text in sorted(set(findings))]


def _line(lines, number, limit=60):
    """Line `number` of the source as the student wrote it, cut to `limit` characters."""
    text = re.sub(r"\s+", " ", lines[number - 1].strip()[: 4 * limit]) if 0 < number <= len(lines) else ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _read(source):
    """(syntax tree, findings as (line, text), the source's lines): the module as the parent reads it, within the
    bounds (MAX_*). The tree is None where there is nothing safe to walk: the text does not parse (a syntax error
    is no finding: the compile check reports it from the child that compiles this same text), Python itself
    cannot read it, or it has more nodes or deeper nesting than the bounds. Never raises."""
    lines = source_lines(source)  # as Python numbers them (U+2028 ends no line)
    if len(source) > MAX_SOURCE_CHARS:
        return None, [(1, f"line 1: the file: {len(source):,} characters; a kernel module is at most "
                          f"{MAX_SOURCE_CHARS:,} (keep only its imports, constants, kernels and launchers)")], lines
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        if "integer string conversion" not in str(exc.msg):
            return None, [], lines
        n = exc.lineno or 1
        return None, [(n, f"line {n}: {_line(lines, n)}: an integer of more than 4,300 digits, which Python cannot "
                          f"read; a kernel module's numbers fit in {MAX_INT_BITS} bits (TILE = 16)")], lines
    except ValueError as exc:  # null bytes
        return None, [(1, f"line 1: the file: {exc}")], lines
    except (RecursionError, MemoryError, OverflowError) as exc:  # nesting past what Python's parser can hold
        n = max(range(1, len(lines) + 1), key=lambda i: len(lines[i - 1]), default=1)
        return None, [(n, f"line {n}: {_line(lines, n)}: nested too deeply for Python to read the module "
                          f"({type(exc).__name__}); write it in shorter steps")], lines
    return _bounded_tree(tree, lines)


def _bounded_tree(tree, lines):
    """(tree, findings, lines) for a parsed module: its nodes, nesting, strings and integers checked against the
    bounds without recursion. Nesting or size past them: no tree (nothing may walk it recursively)."""
    findings, count, stack = {}, 0, [(tree, 0, 1)]
    while stack:
        node, depth, line = stack.pop()
        count += 1
        if count > MAX_NODES:
            return None, [(1, f"line 1: the file: more than {MAX_NODES:,} pieces of syntax; a kernel module is a "
                              "few hundred lines (keep only its imports, constants, kernels and launchers)")], lines
        line = getattr(node, "lineno", line)
        if depth > MAX_DEPTH:  # named once, at its first line
            if line < findings.get("deep", (line + 1,))[0]:
                findings["deep"] = (line, f"line {line}: {_line(lines, line)}: nested more than {MAX_DEPTH} levels "
                                          "deep (statements and expressions together; a chain such as 1 + 1 + ... "
                                          "+ 1 nests one level per +): write it in shorter steps")
            continue
        value = getattr(node, "value", None) if isinstance(node, ast.Constant) else None
        if isinstance(value, (str, bytes)) and len(value) > MAX_STRING:
            findings[line, "string"] = (line, f"line {line}: {_line(lines, line)}: a string of {len(value):,} "
                                              f"characters; a kernel module's strings (docstrings too) are under "
                                              f"{MAX_STRING:,}: shorten it")
        elif type(value) is int and value.bit_length() > MAX_INT_BITS:
            findings[line, "int"] = (line, f"line {line}: {_line(lines, line)}: an integer of "
                                           f"{value.bit_length():,} bits; a kernel module's numbers fit in "
                                           f"{MAX_INT_BITS} bits (TILE = 16)")
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return (None if "deep" in findings else tree), list(findings.values()), lines


class _TooBig(ArithmeticError):
    """A constant, or a step of working it out, past MAX_INT_BITS."""


def _checked(v):
    if type(v) is int and v.bit_length() > MAX_INT_BITS:
        raise _TooBig(f"its value needs {v.bit_length():,} bits")
    return v


def _power(a, b):
    if type(a) is int and type(b) is int and b > MAX_INT_BITS and abs(a) > 1 \
            or type(a) is int and type(b) is int and b > 0 and (abs(a).bit_length() - 1) * b > MAX_INT_BITS:
        raise _TooBig(f"its value needs more than {MAX_INT_BITS} bits (an exponent of {b})")
    return a ** b


def _shift(a, b):
    if type(b) is int and b > MAX_INT_BITS:
        raise _TooBig(f"its value needs more than {MAX_INT_BITS} bits (a shift by {b})")
    return a << b


_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
        ast.Pow: _power, ast.LShift: _shift, ast.RShift: lambda a, b: a >> b}
_CALLS = {"min": min, "max": max, "abs": abs, "int": int, "round": lambda x: round(x)}  # round(x, n) left out


class _Constants:
    """The module's number constants worked out from the syntax tree by the parent, within MAX_INT_BITS at every
    step; `found` is {name: (value, line)}, `problems` the (line, finding) of each constant Python could not work
    out (its import would fail too) or that is past the bound. Anything else (a tuple, a dtype, np.ceil(...)) is
    left out, and so is every name assigned from it."""

    def __init__(self):
        self.found, self.problems = {}, []

    def run(self, tree):
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                try:
                    v = self.value(node.value)
                except _TooBig as exc:
                    v = self.problem(node, f"{exc}; a kernel module's constants fit in {MAX_INT_BITS} bits "
                                           "(TILE = 16, BM = 2 * 64)")
                except (ArithmeticError, ValueError, TypeError) as exc:
                    why = re.sub(r"\s+", " ", str(exc))
                    why = why if len(why) <= 80 else why[:77] + "..."
                    v = self.problem(node, f"Python cannot work this out ({type(exc).__name__}: {why}); a module "
                                           "constant is a number a kernel can use (TILE = 16)")
                for t in targets:
                    if isinstance(t, ast.Name):
                        if v is None:
                            self.found.pop(t.id, None)
                        else:
                            self.found[t.id] = (v, node.lineno)
        return self

    def problem(self, node, why):
        self.problems.append((node.lineno, f"line {node.lineno}: {_short(node)}: {why}"))

    def value(self, node):
        """The number `node` is, or None for anything else; raises where Python would, or past the bound."""
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            too_big = type(node.value) is int and node.value.bit_length() > MAX_INT_BITS
            return None if too_big else node.value  # a literal past the bound: _bounded_tree names it
        if isinstance(node, ast.Name) and node.id in self.found:
            return self.found[node.id][0]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value(node.operand)
            return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = self.value(node.left), self.value(node.right)
            if a is None or b is None:
                return None
            v = _checked(_OPS[type(node.op)](a, b))
            return v if type(v) in (int, float) else None  # (-8) ** 0.5 is complex: not a number constant
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS \
                and not node.keywords and node.args:
            args = [self.value(a) for a in node.args]
            if None in args or (node.func.id in ("abs", "int", "round") and len(args) != 1):
                return None
            return _checked(_CALLS[node.func.id](*args))
        return None


def module_constants(source):
    """{name: (value, line)} of the module's number constants (TILE = 16, TILE_PAD = TILE + 1, BM = 2 * 64),
    worked out by the parent from the syntax tree: a module the grammar passes has nothing else at its top
    level to run. Constants that are not plain arithmetic of numbers are left out, and so is every constant past
    the bounds or that Python cannot work out (violations() names them). Never raises."""
    tree = _read(source)[0]
    if tree is None:
        return {}
    try:
        return _Constants().run(tree).found
    except (RecursionError, MemoryError):
        return {}
