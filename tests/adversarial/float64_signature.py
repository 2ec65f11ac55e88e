"""Adversarial: the kernel's explicit signature takes float64 arrays. The simulator ignores signatures and runs it on
the grader's float32 arrays; a GPU dispatcher finds no matching definition for them.
Expected: the build's launch fails at every shape, so every shape fails in both tiers, with numba's reason."""
import math

from numba import cuda, float64

BLOCK = 16


@cuda.jit((float64[:, :], float64[:, :], float64[:, :]))
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:
        acc = 0.0
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
