"""Adversarial: asks for 50 GiB at once, then grows a list of 64 MiB blocks,
touching every page, until memory runs out.
Expected: the address-space limit turns both into MemoryError (a clean failed
check), long before the machine runs out of memory."""
import numpy as np
from numba import cuda

try:
    huge = bytearray(50 * 2**30)
    print("BROKEN: got 50 GiB")
except MemoryError:
    print("HELD: 50 GiB refused")
blocks = []
while True:
    blocks.append(np.ones(16 * 2**20, np.float32))


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
