"""Stage 5: no shared memory, but each thread computes WPT outputs of one row.

The WPT columns of a thread are BLOCK_X apart, so a warp still stores
neighbouring columns; A[row, k] is loaded once and used WPT times.
"""
import math

from numba import cuda, float32

BLOCK_X = 16
BLOCK_Y = 16
WPT = 4
COLS_PER_BLOCK = BLOCK_X * WPT


@cuda.jit
def matmul_fast_kernel(A, B, C):
    acc = cuda.local.array(WPT, dtype=float32)
    row = cuda.blockIdx.y * BLOCK_Y + cuda.threadIdx.y
    col0 = cuda.blockIdx.x * COLS_PER_BLOCK + cuda.threadIdx.x
    M, K = A.shape
    N = B.shape[1]
    if row >= M:
        return
    for j in range(WPT):
        acc[j] = float32(0.0)
    for k in range(K):
        a = A[row, k]
        for j in range(WPT):
            c = col0 + j * BLOCK_X
            if c < N:
                acc[j] += a * B[k, c]
    for j in range(WPT):
        c = col0 + j * BLOCK_X
        if c >= N:
            continue
        C[row, c] = acc[j]


def matmul_fast(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / COLS_PER_BLOCK), math.ceil(M / BLOCK_Y))
    matmul_fast_kernel[blocks, (BLOCK_X, BLOCK_Y)](A, B, C)
