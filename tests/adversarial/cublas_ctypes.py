"""Adversarial: reaches cuBLAS through ctypes and a dynamic import.
Expected: the scan flags ctypes, __import__ and getattr (stage scores 0);
correctness fails: the kernel computes nothing."""
import ctypes

from numba import cuda

np = __import__("num" + "py")


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    try:
        ctypes.CDLL("libcublas.so")
    except OSError:
        pass
    product = getattr(np, "ma" + "tmul")(getattr(A, "copy_to_" + "host")(), getattr(B, "copy_to_" + "host")())
    getattr(C, "copy_to_" + "device")(product)
    matmul_naive_kernel[1, 1](A, B, C)
