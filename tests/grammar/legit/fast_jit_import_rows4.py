"""Stage 5: 32 x 32 tiles computed by 32 x 8 threads, 4 rows per thread.

Uses `from numba.cuda import jit`; the four accumulators are plain locals.
"""
from math import ceil

from numba import cuda, float32
from numba.cuda import jit

TILE = 32
ROWS = 8
RPT = TILE // ROWS


@jit(device=True, inline=True)
def load(X, r, c, nr, nc):
    return X[r, c] if r < nr and c < nc else float32(0.0)


@jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc0 = float32(0.0)
    acc1 = float32(0.0)
    acc2 = float32(0.0)
    acc3 = float32(0.0)
    for k0 in range(0, K, TILE):
        for i in range(RPT):
            r = ty + i * ROWS
            sA[r, tx] = load(A, row0 + r, k0 + tx, M, K)
            sB[r, tx] = load(B, k0 + r, col, K, N)
        cuda.syncthreads()
        for k in range(TILE):
            b = sB[k, tx]
            acc0 = cuda.fma(sA[ty, k], b, acc0)
            acc1 = cuda.fma(sA[ty + ROWS, k], b, acc1)
            acc2 = cuda.fma(sA[ty + 2 * ROWS, k], b, acc2)
            acc3 = cuda.fma(sA[ty + 3 * ROWS, k], b, acc3)
        cuda.syncthreads()
    if col < N:
        r = row0 + ty
        if r < M:
            C[r, col] = acc0
        if r + ROWS < M:
            C[r + ROWS, col] = acc1
        if r + 2 * ROWS < M:
            C[r + 2 * ROWS, col] = acc2
        if r + 3 * ROWS < M:
            C[r + 3 * ROWS, col] = acc3


def matmul_fast(A, B, C):
    M, N = C.shape
    matmul_fast_kernel[(ceil(N / TILE), ceil(M / TILE)), (TILE, ROWS)](A, B, C)
