"""Adversarial: a function declared with device=1 (a device function: numba reads any true value as device=True)
holds plain Python loops over all of C, and the launcher launches it as if it were a kernel. The simulator then
runs it once, as host Python, and C comes out right; no GPU can launch a device function.
Expected: the grammar refuses the launch of a device function (stage scores 0); past the grammar, the recorded
launches are refused in every child ("is a device function")."""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)


@cuda.jit(device=1)
def fill(A, B, C):
    M, K = A.shape
    N = B.shape[1]
    for i in range(M):
        for j in range(N):
            acc = float32(0.0)
            for k in range(K):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
    fill[1, 1](A, B, C)
