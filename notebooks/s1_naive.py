# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-md-title", "locked": true, "schema_version": 3, "solution": false, "task": false}
# <!-- Generated from solutions/s1_naive.py and notebooks/prose/s1_naive.md by `make notebooks`: edit those, not this notebook. -->
# # Stage 1: the naive kernel
#
# One thread computes one element of `C = A @ B`, reading a row of `A` and a column of `B`
# straight from global memory. It is correct, it is the baseline every later stage is timed
# against, and it is slow for a reason you can count.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s1_naive-setup", "locked": true, "schema_version": 3, "solution": false, "task": false}
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

# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-md-intro", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## How this notebook works
#
# 1. Run the setup cell above first. Without a GPU it switches Numba to its CUDA simulator
#    (one Python thread per CUDA thread: correct, small, slow).
# 2. Write the part of the kernel marked `TODO` and run its cell.
# 3. Run the self-check at the bottom. It runs your kernel on a few shapes, explains a wrong
#    result, and plots the global-memory traffic your kernel causes.
#
# **The contract, for every stage.** `A` (M x K), `B` (K x N) and `C` (M x N) are float32,
# C-contiguous Numba device arrays. The launcher `f(A, B, C)` launches the stage's kernel on
# exactly those arrays and returns `None`. The grader allocates, copies, synchronises and times;
# it grades what your kernel alone wrote into `C`. Keep the names of the kernel and the launcher.
#
# **What the graded cells may contain.** The grader reads your code cells as one kernel module
# and accepts only what a kernel module needs; anything else scores the stage 0, with the line
# and the rule:
# - imports of `math`, numpy's dtypes and `numba` (`from numba import cuda, float32`);
# - constants of literals and arithmetic (`TILE_PAD = TILE + 1`);
# - `@cuda.jit` kernels and `@cuda.jit(device=True)` helpers, using locals, array elements,
#   `if`, `for ... in range`, `while`, `cuda.*`, `math.*`, `min`, `max`, `abs` and `print`;
# - launchers that read `C.shape` and launch `kernel[blocks, threads](A, B, C)`.
#
# Not `import os`, `cuda.synchronize()`, `A.copy_to_host()`, `try`, `with`, lambdas,
# comprehensions, f-strings, `__dunder__` names or an `if __name__ == "__main__":` block: try
# things out in a cell of your own and delete it before you submit, or use the self-check.

# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-md-header", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The module
#
# The docstring is the stage's specification: the goal, the launch geometry and the
# requirements the grader checks.

# %%
"""Stage 1: naive matrix multiplication, C = A @ B.

Goal: one thread computes one element of C, reading its row of A and its
column of B straight from global memory.

Launch geometry: 2D blocks of BLOCK x BLOCK threads. ``x`` walks the columns
of C, so the 32 threads of a warp read 32 neighbouring elements of B
(a coalesced load); ``y`` walks the rows. The grid covers all of C:
ceil(N / BLOCK) blocks along x, ceil(M / BLOCK) along y.

Requirements:
- any M, K, N >= 1: threads outside C store nothing;
- accumulate in float32, store once per thread.
"""
import math

from numba import cuda, float32

BLOCK = 16


# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-md-matmul_naive_kernel", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The kernel
#
# `cuda.grid(2)` gives each thread its `(x, y)` position in the whole grid: here `x` is the
# column of `C` and `y` its row. A thread whose position falls outside `C` (the grid is rounded
# up to whole blocks) must not store anything.
#
# ### Why it is slow: arithmetic intensity
#
# One output element takes `K` multiply-adds, that is `2K` floating-point operations, and
# reads `2K` floats from global memory: `K` from its row of `A`, `K` from its column of `B`.
# That is 8K bytes for 2K flops, an **arithmetic intensity of 0.25 flop per byte**.
#
# | | per output element | for N = 2048 (all of C) |
# |---|---|---|
# | work | 2K flops | 2 N^3 = 17.2 GFLOP |
# | global loads requested | 2K floats = 8K bytes | 2 N^3 floats = 68.7 GB |
#
# An H200 moves about 4.8 TB/s from its memory (vendor figure), so at 0.25 flop/byte the
# memory alone caps the kernel near 1.2 TFLOP/s, whatever the arithmetic units could do.
# Measured on an H200: **1.4 TFLOP/s** at N = 2048 (the caches catch a few repeated reads),
# against 50.8 TFLOP/s for cuBLAS at N = 4096. Every element of `A` is read by `N` different
# threads and every element of `B` by `M` threads; each of those reads goes out to global
# memory again. The next stages cut that traffic.
#
# ### Coalescing: which way `x` points matters
#
# The 32 threads of a warp have consecutive `x`. With `x` along the columns, at each step `k`
# they read 32 neighbouring floats `B[k, col..col+31]` (one 128-byte transaction) and the same
# `A[row, k]` (one broadcast). With `x` along the rows instead, their reads of `A` are `K`
# floats apart: the measured kernel ran at 0.71x the speed of the coalesced one.

# %% nbgrader={"grade": false, "grade_id": "s1_naive-matmul_naive_kernel", "locked": false, "schema_version": 3, "solution": true, "task": false}
@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    N = B.shape[1]
    ### BEGIN SOLUTION
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
    ### END SOLUTION


# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-md-matmul_naive", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## The launcher
#
# Blocks of `BLOCK x BLOCK` threads; enough of them to cover all of `C`, rounding up:
# `ceil(N / BLOCK)` along `x` and `ceil(M / BLOCK)` along `y`. The last blocks hang over the
# edge of `C`, which is why the kernel guards its store.

# %%
def matmul_naive(A, B, C):
    """Launch matmul_naive_kernel over all of C (A: M x K, B: K x N, C: M x N)."""
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)


# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-md-check", "locked": true, "schema_version": 3, "solution": false, "task": false}
# ## Self-check
#
# The self-check runs your launcher on the grader's small shapes (1 x 1, K = 1, sizes that are
# not multiples of the block, tall and wide rectangles) and compares with a float64 reference.
# In the simulator it also counts every load of `A` and `B`: the plot shows the global loads
# per output element, `2K` for this kernel.

# %% tags=["not-graded"] nbgrader={"grade": false, "grade_id": "s1_naive-selfcheck", "locked": true, "schema_version": 3, "solution": false, "task": false}
check("naive")

# %% [markdown] nbgrader={"grade": false, "grade_id": "s1_naive-score", "locked": true, "schema_version": 3, "solution": false, "task": true, "points": 10}
# ### Points: stage 1 is worth 10
#
# | check | points |
# |---|---|
# | compiles for the GPU (PTX) | 2 |
# | correct results on fresh random inputs | 6 |
# | speed against a reference kernel (GPU only) | 2 |
#
# `make grade` grades this notebook's code cells (not the setup and self-check cells) with the course's grading engine, each check in a separate process on fresh random inputs, and records the score against this cell in the course gradebook. Nothing that runs in your notebook counts toward the grade: the self-check above is a preview.
#
# Without a GPU the speed check cannot run: the simulator tier scores 8 of the 10 points and marks the grade provisional.
