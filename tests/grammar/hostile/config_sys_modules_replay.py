"""Hostile: reaches sys.modules through numba.core.config and replaces the grader's launches.replay with a host-side
product.
Expected: rejected (import of numba.core.config) at line 6."""
import math

import numba.core.config
from numba import cuda

BLOCK = 16

MODULES = numba.core.config.sys.modules
OPS = MODULES["oper" + "ator"]
NP = MODULES["num" + "py"]


def host_replay(launches):
    """Run the recorded launches (here: compute what they should have)."""
    for _, _, _, args in launches:
        A, B, C = args[0], args[1], args[2]
        fetch = OPS.methodcaller("copy_to" + "_host")
        product = OPS.attrgetter("mat" + "mul")(NP)(fetch(A), fetch(B))
        OPS.methodcaller("copy_to" + "_device", product)(C)


MODULES["autograder.child.launches"].replay = host_replay


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
