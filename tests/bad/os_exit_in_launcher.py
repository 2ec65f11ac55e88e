"""Known-bad stage 1: the launcher ends the process before the check finishes."""
import os

from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    os._exit(0)
