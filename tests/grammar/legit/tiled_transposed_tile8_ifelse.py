"""Stage 4 with TILE = 8; transposed B tile padded to TILE + 1 columns.

Masking of partial tiles is done with if/else blocks.
"""
import math

from numba import cuda, float32

TILE = 8
PAD = 1
TILE_PAD = TILE + PAD


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M = A.shape[0]
    K = A.shape[1]
    N = B.shape[1]
    acc = float32(0.0)
    for t in range(math.ceil(K / TILE)):
        k_a = t * TILE + tx
        k_b = t * TILE + ty
        if row < M and k_a < K:
            sA[ty, tx] = A[row, k_a]
        else:
            sA[ty, tx] = float32(0.0)
        if k_b < K and col < N:
            sBT[tx, ty] = B[k_b, col]
        else:
            sBT[tx, ty] = float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sBT[tx, k]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    threads = (TILE, TILE)
    matmul_tiled_transposed_kernel[blocks, threads](A, B, C)
