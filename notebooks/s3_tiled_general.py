# %% [markdown] nbgrader={"grade": false, "grade_id": "s3_tiled_general-md-title", "locked": true, "schema_version": 3, "solution": false, "task": false}
# <!-- Generated from solutions/s3_tiled_general.py and notebooks/prose/s3_tiled_general.md by `make notebooks`: edit those, not this notebook. -->
# # Stage 3: tiles for any size
#
# The stage 2 kernel, made correct for every `M`, `K`, `N`: sizes that are not multiples of
# `TILE`, rectangles, `K = 1`, a 1 x 1 product.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s3_tiled_general-setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
# Setup: run this cell first. Without a GPU, Numba's CUDA simulator stands in (it
# must be chosen before Numba is imported); Numba's warnings are silenced.
import os, shutil, subprocess, sys
from pathlib import Path


def _gpu_present():
    smi = shutil.which("nvidia-smi")
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20) if smi else None
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out) and out.returncode == 0 and "GPU" in out.stdout


if "NUMBA_ENABLE_CUDASIM" not in os.environ and not _gpu_present():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
# The self-check comes from the course's autograder package: importable already, or in a folder above this one.
for _folder in [Path.cwd(), *Path.cwd().parents]:
    if (_folder / "autograder" / "selfcheck" / "__init__.py").is_file():
        sys.path.insert(0, str(_folder))
        break
try:
    from autograder.selfcheck import check, quiet_numba_warnings, say_where_kernels_run
except ImportError:  # a copy without the course's harness (the Classroom template): grading still works
    import warnings

    def quiet_numba_warnings():
        warnings.filterwarnings("ignore", module="numba")

    def say_where_kernels_run():
        print("Kernels run on", "the CUDA simulator (no GPU)." if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
              else "the GPU.")

    def check(stage):
        print(f"Self-check for stage {stage!r} not available here: it needs the course's autograder package. "
              "Install it where this notebook runs (no GPU needed): "
              '`pip install "matmul_gpu_course-<version>-py3-none-any.whl[ptx,plot]"` (the file your course gives; '
              "[ptx] adds the CUDA compiler, [plot] the plots; `make selfcheck-package` builds it from the course "
              "repository), then "
              "restart the kernel and run the notebook again.")

quiet_numba_warnings()
say_where_kernels_run()  # as the self-check's header says it, from the same test

# %% [markdown] nbgrader={"grade": false, "grade_id": "s3_tiled_general-md-intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## How this notebook works
#
# Run the setup cell first, write the part marked `TODO` in the kernel, run its cell, then the
# self-check at the bottom.
#
# The graded cells hold a kernel module and nothing else: imports of `math`, numpy's dtypes and
# `numba`, constants, `@cuda.jit` kernels and helpers, and the launcher (stage 1's notebook lists
# what is allowed, under "What the graded cells may contain"). Anything else scores the stage 0.

# %%
"""Stage 3: shared-memory tiled matrix multiplication for any M, K, N.

Goal: the stage 2 kernel, made correct for sizes that are not multiples of
TILE and for rectangular matrices. Tiles that hang over an edge of A or B are
padded with zeros in shared memory, so the inner loop stays the same; threads
outside C compute but do not store.

Launch geometry: blocks of TILE x TILE threads, ``x`` along the columns of C
and ``y`` along its rows; ceil(N / TILE) blocks along x, ceil(M / TILE) along y.

Requirements:
- the last, partial tile along K counts: ceil(K / TILE) tiles;
- every thread takes part in every load and both barriers, including threads
  outside C (a barrier some threads skip is undefined behaviour);
- loads outside A or B write 0.0 to shared memory; stores outside C are skipped.
"""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


# %% [markdown] nbgrader={"grade": false, "grade_id": "s3_tiled_general-md-matmul_tiled_general_kernel", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Masking the boundaries
#
# With `M = 40, K = 3, N = 6` and `TILE = 16`, one block covers all of `C` and most of it hangs
# over the edges:
#
# ```
#         B (3 x 6) as one 16 x 16 tile          C (40 x 6): 3 blocks along y
#         k\col  0 .. 5 | 6 .. 15                 rows  0..15  [######..........]
#           0    B B B  | 0 0 0                   rows 16..31  [######..........]
#           1    B B B  | 0 0 0                   rows 32..39  [######..........]
#           2    B B B  | 0 0 0                   rows 40..47  (outside C: no store)
#           3..15 0 0 0 | 0 0 0                   # = stored, . = computed, not stored
# ```
#
# Three rules make one kernel work for all of it:
#
# 1. **Count the partial tile.** Loop over `ceil(K / TILE)` tiles, `(K + TILE - 1) // TILE`;
#    `K // TILE` silently drops the last `K % TILE` terms (for `K = 3`, all of them).
# 2. **Load zeros past the edge.** A thread whose element of `A` or `B` lies outside the matrix
#    stores `0.0` into shared memory. A zero adds nothing to the sum, so the inner loop stays
#    exactly as in stage 2, always `TILE` long.
# 3. **Everyone takes part; only the inside stores.** Every thread of the block, also the ones
#    outside `C`, does its loads and reaches both barriers: a barrier that some threads skip
#    (an early `return`, or a barrier inside an `if`) is undefined behaviour on the GPU. Only the
#    final store is guarded: `if row < M and col < N`.

# %% nbgrader={"grade": false, "grade_id": "s3_tiled_general-matmul_tiled_general_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    ### BEGIN SOLUTION
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc
    ### END SOLUTION


# %% [markdown] nbgrader={"grade": false, "grade_id": "s3_tiled_general-md-matmul_tiled_general", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The launcher
#
# `ceil(N / TILE)` blocks along `x`, `ceil(M / TILE)` along `y`: the last row and column of
# blocks hang over the edge of `C`.

# %%
def matmul_tiled_general(A, B, C):
    """Launch matmul_tiled_general_kernel with enough blocks to cover C."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C)


# %% [markdown] nbgrader={"grade": false, "grade_id": "s3_tiled_general-md-check", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Self-check
#
# Correct results on the grader's shapes (1 x 1 and `K = 1`, sizes that are not multiples of the
# tile, tall and wide rectangles), then the race detector and the load counter on one
# instrumented run, and the data-reuse plot. The instrumented run's `M`, `K` and `N` are drawn at
# random, as the grader draws its own, and none is a multiple of the tile (`K` spans two tiles, the
# second partial): its partial tiles load fewer elements, so the ideal kernel loads a little more
# than `2K / TILE` per output, and its `C` must be right too.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s3_tiled_general-selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("tiled_general")

# %% [markdown] nbgrader={"grade": false, "grade_id": "s3_tiled_general-score", "locked": true, "schema_version": 3, "solution": false, "task": true, "points": 15}
# ### Points: stage 3 is worth 15
#
# | check | points |
# |---|---|
# | compiles for the GPU (PTX) | 1 |
# | shared-memory tiles and barriers | 2 |
# | correct results on fresh random inputs | 6 |
# | no shared-memory races | 2 |
# | data reuse | 2 |
# | speed against a reference kernel (GPU only) | 2 |
#
# `make grade` grades this notebook's code cells (not the setup and self-check cells) with the course's grading engine, each check in a separate process on fresh random inputs, and records the score against this cell in the course gradebook. Nothing that runs in your notebook counts toward the grade: the self-check above is a preview.
#
# Without a GPU the speed check cannot run: the simulator tier scores 13 of the 15 points and marks the grade provisional.
