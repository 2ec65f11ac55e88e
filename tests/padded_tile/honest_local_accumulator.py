"""Stage 4 whose sum lives in a local array that a helper accumulates into, and whose C is written by a helper."""
import math

from numba import cuda, float32

TILE = 32
TILE_PAD = TILE + 1


@cuda.jit(device=True)
def accumulate(total, a_tile, bt_tile, r, c):
    for k in range(TILE):
        total[0] += a_tile[r, k] * bt_tile[c, k]


@cuda.jit(device=True)
def write_out(out, r, c, value):
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = value


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    total = cuda.local.array(1, float32)
    total[0] = float32(0.0)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        accumulate(total, sA, sBT, ty, tx)
        cuda.syncthreads()
    write_out(C, row, col, total[0])


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)
