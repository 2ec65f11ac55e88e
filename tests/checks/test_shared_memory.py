"""checks/shared_memory.py: shared tiles of the right shape and two barriers, read from the compiled PTX."""
import pytest

from autograder.checks import shared_memory
from checkkit import FakeGrader, assert_known_bad, child_result
from conftest import solution_text
from course.mutants import by_check


def judge(stage, tile, arrays, barriers, source=None):
    """The check on PTX facts; the module's source is the stage's solution unless given (stage 4 reads it)."""
    facts = {"shared_arrays": arrays, "barriers": barriers}
    grader = FakeGrader(stage, tile=tile, source=solution_text(stage) if source is None else source)
    return shared_memory.judge(grader, child_result(facts))


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


def test_the_padded_tile_is_read_from_the_source():
    """Stage 4's padded array in the PTX is not enough: the product must read B through it, transposed (the known-bad
    kernels are graded whole in tests/test_padded_tile.py)."""
    stage3 = solution_text("tiled_general").replace("tiled_general", "tiled_transposed").replace(
        "    sB = cuda.shared.array((TILE, TILE), float32)\n",
        "    sB = cuda.shared.array((TILE, TILE), float32)\n    sBt = cuda.shared.array((TILE, TILE_PAD), float32)\n"
    ).replace("\n\n@cuda.jit", "TILE_PAD = TILE + 1\n\n\n@cuda.jit", 1)
    c = judge("tiled_transposed", 16, [1024, 1024, 1088], 2, source=stage3)
    assert c.status == "failed" and "the padded tile sBt is declared but the product never reads it" in c.output, \
        c.output
    c = judge("tiled_transposed", 32, [4096, 4224], 2, source="")
    assert c.status == "failed" and "could not read matmul_tiled_transposed_kernel(A, B, C)" in c.output, c.output


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("shared_memory")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)
