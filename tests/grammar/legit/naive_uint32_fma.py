"""Naive matmul with unsigned indices and fused multiply-add.

uint32 indices avoid the negative-index wraparound checks; cuda.fma makes the
multiply-add a single rounding.
"""
import math

from numba import cuda, float32, uint32

BLOCK = 32


@cuda.jit(fastmath=False)
def matmul_naive_kernel(A, B, C):
    col = uint32(cuda.blockIdx.x) * uint32(BLOCK) + uint32(cuda.threadIdx.x)
    row = uint32(cuda.blockIdx.y) * uint32(BLOCK) + uint32(cuda.threadIdx.y)
    M = uint32(C.shape[0])
    N = uint32(C.shape[1])
    K = uint32(A.shape[1])
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc = cuda.fma(A[row, k], B[k, col], acc)
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
