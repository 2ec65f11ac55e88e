"""Known bad, stage 3: each block reads C[0, 0], which block (0, 0) writes. Where it still holds the NaN fill the
block thinks it runs alone (the sampled run, where the blocks not drawn never run) and tiles; where block (0, 0) has
written it, it is naive (past the small sizes). It must lose correctness (a read of what another thread of the
launch writes) and the structure points of the sampled run (a read of what no simulated block wrote)."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    alone = math.isnan(C[0, 0]) or (cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0)
    acc = float32(0.0)
    if M > 64 and not alone:
        if row < M and col < N:
            for k in range(K):
                acc += A[row, k] * B[k, col]
            C[row, col] = acc
        return
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C)
