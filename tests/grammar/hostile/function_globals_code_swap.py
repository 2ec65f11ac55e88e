"""Hostile: takes __import__ from its own launcher's __globals__["__builtins__"] and swaps the code object of the
grader's replay (a function detour) for one that adds a host product.
Expected: rejected (__globals__ lookup) at line 24."""
import math

from numba import cuda

BLOCK = 16


def detour(launches):
    for name, kernel, config, args in launches:
        kernel[config](args[0], args[1], args[2])
        host = "copy_to_" + "host"
        args[2][:, :] = args[0].__getattribute__(host)().__matmul__(args[1].__getattribute__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    load = matmul_naive.__globals__["__builtins__"]["__import__"]
    launches = load("autograder.child.launches", None, None, ("replay",))
    launches.replay.__code__ = detour.__code__
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
