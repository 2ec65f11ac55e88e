"""Stage 4 kernel with an eager signature, TILE = 32 and a padded transposed B tile."""
from math import ceil

from numba import cuda, float32

TILE = 32
TILE_PAD = TILE + 1


@cuda.jit("void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", fastmath=False)
def matmul_tiled_transposed_kernel(A, B, C):
    tile_a = cuda.shared.array((TILE, TILE), float32)
    tile_bt = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        a_ok = row < M and t * TILE + tx < K
        b_ok = t * TILE + ty < K and col < N
        tile_a[ty, tx] = A[row, t * TILE + tx] if a_ok else float32(0.0)
        tile_bt[tx, ty] = B[t * TILE + ty, col] if b_ok else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += tile_a[ty, k] * tile_bt[tx, k]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    matmul_tiled_transposed_kernel[(ceil(N / TILE), ceil(M / TILE)), (TILE, TILE)](A, B, C)
