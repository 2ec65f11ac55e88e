# Generated from solutions/s3_tiled_general.py by `make exercises`: edit the solution, not this file.
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
    # TODO: implement this part (roughly 12 lines).
    raise NotImplementedError("not implemented yet")


def matmul_tiled_general(A, B, C):
    """Launch matmul_tiled_general_kernel with enough blocks to cover C."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C)
