"""Hostile: assigns the simulator kernel's fn, the Python function each simulated thread runs, to a host function
that computes the whole product with NumPy.
Expected: rejected (attribute assignment) at line 22."""
import math

from numba import cuda

BLOCK = 16


def whole_product(A, B, C):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0 and cuda.blockIdx.x == 0 and cuda.blockIdx.y == 0:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattr__(host)().__matmul__(B.__getattr__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


matmul_naive_kernel.fn = whole_product


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
