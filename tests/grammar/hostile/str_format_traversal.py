"""Hostile: uses str.format field traversal ("{0.__class__.__init__.__globals__[sys]...}") on a device array and
a kernel object to read the child's argv and sys.path (sandbox paths) with no dunder in the syntax tree.
Expected: rejected (the attribute .format of a string) at line 17."""
import math

from numba import cuda

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    print("{0.__class__.__mro__}".format(A))
    print("{0.__class__.__init__.__globals__[sys].argv} {0.__class__.__init__.__globals__[sys].path}".format(
        cuda.jit(matmul_naive)))
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
