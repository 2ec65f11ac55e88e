"""The kernel-module grammar as data: what a module may import, which names of math, NumPy and numba it may use and
where, the builtins, the messages that explain a refusal, the student contract, and the bounds on what the trusted
parent reads. The walker (walker.py, body.py, expressions.py) and the constant evaluator (constants.py) read these."""
import ast
import re

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
# launcher only, which waits for nothing while the grader records the launches (builder/launches.py).
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
    ("module constants of literals, arithmetic, tuples, math, dtypes and other constants", "TILE, TILE_PAD = 16, 17"),
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
MAX_VALUE = 100_000            # pieces of one constant's value: characters of a string, elements of a tuple (nested
#                                tuples counted in full)
MAX_NESTING = 16               # tuples in tuples in a constant's value
MAX_WORK = 1_000_000           # pieces the parent may touch working out all of a module's constants together
MAX_ROUND_DIGITS = 400         # n of round(x, n) in a constant (round(5, -10 ** 9) would compute 10 ** (10 ** 9))
