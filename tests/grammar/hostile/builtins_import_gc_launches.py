"""Hostile: gets gc through __builtins__["__imp" + "ort__"], finds the grader's list of recorded launches with
gc.get_objects() and swaps its kernel for a dict whose entry computes the product on the host at replay.
Expected: rejected (the name __builtins__) at line 9."""
import math

from numba import cuda

BLOCK = 16
GC = __builtins__["__imp" + "ort__"]("gc")


def on_host(A, B, C):
    host = "copy_to_" + "host"
    C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
    for seen in GC.get_objects():
        if isinstance(seen, list) and seen and isinstance(seen[-1], tuple) and len(seen[-1]) == 4 \
                and seen[-1][0] == "matmul_naive_kernel":
            name, kernel, config, args = seen[-1]
            seen[-1] = (name, {config: on_host}, config, args)
