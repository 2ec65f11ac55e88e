"""Notebook side: a notebook's globals read as the kernel module its cells amount to (as the grader reads it)."""
import inspect
import sys
import textwrap
import types

from ..builder import launches as L
from ..reading.source import renumber_cells


class _Namespace:
    """A module-like view of a globals dict: setattr writes into the dict (used by record_launches)."""

    def __init__(self, namespace):
        object.__setattr__(self, "__dict__", namespace)


def _as_module(namespace):
    main = sys.modules.get("__main__")
    if main is not None and vars(main) is namespace:
        return main
    return _Namespace(namespace)


def _source(obj):
    try:
        return inspect.getsource(getattr(obj, "py_func", obj))
    except (OSError, TypeError):
        return ""


def _grammar_names(namespace):
    """What the notebook's names are, for the kernel-module grammar (grammar.violations' `predefined`): the
    self-check reads the stage's functions alone, so their module is the notebook's namespace."""
    from ..grammar import MODULES, PATHS
    names = {}
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        if isinstance(value, types.ModuleType) and value.__name__ in MODULES:
            names[name] = value.__name__
        elif L.is_cuda_kernel(value):
            device = getattr(value, "_device", None) or getattr(value, "targetoptions", {}).get("device")
            names[name] = "device" if device else "kernel"
        elif isinstance(value, types.FunctionType):
            names[name] = "host"
        elif isinstance(value, (int, float, tuple, str)):
            names[name] = "constant"
        else:
            path = f"{getattr(value, '__module__', '')}.{getattr(value, '__name__', '')}"
            kind = getattr(value, "name", None)  # a numba type: float32 and its aliases
            for candidate in (path, f"numba.{kind}" if isinstance(kind, str) else "", f"numpy.{name}"):
                if PATHS.get(candidate) == "any":
                    names[name] = candidate
                    break
    return names


def module_text(namespace):
    """The kernel module a notebook's cells amount to, as the grader builds it from the graded cells: its imports
    (math, numpy dtypes, numba), constants, and the source of each function the notebook defined, in the order they
    were defined. For the compile check's child (numba's simulator cannot compile for a GPU)."""
    here = namespace.get("__name__")
    renumber_cells(namespace.get("_ih"))
    imports, constants, functions = [], [], []
    for name, kind in _grammar_names(namespace).items():
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            imports.append(f"import {value.__name__} as {name}" if value.__name__ != name else f"import {name}")
        elif kind in ("kernel", "device", "host"):
            func = getattr(value, "py_func", value)
            if getattr(func, "__module__", None) == here:  # not the self-check's own functions
                functions.append(textwrap.dedent(_source(value)))
        elif kind == "constant":
            constants.append(f"{name} = {value!r}")
        elif "." in kind:  # a numba or numpy dtype under the notebook's name for it
            module, attr = kind.rsplit(".", 1)
            imports.append(f"from {module} import {attr} as {name}" if attr != name else f"from {module} import {name}")
    return "\n".join(imports + constants) + "\n\n\n" + "\n\n".join(functions)


def cell_lines(text, module, namespace):
    """`text` (a message on `module`, the text module_text built) with each "line N" inside a function said as the
    line of the cell that defines it: "line 5 of the cell defining matmul_tiled_kernel", what the grader says."""
    import ast
    from ..submission import CITED_LINE
    try:
        spans = [(min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno, n.name)
                 for n in ast.parse(module).body if isinstance(n, ast.FunctionDef)]
    except SyntaxError:
        return text

    def where(m):
        number = int(m.group(2))
        for first, last, name in spans:
            code = getattr(getattr(namespace.get(name), "py_func", namespace.get(name)), "__code__", None)
            if first <= number <= last and code is not None and not m.group(1):
                return f"line {code.co_firstlineno + number - first} of the cell defining {name}"
        return m.group(0)
    return CITED_LINE.sub(where, text) if text else text
