"""Adversarial: a kernel that is never launched carries an explicit signature of one argument for a function of two: numba raises a
TypeError compiling it at import; the simulator ignores signatures and imports the module.
Expected: the build, the one child that imports the module beside the compiler, fails; no plan exists, so nothing
runs in either tier and every check fails, saying why."""
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


@cuda.jit("void(float32[:, ::1])")
def unused_kernel(A, n):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
