"""Known bad, stage 3: a ticket from a counter in C. A launch of one block zeroes C[0, 0]; past the small sizes every
thread then takes a ticket there with cuda.atomic.add, and tiles only if it came early (the sampled run, where the
blocks not drawn never take one), naive otherwise; a last launch of one block computes C[0, 0] itself. It must lose
the structure points: the old value an atomic returns depends on the order of the blocks."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


@cuda.jit
def counter_kernel(A, B, C, finish):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        acc = float32(0.0)
        if finish:
            for k in range(A.shape[1]):
                acc += A[0, k] * B[k, 0]
        C[0, 0] = acc


@cuda.jit
def matmul_tiled_general_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    if M > 64:
        ticket = cuda.atomic.add(C, (0, 0), float32(1.0))
        if ticket >= 4 * TILE * TILE:  # late: naive
            if row < M and col < N:
                for k in range(K):
                    acc += A[row, k] * B[k, col]
                if row > 0 or col > 0:
                    C[row, col] = acc
            return
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N and (row > 0 or col > 0):
        C[row, col] = acc


def matmul_tiled_general(A, B, C):
    M, N = C.shape
    counter_kernel[1, (TILE, TILE)](A, B, C, False)
    blocks = (math.ceil(N / TILE), math.ceil(M / TILE))
    matmul_tiled_general_kernel[blocks, (TILE, TILE)](A, B, C)
    counter_kernel[1, (TILE, TILE)](A, B, C, True)
