"""Stage 3 with rectangular tiles: TILE_M rows by TILE_N columns of C per block.

The K step of the tiles is TILE; the exported TILE is the K width.
Blocks are TILE_N x TILE_M threads; each thread loads one element of the A
tile and, for the first TILE rows of threads, one element of the B tile.
"""
import math

from numba import cuda, float32

TILE = 16
TILE_M = 2 * TILE
TILE_N = TILE


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE_M, TILE), float32)
    sB = cuda.shared.array((TILE, TILE_N), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE_M + ty
    col = cuda.blockIdx.x * TILE_N + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        if ty < TILE:
            kb = t * TILE + ty
            sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE_N), math.ceil(M / TILE_M))
    matmul_tiled_general_kernel[blocks, (TILE_N, TILE_M)](A, B, C)
