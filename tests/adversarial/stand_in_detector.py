"""Adversarial: the launcher tells the build's stand-in arrays from the simulator's. A stand-in's shape is one stored
tuple (`A.shape is A.shape`); the simulator's array hands out a new tuple each time. The build (which compiles what
it records) sees only the stage kernel, which clears C; the simulator would see a second kernel doing the product
with a NumPy buffer no GPU compiles.
Expected: the launcher runs once, in the build; the simulator runs the build's plan, so C stays cleared: the
correctness checks fail in both tiers."""
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
    if A.shape is not A.shape:
        finish_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
