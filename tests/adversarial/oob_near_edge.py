"""Adversarial: an off-by-one guard: threads one past the edge store.
Expected: the simulator raises IndexError (the store outside C); on a GPU the
guard region after C counts the writes past its end. Correctness fails."""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    N = B.shape[1]
    if row <= M and col <= N:
        acc = float32(0.0)
        for k in range(K):
            if row < M and col < N:
                acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
