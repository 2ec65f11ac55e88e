"""The GPU tier on a real GPU: speed, racecheck and ncu catch what they must.

Skipped, with the reason, on machines without an NVIDIA GPU (CI); run by
`make gpu-check` on the GPU machine.
"""
import os
import time

import pytest

from autograder import engine
from conftest import ROOT, failed, mutate, passed, solution_text
from course.mutants import KNOWN_BAD

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")]

DRESSED_UP_NAIVE = '''"""A naive kernel dressed up as tiled: shared arrays and barriers it never uses."""
from numba import cuda, float32

TILE = 16


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    sA[ty, tx] = 0.0
    sB[ty, tx] = 0.0
    cuda.syncthreads()
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    cuda.syncthreads()
    C[row, col] = acc + sA[ty, tx] * sB[ty, tx]


def matmul_tiled(A, B, C):
    N = C.shape[0]
    matmul_tiled_kernel[(N // TILE, N // TILE), (TILE, TILE)](A, B, C)
'''


@pytest.fixture(scope="module")
def gpu_solutions(cfg):
    started = time.perf_counter()
    report = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=11, cfg=cfg)
    report.wall = time.perf_counter() - started
    return report


def test_solutions_full_marks_on_gpu(gpu_solutions):
    r = gpu_solutions
    bad = [f"{c.stage}: {c.name}: {c.status}: {c.output}" for c in r.checks if c.status != "passed"]
    assert not bad, "\n".join(bad)
    assert r.score == r.max_score
    print(f"\nGPU tier, all five stages: {r.wall:.1f} s")
    for c in r.checks:
        print(f"  {c.stage:16s} {c.key:14s} {c.output.splitlines()[0] if c.output else ''}")


def test_timing_children_load_every_kernel_compiled(gpu_solutions):
    """One timing child for the grade (engine/timing_together.py) finds the grader's kernels (compiled once per
    process by a child without student code) and loads the student's from the build child's PTX: it compiles
    nothing itself. Likewise one correctness runner runs every stage."""
    speed = [c for c in gpu_solutions.children if c["task"] in ("speed", "speed_parts")]
    assert [c["task"] for c in speed] == ["speed_parts"], [c["what"] for c in speed]
    prof = speed[0]["profile"]
    print(f"  kernels loaded {prof.get('kernels_loaded')}, compiled {prof.get('kernels_compiled')}")
    assert prof.get("kernels_loaded", 0) >= 5 and prof.get("kernels_compiled") == 0, prof
    runners = [c for c in gpu_solutions.children if c["task"] == "run"]
    assert len(runners) == 1 and "naive" in runners[0]["what"] and "fast" in runners[0]["what"], [c["what"] for c in runners]


def test_challenge_leaderboard(gpu_solutions):
    assert gpu_solutions.leaderboard, "stage 5 wrote no leaderboard entry"
    board = gpu_solutions.leaderboard[0]
    print(f"\nleaderboard: {board}")
    assert board["n"] == 4096 and board["tflops"] > 0


def test_missing_second_barrier_fails_on_gpu_before_racecheck(grade_text):
    text = mutate("tiled", ("            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n",
                            "            acc += sA[ty, k] * sB[k, tx]\n"))
    r = grade_text("tiled", text, device="gpu")
    # On the GPU the race corrupts C at N = 2048, so correctness fails first and the GPU tools are not run
    # (fail fast); the simulator's race detector names the missing barrier (tests/checks/test_races.py).
    assert "Likely cause" in failed(r, "correct")
    assert "not run: the correctness checks failed" in failed(r, "races")


def test_unpadded_stage4_caught_by_ncu(grade_text):
    r = grade_text("tiled_transposed", mutate("tiled_transposed", ("TILE_PAD = TILE + 1", "TILE_PAD = TILE")),
                   device="gpu")
    assert "bank conflicts" in failed(r, "bank_conflicts")
    assert "needs 2.5x" in failed(r, "speed")


def test_dressed_up_naive_fails_speed(grade_text):
    assert "needs 3.0x" in failed(grade_text("tiled", DRESSED_UP_NAIVE, device="gpu"), "speed")


def test_stage4_naive_with_unused_tiles_fails_data_reuse_and_speed(grade_text):
    r = grade_text("tiled_transposed", KNOWN_BAD["stage 4 fake tiling"].text, device="gpu")
    assert "global memory instead of the shared tiles" in failed(r, "data_reuse")
    assert "needs 2.5x" in failed(r, "speed")


@pytest.mark.parametrize("tile", [16, 32])
def test_textbook_tiled_passes_speed(grade_text, tile):
    passed(grade_text("tiled", mutate("tiled", ("TILE = 16", f"TILE = {tile}")), device="gpu"), "speed")


def test_uncoalesced_naive_fails_speed(grade_text):
    text = mutate("naive", ("col, row = cuda.grid(2)", "row, col = cuda.grid(2)"),
                  ("blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))", "blocks = (math.ceil(M / BLOCK), math.ceil(N / BLOCK))"))
    assert "needs 0.85x" in failed(grade_text("naive", text, device="gpu"), "speed")


def test_unguarded_store_caught_on_gpu(grade_text):
    r = grade_text("tiled_general", mutate("tiled_general", ("    if row < M and col < N:\n        C[row, col] = acc",
                                                             "    C[row, col] = acc")), device="gpu")
    failed(r, "correct")


def test_wrong_guard_dropped_tile_transposed_b_on_gpu(grade_text):
    assert "column count" in failed(grade_text("naive", mutate("naive", ("if row < M and col < N:", "if row < N and col < N:")),
                                               device="gpu"), "correct")
    assert "partial tile along K" in failed(grade_text("tiled_general", mutate(
        "tiled_general", ("range((K + TILE - 1) // TILE)", "range(K // TILE)")), device="gpu"), "correct")


def test_kernel_that_never_ends_on_gpu(grade_text):
    started = time.monotonic()
    r = grade_text("naive", KNOWN_BAD["kernel never ends"].text, device="gpu", check_timeout_s=60)
    # stopped after_start_s (5 s) after its launch, not at the end of the 60 s limit
    assert "did not finish within 5 s of its kernels' launch" in failed(r, "correct")
    assert time.monotonic() - started < 45
    # the build child's compile facts stand, whatever the runner did
    passed(r, "compiles")
    # the GPU is usable again right after the kill
    passed(grade_text("naive", solution_text("naive"), device="gpu"), "correct")


def test_kernel_the_gpu_compiler_rejects(grade_text):
    """On a GPU the compile facts come from the build child: a kernel the compiler rejects fails the compile check
    with the compiler's message, and correctness, which has nothing to launch."""
    text = mutate("tiled", ("cuda.shared.array((TILE, TILE), float32)", "cuda.shared.array((A.shape[0], TILE), float32)"))
    r = grade_text("tiled", text, device="gpu")
    assert "the GPU compiler rejected matmul_tiled_kernel" in failed(r, "compiles")
    failed(r, "correct")
