# %% [markdown] nbgrader={"grade": false, "grade_id": "s2_tiled-md-title", "locked": true, "schema_version": 3, "solution": false, "task": false}
# <!-- Generated from solutions/s2_tiled.py and notebooks/prose/s2_tiled.md by `make notebooks`: edit those, not this notebook. -->
# # Stage 2: shared-memory tiles
#
# Each block computes one `TILE x TILE` tile of `C`. It walks along `K` one tile at a time:
# every thread loads one element of `A` and one of `B` into shared memory, the block waits, and
# then each thread takes its `TILE` products from the shared tiles. Every element fetched from
# global memory is used `TILE` times.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s2_tiled-setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% [markdown] nbgrader={"grade": false, "grade_id": "s2_tiled-md-intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## How this notebook works
#
# Run the setup cell first, write the part marked `TODO` in the kernel, run its cell, then the
# self-check at the bottom. This stage only has to handle square `N` that are multiples of
# `TILE`; stage 3 removes that restriction.
#
# `TILE` is 16 or 32, the sizes the course allows: the grader sizes its test shapes and its
# data-reuse bar by them. Another `TILE` keeps the points of correct results, but the shared-tile
# check fails and the tiling is judged as if `TILE` were 16.
#
# The graded cells hold a kernel module and nothing else: imports of `math`, numpy's dtypes and
# `numba`, constants, `@cuda.jit` kernels and helpers, and the launcher (stage 1's notebook lists
# what is allowed, under "What the graded cells may contain"). Anything else scores the stage 0.

# %%
"""Stage 2: shared-memory tiled matrix multiplication for square N, N % TILE == 0.

Goal: each block computes one TILE x TILE tile of C. It walks along K one
tile at a time: every thread loads one element of A and one of B into shared
memory, the block waits, then each thread reads TILE products from the shared
tiles. Every element loaded from global memory is used TILE times.

Launch geometry: blocks of TILE x TILE threads, ``x`` along the columns of C
and ``y`` along its rows; the grid is N / TILE blocks on each axis.

Requirements:
- two shared arrays of TILE x TILE float32;
- a barrier after loading a tile (nobody reads before it is complete) and a
  barrier after using it (nobody overwrites it while others still read);
- the grader only gives square N that are multiples of TILE.
"""
from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


# %% [markdown] nbgrader={"grade": false, "grade_id": "s2_tiled-md-matmul_tiled_kernel", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## What tiling reuses
#
# In the naive kernel the 16 x 16 threads of a block read the same 16 rows of `A` and the same
# 16 columns of `B` again and again, each thread for itself. Tiling makes the block fetch each of
# those elements **once per tile step** into shared memory, the fast on-chip memory that the
# threads of one block share, and serve every further use from there:
#
# | | naive | tiled by `TILE` |
# |---|---|---|
# | global loads per output element | `2K` | `2K / TILE` |
# | arithmetic intensity | 0.25 flop/byte | `0.25 * TILE` flop/byte |
# | measured on an H200, N = 2048 | 1.0x | 5.62x (TILE 16), 5.76x (TILE 32) |
#
# The shared arrays `sA` and `sB` are already declared; `tx, ty` are the thread's position in its
# block and `row, col` its element of `C`. One step `t` of the loop over tiles:
#
# 1. each thread stores `A[row, t*TILE + tx]` into `sA[ty, tx]` and `B[t*TILE + ty, col]` into `sB[ty, tx]`;
# 2. **barrier**;
# 3. each thread adds `sA[ty, k] * sB[k, tx]` for `k` in `0 .. TILE-1`;
# 4. **barrier**.
#
# ### Why both barriers
#
# Threads of a block do not run in lock-step: warps are scheduled independently.
#
# - **The first barrier** (after the loads): thread `(tx=0, ty=0)` reads `sA[0, 5]`, which
#   thread `(5, 0)` stores. Without the barrier it may read the element before it is written:
#   a *read-after-write* race, and a wrong sum.
# - **The second barrier** (after the inner loop): a fast thread finishes its products and
#   starts the next step, overwriting `sA[ty, tx]` while a slower thread is still reading the
#   old tile: a *write-after-read* race.
#
# The second one is treacherous. On a GPU the kernel without it usually still prints the right
# answer (measured on an H200: max error 0.0 in plain runs). The simulator runs a block's
# threads one after another, so there it goes wrong as soon as there are two tiles along `K`. Either way only a race detector names the
# cause, and the grader runs one on both tiers: the simulator's shared-memory race detector, and
# `compute-sanitizer --tool racecheck` on a GPU.

# %% nbgrader={"grade": false, "grade_id": "s2_tiled-matmul_tiled_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    ### BEGIN SOLUTION
    acc = float32(0.0)
    for t in range(A.shape[1] // TILE):
        sA[ty, tx] = A[row, t * TILE + tx]
        sB[ty, tx] = B[t * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[row, col] = acc
    ### END SOLUTION


# %% [markdown] nbgrader={"grade": false, "grade_id": "s2_tiled-md-matmul_tiled", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The launcher
#
# One `TILE x TILE` block per tile of `C`: the grid is `N / TILE` blocks on each axis.

# %%
def matmul_tiled(A, B, C):
    """Launch matmul_tiled_kernel with one TILE x TILE block per tile of C."""
    N = C.shape[0]
    blocks = (N // TILE, N // TILE)
    matmul_tiled_kernel[blocks, (TILE, TILE)](A, B, C)


# %% [markdown] nbgrader={"grade": false, "grade_id": "s2_tiled-md-check", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Self-check
#
# Correct results on one tile and on 2 x 2 tiles, then one instrumented run in the simulator at
# 2 x 2 or 3 x 3 tiles, drawn at random as the grader draws its own: the race detector (a missing
# barrier fails here) and the load counter. The plot compares the global loads per output element
# of the naive kernel (`2K`), of yours, and of an ideal `TILE`-tiled kernel (`2K / TILE`).

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s2_tiled-selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("tiled")

# %% [markdown] nbgrader={"grade": false, "grade_id": "s2_tiled-score", "locked": true, "schema_version": 3, "solution": false, "task": true, "points": 15}
# ### Points: stage 2 is worth 15
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
