"""Stage 5: 64 x 64 block tiles, 4 x 4 contiguous outputs per thread, uint32 indices.

256 threads per block. Shared tiles are 2D; loads are spread over the block
with a loop so every thread loads BM * BK / THREADS elements of A.
"""
from numba import cuda, float32, uint32

BM = 64
BN = 64
BK = 8
TM = 4
TN = 4
TPR = BN // TN          # threads per row of the block tile
THREADS = (BM // TM) * TPR


def ceil_div(a, b):
    return (a + b - 1) // b


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((BK, BM), float32)   # transposed: sA[k, m]
    sB = cuda.shared.array((BK, BN), float32)
    acc = cuda.local.array((TM, TN), float32)
    areg = cuda.local.array(TM, float32)
    breg = cuda.local.array(TN, float32)
    tid = uint32(cuda.threadIdx.x)
    ty = tid // uint32(TPR)
    tx = tid % uint32(TPR)
    row0 = uint32(cuda.blockIdx.y * BM)
    col0 = uint32(cuda.blockIdx.x * BN)
    M = uint32(C.shape[0])
    N = uint32(C.shape[1])
    K = uint32(A.shape[1])
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = 0.0
    k0 = uint32(0)
    while k0 < K:
        e = tid
        while e < uint32(BM * BK):
            m = e // uint32(BK)
            k = e % uint32(BK)
            ok = row0 + m < M and k0 + k < K
            sA[k, m] = A[row0 + m, k0 + k] if ok else float32(0.0)
            e += uint32(THREADS)
        e = tid
        while e < uint32(BK * BN):
            k = e // uint32(BN)
            n = e % uint32(BN)
            ok = k0 + k < K and col0 + n < N
            sB[k, n] = B[k0 + k, col0 + n] if ok else float32(0.0)
            e += uint32(THREADS)
        cuda.syncthreads()
        for k in range(BK):
            for i in range(TM):
                areg[i] = sA[k, ty * uint32(TM) + uint32(i)]
            for j in range(TN):
                breg[j] = sB[k, tx * uint32(TN) + uint32(j)]
            for i in range(TM):
                for j in range(TN):
                    acc[i, j] += areg[i] * breg[j]
        cuda.syncthreads()
        k0 += uint32(BK)
    for i in range(TM):
        r = row0 + ty * uint32(TM) + uint32(i)
        for j in range(TN):
            c = col0 + tx * uint32(TN) + uint32(j)
            if r < M and c < N:
                C[r, c] = acc[i, j]


def matmul_fast(A, B, C) -> None:
    M, N = C.shape
    matmul_fast_kernel[(ceil_div(N, BN), ceil_div(M, BM)), THREADS](A, B, C)
