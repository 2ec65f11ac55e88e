"""Shared-memory tiled matrix multiplication, adapted from the Numba docs example.

Each block computes one TPB x TPB tile of C; assumes square matrices whose size
is a multiple of TILE.
"""
from numba import cuda, float32

# Controls threads per block and shared memory usage.
TILE = 16
TPB = TILE


@cuda.jit
def matmul_tiled_kernel(A, B, C):
    # Define an array in the shared memory
    # The size and type of the arrays must be known at compile time
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)

    x, y = cuda.grid(2)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x    # blocks per grid

    # Each thread computes one element in the result matrix.
    # The dot product is chunked into dot products of TPB-long vectors.
    tmp = float32(0.)
    for i in range(bpg):
        # Preload data into shared memory
        sA[ty, tx] = A[y, tx + i * TPB]
        sB[ty, tx] = B[ty + i * TPB, x]

        # Wait until all threads finish preloading
        cuda.syncthreads()

        # Computes partial product on the shared memory
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]

        # Wait until all threads finish computing
        cuda.syncthreads()

    C[y, x] = tmp


def matmul_tiled(A, B, C):
    blocks_per_grid = C.shape[0] // TPB
    matmul_tiled_kernel[(blocks_per_grid, blocks_per_grid), (TPB, TPB)](A, B, C)
