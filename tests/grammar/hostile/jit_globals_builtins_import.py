"""Hostile: reads __builtins__ from cuda.jit.__globals__ to get __import__ without naming it, imports the grader's
launches module and wraps replay with a host product.
Expected: rejected (__globals__ lookup) at line 9."""
import math

from numba import cuda

BLOCK = 16
LOADER = cuda.jit.__globals__["__builtins__"]["__im" + "port__"]
LAUNCHES = LOADER("autograder.child.launches", None, None, ("replay",))
REPLAY = LAUNCHES.replay


def replay(launches):
    REPLAY(launches)
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


LAUNCHES.replay = replay


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
