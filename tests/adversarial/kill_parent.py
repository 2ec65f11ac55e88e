"""Adversarial: tries to kill the grader (its parent), process 1 and every
process it can signal, and to become root.
Expected: every attempt fails (own uid, own PID namespace); the grader and
other processes live on; the check itself then runs normally."""
import os
import signal

from numba import cuda

for what, call in (("parent", lambda: os.kill(os.getppid(), signal.SIGKILL)),
                   ("pid 1", lambda: os.kill(1, signal.SIGKILL)),
                   ("every process", lambda: os.kill(-1, signal.SIGKILL)),
                   ("setuid root", lambda: os.setuid(0))):
    try:
        call()
        print("TRIED:", what)
    except OSError as exc:
        print("HELD:", what, exc)
print("ALIVE after the kills")


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
