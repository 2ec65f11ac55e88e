"""Hostile: a decorator of its own (not cuda.jit) hands cuda.jit a host function that does the product with NumPy,
so the kernel the grammar reads is not the one that runs.
Expected: rejected (a decorator other than @cuda.jit) at line 23."""
import math

from numba import cuda, float32

BLOCK = 16


def product(A, B, C):
    col, row = cuda.grid(2)
    if row == 0 and col == 0:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattr__(host)().__matmul__(B.__getattr__(host)())


def kernel(fn):
    """Compile fn for the GPU (one place to add options later)."""
    return cuda.jit(product)


@kernel
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
