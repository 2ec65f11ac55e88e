"""autograder/protocol.py: the parent trusts no shape of a child's report.

Unit cases build malformed reports by hand; the graded cases switch the kernel-module grammar off (a test-only
monkeypatch) so that student code can reach the child's reporting, as a module that got past the grammar would:
the grade still finishes, and the report is "not gradable: the child's report was malformed".
"""
import time

import numpy as np
import pytest

from autograder.checks import shortcuts
from autograder.engine import report
from autograder import protocol as schema
from conftest import by_key

A = {f"A{i}": np.zeros((3, 2), np.float32) for i in range(2)}
B = {f"B{i}": np.zeros((2, 4), np.float32) for i in range(2)}
RUN = {"task": "run", "count": 2}
GOOD_RUN = {"nonce": "n", "seconds": 0.5, "cpu_s": 0.4, "phases": {"imports_s": 0.1}, "cuda_init_s": 0.0,
            "shapes": [{"replay_s": 0.01, "writes_past_end": 0, "launches": 1},
                       {"error": {"kind": "index_error", "message": "IndexError: ..."}}]}
SPEED = {"task": "speed", "n": 8, "seeds": [[1, 2]] * 3, "projection_columns": 2,
         "leaderboard": {"n": 16, "seeds": [[1, 2]] * 2}}
STATS = {"median_ms": 1.0, "times_ms": [1.0, 1.1, 0.9], "past_end": [0, 0, 0], "cv": 0.01}
BOARD_STATS = {"median_ms": 1.0, "times_ms": [1.0, 1.1], "past_end": [0, 0], "cv": 0.01}
GOOD_SPEED = {"nonce": "n", "seconds": 1.0, "n": 8, "timings": {"student": STATS, "reference": STATS},
              "l2_reset": "done", "kernels_loaded": 1, "kernels_compiled": 2, "clock_s": {"timed": 0.5},
              "leaderboard": {"n": 16, "tflops": 1.0, "timings": {"student": BOARD_STATS, "cublas": BOARD_STATS},
                              "cublas_tflops": 2.0, "percent_of_cublas": 50.0}}
SPEED_ARRAYS = {"P_student": np.zeros((3, 8, 2), np.float32), "P_reference": np.zeros((3, 8, 2), np.float32),
                "P_board_student": np.zeros((2, 16, 2), np.float32), "P_board_cublas": np.zeros((2, 16, 2), np.float32)}


def with_(base, **changes):
    return {**base, **changes}


ALONE = with_(SPEED, time_reference=False)


def test_well_formed_reports_pass():
    assert schema.check(RUN, {**A, **B}, GOOD_RUN, {"C0": np.zeros((3, 4), np.float32)}, said=2) == ""
    assert schema.check(SPEED, {}, GOOD_SPEED, SPEED_ARRAYS) == ""
    assert schema.check({"task": "build"}, None, {"nonce": "n", "defines_kernel": True, "barriers": 2,
                                                   "shared_arrays": [1024]}, {}) == ""
    assert schema.check(SPEED, {}, {"nonce": "n", "task_error": {"kind": "exception", "message": "x"}}, {}) == ""
    alone = {k: v for k, v in SPEED_ARRAYS.items() if k != "P_reference"}
    assert schema.check(ALONE, {}, with_(GOOD_SPEED, timings={"student": STATS}), alone) == ""


