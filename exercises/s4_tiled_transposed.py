# Generated from solutions/s4_tiled_transposed.py by `make exercises`: edit the solution, not this file.
"""Stage 4: tiled matrix multiplication with the B tile stored transposed and padded.

Goal: store the B tile transposed, sBT[x, k] = B[k, col], so each thread reads
its column of the tile as a row. Shared memory has 32 banks of 4 bytes; with
TILE = 32 the 32 threads of a warp (same ty, tx = 0..31) read sBT[tx, k], which
are TILE floats apart: all 32 in one bank, a 32-way conflict. One padding
column (TILE_PAD = TILE + 1) shifts each row by one bank, so the warp reads 32
different banks.

Launch geometry: blocks of TILE x TILE threads, ``x`` along the columns of C
and ``y`` along its rows; ceil(N / TILE) blocks along x, ceil(M / TILE) along y.

Requirements:
- any M, K, N >= 1, as in stage 3;
- sBT is TILE x TILE_PAD float32; TILE_PAD is a module constant because the
  GPU compiler needs shared-array shapes that are compile-time constants;
- sA as in stage 3; both barriers.
"""
import math

from numba import cuda, float32

TILE = 32  # the course allows 16 or 32
TILE_PAD = TILE + 1


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    # TODO: implement this part (roughly 12 lines).
    raise NotImplementedError("not implemented yet")


def matmul_tiled_transposed(A, B, C):
    """Launch matmul_tiled_transposed_kernel with enough blocks to cover C."""
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, (TILE, TILE)](A, B, C)
