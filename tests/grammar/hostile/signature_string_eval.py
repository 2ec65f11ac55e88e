"""Hostile: an explicit signature string that numba evaluates with eval() (builtins included) runs
__import__('os').system(...) when the kernel is compiled.
Expected: rejected (a signature string that is not a type expression) at line 11."""
import math

from numba import cuda

BLOCK = 16


@cuda.jit("void(float32[:,:], float32[:,:], float32[:,:]) if __import__('os').system('id') == 0 else void()")
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
