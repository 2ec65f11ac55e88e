"""Stage 1 with a flat 1D launch.

Every thread gets a linear index into C and splits it into (row, col).
"""
from numba import cuda, float32

THREADS_PER_BLOCK = 256


@cuda.jit
def matmul_naive_kernel(A, B, C):
    idx = cuda.grid(1)
    M, N = C.shape
    if idx < M * N:
        row = idx // N
        col = idx % N
        total = float32(0.0)
        for k in range(A.shape[1]):
            total += A[row, k] * B[k, col]
        C[row, col] = total


def matmul_naive(A, B, C):
    n_elements = C.shape[0] * C.shape[1]
    blocks = (n_elements + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    matmul_naive_kernel[blocks, THREADS_PER_BLOCK](A, B, C)
