"""Tiled matmul (stage 2) with numba.cuda imported as cuda and numpy dtypes."""
import numpy as np
import numba.cuda as cuda

TILE = 16
BLOCK_SHAPE = (TILE, TILE)


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array(BLOCK_SHAPE, dtype=np.float32)
    sB = cuda.shared.array(BLOCK_SHAPE, dtype=np.float32)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = np.float32(0.0)
    for t in range(A.shape[1] // TILE):
        off = t * TILE
        sA[ty, tx] = A[row, off + tx]
        sB[ty, tx] = B[off + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc = cuda.fma(sA[ty, k], sB[k, tx], acc)
        cuda.syncthreads()
    C[row, col] = acc


def matmul_tiled(A, B, C):
    size = C.shape[0]
    matmul_tiled_kernel[(size // TILE, size // TILE), BLOCK_SHAPE](A, B, C)
