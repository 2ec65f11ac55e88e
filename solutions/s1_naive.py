"""Stage 1: naive matrix multiplication, C = A @ B.

Goal: one thread computes one element of C, reading its row of A and its
column of B straight from global memory.

Launch geometry: 2D blocks of BLOCK x BLOCK threads. ``x`` walks the columns
of C, so the 32 threads of a warp read 32 neighbouring elements of B
(a coalesced load); ``y`` walks the rows. The grid covers all of C:
ceil(N / BLOCK) blocks along x, ceil(M / BLOCK) along y.

Requirements:
- any M, K, N >= 1: threads outside C store nothing;
- accumulate in float32, store once per thread.
"""
import math

from numba import cuda, float32

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, K = A.shape
    N = B.shape[1]
    ### BEGIN SOLUTION
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
    ### END SOLUTION


def matmul_naive(A, B, C):
    """Launch matmul_naive_kernel over all of C (A: M x K, B: K x N, C: M x N)."""
    M, N = C.shape
    blocks = (math.ceil(N / BLOCK), math.ceil(M / BLOCK))
    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)
