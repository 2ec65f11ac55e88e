"""checks/correct.py: outputs against a float64 reference, with the first wrong element and the likely cause."""
import numpy as np
import pytest

from autograder.checks import correct
from checkkit import FakeGrader, assert_known_bad, child_result
from conftest import failed, mutate
from course.mutants import by_check

RNG = np.random.default_rng(0)
A = RNG.standard_normal((40, 3)).astype(np.float32)
B = RNG.standard_normal((3, 6)).astype(np.float32)
C = (A.astype(np.float64) @ B).astype(np.float32)


def test_right_output_passes_and_wrong_one_names_the_element():
    assert correct.check_output(C, A, B, 1e-5)[0]
    wrong = C.copy()
    wrong[7, 2] += 1.0
    ok, message = correct.check_output(wrong, A, B, 1e-5)
    assert not ok and "C[7, 2]" in message and "1 of 240 elements wrong" in message


@pytest.mark.parametrize("make, cause", [
    (lambda: np.where(np.arange(40)[:, None] < 6, C, np.nan), "compares the row with the column count"),
    (lambda: np.full_like(C, np.nan), "nothing was written to C"),
])
def test_likely_cause(make, cause):
    ok, message = correct.check_output(make().astype(np.float32), A, B, 1e-5)
    assert not ok and cause in message, message


def test_judge_reports_writes_past_the_end_and_errors():
    inputs = {"A0": A, "B0": B, "A1": A, "B1": B}
    result = child_result({"shapes": [{"writes_past_end": 3}, {"error": {"kind": "index_error", "message": "IndexError"}}]},
                          arrays={"C0": C})
    c = correct.judge(FakeGrader("naive"), "group", result, inputs, 1)
    assert c.status == "failed" and "3 values were written past the end of C" in c.output
    assert "guard loads and stores" in c.output


def test_guard_that_compares_rows_with_n_names_the_first_wrong_element(grade_text):
    r = grade_text("naive", mutate("naive", ("if row < M and col < N:", "if row < N and col < N:")))
    assert "C[6, 0]" in failed(r, "correct")  # first wrong element of the 40 x 6 output


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("correct")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)


@pytest.mark.parametrize("M, K, N, done, says", [
    (16, 16, 16, 0, "stops 1 tile short"),        # range(K // TILE - 1) on one tile: C is exactly 0
    (32, 64, 32, 48, "first 48 of K = 64"),       # the last of four tiles skipped
    (20, 40, 20, 16, "stops 2 tiles short"),      # K = 40: tiles 16, 16, 8; only the first done
    (20, 5, 20, 0, "stops 1 tile short"),         # K < TILE: one partial tile, range(K // TILE) runs none: C is 0
    (16, 12, 24, 0, "K = 12 is smaller than TILE = 16"),
])
def test_skipped_tiles_along_k_are_named(M, K, N, done, says):
    """A loop over tiles that stops short (range(K // TILE - 1)) leaves C the product truncated along K: the
    hint says so, not "check the indexing"."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = (A[:, :done].astype(np.float64) @ B[:done]).astype(np.float32) if done else np.zeros((M, N), np.float32)
    ok, message = correct.check_output(C, A, B, 1e-5, tile=16)
    assert not ok and "the last tile along K is missing" in message and says in message, message
    assert "check the indexing" not in message


def test_a_wrong_product_at_the_timed_size_is_explained_in_seconds():
    """The explanation of a wrong C compares candidate products (tiles skipped along K, transposed operands) on a
    sample of rows: at 2048 x 2048 the full products, one per tile along K, took minutes of the grading process
    (a racy stage 2 kernel held a grade for 24 s, and the race check's stop with it). A skipped tile is still named."""
    import time
    rng = np.random.default_rng(0)
    n = 2048
    A, B = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    racy = (A.astype(np.float64) @ B).astype(np.float32)
    racy[rng.random((n, n)) < 0.01] += 1.0
    started = time.perf_counter()
    ok, message = correct.check_output(racy, A, B, 1e-5, tile=16)
    assert not ok and "irregular: a race between threads" in message, message
    short = (A[:, :n - 16].astype(np.float64) @ B[:n - 16]).astype(np.float32)
    ok, message = correct.check_output(short, A, B, 1e-5, tile=16)
    assert not ok and "the loop over tiles stops 1 tile short" in message, message
    assert time.perf_counter() - started < 15
