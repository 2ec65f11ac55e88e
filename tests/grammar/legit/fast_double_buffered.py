"""Stage 5: double-buffered shared tiles, one barrier per K step.

While the block computes with buffer t % 2, it loads the next tile into the
other buffer. TILE = 16.
"""
import math

from numba import cuda, float32

TILE = 16
STAGES = 2


@cuda.jit(device=True)
def fetch(A, B, sA, sB, buf, k0, row, col, ty, tx, M, K, N):
    sA[buf, ty, tx] = A[row, k0 + tx] if row < M and k0 + tx < K else float32(0.0)
    sB[buf, ty, tx] = B[k0 + ty, col] if k0 + ty < K and col < N else float32(0.0)


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((STAGES, TILE, TILE), float32)
    sB = cuda.shared.array((STAGES, TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    n_tiles = (K + TILE - 1) // TILE
    fetch(A, B, sA, sB, 0, 0, row, col, ty, tx, M, K, N)
    cuda.syncthreads()
    acc = float32(0.0)
    for t in range(n_tiles):
        cur = t % STAGES
        if t + 1 < n_tiles:
            fetch(A, B, sA, sB, 1 - cur, (t + 1) * TILE, row, col, ty, tx, M, K, N)
        for k in range(TILE):
            acc += sA[cur, ty, k] * sB[cur, k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def matmul_fast(A, B, C):
    M, N = C.shape
    matmul_fast_kernel[(math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)](A, B, C)
