"""Hostile: the launcher returns an object whose __eq__ is always True and whose __getattr__ answers every question,
hoping the grader compares it with the expected C.
Expected: rejected (class) at line 11."""
import math

from numba import cuda

BLOCK = 16


class Result:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __bool__(self):
        return True

    __hash__ = object.__hash__


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
    return Result()
