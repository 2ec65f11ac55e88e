"""Hostile: a lambda called in the launcher's default argument runs at import (def time) and replaces
launches.replay with a host product.
Expected: rejected (lambda) at line 23."""
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


def matmul_naive(A, B, C,
                 _ready=(lambda m: m.__dict__.update(replay=replay))(cuda.sys.modules["autograder.child.launches"])):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
