"""Hostile: hides a call that replaces launches.replay with a host product inside an f-string "banner" evaluated at
import.
Expected: rejected (f-string) at line 17."""
import math

from numba import cuda

BLOCK = 16


def replay(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


BANNER = f"naive kernel, {BLOCK}x{BLOCK} threads{cuda.sys.modules['autograder.child.launches'].__dict__.update(replay=replay) or ''}"


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
