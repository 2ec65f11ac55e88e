"""Hostile: disables launches.validate through numba.cuda's re-exported sys and passes a host-computed product to
the kernel as a fourth array, which the kernel copies into C.
Expected: rejected (attribute assignment) at line 23."""
import math

from numba import cuda

BLOCK = 16


def no_checks(launches, kernel_name, A, B, C):
    return None


@cuda.jit
def matmul_naive_kernel(A, B, C, P):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = P[row, col]


def matmul_naive(A, B, C):
    cuda.sys.modules["autograder.child.launches"].validate = no_checks
    a = A.__getattribute__("copy_to_" + "host")()
    b = B.__getattribute__("copy_to_" + "host")()
    P = cuda.device_array_like(C)
    P[:, :] = a.__matmul__(b)
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C, P)
