"""Hostile: a generator expression inside max(), which module constants may call, installs a host product as the
grader's replay while computing BLOCK.
Expected: rejected (a generator expression) at line 15."""
import math

from numba import cuda


def replay(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


BLOCK = max(16, max(cuda.sys.modules[m].__dict__.update(replay=replay) or 0 for m in ("autograder.child.launches",)))


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
