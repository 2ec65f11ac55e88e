"""Trusted parent side: the static scan of a submission's source, without running it.

``host_shortcuts`` finds host-side products, copies of the operands, imports
other than math, numpy and numba, and dynamic code: any finding zeroes the
stage (checks/shortcuts.py). ``unimplemented`` finds functions that still
raise NotImplementedError (the exercise stubs).
"""
import ast

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
    "cudadrv": "reaches the CUDA driver API (raw memory, streams, persisting-L2 windows): kernels and launches only",
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
                driver = [p for p in alias.name.split(".") if p in FORBIDDEN_ATTRS]
                if driver:
                    flag(node, f"imports {alias.name}, which {FORBIDDEN_ATTRS[driver[0]]}")
                if root not in ALLOWED_IMPORTS:
                    flag(node, f"imports {alias.name}; only math, numpy and numba may be imported")
                elif root == "numpy":
                    numpy_names.add(alias.asname or "numpy")
        elif isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".")[0]
            driver = [p for p in (node.module or "").split(".") if p in FORBIDDEN_ATTRS]
            if driver:
                flag(node, f"imports from {node.module}, which {FORBIDDEN_ATTRS[driver[0]]}")
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
