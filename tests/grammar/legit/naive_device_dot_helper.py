"""Naive matmul where the dot product lives in a device function.

The launcher uses a small helper to round the grid up.
"""
from numba import cuda, float32

BLOCK_X = 32
BLOCK_Y = 8


@cuda.jit(device=True)
def dot_row_col(A, B, row, col):
    """Dot product of row `row` of A with column `col` of B."""
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    return acc


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = dot_row_col(A, B, row, col)


def blocks_for(n, t):
    return (n + t - 1) // t


def matmul_naive(A, B, C) -> None:
    M, N = C.shape
    grid = (blocks_for(N, BLOCK_X), blocks_for(M, BLOCK_Y))
    matmul_naive_kernel[grid, (BLOCK_X, BLOCK_Y)](A, B, C)
