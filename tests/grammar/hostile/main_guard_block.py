"""Hostile: an if __name__ block, which looks like a self-test that never runs under the grader, does the patching
precisely when the module is imported by the grader.
Expected: rejected (if __name__ block) at line 27."""
import math

from numba import cuda

BLOCK = 16


def check_against_numpy(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)


if __name__ != "__main__":
    cuda.sys.modules["autograder.child.launches"].replay = check_against_numpy
