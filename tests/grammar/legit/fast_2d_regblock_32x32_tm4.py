"""Stage 5: 2D register blocking with 32 x 32 block tiles and 4 x 4 outputs per thread.

Blocks are 8 x 8 threads; each thread computes a contiguous 4 x 4 piece of C.
The shared tiles are loaded cooperatively, 4 elements of A and 4 of B per thread.
"""
import math

from numba import cuda, float32

BM = 32
BN = 32
BK = 8
TM = 4
TN = 4
BLOCK_X = BN // TN
BLOCK_Y = BM // TM
THREADS = BLOCK_X * BLOCK_Y
LOADS_A = (BM * BK) // THREADS
LOADS_B = (BK * BN) // THREADS


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((BM, BK), float32)
    sB = cuda.shared.array((BK, BN), float32)
    a_frag = cuda.local.array(TM, float32)
    b_frag = cuda.local.array(TN, float32)
    acc = cuda.local.array((TM, TN), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tid = ty * BLOCK_X + tx
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    for k0 in range(0, K, BK):
        for l in range(LOADS_A):
            e = tid + l * THREADS
            r = e // BK
            c = e % BK
            if row0 + r < M and k0 + c < K:
                sA[r, c] = A[row0 + r, k0 + c]
            else:
                sA[r, c] = float32(0.0)
        for l in range(LOADS_B):
            e = tid + l * THREADS
            r = e // BN
            c = e % BN
            if k0 + r < K and col0 + c < N:
                sB[r, c] = B[k0 + r, col0 + c]
            else:
                sB[r, c] = float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            for i in range(TM):
                a_frag[i] = sA[ty * TM + i, k]
            for j in range(TN):
                b_frag[j] = sB[k, tx * TN + j]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += a_frag[i] * b_frag[j]
        cuda.syncthreads()
    for i in range(TM):
        for j in range(TN):
            r = row0 + ty * TM + i
            c = col0 + tx * TN + j
            if r < M and c < N:
                C[r, c] = acc[i, j]


def matmul_fast(A, B, C):
    M, N = C.shape
    blocks = (math.ceil(N / BN), math.ceil(M / BM))
    matmul_fast_kernel[blocks, (BLOCK_X, BLOCK_Y)](A, B, C)
