"""Structure is judged at the size that is graded, in the simulator tier too: besides the small drawn run (partial
tiles at every edge), an instrumented run at the timed size's grid runs two blocks the grade's secret draws
(Stage.sampled_shape). A kernel that tiles, or synchronises, only at small sizes loses the check it did not earn.
(The GPU tier measures these at the timed size itself: tests/test_gpu_structure.py.)"""
import pytest

from autograder import stages
from conftest import failed, mutate, passed
from test_tiling_judged import SOLUTION_LOOP, grade, grader

NAIVE_PAST_64 = ("    acc = float32(0.0)\n    if M > 64 or N > 64:  # naive past the small sizes\n"
                 "        if row < M and col < N:\n            for k in range(K):\n"
                 "                acc += A[row, k] * B[k, col]\n            C[row, col] = acc\n        return\n"
                 + SOLUTION_LOOP)
SECOND_BARRIER = "            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n"
SECOND_BARRIER_SMALL = "            acc += sA[ty, k] * sB[k, tx]\n        if N <= 64:\n            cuda.syncthreads()\n"


def test_the_sampled_shape_is_the_timed_grid_and_drawn(cfg):
    """M and N near the timed size, whole multiples of the tile or not, K of 2 to 16 tiles whole or partial: a kernel
    cannot tell the sampled shape from the timed one (2048, every size a multiple of the tile) by those (M and N were
    never multiples, K 2-3 tiles and a partial one)."""
    import numpy as np
    stage, n = stages.find("tiled_general"), cfg["speed"]["n"]
    shapes = {stage.sampled_shape(16, np.random.default_rng(seed), n) for seed in range(40)}
    assert len(shapes) > 30
    assert all(abs(M - n) <= 64 and abs(N - n) <= 64 and 32 <= K < 17 * 16 for M, K, N in shapes), shapes
    for side in (0, 1, 2):
        whole = [s for s in shapes if s[side] % 16 == 0]
        assert 8 < len(whole) < 32, (side, shapes)
    assert any(M % 16 == N % 16 == K % 16 == 0 for M, K, N in shapes)
    assert max(K for _, K, _ in shapes) > 192 and min(K for _, K, _ in shapes) < 64, shapes
    square = {stages.find("tiled").sampled_shape(16, np.random.default_rng(s), n) for s in range(40)}
    assert all(M == K == N and M % 16 == 0 and 96 <= M <= 384 for M, K, N in square), square
    assert max(M for M, _, _ in square) > 256, square


def seed_where(cfg, stage_name, text, wanted, folder):
    """The first grade seed whose sampled shape `wanted(M, K, N)` accepts."""
    return next(seed for seed in range(200) if wanted(*grader(cfg, stage_name, seed, folder, text).sampled_shape))


SECOND_BARRIER_UNLESS_WHOLE = ("            acc += sA[ty, k] * sB[k, tx]\n"
                               "        if M % TILE != 0 or N % TILE != 0 or K % TILE != 0:  # none at the timed size\n"
                               "            cuda.syncthreads()\n")
SECOND_BARRIER_SHORT_K = ("            acc += sA[ty, k] * sB[k, tx]\n        if K <= 64:  # none for a long K\n"
                          "            cuda.syncthreads()\n")


@pytest.mark.slow
@pytest.mark.parametrize("branch, wanted", [
    (SECOND_BARRIER_UNLESS_WHOLE, lambda M, K, N: M % 16 == N % 16 == K % 16 == 0),
    (SECOND_BARRIER_SHORT_K, lambda M, K, N: K > 64)])
def test_a_kernel_that_branches_on_the_timed_shapes_properties_loses_races(cfg, branch, wanted, tmp_path):
    """The second barrier left out where M, N and K are multiples of the tile (as at the timed size), or where K is
    long: the sampled run never had either (13/13 before). A grade whose draw has it fails races."""
    text = mutate("tiled_general", (SECOND_BARRIER, branch))
    seed = seed_where(cfg, "tiled_general", text, wanted, tmp_path)
    r = grade(cfg, "tiled_general", text, seed=seed, folder=tmp_path)
    passed(r, "correct")
    out = failed(r, "races")
    assert "the timed size's grid" in out and "cuda.syncthreads" in out, out


@pytest.mark.slow
def test_a_kernel_tiled_only_at_small_sizes_loses_data_reuse(cfg, tmp_path):
    """Tiled while M and N are at most 64, naive past them: 13/13 before (every simulated shape is small)."""
    r = grade(cfg, "tiled_general", mutate("tiled_general", (SOLUTION_LOOP, NAIVE_PAST_64)), seed=7, folder=tmp_path)
    passed(r, "correct")
    out = failed(r, "data_reuse")
    assert "the timed size's grid" in out and ("in 2 blocks of whole tiles" in out or "in 1 block of whole" in out), out


@pytest.mark.slow
def test_a_kernel_with_its_second_barrier_only_at_small_sizes_loses_races(cfg, tmp_path):
    """The second barrier only while N is at most 64: 13/13 in the simulator tier before."""
    text = mutate("tiled_general", (SECOND_BARRIER, SECOND_BARRIER_SMALL))
    r = grade(cfg, "tiled_general", text, seed=7, folder=tmp_path)
    out = failed(r, "races")
    assert "the timed size's grid" in out and "cuda.syncthreads" in out, out


@pytest.mark.slow
def test_the_solutions_pass_at_the_graded_size(cfg, tmp_path):
    for name in ("tiled", "tiled_transposed"):
        r = grade(cfg, name, mutate(name), seed=11, folder=tmp_path)
        for key in ("races", "data_reuse") + (("bank_conflicts",) if name == "tiled_transposed" else ()):
            assert "At the graded size too" in passed(r, key)
