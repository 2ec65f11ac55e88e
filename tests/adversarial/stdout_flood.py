"""Adversarial: floods stdout and stderr with 1 GiB each.
Expected: the file-size limit stops the output (EFBIG: a clean failed check
with the end of the output), the grader keeps only the tail of the log."""
import sys

from numba import cuda

line = "flood " * 170 + "\n"
for stream in (sys.stdout, sys.stderr):
    for _ in range(2**30 // len(line)):
        stream.write(line)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
