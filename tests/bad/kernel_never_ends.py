"""Known-bad stage 1: a kernel whose loop never ends."""
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    i = 0
    while i >= 0:
        i = (i + 1) % 7


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
