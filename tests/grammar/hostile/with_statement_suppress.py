"""Hostile: a with contextlib.suppress(Exception) block in the launcher (a try in disguise) patches launches.replay
and hides any failure, so the launcher works on every grader version.
Expected: rejected (with) at line 23."""
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
    with cuda.sys.modules["contextlib"].suppress(Exception):
        cuda.sys.modules["autograder.child.launches"].replay = replay
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
