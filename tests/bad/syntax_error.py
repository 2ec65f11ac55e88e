"""Known-bad stage 1: does not parse."""
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C)
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
