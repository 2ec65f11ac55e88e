"""Hostile: replaces cuda.synchronize, which the grader calls right after replaying the launches, with a closure
that writes a host product into C outside the timed region.
Expected: rejected (attribute assignment) at line 26."""
import math

from numba import cuda

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
    wait = cuda.synchronize

    def synchronize():
        wait()
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())

    cuda.synchronize = synchronize
