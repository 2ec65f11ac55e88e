"""Honest ways of writing TILE are read by the grader as the module reads them.

`TILE, TILE_PAD = 16, 17` and `TILE = int(math.sqrt(1024))` pass the kernel-module grammar; the grader read no TILE
from either, so a correct stage 2 kernel lost the shared-memory check (and, at TILE 32, the checks sized by the
tile). Graded for real in the simulator tier: every check passes."""
import os
import re

import pytest

from autograder.grammar import module_constants
from conftest import SOLUTIONS

STRUCTURE = ("shared_memory", "races", "data_reuse")  # stage 2's structure checks


def _tiled(lines):
    with open(os.path.join(SOLUTIONS, "s2_tiled.py"), encoding="utf-8") as f:
        text = f.read()
    assert re.search(r"^TILE = 16\b", text, re.M)
    return re.sub(r"^TILE = 16\b.*$", lines, text, count=1, flags=re.M)


@pytest.mark.slow
@pytest.mark.parametrize("lines, tile", [
    ("TILE, TILE_PAD = 16, 17", 16),
    ("import math\nTILE = int(math.sqrt(1024))", 32),
], ids=["tuple_assignment", "int_of_math_sqrt"])
def test_a_correct_stage_2_kernel_with_tile_written_so_earns_every_point(grade_text, lines, tile):
    r = grade_text("tiled", _tiled(lines))
    graded = [c for c in r.checks if c.key != "speed"]  # speed: not run in the simulator tier
    assert graded and all(c.status == "passed" for c in graded), [(c.key, c.output) for c in graded
                                                                   if c.status != "passed"]
    assert {c.key for c in graded} >= set(STRUCTURE), [c.key for c in graded]
    assert r.score == sum(c.max_score for c in graded) > 0
    assert module_constants(_tiled(lines))["TILE"][0] == tile
