"""Stage 3; the launch configuration is computed by a helper function."""
from math import ceil

from numba import cuda, float32

TILE = 16
BLOCK = (TILE, TILE)


def grid_for(M, N):
    """Blocks needed to cover an M x N output with TILE x TILE blocks."""
    return (ceil(N / TILE), ceil(M / TILE))


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array(BLOCK, float32)
    sB = cuda.shared.array(BLOCK, float32)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    M, K = A.shape
    N = C.shape[1]
    acc = float32(0.0)
    for t in range(ceil(K / TILE)):
        k_a = t * TILE + tx
        k_b = t * TILE + ty
        sA[ty, tx] = 0.0
        sB[ty, tx] = 0.0
        if row < M and k_a < K:
            sA[ty, tx] = A[row, k_a]
        if k_b < K and col < N:
            sB[ty, tx] = B[k_b, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_general(A, B, C) -> None:
    M, N = C.shape
    matmul_tiled_general_kernel[grid_for(M, N), BLOCK](A, B, C)
