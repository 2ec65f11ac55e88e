"""Hostile: imports the grader's references through numba.cuda's own importlib and makes launches.replay run the
grader's correct reference kernel instead of ours.
Expected: rejected (cuda.importlib: not part of the CUDA kernel API) at line 10."""
import math

from numba import cuda

BLOCK = 16

REFERENCES = cuda.importlib.import_module("autograder.child.references")
LAUNCHES = cuda.importlib.import_module("autograder.child.launches")


def borrowed_replay(launches):
    for name, kernel, config, (A, B, C) in launches:
        REFERENCES.naive_coalesced(A, B, C)


LAUNCHES.replay = borrowed_replay


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
