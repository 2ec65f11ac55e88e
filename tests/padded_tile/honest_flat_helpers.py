"""Stage 4 on a flat block with the load in a device helper that reads the thread index itself, and the
product's step in another helper."""
import math

from numba import cuda, float32

TILE = 32
TILE_PAD = TILE + 1


@cuda.jit(device=True)
def load_b_transposed(dst, src, k0, col, K, N):
    """B's tile into dst, transposed: the thread of (ty, tx) stores dst[tx, ty] = src[k0 + ty, col]."""
    i = cuda.threadIdx.x
    r = k0 + i // TILE
    dst[i % TILE, i // TILE] = src[r, col] if r < K and col < N else float32(0.0)


@cuda.jit(device=True)
def fma(acc, a, b):
    return acc + a * b


@cuda.jit
def matmul_tiled_transposed_kernel(A, B, C):
    shared_a = cuda.shared.array((TILE, TILE), float32)
    shared_bt = cuda.shared.array((TILE, TILE_PAD), float32)
    t = cuda.threadIdx.x
    r, c = divmod_tile(t)
    row = cuda.blockIdx.y * TILE + r
    col = cuda.blockIdx.x * TILE + c
    M, K = A.shape
    N = B.shape[1]
    total = float32(0.0)
    for k0 in range(0, K, TILE):
        shared_a[r, c] = A[row, k0 + c] if row < M and k0 + c < K else float32(0.0)
        load_b_transposed(shared_bt, B, k0, col, K, N)
        cuda.syncthreads()
        for q in range(TILE):
            total = fma(total, shared_a[r, q], shared_bt[c, q])
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = total


@cuda.jit(device=True)
def divmod_tile(t):
    return t // TILE, t % TILE


def matmul_tiled_transposed(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_transposed_kernel[blocks, TILE * TILE](A, B, C)
