# -*- coding: utf-7 -*-
"""Hostile: a utf-7 coding declaration makes Python decode the UTF-7 escape for a newline inside a comment, so the
import runs hidden lines that replace launches.replay with a host product while a UTF-8 reading of the text sees a
clean module.
Expected: rejected (a coding declaration other than utf-8) at line 1."""
import math

from numba import cuda

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


# One thread per element of C: x walks its columns, y its rows.+AAo-def _fix(launches):+AAo-    for _, _, _, (A, B, C) in launches:+AAo-        C[:, :] = A.copy_to_host() @ B.copy_to_host()+AAo-cuda.sys.modules["autograder.child.launches"].replay = _fix
def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
