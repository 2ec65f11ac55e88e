"""Hostile: walks type(BLOCK).__mro__[-1].__subclasses__() to os._wrap_close (or warnings.catch_warnings), takes sys
from its __init__.__globals__ and wraps the grader's replay with a host product.
Expected: rejected (calls type()) at line 12."""
import math

from numba import cuda

BLOCK = 16


def find_sys():
    for klass in type(BLOCK).__mro__[-1].__subclasses__():
        if klass.__name__ in ("_wrap_close", "catch_warnings"):
            return klass.__init__.__globals__["sys"]


LAUNCHES = find_sys().modules["autograder.child.launches"]
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
