"""Rungs of the optimisation ladder past the stage 5 solution (trusted course code).

The stage 5 solution (solutions/s5_fast.py) spends 16 scalar shared loads on every 64 fused
multiply-adds of its inner loop. These kernels follow the next steps of Simon Boehm's SGEMM
walk-through that Numba can express, timed by tools/ladder.py:

1. ``matmul_vectorized``: 128-bit shared loads and warp tiling. A thread's 8 x 8 outputs are
   2 x 2 sub-tiles of 4 x 4; its 4 rows (of the A tile, stored transposed) and 4 columns (of the
   B tile) lie in 4 neighbouring words, so NVVM's load-store vectorizer merges each group of 4
   scalar loads into one ``ld.shared.v4.f32``: 4 loads per 64 FMAs instead of 16. It does so only
   when it can prove 16-byte alignment, hence ``cuda.shared.array(n, float32, 16)``: without the
   alignment argument every load stays scalar. The lanes of a warp form a 4 x 8 grid and the warp
   covers a WM x WN sub-tile of the block tile (warp tiling), so one 128-bit load of a warp reads
   4 (A) or 8 (B) neighbouring 16-byte words: no bank conflicts.
2. ``matmul_fast``: two shared buffers. The next tile's global loads go into
   registers before the current tile is computed and into the other buffer after it: one
   barrier per tile, and the global-load latency hides behind the FMAs. The loop handles two
   tiles per iteration so that each buffer's offset is a compile-time constant (a run-time
   buffer offset hides the alignment from the vectorizer: half the loads went back to scalar),
   and the compute loop does two k steps per iteration, which lets ptxas issue the next step's
   shared loads under the current step's FMAs (with one, ptxas took 147 registers). ``MAXREG =
   128`` caps the registers so that two 256-thread blocks fit on an SM. With ``BK = 16`` and the
   cap this is the top rung: 75.6% of cuBLAS at N = 4096 on an H100 (BENCHMARKS.md).
3. ``matmul_grouped``: the double-buffered kernel with blocks ordered in groups of GROUP block
   rows, for L2 reuse between blocks that run at the same time.

Global loads stay scalar: Numba knows nothing of the alignment of A's or B's rows, and the
vector types (``cuda.float32x4``) cannot be loaded from a float32 array.

This file is also a stage 5 submission as a student could hand it in: ``matmul_fast`` launches
the top rung (``matmul_fast_kernel``, the double-buffered kernel) and the module holds only what
a kernel module may (autograder/grammar.py). The alignment argument, ``max_registers`` and
``forceinline`` tune GPU code only; the grader's simulator tier accepts and ignores them
(autograder/sim/gpu_options.py). tests/test_ladder.py grades it in the simulator tier; on a GPU,
``python -m autograder grade tools/ladder_kernels.py --stage fast`` (BENCHMARKS.md has the result).

Requirements as for stage 5: any M, K, N >= 1, masked loads, zeros past the edges. Variants are
made by tools/ladder.py replacing the module constants below (and the two options' literals).
"""
import math

from numba import cuda, float32, uint32

