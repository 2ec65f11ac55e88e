"""Trusted parent side: the kernel-module grammar's verdict (autograder/grammar.py). Any finding zeroes the stage
before any child runs, in both tiers: a module that passes holds nothing that could reach the grader."""
import ast

from ..grammar import module_constants, violations
from .titles import title

RULES = ("A kernel module holds imports (math, numpy dtypes, numba), constants, @cuda.jit kernels and launchers "
         "that launch them, and nothing else.")


def tile_findings(stage, source, tiles):
    """Why a tiled stage's TILE is not one of the course's (config [structure] tiles), one finding per module ([] for
    an allowed or absent TILE, and in an untiled stage). Not a grammar finding: the stage keeps the points of its
    other checks, judged by the course's own tile (engine/stage.py StageGrader.tile), and the shared-memory check
    fails saying this."""
    if not stage.tiled:
        return []
    sizes = (f"the course's tile sizes are {' and '.join(map(str, tiles))} (a tiled kernel reuses each load TILE "
             "times; the grader sizes its tests and its data-reuse bar by TILE): set TILE = "
             + " or ".join(map(str, tiles)))
    tile, line = module_constants(source).get("TILE", (None, 0))
    if tile is None:
        line, text = _assigned(source, "TILE")
        return [f"line {line}: TILE = {text}: not a number the grader can work out; {sizes}"] if line else []
    if type(tile) is int and tile in tiles:
        return []
    return [f"line {line}: TILE = {_shown(tile)}: {sizes}"]


def _assigned(source, name):
    """(line, source text of the value) of the last module-level assignment to `name`, or (0, "")."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return 0, ""
    found = (0, "")
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                text = ast.get_source_segment(source, node.value) or "..."
                found = (node.lineno, text if len(text) <= 40 else text[:37] + "...")
    return found


def _shown(value):
    """A constant as a message can show it: an int of thousands of digits as its size (str() refuses those)."""
    if type(value) is int and value.bit_length() > 64:
        return f"{'-' if value < 0 else ''}<a number of about {int(value.bit_length() * 0.30103) + 1} digits>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def judge(g):
    """(check, findings): the 0-point grammar check of StageGrader `g` and the grammar's findings."""
    findings = violations(g.src.source)
    check = g.check("shortcuts", title(g, "shortcuts"))
    if findings:
        return check.verdict(False, "This module holds what a kernel module may not; the whole stage scores 0:\n  "
                             + "\n  ".join(findings) + "\n" + RULES), findings
    return check.verdict(True, "only kernels, launchers and constants: no host-side products, host copies of "
                               "operands or code that reaches the grader"), findings
