"""Stage 3 with bounds-checked loads in device helpers.

load_or_zero returns 0 outside the matrix; madd has an explicit signature.
"""
import math

from numba import cuda, float32

TILE = 16


@cuda.jit(device=True, inline=True)
def load_or_zero(X, r, c):
    if r < X.shape[0] and c < X.shape[1]:
        return X[r, c]
    return float32(0.0)


@cuda.jit("float32(float32, float32)", device=True)
def mul(a, b):
    return a * b


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for t in range((A.shape[1] + TILE - 1) // TILE):
        sA[ty, tx] = load_or_zero(A, row, t * TILE + tx)
        sB[ty, tx] = load_or_zero(B, t * TILE + ty, col)
        cuda.syncthreads()
        for k in range(TILE):
            acc += mul(sA[ty, k], sB[k, tx])
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    matmul_tiled_general_kernel[(math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)](A, B, C)
