"""Naive matmul in two kernels: one clears C, the stage kernel adds each dot product into it. The dot product is a
device function declared with device=True, the bounds test one declared with device=1 (numba reads any true value
as device=True).
"""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit(device=True)
def dot(A, B, row, col):
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    return acc


@cuda.jit(device=1)
def inside(C, row, col):
    return row < C.shape[0] and col < C.shape[1]


@cuda.jit
def clear_kernel(C):
    col, row = cuda.grid(2)
    if inside(C, row, col):
        C[row, col] = 0.0


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if inside(C, row, col):
        C[row, col] += dot(A, B, row, col)


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    clear_kernel[blocks, (BLOCK, BLOCK)](C)
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
