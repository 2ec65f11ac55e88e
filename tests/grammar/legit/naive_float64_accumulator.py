"""Naive matmul that accumulates in float64 for accuracy, stores float32."""
import numpy as np
from numba import cuda, float64

TPB_X = 16
TPB_Y = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, N = C.shape
    if row < M and col < N:
        acc = float64(0.0)
        for k in range(A.shape[1]):
            acc += float64(A[row, k]) * float64(B[k, col])
        C[row, col] = np.float32(acc)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def matmul_naive(A, B, C):
    M, N = C.shape
    assert A.shape[1] == B.shape[0]
    matmul_naive_kernel[(ceil_div(N, TPB_X), ceil_div(M, TPB_Y)), (TPB_X, TPB_Y)](A, B, C)
