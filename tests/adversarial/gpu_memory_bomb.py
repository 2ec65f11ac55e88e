"""Adversarial (GPU): allocates device memory until the GPU has none left.
Expected: a CUDA out-of-memory error fails this check only; the memory is
freed when the child ends and the next submission gets the whole GPU."""
import math

import numpy as np
from numba import cuda, float32

BLOCK = 16
hoard = []


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    while True:
        hoard.append(cuda.device_array(2**30, dtype=np.float32))  # 4 GiB each, until the GPU is full
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
