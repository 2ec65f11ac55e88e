"""Naive kernel, 1D grid-stride loop written with while.

Number of blocks is capped; each thread handles elements idx, idx + stride, ...
"""
import math

from numba import cuda, float32

TPB = 128
MAX_BLOCKS = 64


@cuda.jit
def matmul_naive_kernel(A, B, C):
    idx = cuda.grid(1)
    stride = cuda.gridsize(1)
    M = A.shape[0]
    K = A.shape[1]
    N = B.shape[1]
    total = M * N
    while idx < total:
        r = idx // N
        c = idx - r * N
        acc = float32(0.0)
        k = 0
        while k < K:
            acc += A[r, k] * B[k, c]
            k += 1
        C[r, c] = acc
        idx += stride


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = min(MAX_BLOCKS, math.ceil(M * N / TPB))
    matmul_naive_kernel[blocks, TPB](A, B, C)
