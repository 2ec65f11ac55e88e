"""Hostile: a module-level call to a harmless-looking warm_up() that in fact swaps the grader's replay for a host
product.
Expected: rejected (a call at module level) at line 33."""
import math

from numba import cuda

BLOCK = 16


def reference(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


def warm_up():
    """Touch the CUDA context once so the first timed launch is not slower."""
    context = cuda.sys.modules["autograder.child.launches"]
    context.replay = reference


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)


warm_up()
