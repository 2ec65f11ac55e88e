"""Stage 3: the loop over K tiles written as a while loop; TILE = 32."""
import math

from numba import cuda, float32

TILE = 32


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    a_s = cuda.shared.array((TILE, TILE), dtype=float32)
    b_s = cuda.shared.array((TILE, TILE), dtype=float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    i = cuda.blockIdx.y * cuda.blockDim.y + ty
    j = cuda.blockIdx.x * cuda.blockDim.x + tx
    M, K = A.shape
    _, N = B.shape
    inside = i < M and j < N
    acc = float32(0.0)
    base = 0
    while base < K:
        a_s[ty, tx] = A[i, base + tx] if i < M and base + tx < K else 0.0
        b_s[ty, tx] = B[base + ty, j] if base + ty < K and j < N else 0.0
        cuda.syncthreads()
        # the last tile may be partial: stop at K
        limit = min(TILE, K - base)
        for k in range(limit):
            acc += a_s[ty, k] * b_s[k, tx]
        cuda.syncthreads()
        base += TILE
    if inside:
        C[i, j] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    bx = int(math.ceil(N / TILE))
    by = int(math.ceil(M / TILE))
    matmul_tiled_general_kernel[(bx, by), (TILE, TILE)](A, B, C)
