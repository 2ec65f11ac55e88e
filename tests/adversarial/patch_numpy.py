"""Adversarial: patches NumPy's comparisons so any result looks right.
Expected: the scan flags np.allclose / np.linalg (stage scores 0), and the
patch changes nothing anyway: results are judged in the grader's own process."""
import numpy as np
from numba import cuda

np.allclose = lambda *args, **kwargs: True
np.array_equal = lambda *args, **kwargs: True
np.linalg.norm = lambda *args, **kwargs: 0.0
np.testing.assert_allclose = lambda *args, **kwargs: None


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
