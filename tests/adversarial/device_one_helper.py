"""Adversarial: the dot product lives in a device function declared with device=1 (numba reads any true value as
device=True), which copies B's column into a local array K long: K is known only at run time, so no GPU compiler
accepts it, though the simulator runs it as Python.
Expected: the grammar takes device=1 for a device function (the kernel may call it); the compile check compiles
the launched kernel with the device functions it calls and fails naming dot; no correctness check counts what the
simulator computed (stage scores 0)."""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit(device=1)
def dot(A, B, row, col):
    K = A.shape[1]
    column = cuda.local.array(K, float32)
    for k in range(K):
        column[k] = B[k, col]
    acc = float32(0.0)
    for k in range(K):
        acc += A[row, k] * column[k]
    return acc


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = dot(A, B, row, col)


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
