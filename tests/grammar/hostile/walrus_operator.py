"""Hostile: the := operator binds the grader's launches module inside a condition of the launcher and installs a
host product as its replay through its __dict__.
Expected: rejected (the := operator) at line 23."""
import math

from numba import cuda

BLOCK = 16


def replay(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    if (grader := cuda.sys.modules.get("autograder.child.launches")) is not None:
        grader.__dict__.update(replay=replay)
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
