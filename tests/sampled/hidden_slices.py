"""Known bad, stage 3: split-K that hides a naive product in the slices beyond the first 64. Past the small sizes it
launches 128 slices of K: slices 0-63 take the even tiles through shared memory, slices 64-127 the odd tiles straight
from A and B. The sampled run drew 64 of 128 slices; it runs every slice of a drawn (x, y), and the naive half costs
data reuse."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


@cuda.jit
def zero_kernel(C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = float32(0.0)


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
    z, slices = cuda.blockIdx.z, cuda.gridDim.z
    first = 2 * (z % 64) + z // 64 if slices == 128 else z   # slices 64-127 take the odd tiles
    naive = slices == 128 and z >= 64                          # ... straight from A and B
    acc = float32(0.0)
    for t in range(first, (K + TILE - 1) // TILE, slices):
        if naive:
            if row < M and col < N:
                for k in range(t * TILE, min(K, t * TILE + TILE)):
                    acc += A[row, k] * B[k, col]
            continue
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        cuda.atomic.add(C, (row, col), acc)


def matmul_tiled_general(A, B, C):
    """Zero C, then 128 slices of K past the small sizes (2 below them)."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    zero_kernel[blocks, (TILE, TILE)](C)
    matmul_tiled_general_kernel[(blocks[0], blocks[1], 128 if M > 64 else 2), (TILE, TILE)](A, B, C)
