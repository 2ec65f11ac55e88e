"""Stage 3: shared-memory tiled matrix multiplication for any M, K, N.

Goal: the stage 2 kernel, made correct for sizes that are not multiples of
TILE and for rectangular matrices. Tiles that hang over an edge of A or B are
padded with zeros in shared memory, so the inner loop stays the same; threads
outside C compute but do not store.

Launch geometry: blocks of TILE x TILE threads, ``x`` along the columns of C
and ``y`` along its rows; ceil(N / TILE) blocks along x, ceil(M / TILE) along y.

Requirements:
- the last, partial tile along K counts: ceil(K / TILE) tiles;
- every thread takes part in every load and both barriers, including threads
  outside C (a barrier some threads skip is undefined behaviour);
- loads outside A or B write 0.0 to shared memory; stores outside C are skipped.
"""
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
    ### BEGIN SOLUTION
    acc = float32(0.0)
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
    ### END SOLUTION


def matmul_tiled_general(A, B, C):
    """Launch matmul_tiled_general_kernel with enough blocks to cover C."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C)
