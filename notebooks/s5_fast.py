# %% [markdown] nbgrader={"grade": false, "grade_id": "s5_fast-md-title", "locked": true, "schema_version": 3, "solution": false, "task": false}
# <!-- Generated from solutions/s5_fast.py and notebooks/prose/s5_fast.md by `make notebooks`: edit those, not this notebook. -->
# # Stage 5 (challenge): the fastest kernel you can write
#
# Anything that runs as Numba CUDA kernels launched by `matmul_fast` is allowed; cuBLAS, CuPy and
# arithmetic on the host are not. The reference solution uses 2D register blocking.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s5_fast-setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% [markdown] nbgrader={"grade": false, "grade_id": "s5_fast-md-intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## How this notebook works
#
# Run the setup cell first, write the part marked `TODO`, run its cell, then the self-check at
# the bottom. You may change the constants and the launcher too: the launch geometry of this
# stage is yours to choose.
#
# The graded cells hold a kernel module and nothing else: imports of `math`, numpy's dtypes and
# `numba`, constants, `@cuda.jit` kernels and helpers, and the launcher (stage 1's notebook lists
# what is allowed, under "What the graded cells may contain"). Anything else scores the stage 0.

# %% [markdown] nbgrader={"grade": false, "grade_id": "s5_fast-md-header", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Register blocking
#
# Tiling (stages 2 to 4) lifted the kernel from global-memory bandwidth to shared-memory
# bandwidth: every multiply-add still reads two floats from shared memory. The next step keeps
# data in **registers**, the fastest storage there is, private to each thread.
#
# A block computes a `BM x BN` tile of `C`; each of its threads computes a `TM x TN` patch of
# that tile. Per step `k` a thread loads `TM` values of `A` and `TN` values of `B` from shared
# memory into registers and does all `TM * TN` multiply-adds between them:
#
# | | shared loads per multiply-add |
# |---|---|
# | tiled kernel (one output per thread) | 2 |
# | register blocking, `TM = TN = 8` | (8 + 8) / 64 = 0.25 |
#
# Measured by the course on an H200 at N = 4096:
#
# | kernel | TFLOP/s | x naive | % of cuBLAS |
# |---|---|---|---|
# | naive, coalesced (stage 1) | 1.37 | 1.00 | 2.7 |
# | tiled 16 (stage 2) | 7.99 | 5.85 | 15.6 |
# | register blocking 128 x 128, 8 x 8 per thread, signed 2D indices | 7.93 | 5.80 | 15.5 |
# | the same with unsigned 1D indices (the reference solution) | 28.20 | 20.64 | 55.1 |
#
# The third row is the surprise: register blocking alone bought nothing. For a signed index Numba
# emits code that wraps negative values around (Python's `a[-1]`), and that keeps the compiler from
# turning the shared-memory addresses of the inner loop into constant offsets. With `uint32`
# indices and 1D shared tiles the inner loop compiles to `TM + TN` loads and `TM * TN` fused
# multiply-adds with almost nothing else.
#
# ### Beyond this solution
#
# Faster kernels, written and measured by the course, go on from here. On an H100 at N = 4096,
# where cuBLAS ran at 51.3 TFLOP/s:
#
# | kernel | TFLOP/s | % of cuBLAS |
# |---|---|---|
# | the reference solution | 28.3 | 55.1 |
# | 4 x 4 sub-tiles read with 128-bit shared loads, warp tiling, `BK = 16` | 34.0 | 66.3 |
# | + double buffering: the next tile travels through registers during the FMAs | 38.1 | 74.3 |
# | + registers capped at 128, so two blocks fit on an SM | 38.8 | 75.6 |
#
# - **128-bit shared loads.** Give each thread 4 neighbouring rows of the (transposed) A tile and 4
#   neighbouring columns of the B tile, and the compiler merges 4 scalar loads into one: 4 loads per
#   64 FMAs instead of 16. It does so only when it can prove the address 16-byte aligned, which takes
#   `cuda.shared.array(n, float32, 16)`.
# - **Double buffering.** Two shared buffers: load tile k + 1 from global memory into registers,
#   compute tile k, store the registers into the other buffer, one barrier. This was the largest
#   single gain.
# - **What did not help:** 128 x 256 and 256 x 128 tiles (216 registers, one block per SM),
#   ordering the blocks for L2 reuse, `BK = 8` once the loads were double-buffered.
# - **What a submission can use: all of it.** The alignment argument, `max_registers` and
#   `forceinline` only tune GPU code; the grader's simulator tier accepts them and ignores them.
#   The fastest of them is itself a stage 5 module: graded as one on the H100 it scored
#   12 / 12, with 38.6 TFLOP/s (75.8% of cuBLAS) on the leaderboard. Without the three hints,
#   double buffering with `BK = 8` and plain `@cuda.jit(device=True)` helpers reached 70.7%.

