"""Known bad, stage 3: a 1 x 1 decoy launch of the kernel first, then the real launch, tiled only in block (0, 0)
(and at small sizes) and naive everywhere else. The sampled run drew its blocks from the first launch's grid, so it
ran block (0, 0) alone and credited data reuse; it must draw from each launch's own grid and fail it."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


@cuda.jit
def matmul_tiled_general_kernel(A, B, C, decoy):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    if decoy:
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    if M > 64 and (cuda.blockIdx.x > 0 or cuda.blockIdx.y > 0):  # naive past the small sizes, but in block (0, 0)
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
    matmul_tiled_general_kernel[(1, 1), (TILE, TILE)](A, B, C, True)
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C, False)
