"""Stage 4 with the tile loads and the dot product in device helpers, the shared arrays passed as arguments."""
import math

from numba import cuda, float32

TILE = 16
TILE_PAD = TILE + 1


@cuda.jit(device=True)
def load_tiles(a_tile, bt_tile, A, B, row, col, t, tx, ty):
    """Each thread loads one element of A's tile and one of B's, transposed."""
    M, K = A.shape
    N = B.shape[1]
    ka = t * TILE + tx
    kb = t * TILE + ty
    a_tile[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
    bt_tile[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)


@cuda.jit(device=True)
def tile_dot(a_tile, bt_tile, ty, tx):
    """Row ty of A's tile times row tx of B's transposed tile."""
    s = float32(0.0)
    for kk in range(TILE):
        s += a_tile[ty, kk] * bt_tile[tx, kk]
    return s


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    K = A.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        load_tiles(sA, sBT, A, B, row, col, t, tx, ty)
        cuda.syncthreads()
        acc += tile_dot(sA, sBT, ty, tx)
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)
