"""Stage 3 where threadIdx.x runs along the rows of C (transposed block layout)."""
import math

from numba import cuda, float32

TILE = 8


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    r = cuda.threadIdx.x
    c = cuda.threadIdx.y
    row = cuda.blockIdx.x * TILE + r
    col = cuda.blockIdx.y * TILE + c
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    ntiles = (K + TILE - 1) // TILE
    for t in range(ntiles):
        kc = t * TILE + c
        kr = t * TILE + r
        if row < M and kc < K:
            sA[r, c] = A[row, kc]
        else:
            sA[r, c] = float32(0.0)
        if kr < K and col < N:
            sB[r, c] = B[kr, col]
        else:
            sB[r, c] = float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[r, k] * sB[k, c]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    matmul_tiled_general_kernel[(math.ceil(M / TILE), math.ceil(N / TILE)), (TILE, TILE)](A, B, C)
