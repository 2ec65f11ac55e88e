"""Stage 1 naive kernel with an eager (explicit) signature.

Declaring the types compiles the kernel once at import; the arrays are
C-contiguous float32 matrices.
"""
import math

from numba import cuda, float32

TPB = 16


@cuda.jit("void(float32[:, ::1], float32[:, ::1], float32[:, ::1])")
def matmul_naive_kernel(A, B, C):
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row >= C.shape[0]:
        return
    if col >= C.shape[1]:
        return
    tmp = float32(0.0)
    for k in range(A.shape[1]):
        tmp += A[row, k] * B[k, col]
    C[row, col] = tmp


def matmul_naive(A, B, C):
    """Launch one thread per output element."""
    blocks_x = int(math.ceil(C.shape[1] / TPB))
    blocks_y = int(math.ceil(C.shape[0] / TPB))
    matmul_naive_kernel[(blocks_x, blocks_y), (TPB, TPB)](A, B, C)
