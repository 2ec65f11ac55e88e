"""Naive matrix multiplication (stage 1).

Here the first index of cuda.grid(2) is the row: the x dimension of the grid
runs down the rows of C. Simple, though not the coalesced orientation.
"""
from math import ceil

from numba import cuda, float32

THREADS_X = 8
THREADS_Y = 32


@cuda.jit
def matmul_naive_kernel(A, B, C):
    i, j = cuda.grid(2)
    if i >= C.shape[0] or j >= C.shape[1]:
        return
    s = float32(0.)
    for k in range(A.shape[1]):
        s += A[i, k] * B[k, j]
    C[i, j] = s


def matmul_naive(A, B, C) -> None:
    rows, cols = C.shape
    grid = (ceil(rows / THREADS_X), ceil(cols / THREADS_Y))
    matmul_naive_kernel[grid, (THREADS_X, THREADS_Y)](A, B, C)
