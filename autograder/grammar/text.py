"""How the grammar names what it read: dotted names, a node shown as short source, the module's own line, and the
messages for imports and names that are not a kernel module's."""
import ast
import copy
import re

from .rules import EXPLAIN, MAX_INT_BITS, NODE_NAMES


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


def _line(lines, number, limit=60):
    """Line `number` of the source as the student wrote it, cut to `limit` characters."""
    text = re.sub(r"\s+", " ", lines[number - 1].strip()[: 4 * limit]) if 0 < number <= len(lines) else ""
    return text if len(text) <= limit else text[: limit - 3] + "..."
