"""Naive kernel with the k loop unrolled by 4 by hand, then a remainder loop."""
import math

from numba import cuda, float32

BLOCK = 16
UNROLL = 4


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    N = B.shape[1]
    if row >= M or col >= N:
        return
    acc0 = float32(0.0)
    acc1 = float32(0.0)
    acc2 = float32(0.0)
    acc3 = float32(0.0)
    k = 0
    while True:
        if k + UNROLL > K:
            break
        acc0 += A[row, k] * B[k, col]
        acc1 += A[row, k + 1] * B[k + 1, col]
        acc2 += A[row, k + 2] * B[k + 2, col]
        acc3 += A[row, k + 3] * B[k + 3, col]
        k += UNROLL
    for kk in range(k, K):
        acc0 += A[row, kk] * B[kk, col]
    C[row, col] = (acc0 + acc1) + (acc2 + acc3)


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
