"""Adversarial: overwrites the grader's compiled kernels (the reference it is timed against) and drops a file
in its own stage's kernel folder.
Expected: the grader's folder is read-only in the sandbox (its files stay as they were); the stage's own
folder takes the file (it holds only this submission's kernels)."""
import os

from numba import cuda

GRADER = "/kernels/grader"
if os.path.isdir(GRADER):  # the children that are given kernel folders (the build child has none)
    for name in sorted(os.listdir(GRADER)) + ["new.nbi"]:
        try:
            with open(os.path.join(GRADER, name), "wb") as f:
                f.write(b"slow reference")
            print("BROKEN: wrote", name)
        except OSError as exc:
            print("HELD:", name, type(exc).__name__)
    with open("/kernels/stage/mine.nbi", "wb") as f:
        f.write(b"own kernels")
    print("STAGE WRITABLE")


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
