"""Hostile: installs a profile hook (cuda.sys.setprofile) that waits for the grader's replay to return and then
writes a host product into the replayed C.
Expected: rejected (cuda.sys: not part of the CUDA kernel API) at line 24."""
import math

from numba import cuda

BLOCK = 16


def hook(frame, event, arg):
    if event == "return" and frame.f_code.co_name == "replay":
        for _, _, _, (A, B, C) in frame.f_locals["launches"]:
            host = "copy_to_" + "host"
            C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    cuda.sys.setprofile(hook)
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
