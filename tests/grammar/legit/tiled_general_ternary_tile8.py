"""Stage 3 with TILE = 8 and conditional expressions for the zero padding."""
from math import ceil

from numba import cuda, float32

TILE = 8


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M = A.shape[0]
    K = A.shape[1]
    N = B.shape[1]
    acc = float32(0.0)
    for k0 in range(0, K, TILE):
        sA[ty, tx] = A[row, k0 + tx] if (row < M and k0 + tx < K) else float32(0.0)
        sB[ty, tx] = B[k0 + ty, col] if (k0 + ty < K and col < N) else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    matmul_tiled_general_kernel[(ceil(N / TILE), ceil(M / TILE)), (TILE, TILE)](A, B, C)
