"""Known-bad stage 4 kernel: the transposed B tile has no padding column.

sBT is TILE x TILE with TILE = 32, so the 32 threads of a warp reading
sBT[tx, k] all hit bank k: a 32-way bank conflict on every inner-loop load.
Correct results, no races; the bank-conflict instrument must fail it.
"""
import math

from numba import cuda, float32

TILE = 32


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sBT[tx, k]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)
