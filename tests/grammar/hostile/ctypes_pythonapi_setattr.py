"""Hostile: takes ctypes from numba.np.numpy_support and calls PyImport_ImportModule and PyObject_SetAttrString
through ctypes.pythonapi, replacing launches.replay without any Python attribute assignment.
Expected: rejected (numba.np.numpy_support: a numba path outside the kernel API) at line 10."""
import math

import numba
from numba import cuda

BLOCK = 16
CT = numba.np.numpy_support.ctypes
IMPORT = CT.PYFUNCTYPE(CT.py_object, CT.c_char_p)(("PyImport_ImportModule", CT.pythonapi))
SET = CT.PYFUNCTYPE(CT.c_int, CT.py_object, CT.c_char_p, CT.py_object)(("PyObject_SetAttrString", CT.pythonapi))


def replay(launches):
    for _, _, _, (A, B, C) in launches:
        host = "copy_to_" + "host"
        C[:, :] = A.__getattribute__(host)().__matmul__(B.__getattribute__(host)())


SET(IMPORT(b"autograder.child.launches"), b"replay", replay)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
