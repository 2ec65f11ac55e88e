"""Adversarial: hands the kernel an ndarray subclass whose == is always true.
Expected: the static scan flags np.ndarray / np.zeros (stage scores 0) and the
launch contract rejects the argument; correctness fails."""
import numpy as np
from numba import cuda


class AlwaysEqualArray(np.ndarray):
    def __eq__(self, other):
        return np.ones(self.shape, dtype=bool)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    fake = np.zeros(C.shape, np.float32).view(AlwaysEqualArray)
    matmul_naive_kernel[1, 1](A, B, fake)
