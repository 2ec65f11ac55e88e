"""Stage 5: 2D register blocking, BM = 64, BN = 32, TM = 8, TN = 4, unsigned indices.

1D shared tiles; the A tile is stored transposed (k-major) so a thread's TM
values of A are read with a constant stride. A thread's rows and columns are
strided by the number of thread rows/columns, so a warp reads neighbouring words.
"""
import math

from numba import cuda, float32, uint32

BM = 64
BN = 32
BK = 16
TM = 8
TN = 4
ROW_THREADS = BM // TM
COL_THREADS = BN // TN
THREADS = ROW_THREADS * COL_THREADS
A_LOADS = BM * BK // THREADS
B_LOADS = BK * BN // THREADS
SA_SIZE = BK * BM
SB_SIZE = BK * BN


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array(SA_SIZE, float32)
    sB = cuda.shared.array(SB_SIZE, float32)
    a_reg = cuda.local.array(TM, float32)
    b_reg = cuda.local.array(TN, float32)
    acc = cuda.local.array((TM, TN), float32)
    tid = uint32(cuda.threadIdx.x)
    trow = tid // uint32(COL_THREADS)
    tcol = tid % uint32(COL_THREADS)
    row0 = uint32(cuda.blockIdx.y) * uint32(BM)
    col0 = uint32(cuda.blockIdx.x) * uint32(BN)
    M = uint32(A.shape[0])
    K = uint32(A.shape[1])
    N = uint32(B.shape[1])
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    for k0 in range(uint32(0), K, uint32(BK)):
        for i in range(A_LOADS):
            idx = tid + uint32(i * THREADS)
            r = idx // uint32(BK)
            c = idx % uint32(BK)
            gr = row0 + r
            gc = k0 + c
            sA[c * uint32(BM) + r] = A[gr, gc] if gr < M and gc < K else float32(0.0)
        for i in range(B_LOADS):
            idx = tid + uint32(i * THREADS)
            r = idx // uint32(BN)
            c = idx % uint32(BN)
            gr = k0 + r
            gc = col0 + c
            sB[r * uint32(BN) + c] = B[gr, gc] if gr < K and gc < N else float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            for i in range(TM):
                a_reg[i] = sA[uint32(k * BM) + trow + uint32(i * ROW_THREADS)]
            for j in range(TN):
                b_reg[j] = sB[uint32(k * BN) + tcol + uint32(j * COL_THREADS)]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] = cuda.fma(a_reg[i], b_reg[j], acc[i, j])
        cuda.syncthreads()
    for i in range(TM):
        r = row0 + trow + uint32(i * ROW_THREADS)
        if r < M:
            for j in range(TN):
                c = col0 + tcol + uint32(j * COL_THREADS)
                if c < N:
                    C[r, c] = acc[i, j]


def matmul_fast(A, B, C):
    M, N = C.shape
    matmul_fast_kernel[(math.ceil(N / BN), math.ceil(M / BM)), THREADS](A, B, C)
