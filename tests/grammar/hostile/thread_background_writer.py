"""Hostile: starts a daemon thread (threading from numba.core.utils) that keeps writing a host product into C, so
that C holds it when the grader copies C back after its replay.
Expected: rejected (numba.core.utils: a numba path outside the kernel API) at line 25."""
import math

import numba
from numba import cuda

BLOCK = 16


def keep_writing(A, B, C):
    host = "copy_to_" + "host"
    product = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())
    for _ in range(200000):
        C[:, :] = product


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    numba.core.utils.threading.Thread(target=keep_writing, args=(A, B, C), daemon=True).start()
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
