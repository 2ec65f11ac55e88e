"""Stage 5: 1D register blocking.

A block of 256 threads computes a 32 x 32 tile of C; each thread computes TM = 4
consecutive rows of one column, keeping the partial sums in a local array and
reusing one value of B from shared memory TM times.
"""
import math

from numba import cuda, float32

BM = 32
BN = 32
BK = 8
TM = 4
THREADS = (BM // TM) * BN


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((BM, BK), float32)
    sB = cuda.shared.array((BK, BN), float32)
    acc = cuda.local.array(TM, float32)
    tid = cuda.threadIdx.x
    tcol = tid % BN
    trow = tid // BN
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    for i in range(TM):
        acc[i] = 0.0
    # indices of the one element of A and of B that this thread loads
    a_r = tid // BK
    a_c = tid % BK
    b_r = tid // BN
    b_c = tid % BN
    for k0 in range(0, K, BK):
        gr = row0 + a_r
        gc = k0 + a_c
        sA[a_r, a_c] = A[gr, gc] if gr < M and gc < K else float32(0.0)
        gr = k0 + b_r
        gc = col0 + b_c
        sB[b_r, b_c] = B[gr, gc] if gr < K and gc < N else float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            b = sB[k, tcol]
            for i in range(TM):
                acc[i] += sA[trow * TM + i, k] * b
        cuda.syncthreads()
    col = col0 + tcol
    if col < N:
        for i in range(TM):
            row = row0 + trow * TM + i
            if row < M:
                C[row, col] = acc[i]


def matmul_fast(A, B, C):
    M, N = C.shape
    grid = (math.ceil(N / BN), math.ceil(M / BM))
    matmul_fast_kernel[grid, THREADS](A, B, C)
