"""Stage 1: the launcher covers C in bands of BAND rows, one launch per band.

Each launch gets the first row of its band as a plain integer argument.
"""
import math

from numba import cuda, float32

BAND = 64
BLOCK = (32, 4)


@cuda.jit
def matmul_naive_kernel(A, B, C, row_offset):
    col, local_row = cuda.grid(2)
    row = row_offset + local_row
    M, N = C.shape
    if row < M and col < N and local_row < BAND:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    grid = (math.ceil(N / BLOCK[0]), math.ceil(min(M, BAND) / BLOCK[1]))
    for r0 in range(0, M, BAND):
        matmul_naive_kernel[grid, BLOCK](A, B, C, r0)
