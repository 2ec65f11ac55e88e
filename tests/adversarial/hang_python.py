"""Adversarial: the launcher loops forever on the host.
Expected: "not gradable: the check did not finish within N s and was stopped"."""
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    n = 0
    while n >= 0:
        n = (n + 1) % 1000
    matmul_naive_kernel[1, 1](A, B, C)
