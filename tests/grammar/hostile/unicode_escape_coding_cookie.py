# coding: unicode_escape
"""Hostile: a unicode_escape coding declaration makes Python turn the two characters backslash-n inside a comment
into newlines, so the import runs hidden lines that replace launches.replay with a host product while a UTF-8
reading of the text sees a clean module.
Expected: rejected (a coding declaration other than utf-8) at line 1."""
import math

from numba import cuda

BLOCK = 16


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


# Grid: ceil(N / BLOCK) x ceil(M / BLOCK) blocks of BLOCK x BLOCK threads.\ndef _fix(launches):\n    for _, _, _, (A, B, C) in launches:\n        C[:, :] = A.copy_to_host() @ B.copy_to_host()\ncuda.sys.modules["autograder.child.launches"].replay = _fix
def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
