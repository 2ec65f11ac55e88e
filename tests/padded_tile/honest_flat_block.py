"""Stage 4 on a one-dimensional block of TILE * TILE threads, each thread's (ty, tx) split from one index, the
product's terms past K skipped by a condition."""
import math

from numba import cuda, float32

TILE = 16
TILE_PAD = TILE + 1
THREADS = TILE * TILE


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tid = cuda.threadIdx.x
    ty = tid // TILE
    tx = tid % TILE
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for step in range((K + TILE - 1) // TILE):
        k0 = step * TILE
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        sBT[tx, ty] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            if k0 + j < K:  # depends on the launch: the reading walks it both ways
                acc += sA[ty, j] * sBT[tx, j]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, THREADS](A, B, C)
