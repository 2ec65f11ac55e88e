"""Hostile: links a PTX file shipped beside the submission into the kernel (@cuda.jit(link=[...])) and calls an
external device function from it, code the grammar never reads.
Expected: rejected (cuda.jit option link) at line 12."""
import math

from numba import cuda, float32

BLOCK = 16
dot_row_col = cuda.declare_device("dot_row_col", "float32(float32, float32)")


@cuda.jit(link=["evil.ptx"])
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = dot_row_col(float32(row), float32(col))


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
