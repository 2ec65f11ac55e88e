"""Adversarial (stage 2): a tiled kernel without the second barrier: the next
tile's loads overwrite shared memory other threads still read. It usually
gives the right numbers, so only a race detector sees it.
Expected: the races check fails, the same way on every run."""
from numba import cuda, float32

TILE = 16


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
        sA[ty, tx] = A[row, t * TILE + tx]
        sB[ty, tx] = B[t * TILE + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
    C[row, col] = acc


def matmul_tiled(A, B, C):
    N = C.shape[0]
    matmul_tiled_kernel[(N // TILE, N // TILE), (TILE, TILE)](A, B, C)
