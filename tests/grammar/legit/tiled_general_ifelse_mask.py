"""Stage 3: tiled matmul for any M, K, N, masking the loads with if/else."""
import math

from numba import cuda, float32

TILE = 16


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    n_tiles = (K + TILE - 1) // TILE
    for t in range(n_tiles):
        a_col = t * TILE + tx
        b_row = t * TILE + ty
        if row < M and a_col < K:
            sA[ty, tx] = A[row, a_col]
        else:
            sA[ty, tx] = 0.0
        if b_row < K and col < N:
            sB[ty, tx] = B[b_row, col]
        else:
            sB[ty, tx] = 0.0
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    grid = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[grid, (TILE, TILE)](A, B, C)
