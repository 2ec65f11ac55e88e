"""Trusted parent side: the kernel-module grammar's verdict (autograder/grammar.py). Any finding zeroes the stage
before any child runs, in both tiers: a module that passes holds nothing that could reach the grader."""
from ..grammar import module_constants, violations
from .titles import title

RULES = ("A kernel module holds imports (math, numpy dtypes, numba), constants, @cuda.jit kernels and launchers "
         "that launch them, and nothing else (README: the student contract).")


def tile_findings(stage, source, tiles):
    """A tiled stage's TILE must be one of the course's (config [structure] tiles): a finding otherwise."""
    if not stage.tiled:
        return []
    tile, line = module_constants(source).get("TILE", (None, 0))
    if tile is None or (type(tile) is int and tile in tiles):
        return []
    return [f"line {line}: TILE = {tile!r}: the course's tile sizes are {' and '.join(map(str, tiles))} "
            "(a tiled kernel reuses each load TILE times; the grader sizes its tests by TILE)"]


def judge(g):
    """(check, findings): the 0-point grammar check of StageGrader `g` and the grammar's findings."""
    findings = violations(g.src.source) + tile_findings(g.stage, g.src.source, g.cfg["structure"]["tiles"])
    check = g.check("shortcuts", title(g, "shortcuts"))
    if findings:
        return check.verdict(False, "This module holds what a kernel module may not; the whole stage scores 0:\n  "
                             + "\n  ".join(findings) + "\n" + RULES), findings
    return check.verdict(True, "only kernels, launchers and constants: no host-side products, host copies of "
                               "operands or code that reaches the grader"), findings
