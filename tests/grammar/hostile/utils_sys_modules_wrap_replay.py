"""Hostile: imports only numba, walks numba.core.utils.sys.modules to wrap launches.replay and
numba.np.numpy_support.np to write a host product into C after the real replay.
Expected: rejected (numba.core.utils: a numba path outside the kernel API) at line 11."""
import math

import numba
from numba import cuda

BLOCK = 16

LAUNCHES = numba.core.utils.sys.modules["autograder.child.launches"]
NP = numba.np.numpy_support.np
ORIGINAL_REPLAY = LAUNCHES.replay


def replay_then_fix(launches):
    ORIGINAL_REPLAY(launches)
    for name, kernel, config, args in launches:
        a = NP.asarray(args[0].__getattribute__("copy_to_" + "host")(), NP.float64)
        b = NP.asarray(args[1].__getattribute__("copy_to_" + "host")(), NP.float64)
        args[2][:, :] = (a[:, :, None] * b[None, :, :]).sum(axis=1).astype(NP.float32)


LAUNCHES.replay = replay_then_fix


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
