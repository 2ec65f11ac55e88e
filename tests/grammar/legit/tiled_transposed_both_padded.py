"""Stage 4: both shared tiles padded by one column; the B tile is stored transposed.

Padding sA too costs a little shared memory but keeps the code symmetric.
"""
import math

import numba
from numba import cuda

TILE = 16
TILE_PAD = TILE + 1
SHAPE_PADDED = (TILE, TILE_PAD)


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array(SHAPE_PADDED, numba.float32)
    sBT = cuda.shared.array(SHAPE_PADDED, numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = numba.float32(0.0)
    n_tiles = (K + TILE - 1) // TILE
    for t in range(n_tiles):
        base = t * TILE
        a = numba.float32(0.0)
        b = numba.float32(0.0)
        if row < M and base + tx < K:
            a = A[row, base + tx]
        if base + ty < K and col < N:
            b = B[base + ty, col]
        sA[ty, tx] = a
        sBT[tx, ty] = b
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sBT[tx, k]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    matmul_tiled_transposed_kernel[(math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)](A, B, C)
