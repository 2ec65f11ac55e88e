"""Stage 3 using 1D blocks and 1D (flattened) shared tiles."""
import math

from numba import cuda, float32

TILE = 16
TILE_AREA = TILE * TILE


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array(TILE_AREA, float32)
    sB = cuda.shared.array(TILE_AREA, float32)
    t = cuda.threadIdx.x
    ty = t // TILE
    tx = t % TILE
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M = A.shape[0]
    K = A.shape[1]
    N = B.shape[1]
    acc = float32(0.0)
    for p in range(math.ceil(K / TILE)):
        kk = p * TILE
        v = float32(0.0)
        if row < M and kk + tx < K:
            v = A[row, kk + tx]
        sA[ty * TILE + tx] = v
        w = float32(0.0)
        if kk + ty < K and col < N:
            w = B[kk + ty, col]
        sB[ty * TILE + tx] = w
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty * TILE + k] * sB[k * TILE + tx]
        cuda.syncthreads()
    if row < M:
        if col < N:
            C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    grid = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[grid, TILE_AREA](A, B, C)
