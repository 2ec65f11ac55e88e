"""Hostile: replaces references.project (the product check C @ X) through numba.core.config's sys, reached as
cuda.config, with A @ (B @ X) computed on the host.
Expected: rejected (attribute assignment) at line 26."""
import math

from numba import cuda

BLOCK = 16


def host_projection(ops, X):
    host = "copy_to_" + "host"
    a = ops.A.__getattribute__(host)().astype(X.dtype)
    b = ops.B.__getattribute__(host)().astype(X.dtype)
    return a.__matmul__(b.__matmul__(X))


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    references = cuda.config.sys.modules.get("autograder.child.references")
    if references is not None:
        references.project = host_projection
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
