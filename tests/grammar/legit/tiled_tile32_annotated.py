"""Stage 2 with 32 x 32 tiles (1024 threads per block)."""
from numba import cuda, float32

TILE: int = 32


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * cuda.blockDim.y + ty
    col = cuda.blockIdx.x * cuda.blockDim.x + tx
    acc = float32(0.0)
    k0 = 0
    while k0 < A.shape[1]:
        a_tile[ty, tx] = A[row, k0 + tx]
        b_tile[ty, tx] = B[k0 + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()
        k0 += TILE
    C[row, col] = acc


def matmul_tiled(A, B, C) -> None:
    n: int = C.shape[0]
    matmul_tiled_kernel[(n // TILE, n // TILE), (TILE, TILE)](A, B, C)
