# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-md-title", "locked": true, "schema_version": 3, "solution": false, "task": false}
# <!-- Generated from solutions/s4_tiled_transposed.py and notebooks/prose/s4_tiled_transposed.md by `make notebooks`: edit those, not this notebook. -->
# # Stage 4: shared-memory banks
#
# Store the `B` tile transposed, `sBT[x, k] = B[k, col]`, so that each thread reads its column
# of the tile as a row, and add **one padding column** so that the 32 threads of a warp never
# queue for the same memory bank.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-md-intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## How this notebook works
#
# Run the setup cell first, write the part marked `TODO` in the kernel, run its cell, then the
# self-check at the bottom. As in stage 3, any `M`, `K`, `N` must work.
#
# The graded cells hold a kernel module and nothing else: imports of `math`, numpy's dtypes and
# `numba`, constants, `@cuda.jit` kernels and helpers, and the launcher (stage 1's notebook lists
# what is allowed, under "What the graded cells may contain"). Anything else scores the stage 0.

# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-md-header", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The module
#
# `TILE_PAD = TILE + 1` is a module constant on purpose: the GPU compiler needs shared-array
# shapes that are compile-time constants. `cuda.shared.array((TILE, TILE + 1), float32)` runs in
# the simulator but does not compile for the GPU, and the grader's PTX compile catches it.

# %%
"""Stage 4: tiled matrix multiplication with the B tile stored transposed and padded.

Goal: store the B tile transposed, sBT[x, k] = B[k, col], so each thread reads
its column of the tile as a row. Shared memory has 32 banks of 4 bytes; with
TILE = 32 the 32 threads of a warp (same ty, tx = 0..31) read sBT[tx, k], which
are TILE floats apart: all 32 in one bank, a 32-way conflict. One padding
column (TILE_PAD = TILE + 1) shifts each row by one bank, so the warp reads 32
different banks.

Launch geometry: blocks of TILE x TILE threads, ``x`` along the columns of C
and ``y`` along its rows; ceil(N / TILE) blocks along x, ceil(M / TILE) along y.

Requirements:
- any M, K, N >= 1, as in stage 3;
- sBT is TILE x TILE_PAD float32; TILE_PAD is a module constant because the
  GPU compiler needs shared-array shapes that are compile-time constants;
- sA as in stage 3; both barriers.
"""
import math

from numba import cuda, float32

TILE = 32  # the course allows 16 or 32
TILE_PAD = TILE + 1


# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-md-matmul_tiled_transposed_kernel", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## What a bank conflict is
#
# Shared memory is split into **32 banks**, each 4 bytes wide: the 4-byte word at word address
# `w` lives in bank `w % 32`. A warp's load is served in one pass when its 32 threads touch 32
# different banks (or the very same word: a broadcast). When `n` threads need different words of
# the same bank, the load takes `n` passes: an `n`-way bank conflict.
#
# In this kernel the inner loop reads `sBT[tx, k]`. The 32 threads of a warp share `ty` and `k`
# and have `tx = 0 .. 31`. Element `[tx, k]` of an array whose rows are `R` words long sits at
# word `tx * R + k`, in bank `(tx * R + k) % 32`:
#
# | lane `tx` | bank of `sBT[tx, 0]`, rows of 32 words | rows of 33 words (`TILE_PAD`) |
# |---|---|---|
# | 0 | 0 | 0 |
# | 1 | 0 | 1 |
# | 2 | 0 | 2 |
# | 3 | 0 | 3 |
# | ... | 0 | ... |
# | 31 | 0 | 31 |
# | **warp's load** | **32-way conflict: 32 passes** | **32 banks: 1 pass** |
#
# With `TILE = 32` the row length is 32 words, a multiple of the 32 banks, so a whole column
# lies in one bank. One extra word per row shifts each row by one bank: `(tx * 33 + k) % 32 =
# (tx + k) % 32`, all different. The store `sBT[tx, ty]` spreads the same way. Measured on an
# H200 (ncu, N = 256): **3,670,016** bank conflicts unpadded, **0** padded; at N = 2048 the
# unpadded kernel runs at 1.13x the naive one, the padded one at 5.76x.

# %% nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-matmul_tiled_transposed_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
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
        sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sBT[tx, k]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc
    ### END SOLUTION


# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-md-matmul_tiled_transposed", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The launcher
#
# As in stage 3: `ceil(N / TILE)` blocks along `x`, `ceil(M / TILE)` along `y`, blocks of
# `TILE x TILE` threads.

# %%
def matmul_tiled_transposed(A, B, C):
    """Launch matmul_tiled_transposed_kernel with enough blocks to cover C."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)


# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-md-check", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Self-check
#
# Correct results on the grader's shapes, then one instrumented product in the simulator (`M`,
# `K` and `N` drawn at random as the grader draws its own, one partial block along `M` and `N`, two
# tiles along `K`): the race detector, the load counter (a tiled kernel reuses each load of `A` and `B`) and the bank
# counter, which groups every shared-memory access by warp and counts how many different words
# each bank must serve. The plot shows the global loads
# per output element and the mean conflict degree of each shared-memory load in your kernel
# (1 = conflict-free; an unpadded `sBT` shows 32).

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("tiled_transposed")

# %% [markdown] nbgrader={"grade": false, "grade_id": "s4_tiled_transposed-score", "locked": true, "schema_version": 3, "solution": false, "task": true, "points": 15}
# ### Points: stage 4 is worth 15
#
# | check | points |
# |---|---|
# | compiles for the GPU (PTX) | 1 |
# | shared-memory tiles and barriers | 2 |
# | correct results on fresh random inputs | 6 |
# | no shared-memory races | 2 |
# | no shared-memory bank conflicts | 1 |
# | data reuse | 1 |
# | speed against a reference kernel (GPU only) | 2 |
#
# `make grade` grades this notebook's code cells (not the setup and self-check cells) with the course's grading engine, each check in a separate process on fresh random inputs, and records the score against this cell in the course gradebook. Nothing that runs in your notebook counts toward the grade: the self-check above is a preview.
#
# Without a GPU the speed check cannot run: the simulator tier scores 13 of the 15 points and marks the grade provisional.
