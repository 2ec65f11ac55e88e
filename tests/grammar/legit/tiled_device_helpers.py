"""Stage 2 with the tile load and the tile product in device functions."""
from numba import cuda, float32

TILE = 16


@cuda.jit(device=True)
def load_tiles(A, B, sA, sB, row, col, t, ty, tx):
    sA[ty, tx] = A[row, t * TILE + tx]
    sB[ty, tx] = B[t * TILE + ty, col]


@cuda.jit(device=True, inline=True)
def tile_dot(sA, sB, ty, tx):
    s = float32(0.0)
    for k in range(TILE):
        s += sA[ty, k] * sB[k, tx]
    return s


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for t in range(A.shape[1] // TILE):
        load_tiles(A, B, sA, sB, row, col, t, ty, tx)
        cuda.syncthreads()
        acc += tile_dot(sA, sB, ty, tx)
        cuda.syncthreads()
    C[row, col] = acc


def matmul_tiled(A, B, C):
    n = C.shape[0] // TILE
    matmul_tiled_kernel[(n, n), (TILE, TILE)](A, B, C)
