"""Hostile: passes the host product to the kernel inside a float subclass (it passes the launch contract as a plain
number) whose __getitem__, __getattr__ and __eq__ the simulated kernel reads.
Expected: rejected (class) at line 11."""
import math

from numba import cuda

BLOCK = 16


class Scale(float):
    """A launch parameter (a number, as the contract allows)."""

    def __getitem__(self, index):
        return self.values[index]

    def __getattr__(self, name):
        return 0.0

    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


@cuda.jit
def matmul_naive_kernel(A, B, C, scale):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = scale[row, col]


def matmul_naive(A, B, C):
    host = "copy_to_" + "host"
    scale = Scale(1.0)
    scale.values = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C, scale)
