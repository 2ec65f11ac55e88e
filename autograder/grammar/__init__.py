"""Trusted parent side: the grammar of a kernel module, checked on its text before any child runs.

An allowlist, not a denylist. A kernel module may hold:
- imports of ``math``, of ``numpy`` (its dtypes and constants) and of ``numba``, ``numba.cuda`` and
  ``numba.types`` (the CUDA kernel API and dtypes); no other module and no other submodule;
- module constants made of literals, arithmetic, tuples, math, dtypes and other constants, each worked out by the
  one constant evaluator (constants.py) that the parent reads them with too;
- ``@cuda.jit`` kernels and ``@cuda.jit(device=True)`` helpers, whose bodies use locals, array
  subscripts, arithmetic, ``if``/``for ... in range``/``while``/``return`` and calls to the CUDA kernel
  API, ``math``, dtypes, a few builtins and the module's device functions;
- plain functions (launchers and their helpers) that read ``.shape``/``.size``/``.dtype`` of their arguments,
  compute a grid (``math.ceil`` or ``np.ceil``), launch kernels as ``kernel[grid, block](A, B, C)`` and may call
  ``cuda.synchronize()`` (a no-op while the grader records the launches: builder/launches.py);
- a student's own test under ``if __name__ == "__main__":`` (that exact test, no ``else``), which is not read:
  grading children import the module under its stage's name, so the block never runs there.
Every attribute is allowed by name for the kind of object it is read from; every name must be defined
in the module or be one of a few builtins. Nothing can assign to an attribute or to anything outside a
function's locals, and there are no dunder names, classes, lambdas, ``try``, ``with``, ``global``,
comprehensions, starred calls, format strings or names built from strings. Student Python that would
reach the grader from inside the child (``sys.modules`` through numba's own modules, frames, ``gc``,
``ctypes``) needs one of those, so a module that passes cannot reach it; in the simulator tier, where
kernel bodies run as Python, this grammar is the whole defence.

The package: rules.py (the allowlist as data), reader.py (the text within the bounds), walker.py, body.py and
expressions.py (the walk), constants.py (the evaluator), text.py (how findings name what they read), tiles.py (what
a kernel's source says of its shared tiles: the shared-memory check reads stage 4's padded B tile there), with
flow.py (which assignments reach each point of a kernel, its device helpers walked at their calls) and values.py
(what a value is made of: constants, the arrays it reads, the thread indices it follows).

``violations(source)`` lists "line N: <construct>: <rule>" findings; any finding zeroes the stage
(checks/shortcuts.py). The parent reads a module within bounds (MAX_SOURCE_CHARS and the other MAX_ names):
text past them, or that Python itself cannot read (nesting too deep for its parser, an integer past its digit
limit), is a finding too, never a crash or a hang of the grader. ``module_constants(source)`` gives the values of
the constants the grammar accepts (TILE), worked out by the same evaluator within the same bounds.
"""
from .constants import Dtype
from .reader import _read, coding_finding
from .rules import (CONTRACT, MAX_DEPTH, MAX_INT_BITS, MAX_NODES, MAX_SIGNATURE, MAX_SOURCE_CHARS, MAX_STRING,
                    MAX_VALUE, MAX_WORK, MODULES, PATHS)
from .walker import Grammar

__all__ = ["CONTRACT", "Dtype", "Grammar", "MAX_DEPTH", "MAX_INT_BITS", "MAX_NODES", "MAX_SIGNATURE",
           "MAX_SOURCE_CHARS", "MAX_STRING", "MAX_VALUE", "MAX_WORK", "MODULES", "PATHS", "module_constants",
           "violations"]

_TOO_DEEP = ("line 1: the file: too deeply nested for the grader to read ({}); write long expressions in shorter "
             "steps")


def violations(source, predefined=None):
    """Every "line N: construct: rule" finding of a kernel module's source, in line order (empty: it passes).
    `predefined` names module-level names defined elsewhere (the self-check passes a notebook's: name -> a
    canonical module path such as "numba.cuda", or "constant", "kernel", "device", "host")."""
    cookie = coding_finding(source)
    if cookie:
        return [cookie]
    tree, findings, _ = _read(source)
    if tree is not None:
        try:
            findings += Grammar(tree, predefined).check()
        except (RecursionError, MemoryError) as exc:  # past the bounds all the same: a finding, not a crash
            findings.append((1, _TOO_DEEP.format(type(exc).__name__)))
    return [text for _, text in sorted(set(findings))]


def module_constants(source):
    """{name: (value, line)} of every module constant the grammar accepts (TILE = 16, TILE, TILE_PAD = 16, 17,
    TILE = int(math.sqrt(1024)), BLOCK = (TILE, TILE), DT = float32): the grammar's own walk, whose evaluator works
    each one out as Python does on import (constants.py). A constant the grammar refuses, past the bounds or that
    Python cannot work out is left out (violations() names it). Never raises."""
    tree = _read(source)[0]
    if tree is None:
        return {}
    try:
        grammar = Grammar(tree)
        grammar.check()
    except (RecursionError, MemoryError):
        return {}
    return dict(grammar.constants.found)
