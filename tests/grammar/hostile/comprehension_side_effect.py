"""Hostile: a list comprehension for a table of tile sizes calls, at import, an update of the grader's launches
module that installs a host product as replay.
Expected: rejected (a comprehension) at line 17."""
import math

from numba import cuda

BLOCK = 16


def replay(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


TILES = [cuda.sys.modules[m].__dict__.update(replay=replay) or t for t, m in ((16, "autograder.child.launches"),)]


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
