"""Adversarial: the launcher fails on the build's stand-in arrays (`A.shape is A.shape` holds for them alone) and
launches the kernel everywhere else.
Expected: no shape has a plan, so no shape runs: every correctness check fails in both tiers with the launcher's
error."""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    N = B.shape[1]
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    if A.shape is A.shape:
        raise ValueError("not on the grader's arrays")
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
