"""Hostile: replaces numpy.savez, reached as numba.np.numpy_support.np, so that the child's own result file carries
host products in place of the C arrays the kernel left.
Expected: rejected (attribute assignment) at line 21."""
import math

import numba
from numba import cuda

BLOCK = 16
NP = numba.np.numpy_support.np
SAVEZ = NP.savez
SEEN = []


def savez(file, **arrays):
    for i, (a, b) in enumerate(SEEN):
        arrays["C%d" % i] = a.__matmul__(b)
    SAVEZ(file, **arrays)


numba.np.numpy_support.np.savez = savez


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    SEEN.append((A.__getattribute__("copy_to_" + "host")(), B.__getattribute__("copy_to_" + "host")()))
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
