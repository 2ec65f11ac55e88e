"""Hostile: looks copy_to_host up in type(A).__dict__ by a name built from strings and smuggles the host product to
the kernel through a module-level dict, which simulated kernels read as Python.
Expected: rejected (calls type()) at line 20."""
import math

from numba import cuda

BLOCK = 16
STASH = {}


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = STASH["P"][row, col]


def fetch(x):
    for klass in type(x).__mro__:
        if "copy_to_" + "host" in klass.__dict__:
            return klass.__dict__["copy_to_" + "host"](x)


def matmul_naive(A, B, C):
    STASH["P"] = fetch(A).__matmul__(fetch(B))
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
