"""One evaluator for a kernel module's constants (autograder/grammar/constants.py): every constant the grammar
accepts is read by the parent (module_constants, which gives the grader its TILE) with the value Python gives it
when it imports the module; every one it cannot read is refused with a finding that says what to write.

Before, the grammar accepted constants the parent left out (TILE, TILE_PAD = 16, 17; TILE = int(math.sqrt(1024));
BLOCK = (TILE, TILE); np.ceil), so a correct stage 2 kernel lost points, and its bounds missed strings, tuples and
defaults that Python works out on import."""
import ast
import time
import warnings

import numba.types
import numpy as np
import pytest

from autograder.grammar import Dtype, module_constants, violations

IMPORTS = "import math\nimport numpy as np\nimport numba\nimport numba.cuda\nfrom numba import float32\n"

# Each form as a student may write it; the grammar accepts it and the parent reads every constant it defines.
ACCEPTED = {
    "plain": "TILE = 16",
    "tuple_assignment": "TILE, TILE_PAD = 16, 17",
    "int_of_math_sqrt": "TILE = int(math.sqrt(1024))",
    "math_isqrt": "TILE = math.isqrt(1024)",
    "annotated_power": "TILE: int = 2 ** 5",
    "chained_targets": "TM = TN = 4",
    "shape_tuple": "TILE = 16\nBLOCK = (TILE, TILE)",
    "repeated_tuple": "BLOCK = (16,) * 2",
    "indexed_tuple": "SIZES = (8, 16, 32)\nTILE = SIZES[1]\nLAST = SIZES[-1]\nFIRST = SIZES[:2]",
    "unpacked_tuple": "SHAPE = (16, (8, 4))\nTILE, SUB = SHAPE",
    "np_ceil_blocks": "TILE = 16\nBLOCKS = int(np.ceil(1000 / TILE))\nLOW = np.floor(7.5)",
    "shift_and_bits": "TILE = 1 << 5\nMASK = 0xFF & 0x0F | 0x30 ^ 0x01\nHALF = TILE >> 1\nINV = ~5",
    "min_max_round": "TILE = max(16, 8 * 3)\nLOW = min((32, 64))\nR = round(31.6)\nH = round(2.675, 2)",
    "conditional": "BIG = False\nTILE = 32 if BIG else 16\nVERBOSE = BIG or 0\nBOTH = BIG and 1\nNO = not BIG",
    "comparisons": "OK = 16 < 32 <= 32\nIN = 16 in (16, 32)\nEQ = 16 == 16.0\nNE = 16 != 17",
    "math_values": "PI = math.pi\nTAU = math.tau\nINF = np.inf\nNAN = math.nan\nE = np.e",
    "dtypes": "DT = float32\nDT2 = np.float32\nDT3 = numba.types.int32\nDT4 = numba.intp\nPAIR = (DT, DT2)",
    "dtype_casts": "ZERO = float32(0.1)\nONE = np.int32(1)\nFLAG = numba.types.boolean(2)\nW = np.float32(0.1) * 3",
    "numpy_wraps": "WRAP = np.int32(2 ** 31 - 1) + np.int32(1)",
    "division": "F = float(16)\nH = 16 / 3\nQ = 16 // 3\nR = -16 % 3\nP = 2 ** -2",
    "strings": "NAME = 'tiled'\nLONG = NAME + '_kernel'\nFIRST = NAME[0]\nDASHES = '-' * 20",
    "math_functions": "FR = math.frexp(8.0)\nG = math.gcd(48, 18)\nC = math.ceil(31 / 2)\nL = math.log2(1024)",
    "other_literals": "NOTHING = None\nC = 1j * 2\nB = b'ab'",
    "default_and_option": "TILE = 16\n@numba.cuda.jit(max_registers=32)\ndef k(A, B, C):\n    pass\n"
                          "def launch(A, B, C, block=(TILE, TILE)):\n    k[1, block](A, B, C)",
}


