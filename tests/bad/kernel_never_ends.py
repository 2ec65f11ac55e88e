"""Known-bad stage 1: a kernel whose loop never ends (the store keeps the compiler from removing it)."""
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    i = 0
    while i >= 0:
        i = (i + 1) % 7
        C[0, 0] = i


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
