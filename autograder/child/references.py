"""Untrusted side (grading child): reference kernels the speed checks time against, in the same run on the same
GPU, and the input fills (``fill_uniform_host`` rebuilds them in the parent).

They live here, not in student files. ``naive_coalesced`` is the textbook
naive kernel with x along the columns of C; ``transposed_unpadded`` is the
stage 4 kernel without the padding column (a 32-way bank conflict on every
read of its B tile).
"""
import math

from numba import cuda, float32, uint64

BLOCK = 16
TILE = 32


@cuda.jit
def naive_coalesced_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


@cuda.jit
def transposed_unpadded_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sBT = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ka, kb = t * TILE + tx, t * TILE + ty
        sA[ty, tx] = A[row, ka] if row < M and ka < K else float32(0.0)
        sBT[tx, ty] = B[kb, col] if kb < K and col < N else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += sA[ty, k] * sBT[tx, k]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc


def naive_coalesced(A, B, C):
    M, N = C.shape
    naive_coalesced_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)


def transposed_unpadded(A, B, C):
    M, N = C.shape
    transposed_unpadded_kernel[(math.ceil(N / TILE), math.ceil(M / TILE)), (TILE, TILE)](A, B, C)


REFERENCES = {"naive_coalesced": naive_coalesced, "transposed_unpadded": transposed_unpadded}


MASK32 = 0xFFFFFFFF


@cuda.jit
def fill_uniform_kernel(X, seed):
    """X[i, j] = a 32-bit hash of (i * cols + j, seed) mapped to [-1, 1): fresh inputs made on the GPU.

    Numba widens uint32 arithmetic to 64 bits, so every step is masked back to 32.
    """
    i, j = cuda.grid(2)
    if i < X.shape[0] and j < X.shape[1]:
        h = (uint64(i * X.shape[1] + j) * uint64(2654435761) + uint64(seed) * uint64(97531)) & uint64(MASK32)
        h ^= h >> uint64(15)
        h = (h * uint64(2246822519)) & uint64(MASK32)
        h ^= h >> uint64(13)
        X[i, j] = float32(h >> uint64(8)) * float32(1.0 / 8388608.0) - float32(1.0)


def fill_uniform(X, seed):
    fill_uniform_kernel[(math.ceil(X.shape[0] / 16), math.ceil(X.shape[1] / 16)), (16, 16)](X, seed)


def fill_uniform_host(rows, cols, seed):
    """The same numbers as fill_uniform, computed with NumPy (for the parent's reference)."""
    import numpy as np
    idx = np.arange(rows * cols, dtype=np.uint64).reshape(rows, cols)
    h = (idx * 2654435761 + seed * 97531) & MASK32
    h ^= h >> 15
    h = (h * 2246822519) & MASK32
    h ^= h >> 13
    return ((h >> 8).astype(np.float32) * np.float32(1.0 / 8388608.0) - np.float32(1.0)).astype(np.float32)


@cuda.jit
def scrub_kernel(X, value):
    i = cuda.grid(1)
    if i < X.shape[0]:
        X[i] = value


def flush_l2(buffer, value):
    """Overwrite a buffer larger than L2 so no kernel starts with its operands cached."""
    scrub_kernel[math.ceil(buffer.shape[0] / 256), 256](buffer, value)
