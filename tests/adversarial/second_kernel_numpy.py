"""Adversarial: the stage kernel only clears C; a second kernel, launched after it, does the product with a
per-thread buffer of NumPy float64 whose length is K, a number known only at run time. The simulator runs that as
Python; no GPU compiler accepts it (a local array's shape must be a compile-time constant).
Expected: the compile check compiles every kernel the launcher launches and fails naming finish_kernel with the
compiler's reason; no correctness check counts what the simulator computed (stage scores 0)."""
import math

import numpy as np
from numba import cuda

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = 0.0


@cuda.jit
def finish_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    if row < M and col < C.shape[1]:
        column = cuda.local.array(K, np.float64)
        for k in range(K):
            column[k] = B[k, col]
        acc = np.float64(0.0)
        for k in range(K):
            acc += A[row, k] * column[k]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
    finish_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
