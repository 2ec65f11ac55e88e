"""Stage 2 with 1D blocks of TILE * TILE threads.

The flat thread index is split into (ty, tx) inside the kernel.
"""
from numba import cuda, float32

TILE = 16
THREADS = TILE * TILE


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tid = cuda.threadIdx.x
    ty = tid // TILE
    tx = tid % TILE
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for t in range(0, A.shape[1], TILE):
        sA[ty, tx] = A[row, t + tx]
        sB[ty, tx] = B[t + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[row, col] = acc


def matmul_tiled(A, B, C):
    N = len(C)
    tiles = N // TILE
    matmul_tiled_kernel[(tiles, tiles), THREADS](A, B, C)
