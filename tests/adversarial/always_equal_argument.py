"""Adversarial: launches the kernel on an always-equal object instead of C.
Expected: "launched with argument 2 of type AlwaysEqual"; correctness fails."""
from numba import cuda


class AlwaysEqual:
    shape = (1, 1)

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, AlwaysEqual())
