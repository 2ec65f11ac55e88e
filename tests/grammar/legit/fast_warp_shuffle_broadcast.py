"""Stage 5 with warp shuffles instead of shared memory: each warp computes a WM x 32 tile of C.

Lane l of a warp owns column col0 + l of its tile and keeps WM accumulators in registers (one per row). For each
chunk of 32 along K, lane l loads A[row0 + r, k0 + l] for its WM rows (one coalesced row segment per r); then, for
each k of the chunk, cuda.shfl_sync broadcasts lane k's A values to the whole warp, and every lane multiplies them by
its own B[k0 + k, col]. A warp whose rows all lie past M ends at once, as a whole: its shuffles name only its own
lanes, which all take part.
"""
import math

from numba import cuda, float32

WARP = 32
WM = 8          # rows of C per warp: registers per lane
WARPS = 4       # warps per block, stacked along M
FULL = 0xFFFFFFFF


@cuda.jit
def matmul_fast_kernel(A, B, C):
    M, K = A.shape
    N = B.shape[1]
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    row0 = (cuda.blockIdx.y * WARPS + warp) * WM
    col = cuda.blockIdx.x * WARP + lane
    if row0 >= M:
        return
    a = cuda.local.array(WM, float32)
    acc = cuda.local.array(WM, float32)
    for r in range(WM):
        acc[r] = float32(0.0)
    for k0 in range(0, K, WARP):
        for r in range(WM):
            if row0 + r < M and k0 + lane < K:
                a[r] = A[row0 + r, k0 + lane]
            else:
                a[r] = float32(0.0)
        for k in range(min(WARP, K - k0)):
            b = B[k0 + k, col] if col < N else float32(0.0)
            for r in range(WM):
                acc[r] += cuda.shfl_sync(FULL, a[r], k) * b
    if col < N:
        for r in range(WM):
            if row0 + r < M:
                C[row0 + r, col] = acc[r]


def matmul_fast(A, B, C):
    """Launch matmul_fast_kernel with one block of WARPS warps per (WARPS * WM) x 32 tile of C."""
    M, N = C.shape
    blocks = (math.ceil(N / WARP), math.ceil(M / (WARPS * WM)))
    matmul_fast_kernel[blocks, WARPS * WARP](A, B, C)
