"""Stage 5: an interior kernel plus an edge kernel.

matmul_fast_kernel computes the full 32 x 32 tiles of C (no bounds checks on
M and N, 2 x 2 outputs per thread, 16 x 16 threads); matmul_edge_kernel, a
plain naive kernel, fills the rows and columns left over at the bottom and
right edges.
"""
import math

from numba import cuda, float32

BT = 32          # block tile of C
BK = 16          # step along K
THREADS_1D = 16
RPT = BT // THREADS_1D   # rows (and columns) per thread
EDGE_BLOCK = 16


@cuda.jit
def matmul_fast_kernel(A, B, C):
    sA = cuda.shared.array((BT, BK), float32)
    sB = cuda.shared.array((BK, BT), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row0 = cuda.blockIdx.y * BT
    col0 = cuda.blockIdx.x * BT
    K = A.shape[1]
    c00 = float32(0.0)
    c01 = float32(0.0)
    c10 = float32(0.0)
    c11 = float32(0.0)
    for k0 in range(0, K, BK):
        # A tile: BT x BK, two rows per thread; B tile: BK x BT, two columns per thread
        for i in range(RPT):
            r = ty + i * THREADS_1D
            sA[r, tx] = A[row0 + r, k0 + tx] if k0 + tx < K else float32(0.0)
            c = tx + i * THREADS_1D
            sB[ty, c] = B[k0 + ty, col0 + c] if k0 + ty < K else float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            a0 = sA[ty, k]
            a1 = sA[ty + THREADS_1D, k]
            b0 = sB[k, tx]
            b1 = sB[k, tx + THREADS_1D]
            c00 = cuda.fma(a0, b0, c00)
            c01 = cuda.fma(a0, b1, c01)
            c10 = cuda.fma(a1, b0, c10)
            c11 = cuda.fma(a1, b1, c11)
        cuda.syncthreads()
    C[row0 + ty, col0 + tx] = c00
    C[row0 + ty, col0 + tx + THREADS_1D] = c01
    C[row0 + ty + THREADS_1D, col0 + tx] = c10
    C[row0 + ty + THREADS_1D, col0 + tx + THREADS_1D] = c11


@cuda.jit
def matmul_edge_kernel(A, B, C):
    col, row = cuda.grid(2)
    M, N = C.shape
    m_full = (M // BT) * BT
    n_full = (N // BT) * BT
    if row >= M or col >= N:
        return
    if row < m_full and col < n_full:
        return   # done by the interior kernel
    acc = float32(0.0)
    for k in range(A.shape[1]):
        acc += A[row, k] * B[k, col]
    C[row, col] = acc


def matmul_fast(A, B, C):
    M, N = C.shape
    full_rows = M // BT
    full_cols = N // BT
    if full_rows > 0 and full_cols > 0:
        matmul_fast_kernel[(full_cols, full_rows), (THREADS_1D, THREADS_1D)](A, B, C)
    edge_grid = (math.ceil(N / EDGE_BLOCK), math.ceil(M / EDGE_BLOCK))
    matmul_edge_kernel[edge_grid, (EDGE_BLOCK, EDGE_BLOCK)](A, B, C)
