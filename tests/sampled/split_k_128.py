"""Honest stage 3: split-K over 128 slices of gridDim.z, more than the 64 the sampled run once drew. A launch of its own
zeroes C; then each of SPLIT slices of K (blockIdx.z) takes every SPLIT-th tile along K (at the timed size, K = 2048,
one tile each; at smaller K many slices have none) and adds its partial sums into C through cuda.atomic.add. Below
about a thousand elements of C it splits K in two. Earns every point; in the simulator its many blocks take their
time (the limits follow the blocks launched: 768 of them at 33 x 31)."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32
SPLIT = 128


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
    acc = float32(0.0)
    for t in range(cuda.blockIdx.z, (K + TILE - 1) // TILE, cuda.gridDim.z):
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
    """Zero C, then launch SPLIT slices of K over gridDim.z."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    zero_kernel[blocks, (TILE, TILE)](C)
    matmul_tiled_general_kernel[(blocks[0], blocks[1], SPLIT if M * N > 1000 else 2), (TILE, TILE)](A, B, C)
