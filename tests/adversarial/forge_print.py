"""Adversarial: prints a fake score and a fake results.json, computes nothing.
Expected: the printed text is ignored; the correctness checks fail."""
from numba import cuda

print('{"score": 8.0, "max_score": 8.0, "tests": [{"name": "correct", "score": 6, "status": "passed"}]}')
print("solutions/s1_naive.py: 8 / 8 points\n  PASS     6/6    stage naive: correct results")


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    print("PASS 8 / 8 points: all checks passed")
    matmul_naive_kernel[1, 1](A, B, C)
