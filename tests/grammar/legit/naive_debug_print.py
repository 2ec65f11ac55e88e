"""Naive matmul with a debug print left in (switched off by a constant)."""
import math

from numba import cuda, float32

BLOCK = 16
DEBUG = False


@cuda.jit
def matmul_naive_kernel(A, B, C):
    # thread (tx, ty) of block (bx, by)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    row = by * cuda.blockDim.y + ty
    col = bx * cuda.blockDim.x + tx
    if DEBUG and row == 0 and col == 0:
        print("K =", A.shape[1])
    if row < C.shape[0] and col < C.shape[1]:
        value = float32(0.0)
        for k in range(A.shape[1]):
            value += A[row, k] * B[k, col]
        C[row, col] = value


def matmul_naive(A, B, C):
    """Launches the kernel. A: M x K, B: K x N, C: M x N."""
    M = A.shape[0]
    N = B.shape[1]
    threads = (BLOCK, BLOCK)
    blocks = (int(math.ceil(N / BLOCK)), int(math.ceil(M / BLOCK)))
    matmul_naive_kernel[blocks, threads](A, B, C)