@pytest.mark.parametrize("job, facts, arrays, said, says", [
    (RUN, with_(GOOD_RUN, cuda_init_s="fast"), {}, 0, "facts.cuda_init_s is str 'fast', not a finite number"),
    (RUN, with_(GOOD_RUN, seconds=float("nan")), {}, 0, "facts.seconds is float 'nan'"),
    (RUN, with_(GOOD_RUN, seconds=True), {}, 0, "facts.seconds is bool"),
    (RUN, with_(GOOD_RUN, verdict="pass"), {}, 0, "unknown fact 'verdict'"),
    (RUN, with_(GOOD_RUN, shapes=GOOD_RUN["shapes"] * 2), {}, 0, "more shapes than the 2 it was given"),
    (RUN, GOOD_RUN, {}, 3, "more shapes than the 2 it was given"),
    (RUN, with_(GOOD_RUN, shapes=[{"writes_past_end": -1}]), {}, 0, "writes_past_end is int '-1', not a count"),
    (RUN, with_(GOOD_RUN, shapes=[{"error": {"kind": "x", "message": 5}}]), {}, 0, "message is int"),
    (RUN, GOOD_RUN, {"C0": np.zeros((4, 3), np.float32)}, 0, "array C0 is float32 (4, 3), not float32 (3, 4)"),
    (RUN, GOOD_RUN, {"C2": np.zeros((3, 4), np.float32)}, 0, "an array 'C2' that its task has no place for"),
    (RUN, with_(GOOD_RUN, shapes=[{"instruments": {"races": {"count": float("inf")}}}]), {}, 0, "inf"),
    (SPEED, {k: v for k, v in GOOD_SPEED.items() if k != "leaderboard"}, SPEED_ARRAYS, 0,
     "the leaderboard's runs are missing"),
    (SPEED, with_(GOOD_SPEED, timings={"student": STATS}), SPEED_ARRAYS, 0,
     "the timings of student and reference are not all there"),
    # told with its "go" that the grade timed the reference already: the student's runs alone, no more
    (ALONE, GOOD_SPEED, SPEED_ARRAYS, 0, "'reference' are not 3 runs of student"),
    (ALONE, with_(GOOD_SPEED, timings={"student": STATS}), SPEED_ARRAYS, 0, "an array 'P_reference'"),
    (SPEED, with_(GOOD_SPEED, timings={"student": with_(STATS, times_ms=[0.1]), "reference": STATS}), SPEED_ARRAYS,
     0, "are not 3 runs"),
    (SPEED, with_(GOOD_SPEED, timings={"student": STATS, "reference": STATS, "cublas": STATS}), SPEED_ARRAYS, 0,
     "'cublas' are not 3 runs of student or reference"),
    (SPEED, GOOD_SPEED, {**SPEED_ARRAYS, "P_student": np.zeros((3, 8, 1), np.float32)}, 0, "array P_student"),
])
def test_a_malformed_report_is_refused_with_the_reason(job, facts, arrays, said, says):
    why = schema.check(job, {**A, **B}, facts, arrays, said)
    assert says in why, why


# -- graded, with the grammar switched off: what a module that got past it could do to the child's report --------

PROGRESS_FLOOD = """
import os
from numba import cuda

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # a simulator child (the build, which has no simulator, goes on)
    for fd in range(3, 40):  # the child's progress pipe is one of these: say "a shape began" a thousand times
        try:
            os.write(fd, b"b" * 1000)
        except OSError:
            pass
    os._exit(0)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
"""

FORGED_FACTS = """
import sys
from numba import cuda

def task_run(*args, **kwargs):
    return {"shapes": [], "cuda_init_s": "fast"}, {}

__import__("autograder.runner.run", fromlist=["task_run"]).task_run = task_run


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
"""


@pytest.fixture
def no_grammar(monkeypatch):
    monkeypatch.setattr(shortcuts, "violations", lambda source: [])


def test_progress_bytes_past_the_shapes_sent_end_the_check(grade_text, no_grammar, tmp_path):
    """The parent re-ran the same correctness child forever for a child that said it began more shapes than it
    was given; now that child's report is malformed and the grade ends."""
    began = time.monotonic()
    r = grade_text("naive", PROGRESS_FLOOD)
    assert time.monotonic() - began < 120
    outputs = [c.output for c in by_key(r, "correct")]
    assert outputs and all("not gradable: the child's report was malformed" in o for o in outputs), outputs
    assert r.score == sum(c.score for c in by_key(r, "compiles"))  # the build compiled it; no simulator run counts


def test_a_string_where_a_number_belongs_is_not_gradable_and_the_grade_finishes(grade_text, no_grammar, tmp_path):
    """A string in cuda_init_s crashed the grade after all judging, with no results written."""
    r = grade_text("naive", FORGED_FACTS)
    outputs = [c.output for c in by_key(r, "correct")]
    assert outputs and all("cuda_init_s is str 'fast'" in o for o in outputs), outputs
    path = tmp_path / "results.json"
    report.write_json_atomic(str(path), report.to_gradescope(r))
    assert path.stat().st_size > 0
    assert r.score == sum(c.score for c in by_key(r, "compiles"))  # the kernel compiles; nothing else passed
