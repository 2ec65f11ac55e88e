"""Adversarial: crashes its own process (SIGSEGV) in the launcher.
Expected: "not gradable: the check was killed by signal SIGSEGV"."""
import os
import signal

from numba import cuda


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    os.kill(os.getpid(), signal.SIGSEGV)
