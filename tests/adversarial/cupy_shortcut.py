"""Adversarial: lets CuPy (cuBLAS) do the product and copies it into C.
Expected: the scan flags the cupy import and the copies (stage scores 0); the
grader replays only the kernel launches on fresh output, so C stays wrong."""
import cupy
from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    product = cupy.asarray(A) @ cupy.asarray(B)
    cupy.asarray(C)[...] = product
    matmul_naive_kernel[1, 1](A, B, C)
