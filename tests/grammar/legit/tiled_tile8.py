"""Stage 2: tiled matmul with 8 x 8 tiles (square N, N % TILE == 0)."""
from numba import cuda, float32

TILE = 8


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    sA = cuda.shared.array(shape=(TILE, TILE), dtype=float32)
    sB = cuda.shared.array(shape=(TILE, TILE), dtype=float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    row = by * TILE + ty
    col = bx * TILE + tx
    acc = float32(0.0)
    n_tiles = A.shape[1] // TILE
    for t in range(n_tiles):
        sA[ty, tx] = A[row, t * TILE + tx]
        sB[ty, tx] = B[t * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    C[row, col] = acc


def matmul_tiled(A, B, C):
    N = C.shape[0]
    grid = (N // TILE, N // TILE)
    matmul_tiled_kernel[grid, (TILE, TILE)](A, B, C)
