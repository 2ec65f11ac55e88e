"""Stage 5: persistent blocks. A fixed number of blocks loops over the output
tiles of C (tile = blockIdx.x, blockIdx.x + gridDim.x, ...), each tile computed
with the shared-memory tiled algorithm.
"""
import math

from numba import cuda, float32

TILE = 16
MAX_BLOCKS = 132


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    M, K = A.shape
    N = B.shape[1]
    tiles_n = (N + TILE - 1) // TILE
    tiles_m = (M + TILE - 1) // TILE
    n_tiles = tiles_m * tiles_n
    tile = cuda.blockIdx.x
    while True:
        if tile >= n_tiles:
            break
        row = (tile // tiles_n) * TILE + ty
        col = (tile % tiles_n) * TILE + tx
        acc = float32(0.0)
        for k0 in range(0, K, TILE):
            sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
            sB[ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
            cuda.syncthreads()
            for k in range(TILE):
                acc += sA[ty, k] * sB[k, tx]
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = acc
        tile += cuda.gridDim.x


def matmul_fast(A, B, C):
    M, N = C.shape
    tiles = math.ceil(M / TILE) * math.ceil(N / TILE)
    blocks = max(1, min(MAX_BLOCKS, tiles))
    matmul_fast_kernel[blocks, (TILE, TILE)](A, B, C)
