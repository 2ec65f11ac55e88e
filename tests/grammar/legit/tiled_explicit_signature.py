"""Stage 2 kernel compiled eagerly for C-contiguous float32 matrices."""
from numba import cuda, float32, int32

TILE = 16


@cuda.jit("void(float32[:, ::1], float32[:, ::1], float32[:, ::1])")
def matmul_tiled_kernel(A, B, C):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx = int32(cuda.threadIdx.x)
    ty = int32(cuda.threadIdx.y)
    row = int32(cuda.blockIdx.y) * TILE + ty
    col = int32(cuda.blockIdx.x) * TILE + tx
    num_tiles = int32(A.shape[1]) // TILE
    acc = float32(0.0)
    for t in range(num_tiles):
        As[ty, tx] = A[row, t * TILE + tx]
        Bs[ty, tx] = B[t * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    C[row, col] = acc


def matmul_tiled(A, B, C):
    N = C.shape[1]
    blocks = N // TILE
    threads = (TILE, TILE)
    matmul_tiled_kernel[(blocks, blocks), threads](A, B, C)
