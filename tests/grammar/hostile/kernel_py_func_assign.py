"""Hostile: assigns the kernel's py_func, which numba compiles lazily at the first launch, so that the kernel the
grader compiles and replays is a different function from the one the grammar read.
Expected: rejected (attribute assignment) at line 30."""
import math

from numba import cuda, float32

BLOCK = 16


def fast(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(0, A.shape[1], 2):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc * float32(2.0)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


matmul_naive_kernel.py_func = fast


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
