"""Stage 4; the inner product over one tile is a device function.

Both operands of the inner product are rows of shared tiles: row ty of sA and
row tx of the transposed, padded B tile.
"""
import math

from numba import cuda, float32

TILE = 16
TILE_PAD = TILE + 1


@cuda.jit(device=True)
def row_dot(sA, sBT, i, j, n):
    s = float32(0.0)
    for k in range(n):
        s += sA[i, k] * sBT[j, k]
    return s


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * cuda.blockDim.y + ty
    col = cuda.blockIdx.x * cuda.blockDim.x + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    t = 0
    while t * TILE < K:
        k0 = t * TILE
        sA[ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
        sBT[tx, ty] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)
        cuda.syncthreads()
        acc += row_dot(sA, sBT, ty, tx, min(TILE, K - k0))
        cuda.syncthreads()
        t += 1
    if row >= M or col >= N:
        return
    C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    grid = (int(math.ceil(N / TILE)), int(math.ceil(M / TILE)))
    matmul_tiled_transposed_kernel[grid, (TILE, TILE)](A, B, C)
