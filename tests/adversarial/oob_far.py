"""Adversarial: a correct product, plus a store a million rows past C.
Expected: the simulator raises IndexError; on a GPU the far store faults
(a sticky CUDA error in that child only). Correctness fails; later checks run
in new processes and are not affected."""
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
        if row == 0 and col == 0:
            C[row + 1000000, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
