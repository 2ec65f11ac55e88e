"""Stage 4 whose threads load B's tile with their roles swapped (sBT[ty, tx] = B[k0 + tx, bx * TILE + ty]: still
B's tile, transposed), in a while loop over the tiles."""
import math

from numba import cuda, float32

TILE = 16
TILE_PAD = TILE + 1


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x
    row = cuda.blockIdx.y * TILE + ty
    col = bx * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    k0 = 0
    while k0 < K:
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        b_row = k0 + tx
        b_col = bx * TILE + ty
        v = float32(0.0)
        if b_row < K and b_col < N:
            v = B[b_row, b_col]
        sBT[ty, tx] = v
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sBT[tx, k]
        cuda.syncthreads()
        k0 += TILE
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)
