"""On a real GPU: the launches whose facts are judged (ncu, compute-sanitizer racecheck) cannot be told from the timed
ones by the inputs or by the shape. Skipped, with the reason, without an NVIDIA GPU; run by `make gpu-check`."""
import pytest

from autograder import engine
from conftest import by_key

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not engine.gpu_available(), reason="no NVIDIA GPU on this machine")]

# Tiles when it sees standard-normal inputs (a value beyond [-1, 1) among A's first 32), runs naive on the timed
# runs' uniform ones: ncu used to draw standard-normal inputs, so this kernel kept its data-reuse point.
TILES_ONLY_WHEN_PROFILED = '''"""Stage 2, tiled only for inputs that look like a profiler's."""
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
    wide = 0
    for i in range(32):
        if i < A.shape[1]:
            if abs(A[0, i]) > 1.0:
                wide = 1
    acc = float32(0.0)
    if wide == 1:
        for t in range(A.shape[1] // TILE):
            sA[ty, tx] = A[row, t * TILE + tx]
            sB[ty, tx] = B[t * TILE + ty, col]
            cuda.syncthreads()
            for k in range(TILE):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()
    else:
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
    C[row, col] = acc


def matmul_tiled(A, B, C):
    N = C.shape[0]
    matmul_tiled_kernel[(N // TILE, N // TILE), (TILE, TILE)](A, B, C)
'''


def _drops_barrier_on_multiples():
    """Stage 3's solution, its second barrier only where some side is not a multiple of TILE: the timed size (2048 on
    every side) races, racecheck's drawn size (never a multiple) did not."""
    from course.mutants import solution_text
    text = solution_text("tiled_general")
    old = "            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n"
    assert old in text
    return text.replace(old, "            acc += sA[ty, k] * sB[k, tx]\n"
                             "        if M % TILE != 0 or N % TILE != 0 or K % TILE != 0:\n"
                             "            cuda.syncthreads()\n")


def test_ncu_inputs_are_drawn_as_the_timed_ones(grade_text):
    r = grade_text("tiled", TILES_ONLY_WHEN_PROFILED, device="gpu")
    reuse = by_key(r, "data_reuse")
    assert reuse and reuse[0].status == "failed", [(c.key, c.status, c.output[:200]) for c in r.checks]


def test_racecheck_runs_at_tile_multiples_too(grade_text):
    r = grade_text("tiled_general", _drops_barrier_on_multiples(), device="gpu")
    races = by_key(r, "races")
    # racecheck at the tile-multiple shape finds the race (or the race corrupts C first and races is not credited)
    assert races and races[0].status != "passed", [(c.key, c.status, c.output[:200]) for c in r.checks]
    assert r.score < r.max_score - 2


@pytest.mark.parametrize("name", ["split_k_atomic.py", "persistent.py", "double_buffer.py", "two_rows.py"])
def test_honest_styles_earn_every_structure_point_on_the_gpu(grade_text, name):
    """The simulator tier's honest styles (tests/sampled/) keep every correctness and structure point in the grade of
    record too: split-K with atomics over gridDim.z, persistent grid-stride tiles, double buffering with one barrier,
    two rows per thread."""
    import os
    with open(os.path.join(os.path.dirname(__file__), "sampled", name), encoding="utf-8") as f:
        r = grade_text("tiled_general", f.read(), device="gpu")
    lost = [(c.key, c.output[:300]) for c in r.checks if c.status != "passed" and c.key != "speed"]
    assert not lost, lost
