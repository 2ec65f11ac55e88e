"""Adversarial: passes an object-dtype array as C.
Expected: the static scan flags np.empty (stage scores 0); the launch contract
rejects the argument; correctness fails."""
import numpy as np
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    fake = np.empty(C.shape, dtype=object)
    matmul_naive_kernel[1, 1](A, B, fake)
