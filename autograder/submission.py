"""Read a submission without running it: find its stages, extract notebook
code, and scan the source for host-side shortcuts.

The parent process never imports student code; everything here works on text
and syntax trees.
"""
import ast
import json
import os
import re
from dataclasses import dataclass

from .stages import STAGES


class SubmissionError(ValueError):
    """The submission cannot be graded as given; the message says why."""


@dataclass
class StageSource:
    stage: object
    path: str        # the student's file (.py or .ipynb)
    source: str      # Python source that will be graded


def notebook_source(path):
    """The graded code of a notebook: its code cells, minus nbgrader test cells,
    cells tagged ``not-graded`` (self-checks, plots) and IPython magics."""
    try:
        with open(path, encoding="utf-8") as f:
            nb = json.load(f)
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SubmissionError(f"{path}: not a readable notebook ({exc})") from exc
    parts = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {})
        if meta.get("nbgrader", {}).get("grade") or "not-graded" in meta.get("tags", []):
            continue
        text = cell.get("source", "")
        text = "".join(text) if isinstance(text, list) else text
        lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def read_source(path):
    if path.endswith(".ipynb"):
        return notebook_source(path)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: cannot read ({exc})") from exc


def defined_names(source):
    """Top-level function names, or None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def stages_in(source, path):
    names = defined_names(source)
    if names is None:  # a syntax error: find the definitions textually, so the error is reported per stage
        names = set(re.findall(r"^def\s+(\w+)", source, re.M))
    return [s for s in STAGES if s.launcher in names or s.kernel in names]


def collect(submission, stage=None):
    """The stages a submission (file or folder) holds, each with its source."""
    if os.path.isdir(submission):
        paths = sorted(os.path.join(submission, n) for n in os.listdir(submission)
                       if n.endswith((".py", ".ipynb")) and not n.startswith("."))
    elif os.path.isfile(submission):
        if not submission.endswith((".py", ".ipynb")):
            raise SubmissionError(f"{submission}: expected a .py file, a .ipynb notebook or a folder of them")
        paths = [submission]
    else:
        raise SubmissionError(f"{submission}: no such file or folder")
    found = {}
    for path in paths:
        source = read_source(path)
        matches = [stage] if stage else stages_in(source, path)
        if stage and len(paths) > 1 and stage not in stages_in(source, path):
            continue
        if len(matches) > 1:
            raise SubmissionError(f"{path} defines several stages ({', '.join(s.name for s in matches)}): "
                                  "grade it with --stage NAME")
        for s in matches:
            if s.number in found:
                raise SubmissionError(f"both {found[s.number].path} and {path} define stage {s.name}")
            found[s.number] = StageSource(s, path, source)
    if not found:
        want = stage.launcher if stage else " or ".join(s.launcher for s in STAGES)
        raise SubmissionError(f"{submission}: found no file defining {want}")
    return [found[k] for k in sorted(found)]


# ----------------------------------------------------------------------------
# Host-side shortcut scan

ALLOWED_IMPORTS = {"math", "numpy", "numba"}
# numpy may name dtypes and constants, nothing that computes on the host.
NUMPY_ALLOWED = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                 "uint32", "uint64", "bool_", "inf", "nan", "pi", "e", "dtype", "finfo", "iinfo"}
FORBIDDEN_ATTRS = {
    "copy_to_host": "copies an operand to the host",
    "copy_to_device": "writes host data into a device array",
    "to_device": "moves host data to the GPU: the kernels get A, B and C only",
    "_ary": "reaches into the simulator's host array",
    "__array__": "converts a device array on the host",
    "__array_interface__": "reads a device array on the host",
    "__cuda_array_interface__": "hands device memory to another library",
    "matmul": "multiplies matrices on the host", "dot": "multiplies matrices on the host",
    "einsum": "multiplies matrices on the host", "tensordot": "multiplies matrices on the host",
    "linalg": "uses a host linear-algebra library",
}
FORBIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals",
                   "vars", "locals", "open", "input", "breakpoint", "memoryview"}


def host_shortcuts(source):
    """List of 'line N: what and why' findings; empty when the source is clean."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # reported by the compile check
    numpy_names = set()
    findings = []

    def flag(node, what):
        findings.append(f"line {getattr(node, 'lineno', '?')}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root not in ALLOWED_IMPORTS:
                    flag(node, f"imports {alias.name}; only math, numpy and numba may be imported")
                elif root == "numpy":
                    numpy_names.add(alias.asname or "numpy")
        elif isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".")[0]
            if node.level or root not in ALLOWED_IMPORTS:
                flag(node, f"imports from {node.module or '.'}; only math, numpy and numba may be imported")
            elif root == "numpy":
                for alias in node.names:
                    if alias.name not in NUMPY_ALLOWED:
                        flag(node, f"imports numpy.{alias.name}; numpy may only name dtypes and constants")
            for alias in node.names:
                if alias.name in FORBIDDEN_ATTRS:
                    flag(node, f"imports {alias.name}, which {FORBIDDEN_ATTRS[alias.name]}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            flag(node, "uses the @ operator: a host-side matrix product")
        elif isinstance(node, ast.Attribute):
            if node.attr in FORBIDDEN_ATTRS:
                flag(node, f"{ast.unparse(node)} {FORBIDDEN_ATTRS[node.attr]}")
            elif (isinstance(node.value, ast.Name) and node.value.id in numpy_names
                  and node.attr not in NUMPY_ALLOWED):
                flag(node, f"{node.value.id}.{node.attr}: numpy may only name dtypes and constants"
                           " (the product must be computed by your kernel)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            flag(node, f"calls {node.func.id}(), which a kernel module does not need")
    return sorted(set(findings), key=lambda s: int(s.split(":")[0].split()[1]) if s.split(":")[0].split()[1].isdigit() else 0)


def unimplemented(source, names):
    """Names among `names` whose function body still raises NotImplementedError."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    stubs = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Raise) and sub.exc is not None:
                    target = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
                    if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                        stubs.append(node.name)
                        break
    return stubs
