"""Adversarial: the launcher returns an object that equals everything.
Expected: the launch contract rejects it ("returned AlwaysEqual; it must write
C and return None"); the correctness checks fail."""
from numba import cuda


class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
    return AlwaysEqual()
