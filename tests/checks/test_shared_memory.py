"""checks/shared_memory.py: shared tiles of the right shape and two barriers, read from the compiled PTX."""
import pytest

from autograder.checks import shared_memory
from checkkit import FakeGrader, assert_known_bad, child_result
from course.mutants import by_check


def judge(stage, tile, arrays, barriers):
    facts = {"shared_arrays": arrays, "barriers": barriers}
    return shared_memory.judge(FakeGrader(stage, tile=tile), child_result(facts))


def test_two_tiles_and_two_barriers_pass():
    assert judge("tiled", 16, [1024, 1024], 2).status == "passed"
    assert judge("tiled_transposed", 32, [4096, 4224], 2).status == "passed"


@pytest.mark.parametrize("stage, tile, arrays, barriers, says", [
    ("tiled", 16, [1024], 2, "expected two shared arrays"),
    ("tiled", 16, [1024, 1024], 1, "found 1 barrier(s)"),
    ("tiled", 16, [256, 256], 2, "expected two shared arrays of at least TILE x TILE"),
    ("tiled", None, [1024, 1024], 2, "define the tile size as a module constant"),
    ("tiled_transposed", 32, [4096, 4096], 2, "TILE x (TILE + 1)"),
])
def test_structure_that_fails(stage, tile, arrays, barriers, says):
    c = judge(stage, tile, arrays, barriers)
    assert c.status == "failed" and says in c.output, c.output


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("shared_memory")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)
