"""Stage 4 with a 1D block of TILE * TILE threads and a padded, transposed B tile."""
import math

from numba import cuda, float32

TILE = 16
TILE_PAD = TILE + 1
NTHREADS = TILE * TILE


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tid = cuda.threadIdx.x
    ty = tid // TILE
    tx = tid - ty * TILE
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for k0 in range(0, K, TILE):
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        sBT[tx, ty] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc = cuda.fma(sA[ty, k], sBT[tx, k], acc)
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    matmul_tiled_transposed_kernel[(math.ceil(N / TILE), math.ceil(M / TILE)), NTHREADS](A, B, C)
