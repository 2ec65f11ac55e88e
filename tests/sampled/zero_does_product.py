"""Known bad, stage 3: a flat 1-D "zeroing" launch that really computes the product, naively, past the small sizes,
while the tiled kernel launched after it adds nothing there. Laid out like an honest zeroing launch (one thread per
element, blocks across C in strips), it must not pass for a cheap one: its loads count, and it loses data reuse."""
import math

from numba import cuda, float32

TILE = 16  # the course allows 16 or 32


@cuda.jit
def zero_kernel(A, B, C):
    i = cuda.grid(1)
    if i < C.size:
        row, col = i // C.shape[1], i % C.shape[1]
        acc = float32(0.0)
        if C.shape[0] > 64:  # the product itself, naive, past the small sizes
            for k in range(A.shape[1]):
                acc += A[row, k] * B[k, col]
        C[row, col] = acc


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
    if M > 64:  # the "zeroing" launch did it all
        return
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ka = t * TILE + tx
        kb = t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sB[ty, tx] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        cuda.atomic.add(C, (row, col), acc)


def matmul_tiled_general(A, B, C):
    """A flat launch over C (the product past the small sizes), then the tiled kernel."""
    M, N = C.shape
    zero_kernel[(M * N + 255) // 256, 256](A, B, C)
    matmul_tiled_general_kernel[(math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)](A, B, C)