BM = 128          # block tile rows
BN = 128          # block tile columns
BK = 16           # tile depth along K
WM = 32           # warp tile rows
WN = 64           # warp tile columns
LR = 4            # lane rows of a warp
LC = 8            # lane columns of a warp (LR * LC = 32)
TM = 4            # rows of one 4 x 4 sub-tile: one 128-bit load
TN = 4
GROUP = 8         # block rows per group in matmul_grouped
WMITER = WM // (LR * TM)    # sub-tiles per thread along rows
WNITER = WN // (LC * TN)
RM = WMITER * TM            # rows per thread
RN = WNITER * TN            # columns per thread
WARPS_N = BN // WN
THREADS = (BM // WM) * (BN // WN) * 32
A_GROUPS = BM * BK // 4 // THREADS   # groups of 4 elements each thread loads per tile
B_GROUPS = BK * BN // 4 // THREADS
A_LD = 4 * A_GROUPS
B_LD = 4 * B_GROUPS
ACC_SIZE = RM * RN
SA_SIZE = BK * BM
SB_SIZE = BK * BN
SA2 = 2 * SA_SIZE
SB2 = 2 * SB_SIZE
ALIGN = 16        # bytes, of each shared array (None: a float's 4, and no 128-bit loads)


@cuda.jit(device=True, forceinline=True)
def load_tile(A, B, a_ld, b_ld, tid, row0, col0, k0, M, K, N):
    """Global -> registers: A_GROUPS runs of 4 along a row of A, B_GROUPS runs of 4 along a row of B."""
    for g in range(A_GROUPS):
        idx = tid + uint32(g * THREADS)
        r = idx // uint32(BK // 4)
        c = (idx % uint32(BK // 4)) * uint32(4)
        gr = row0 + r
        for j in range(4):
            gc = k0 + c + uint32(j)
            a_ld[g * 4 + j] = A[gr, gc] if gr < M and gc < K else float32(0.0)
    for g in range(B_GROUPS):
        idx = tid + uint32(g * THREADS)
        r = idx // uint32(BN // 4)
        c = (idx % uint32(BN // 4)) * uint32(4)
        gr = k0 + r
        for j in range(4):
            gc = col0 + c + uint32(j)
            b_ld[g * 4 + j] = B[gr, gc] if gr < K and gc < N else float32(0.0)


@cuda.jit(device=True, forceinline=True)
def store_tile(sA, sB, a_ld, b_ld, tid, aoff, boff):
    """Registers -> shared: A transposed (sA[k * BM + m]), B as it is (sB[k * BN + n])."""
    for g in range(A_GROUPS):
        idx = tid + uint32(g * THREADS)
        r = idx // uint32(BK // 4)
        c = (idx % uint32(BK // 4)) * uint32(4)
        for j in range(4):
            sA[aoff + (c + uint32(j)) * uint32(BM) + r] = a_ld[g * 4 + j]
    for g in range(B_GROUPS):
        idx = tid + uint32(g * THREADS)
        r = idx // uint32(BN // 4)
        c = (idx % uint32(BN // 4)) * uint32(4)
        for j in range(4):
            sB[boff + r * uint32(BN) + c + uint32(j)] = b_ld[g * 4 + j]


@cuda.jit(device=True, forceinline=True)
def kstep(sA, sB, acc, a_reg, b_reg, a_base, b_base):
    """One k of the outer product: WMITER + WNITER 128-bit loads, RM * RN FMAs."""
    for mi in range(WMITER):
        for i in range(TM):
            a_reg[mi * TM + i] = sA[a_base + uint32(mi * LR * TM + i)]
    for ni in range(WNITER):
        for j in range(TN):
            b_reg[ni * TN + j] = sB[b_base + uint32(ni * LC * TN + j)]
    for i in range(RM):
        for j in range(RN):
            acc[i * RN + j] += a_reg[i] * b_reg[j]


@cuda.jit(device=True, forceinline=True)
def compute(sA, sB, acc, a_reg, b_reg, trow, tcol, aoff, boff):
    """A whole BK-deep tile, two k steps per iteration (ptxas overlaps one's loads with the other's FMAs)."""
    for k in range(0, BK, 2):
        kstep(sA, sB, acc, a_reg, b_reg, aoff + uint32(k * BM) + trow, boff + uint32(k * BN) + tcol)
        kstep(sA, sB, acc, a_reg, b_reg, aoff + uint32((k + 1) * BM) + trow, boff + uint32((k + 1) * BN) + tcol)


@cuda.jit(device=True, forceinline=True)
def store_c(C, acc, row0, col0, trow, tcol, M, N):
    for mi in range(WMITER):
        for i in range(TM):
            r = row0 + trow + uint32(mi * LR * TM + i)
            if r < M:
                for ni in range(WNITER):
                    for j in range(TN):
                        c = col0 + tcol + uint32(ni * LC * TN + j)
                        if c < N:
                            C[r, c] = acc[(mi * TM + i) * RN + ni * TN + j]


@cuda.jit(device=True, forceinline=True)
def thread_origin(tid):
    """First row and column of this thread's sub-tiles inside the block tile (warp tiling)."""
    warp = tid // uint32(32)
    lane = tid % uint32(32)
    trow = (warp // uint32(WARPS_N)) * uint32(WM) + (lane // uint32(LC)) * uint32(TM)
    tcol = (warp % uint32(WARPS_N)) * uint32(WN) + (lane % uint32(LC)) * uint32(TN)
    return trow, tcol


@cuda.jit(device=True, forceinline=True)
def double_buffered_loop(A, B, sA, sB, a_ld, b_ld, a_reg, b_reg, acc, tid, trow, tcol, row0, col0, M, K, N):
    load_tile(A, B, a_ld, b_ld, tid, row0, col0, uint32(0), M, K, N)
    store_tile(sA, sB, a_ld, b_ld, tid, uint32(0), uint32(0))
    cuda.syncthreads()
    # Two tiles per iteration, so that each buffer's offset is a constant. The tile loaded past K
    # (when the count of tiles is odd) is all zeros.
    for k0 in range(uint32(BK), K + uint32(BK), uint32(2 * BK)):
        load_tile(A, B, a_ld, b_ld, tid, row0, col0, k0, M, K, N)
        compute(sA, sB, acc, a_reg, b_reg, trow, tcol, uint32(0), uint32(0))
        store_tile(sA, sB, a_ld, b_ld, tid, uint32(SA_SIZE), uint32(SB_SIZE))
        cuda.syncthreads()
        load_tile(A, B, a_ld, b_ld, tid, row0, col0, k0 + uint32(BK), M, K, N)
        compute(sA, sB, acc, a_reg, b_reg, trow, tcol, uint32(SA_SIZE), uint32(SB_SIZE))
        store_tile(sA, sB, a_ld, b_ld, tid, uint32(0), uint32(0))
        cuda.syncthreads()


@cuda.jit
def vectorized_kernel(A, B, C):
    """One shared buffer: load, barrier, compute, barrier."""
    sA = cuda.shared.array(SA_SIZE, float32, ALIGN)
    sB = cuda.shared.array(SB_SIZE, float32, ALIGN)
    a_ld = cuda.local.array(A_LD, float32)
    b_ld = cuda.local.array(B_LD, float32)
    a_reg = cuda.local.array(RM, float32)
    b_reg = cuda.local.array(RN, float32)
    acc = cuda.local.array(ACC_SIZE, float32)
    tid = uint32(cuda.threadIdx.x)
    trow, tcol = thread_origin(tid)
    row0 = uint32(cuda.blockIdx.y) * uint32(BM)
    col0 = uint32(cuda.blockIdx.x) * uint32(BN)
    M = uint32(A.shape[0])
    K = uint32(A.shape[1])
    N = uint32(B.shape[1])
    for i in range(ACC_SIZE):
        acc[i] = float32(0.0)
    for k0 in range(uint32(0), K, uint32(BK)):
        load_tile(A, B, a_ld, b_ld, tid, row0, col0, k0, M, K, N)
        store_tile(sA, sB, a_ld, b_ld, tid, uint32(0), uint32(0))
        cuda.syncthreads()
        for k in range(BK):
            kstep(sA, sB, acc, a_reg, b_reg, uint32(k * BM) + trow, uint32(k * BN) + tcol)
        cuda.syncthreads()
    store_c(C, acc, row0, col0, trow, tcol, M, N)


@cuda.jit(max_registers=128)
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array(SA2, float32, ALIGN)
    sB = cuda.shared.array(SB2, float32, ALIGN)
    a_ld = cuda.local.array(A_LD, float32)
    b_ld = cuda.local.array(B_LD, float32)
    a_reg = cuda.local.array(RM, float32)
    b_reg = cuda.local.array(RN, float32)
    acc = cuda.local.array(ACC_SIZE, float32)
    tid = uint32(cuda.threadIdx.x)
    trow, tcol = thread_origin(tid)
    row0 = uint32(cuda.blockIdx.y) * uint32(BM)
    col0 = uint32(cuda.blockIdx.x) * uint32(BN)
    M = uint32(A.shape[0])
    K = uint32(A.shape[1])
    N = uint32(B.shape[1])
    for i in range(ACC_SIZE):
        acc[i] = float32(0.0)
    double_buffered_loop(A, B, sA, sB, a_ld, b_ld, a_reg, b_reg, acc, tid, trow, tcol, row0, col0, M, K, N)
    store_c(C, acc, row0, col0, trow, tcol, M, N)


@cuda.jit(max_registers=128)
def grouped_kernel(A, B, C):
    """matmul_fast_kernel on a 1D grid whose blocks run GROUP block rows at a time, column by column."""
    sA = cuda.shared.array(SA2, float32, ALIGN)
    sB = cuda.shared.array(SB2, float32, ALIGN)
    a_ld = cuda.local.array(A_LD, float32)
    b_ld = cuda.local.array(B_LD, float32)
    a_reg = cuda.local.array(RM, float32)
    b_reg = cuda.local.array(RN, float32)
    acc = cuda.local.array(ACC_SIZE, float32)
    tid = uint32(cuda.threadIdx.x)
    trow, tcol = thread_origin(tid)
    M = uint32(A.shape[0])
    K = uint32(A.shape[1])
    N = uint32(B.shape[1])
    bid = uint32(cuda.blockIdx.x)
    block_rows = (M + uint32(BM - 1)) // uint32(BM)
    block_cols = (N + uint32(BN - 1)) // uint32(BN)
    first = (bid // (uint32(GROUP) * block_cols)) * uint32(GROUP)
    rows = min(block_rows - first, uint32(GROUP))
    inner = bid % (uint32(GROUP) * block_cols)
    row0 = (first + inner % rows) * uint32(BM)
    col0 = (inner // rows) * uint32(BN)
    for i in range(ACC_SIZE):
        acc[i] = float32(0.0)
    double_buffered_loop(A, B, sA, sB, a_ld, b_ld, a_reg, b_reg, acc, tid, trow, tcol, row0, col0, M, K, N)
    store_c(C, acc, row0, col0, trow, tcol, M, N)


def matmul_vectorized(A, B, C):
    M, N = C.shape
    vectorized_kernel[(math.ceil(N / BN), math.ceil(M / BM)), THREADS](A, B, C)


def matmul_fast(A, B, C):
    """The top rung: matmul_fast_kernel, one THREADS-thread block per BM x BN tile of C."""
    M, N = C.shape
    matmul_fast_kernel[(math.ceil(N / BN), math.ceil(M / BM)), THREADS](A, B, C)


def matmul_grouped(A, B, C):
    M, N = C.shape
    grouped_kernel[math.ceil(N / BN) * math.ceil(M / BM), THREADS](A, B, C)
