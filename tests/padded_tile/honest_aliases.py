"""Stage 4 with tuple unpacking, a padded shape written in numbers, [i][j] reads, loop variables of other names and one
temporary (idx) used first for A's column, then for B's row."""
import math

from numba import cuda, float32

TILE = 16


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    tile_a = cuda.shared.array((TILE, TILE), dtype=float32)
    tile_bt = cuda.shared.array((16, 17), dtype=float32)  # numba takes literals, not TILE + 1, in a shape
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x, cuda.blockIdx.y
    row, col = by * TILE + ty, bx * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for phase in range(0, K, TILE):
        a_val, b_val = float32(0.0), float32(0.0)
        idx = phase + tx
        if row < M and idx < K:
            a_val = A[row, idx]
        idx = phase + ty
        if idx < K and col < N:
            b_val = B[idx, col]
        tile_a[ty, tx] = a_val
        tile_bt[tx, ty] = b_val
        cuda.syncthreads()
        for e in range(TILE):
            acc = acc + tile_a[ty][e] * tile_bt[tx][e]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)
