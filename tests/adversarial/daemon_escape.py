"""Adversarial: leaves a daemon behind (double fork, new session, exec
`sleep @@SECONDS@@`) to outlive the check, then finishes normally.
Expected: the check's result is used as usual and no process of the child
is left once the grader has its result."""
import os

from numba import cuda

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "@@SECONDS@@"])
    os._exit(0)
os.wait()


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    matmul_naive_kernel[((C.shape[1] + 15) // 16, (C.shape[0] + 15) // 16), (16, 16)](A, B, C)