def _python_values(text):
    """The module's constants (the names its top level assigns) as Python has them once it imports the module."""
    namespace, names = {}, set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(text, "<module>", "exec"), namespace)
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names |= {t.id for t in (target.elts if isinstance(target, ast.Tuple) else [target])}
    return {k: namespace[k] for k in names}


def _real(v):
    """The evaluator's value with each Dtype as the object the module holds (numpy.float32, numba.types.int32)."""
    if isinstance(v, Dtype):
        module, name = v.path.rsplit(".", 1)
        return getattr(np if module == "numpy" else numba.types, name)
    if type(v) is tuple:
        return tuple(_real(e) for e in v)
    return v


def _same(a, b):
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(b, (type, numba.types.Type)):
        return a is b
    if type(a) is not type(b):
        return False
    return a == b or (a != a and b != b)  # nan is nan


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_parent_reads_every_constant_the_grammar_accepts_as_python_does(name):
    text = IMPORTS + ACCEPTED[name] + "\n"
    assert violations(text) == [], violations(text)
    python = _python_values(text)
    read = {k: _real(v) for k, (v, _) in module_constants(text).items()}
    assert set(read) == set(python), (set(read) ^ set(python))
    wrong = {k: (read[k], python[k]) for k in python if not _same(read[k], python[k])}
    assert not wrong, wrong


# Each form the grammar refuses, with what its finding says (what was wrong, and what to write); the parent reads
# nothing from it.
REFUSED = {
    "is": ("X = 16 is 16", "is compares objects, not values: write == or !="),
    "string_format": ("X = 'tile %d' % 16", "% formats a string"),
    "function_as_value": ("F = math.sqrt", "math.sqrt is a function: call it (X = math.sqrt(...))"),
    "dtype_arithmetic": ("X = float32 + 1", "a dtype constant is named as it is (DT = float32)"),
    "dtype_of_dtype": ("X = float32(float32)", "at module level it converts one number (ZERO = float32(0.0))"),
    "dtype_indexed": ("DT = float32\nX = DT[:, :]", "an array type goes in a signature"),
    "attribute": ("TILE = 16\nX = TILE.x", "a module constant reads no attributes (.x of TILE): write the value"),
    "np_ceil_of_tuple": ("X = np.ceil((1.5, 2.5))", "np.ceil takes one number in a module constant"),
    "long_repetition": ("X = 'ab' * 10 ** 6", "a value of more than 100,000 pieces"),
    "tuple_repetition": ("X = (16, 16) * 10 ** 9", "a value of more than 100,000 pieces"),
    "round_digits": ("X = round(5, -10 ** 9)", "round(x, n) takes n from -400 to 400"),
    "too_many_to_unpack": ("A, B = 1, 2, 3", "Python cannot work this out (ValueError: too many values to unpack"),
    "unpack_a_number": ("A, B = 16", "Python cannot work this out (TypeError: cannot unpack non-iterable int"),
    "work": ("S = 'a' * 99_000\n" + "".join(f"X{i} = S < S + 'b'\n" for i in range(12)),
             "touches more than 1,000,000 pieces"),
    "default": ("def launch(A, B, C, block=(16,) * 10 ** 9):\n    pass",
                "line 6: (16,) * 10 ** 9: a value of more than 100,000 pieces"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_constant_the_parent_cannot_read_is_refused_saying_what_to_write(name):
    text, says = REFUSED[name]
    text = IMPORTS + text + "\n"
    began = time.perf_counter()
    findings = violations(text)
    constants = module_constants(text)
    assert time.perf_counter() - began < 2.0
    assert any(says in f for f in findings), findings
    assert all(f.startswith("line ") and len(f) < 600 for f in findings), findings
    assert not {"X", "F", "A", "B"} & set(constants), constants


def test_a_notebooks_own_constants_have_values_the_self_check_does_not_know():
    """The self-check reads a notebook's functions alone: a constant built on the notebook's TILE costs nothing."""
    assert violations("TILE_PAD = TILE + 1\nBLOCK = (TILE, TILE_PAD)\n", {"TILE": "constant"}) == []
    assert violations("X = TILE is 16\n", {"TILE": "constant"}) != []
