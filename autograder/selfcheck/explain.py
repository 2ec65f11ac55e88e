"""Notebook side: errors and line numbers said as the grader says them for a notebook (by its cells' lines)."""
import traceback
import types

from ..builder import launches as L


def _cell_files(namespace):
    """{file: names of the functions defined in it}: a notebook's cells, each a file of IPython's."""
    files, here = {}, namespace.get("__name__")
    for name, value in namespace.items():
        if name.startswith("_") or not (isinstance(value, types.FunctionType) or L.is_cuda_kernel(value)):
            continue
        func = getattr(value, "py_func", value)
        code = getattr(func, "__code__", None)
        if code is not None and getattr(func, "__module__", here) == here:  # not `check`, imported from here
            files.setdefault(code.co_filename, []).append(name)
    return files


def _cite(text, files, default_file):
    """Line numbers said as the grader says them for a notebook: "line 12 of the cell defining matmul_tiled_kernel"
    (a cell's lines, which is what both count)."""
    from ..submission import CITED_LINE

    def where(m):
        file = m.group(1) or default_file
        names = files.get(file)
        return f"line {m.group(2)} of the cell defining {', '.join(names)}" if names else m.group(0)
    return CITED_LINE.sub(where, text) if text else text


def _explain(exc, files=None):
    if isinstance(exc, L.LaunchError):
        return str(exc)
    text = f"{type(exc).__name__}: {str(exc)[:600]}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in (files or {})]
    if frames:  # the grader's child names the line too (protocol.describe_error)
        text += f" (line {frames[-1].lineno} of the cell defining {', '.join(files[frames[-1].filename])}: " \
                f"{frames[-1].line})"
    if isinstance(exc, IndexError):
        text += "\nA thread indexed outside an array: guard loads and stores with the right bounds (row < M, col < N, k < K)."
    if "CUDA_ERROR" in str(exc) or "Cuda" in type(exc).__name__:
        text += "\nThe GPU reported an error; restart the kernel (Kernel > Restart) before running more cells."
    return text
