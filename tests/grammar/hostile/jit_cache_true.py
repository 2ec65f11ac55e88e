"""Hostile: asks numba to cache the compiled kernel on disk (@cuda.jit(cache=True)), so a cache entry planted beside
the module, or left by another submission, is loaded instead of compiling this source.
Expected: rejected (cuda.jit option cache) at line 11."""
import math

from numba import cuda

BLOCK = 16


@cuda.jit(cache=True)
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
