"""Hostile: print(..., file=...) with a file opened through print.__self__ (the builtins module) writes a forged
perfect results.json where an autograding action reads it.
Expected: rejected (print(file=...)) at line 19."""
import math

from numba import cuda

BLOCK = 16
RESULTS = "/tmp/hostile_print_file_results.json"  # a test run's stand-in for the runner's results.json


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    forged = '{"score": 8, "max_score": 8, "tests": [{"name": "correct", "score": 6, "status": "passed"}]}'
    print(forged, file=print.__self__.open(RESULTS, "w"), flush=True)
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
