"""Stage 5: 128 x 128 block tiles, 8 x 8 outputs per thread, 16 x 16 thread blocks.

Thread (tx, ty) owns rows ty + 16 * i and columns tx + 16 * j of the block
tile, so stores are coalesced. The A tile is stored transposed in shared memory.
"""
import math

from numba import cuda, float32

BM = 128
BN = 128
BK = 8
TM = 8
TN = 8
DIM_X = BN // TN
DIM_Y = BM // TM
NUM_THREADS = DIM_X * DIM_Y


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sAT = cuda.shared.array((BK, BM), float32)
    sB = cuda.shared.array((BK, BN), float32)
    acc = cuda.local.array((TM, TN), float32)
    ra = cuda.local.array(TM, float32)
    rb = cuda.local.array(TN, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tid = ty * DIM_X + tx
    bm = cuda.blockIdx.y * BM
    bn = cuda.blockIdx.x * BN
    M, K = A.shape
    N = B.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    for k0 in range(0, K, BK):
        for l in range((BM * BK) // NUM_THREADS):
            e = l * NUM_THREADS + tid
            m = e // BK
            k = e % BK
            sAT[k, m] = A[bm + m, k0 + k] if bm + m < M and k0 + k < K else float32(0.0)
        for l in range((BK * BN) // NUM_THREADS):
            e = l * NUM_THREADS + tid
            k = e // BN
            n = e % BN
            sB[k, n] = B[k0 + k, bn + n] if k0 + k < K and bn + n < N else float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            for i in range(TM):
                ra[i] = sAT[k, ty + i * DIM_Y]
            for j in range(TN):
                rb[j] = sB[k, tx + j * DIM_X]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += ra[i] * rb[j]
        cuda.syncthreads()
    for i in range(TM):
        r = bm + ty + i * DIM_Y
        for j in range(TN):
            c = bn + tx + j * DIM_X
            if r < M and c < N:
                C[r, c] = acc[i, j]


def matmul_fast(A, B, C):
    M, N = C.shape
    grid = (math.ceil(N / BN), math.ceil(M / BM))
    matmul_fast_kernel[grid, (DIM_X, DIM_Y)](A, B, C)
