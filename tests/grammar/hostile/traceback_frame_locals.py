"""Hostile: catches the AttributeError the grader's recording kernel raises and follows
e.__traceback__.tb_frame.f_back to record_launches' locals, whose list of launches it rewrites to run a host
product.
Expected: rejected (try) at line 25."""
import math

from numba import cuda

BLOCK = 16


def on_host(A, B, C):
    host = "copy_to_" + "host"
    C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
    try:
        matmul_naive_kernel.max_blocks_per_sm
    except AttributeError as e:
        frame = e.__traceback__.tb_frame.f_back
        while frame is not None and "launches" not in frame.f_locals:
            frame = frame.f_back
        launches = frame.f_locals["launches"]
        for i, (name, kernel, config, args) in enumerate(launches):
            launches[i] = (name, {config: on_host}, config, args)
