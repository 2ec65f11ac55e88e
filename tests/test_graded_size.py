"""Structure is judged at the size that is graded, in the simulator tier too: besides the small drawn run (partial
tiles at every edge), an instrumented run at the timed size's grid runs two blocks the grade's secret draws
(Stage.sampled_shape). A kernel that tiles, or synchronises, only at small sizes loses the check it did not earn.
(The GPU tier measures these at the timed size itself: tests/test_gpu_structure.py.)"""
import pytest

from autograder import stages
from conftest import failed, mutate, passed
from test_tiling_judged import SOLUTION_LOOP, grade

NAIVE_PAST_64 = ("    acc = float32(0.0)\n    if M > 64 or N > 64:  # naive past the small sizes\n"
                 "        if row < M and col < N:\n            for k in range(K):\n"
                 "                acc += A[row, k] * B[k, col]\n            C[row, col] = acc\n        return\n"
                 + SOLUTION_LOOP)
SECOND_BARRIER = "            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n"
SECOND_BARRIER_SMALL = "            acc += sA[ty, k] * sB[k, tx]\n        if N <= 64:\n            cuda.syncthreads()\n"


def test_the_sampled_shape_is_the_timed_grid_and_drawn(cfg):
    import numpy as np
    stage, n = stages.find("tiled_general"), cfg["speed"]["n"]
    shapes = {stage.sampled_shape(16, np.random.default_rng(seed), n) for seed in range(12)}
    assert len(shapes) > 8
    assert all(abs(M - n) <= 64 and abs(N - n) <= 64 and M % 16 and N % 16 and 32 < K < 64 and K % 16
               for M, K, N in shapes), shapes
    square = {stages.find("tiled").sampled_shape(16, np.random.default_rng(s), n) for s in range(12)}
    assert all(M == K == N and M % 16 == 0 and 96 <= M <= 192 for M, K, N in square), square


@pytest.mark.slow
def test_a_kernel_tiled_only_at_small_sizes_loses_data_reuse(cfg):
    """Tiled while M and N are at most 64, naive past them: 13/13 before (every simulated shape is small)."""
    r = grade(cfg, "tiled_general", mutate("tiled_general", (SOLUTION_LOOP, NAIVE_PAST_64)), seed=7)
    passed(r, "correct")
    out = failed(r, "data_reuse")
    assert "the timed size's grid" in out and "in 2 blocks of whole tiles" in out, out


@pytest.mark.slow
def test_a_kernel_with_its_second_barrier_only_at_small_sizes_loses_races(cfg):
    """The second barrier only while N is at most 64: 13/13 in the simulator tier before."""
    text = mutate("tiled_general", (SECOND_BARRIER, SECOND_BARRIER_SMALL))
    r = grade(cfg, "tiled_general", text, seed=7)
    out = failed(r, "races")
    assert "the timed size's grid" in out and "cuda.syncthreads" in out, out


@pytest.mark.slow
def test_the_solutions_pass_at_the_graded_size(cfg):
    for name in ("tiled", "tiled_transposed"):
        r = grade(cfg, name, mutate(name), seed=11)
        for key in ("races", "data_reuse") + (("bank_conflicts",) if name == "tiled_transposed" else ()):
            assert "At the graded size too" in passed(r, key)
