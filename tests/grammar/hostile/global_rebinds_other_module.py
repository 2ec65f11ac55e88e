"""Hostile: runs a function built on the grader's launches module globals, so that its global statement rebinds
launches.replay (no attribute assignment, no setattr).
Expected: rejected (global) at line 18."""
import math

from numba import cuda

BLOCK = 16


def host_replay(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


def install(new):
    global replay
    replay = new


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    launches = cuda.sys.modules["autograder.child.launches"]
    rebound = type(install)(install.__code__, launches.__dict__)
    rebound(host_replay)
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
