"""Naive matmul with a 2D grid-stride loop.

The grid has a fixed size; each thread strides over C by the total number of
threads along each axis (cuda.gridsize), so any M and N are covered.
"""
from numba import cuda, float32

BLOCK = (16, 16)
GRID = (8, 8)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    x0, y0 = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    M, K = A.shape
    N = B.shape[1]
    for row in range(y0, M, sy):
        for col in range(x0, N, sx):
            acc = float32(0.0)
            for k in range(K):
                acc += A[row, k] * B[k, col]
            C[row, col] = acc


def matmul_naive(A, B, C):
    matmul_naive_kernel[GRID, BLOCK](A, B, C)
