"""Adversarial: NumPy does the multiplication on the host, then a kernel that
does nothing is launched so that the launch check passes.
Expected: the scan flags np.dot and the host copies (stage scores 0); the
grader re-poisons C and replays only the launches: correctness fails too."""
import numpy as np
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    C.copy_to_device(np.dot(A.copy_to_host(), B.copy_to_host()))
    matmul_naive_kernel[1, 1](A, B, C)
