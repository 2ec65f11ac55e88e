"""Naive kernel written against the numba namespace (numba.cuda.jit)."""
import math

import numba
from numba import cuda

BX = 16
BY = 16


@numba.cuda.jit
def matmul_naive_kernel(A, B, C):
    x, y = cuda.grid(2)
    n_rows, n_cols = C.shape
    if y < n_rows and x < n_cols:
        acc = numba.float32(0.0)
        for k in range(A.shape[1]):
            acc += A[y, k] * B[k, x]
        C[y, x] = acc


def matmul_naive(A, B, C):
    n_rows, n_cols = C.shape
    grid = (math.ceil(n_cols / BX), math.ceil(n_rows / BY))
    matmul_naive_kernel[grid, (BX, BY)](A, B, C)