# %%
"""Stage 5 (challenge): the fastest correct kernel you can write.

Reference solution: 2D register blocking. A block of THREADS threads computes a
BM x BN tile of C; each thread keeps a TM x TN sub-tile of accumulators in
registers. Per step along K the block stages a BM x BK slice of A (stored
transposed, so a thread's TM values of A lie in one shared row) and a BK x BN
slice of B in shared memory; each thread then does TM * TN fused multiply-adds
per TM + TN shared loads. A thread's rows and columns are strided by BM / TM
and BN / TN, so the lanes of a warp read neighbouring shared words (no bank
conflicts) and store neighbouring columns of C (coalesced).

Indices are unsigned (uint32): for a signed index Numba emits code that wraps
negative values around (Python's a[-1]), which keeps the compiler from folding
the shared-memory addresses of the inner loop into constant offsets. Shared
tiles are 1D for the same reason: the inner loop compiles to TM + TN loads and
TM * TN fused multiply-adds with almost nothing else.

Launch geometry: 1D blocks of THREADS = (BM / TM) * (BN / TN) threads;
ceil(N / BN) blocks along x, ceil(M / BM) along y.

Requirements: any M, K, N >= 1; correct to 1e-5 relative error. Anything that
runs as Numba CUDA kernels launched by matmul_fast on A, B and C is allowed;
cuBLAS, CuPy and host-side arithmetic are not.
"""
import math

from numba import cuda, float32, uint32

BM = 128
BN = 128
BK = 8
TM = 8
TN = 8
ROW_THREADS = BM // TM
COL_THREADS = BN // TN
THREADS = ROW_THREADS * COL_THREADS
A_LOADS = BM * BK // THREADS
B_LOADS = BK * BN // THREADS
SA_SIZE = BK * BM
SB_SIZE = BK * BN


# %% nbgrader={"grade": false, "grade_id": "s5_fast-matmul_fast_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array(SA_SIZE, float32)   # sA[k * BM + m] = A[row0 + m, k0 + k]
    sB = cuda.shared.array(SB_SIZE, float32)   # sB[k * BN + n] = B[k0 + k, col0 + n]
    a_reg = cuda.local.array(TM, float32)
    b_reg = cuda.local.array(TN, float32)
    acc = cuda.local.array((TM, TN), float32)
    tid = uint32(cuda.threadIdx.x)
    trow = tid // uint32(COL_THREADS)
    tcol = tid % uint32(COL_THREADS)
    row0 = uint32(cuda.blockIdx.y) * uint32(BM)
    col0 = uint32(cuda.blockIdx.x) * uint32(BN)
    M = uint32(A.shape[0])
    K = uint32(A.shape[1])
    N = uint32(B.shape[1])
    ### BEGIN SOLUTION
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    for k0 in range(uint32(0), K, uint32(BK)):
        for i in range(A_LOADS):
            idx = tid + uint32(i * THREADS)
            r = idx // uint32(BK)
            c = idx % uint32(BK)
            gr = row0 + r
            gc = k0 + c
            sA[c * uint32(BM) + r] = A[gr, gc] if gr < M and gc < K else float32(0.0)
        for i in range(B_LOADS):
            idx = tid + uint32(i * THREADS)
            r = idx // uint32(BN)
            c = idx % uint32(BN)
            gr = k0 + r
            gc = col0 + c
            sB[r * uint32(BN) + c] = B[gr, gc] if gr < K and gc < N else float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            a_base = uint32(k * BM) + trow
            b_base = uint32(k * BN) + tcol
            for i in range(TM):
                a_reg[i] = sA[a_base + uint32(i * ROW_THREADS)]
            for j in range(TN):
                b_reg[j] = sB[b_base + uint32(j * COL_THREADS)]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += a_reg[i] * b_reg[j]
        cuda.syncthreads()
    for i in range(TM):
        r = row0 + trow + uint32(i * ROW_THREADS)
        if r < M:
            for j in range(TN):
                c = col0 + tcol + uint32(j * COL_THREADS)
                if c < N:
                    C[r, c] = acc[i, j]
    ### END SOLUTION


# %%
def matmul_fast(A, B, C):
    """Launch matmul_fast_kernel with one THREADS-thread block per BM x BN tile of C."""
    M, N = C.shape
    blocks = (math.ceil(N / BN), math.ceil(M / BM))
    matmul_fast_kernel[blocks, THREADS](A, B, C)


# %% [markdown] nbgrader={"grade": false, "grade_id": "s5_fast-md-check", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Self-check
#
# Correctness on the grader's shapes. Speed can only be measured on a GPU: there the plot shows
# your kernel against the naive reference over several sizes; in the simulator it shows the global
# loads per output element of one 32 x 32 x 32 product (one block of the reference solution covers
# it, so each element of `A` and `B` is loaded once).

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s5_fast-selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("fast")

# %% [markdown] nbgrader={"grade": false, "grade_id": "s5_fast-score", "locked": true, "schema_version": 3, "solution": false, "task": true, "points": 12}
# ### Points: stage 5 is worth 12
#
# | check | points |
# |---|---|
# | compiles for the GPU (PTX) | 1 |
# | correct results on fresh random inputs | 6 |
# | speed against a reference kernel (GPU only) | 5 |
#
# `make grade` grades this notebook's code cells (not the setup and self-check cells) with the course's grading engine, each check in a separate process on fresh random inputs, and records the score against this cell in the course gradebook. Nothing that runs in your notebook counts toward the grade: the self-check above is a preview.
#
# Without a GPU the speed check cannot run: the simulator tier scores 7 of the 12 points and marks the grade provisional.
