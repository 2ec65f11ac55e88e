"""checks/shortcuts.py, autograder/grammar/ and autograder/scan.py: what a kernel module may not hold zeroes
the stage; stubs are found. The grammar's corpus of legitimate and hostile modules is tests/test_grammar.py."""
import pytest

from autograder.grammar import violations
from autograder.scan import unimplemented
from checkkit import assert_known_bad
from course.mutants import KNOWN_BAD, by_check


@pytest.mark.parametrize("source, says", [
    ("import numpy as np\ndef f(A, B, C):\n    np.dot(A, B)\n", "np.dot"),
    ("def f(A, B, C):\n    C.copy_to_device(A.copy_to_host() @ B.copy_to_host())\n", "@ operator"),
    ("import cupy\n", "imports cupy"),
    ("import ctypes\n", "imports ctypes"),
    ("def f():\n    exec('x = 1')\n", "calls exec()"),
    ("from numpy import linalg\n", "numpy may only name dtypes"),
])
def test_scan_flags(source, says):
    assert any(says in line for line in violations(source)), violations(source)


def test_scan_passes_a_kernel_module():
    source = "import math\nfrom numba import cuda, float32\nimport numpy as np\nX = np.float32\n"
    assert violations(source) == []


def test_stubs_are_found():
    source = "def k(A, B, C):\n    raise NotImplementedError('TODO')\ndef f(A, B, C):\n    pass\n"
    assert unimplemented(source, ("k", "f")) == ["k"]


@pytest.mark.parametrize("name", sorted(by_check("shortcuts")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)


@pytest.mark.parametrize("device", ["sim", "gpu"])
def test_stage_zeroed_by_the_grammar_runs_no_child_and_shows_every_check_failed(grade_text, monkeypatch, device):
    """A zeroed stage spends no time in children (a closure's constant array once compiled for 275 s on a GPU),
    and no check reads PASS 0/N: each says it was not run, and why."""
    from autograder import sandbox

    def no_child(*args, **kwargs):
        raise AssertionError("a child was started for a stage the kernel-module grammar zeroed")
    monkeypatch.setattr(sandbox, "run_child", no_child)
    r = grade_text("naive", KNOWN_BAD["host product in the launcher"].text, device=device)
    assert r.score == 0 and r.max_score > 0
    shortcut = [c for c in r.checks if c.key == "shortcuts"][0]
    assert shortcut.status == "failed" and "copy_to_host" in shortcut.output and "@ operator" in shortcut.output
    others = [c for c in r.checks if c.key != "shortcuts" and c.status != "skipped"]
    assert {c.key for c in others} >= {"compiles", "correct"}
    for c in others:
        assert c.status == "failed" and "holds what a kernel module may not" in c.output, (c.name, c.output)


NAIVE_AS_TILED = '''from numba import cuda, float32

TILE = 1


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array((16, 16), float32)
    sB = cuda.shared.array((16, 16), float32)
    col, row = cuda.grid(2)
    acc = float32(0.0)
    cuda.syncthreads()
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    cuda.syncthreads()
    C[row, col] = acc


def matmul_tiled(A, B, C):
    N = C.shape[0]
    matmul_tiled_kernel[(N // 16, N // 16), (16, 16)](A, B, C)
'''


@pytest.mark.parametrize("tile", ["1", "8", "0", "-16", "100000", "2 ** 20", "16.0", "round(8.0)"])
def test_a_tile_outside_the_courses_is_judged_by_the_courses_own(cfg, tile, tmp_path):
    """TILE = 1 let a naive kernel pass stage 2 (13/13: the student's TILE set the bar); TILE = -16 and 100000
    crashed the grader (a negative shape, a 74.5 GiB array); then any TILE outside the course's zeroed the stage,
    a correct kernel with TILE = 8 included. Now the grammar passes it, the grader sizes its shapes and time limits
    and judges the tiling by the course's first tile, and the shared-memory check fails naming the sizes (a whole
    grade: tests/test_tiling_judged.py)."""
    import numpy as np
    from autograder import stages
    from autograder.checks import data_reuse, shared_memory
    from autograder.engine.stage import StageGrader
    from autograder.submission import StageSource
    from checkkit import child_result
    text = NAIVE_AS_TILED.replace("TILE = 1", f"TILE = {tile}")
    g = StageGrader(StageSource(stages.find("tiled"), "s2_tiled.py", text), "sim", cfg, np.random.default_rng(1),
                    str(tmp_path))
    assert violations(text) == [] and g.tile == 16
    assert "line 3: TILE = " in g.tile_note and "the course's tile sizes are 16 and 32" in g.tile_note, g.tile_note
    assert "judged the tiling by the course's TILE = 16" in g.tile_note
    assert g.shape_groups() == {"one tile": [(16, 16, 16)], "2 x 2 tiles": [(32, 32, 32)]}
    assert g.instrument_shape() in [(32, 32, 32), (48, 48, 48)] and g.sim_timeout([g.instrument_shape()]) < 60
    c = shared_memory.judge(g, child_result({"shared_arrays": [1024, 1024], "barriers": 2}))
    assert c.status == "failed" and "the course's tile sizes are 16 and 32" in c.output
    naive = {"shape": {"M": 32, "K": 32, "N": 32},   # the naive kernel's loads: the bar is the course's tile's
             "global_loads": {"A": 32768, "B": 32768, "outputs": 1024, "loads_per_output": 64.0,
                              "naive_loads_per_output": 64, "reuse": 1.0, "reuse_A": 1.0, "reuse_B": 1.0,
                              "per_line": []}}
    assert not data_reuse.judge_sim(naive, g.tile, cfg["structure"]["reuse_fraction"])[0]


def test_a_tile_worked_out_from_constants_is_the_one_graded(cfg):
    from autograder import stages
    from autograder.checks.shortcuts import tile_findings
    from autograder.engine.stage import StageGrader
    from autograder.submission import StageSource
    import numpy as np
    import tempfile
    text = "BASE = 8\nTILE = 2 * BASE * 2\n"
    assert tile_findings(stages.find("tiled"), text, [16, 32]) == []
    assert tile_findings(stages.find("naive"), "TILE = 3\n", [16, 32]) == []  # only tiled stages have a TILE
    g = StageGrader(StageSource(stages.find("tiled"), "s2_tiled.py", text), "sim", cfg, np.random.default_rng(1),
                    tempfile.mkdtemp())
    assert g.tile == 32


def test_a_tile_python_rounds_is_read_as_the_grader_and_the_self_check_read_it():
    """TILE = round(32.0) is 32 in the module and in the notebook: the grader reads it so too, and judges the tiling
    by 32, not by the course's first size."""
    from autograder.grammar import module_constants
    assert module_constants("TILE = round(32.0)\nTILE_PAD = TILE + 1")["TILE_PAD"] == (33, 2)
    assert module_constants("TILE = round(32.4, 1)")["TILE"] == (32.4, 1)   # read as Python reads it: not an int
