"""Adversarial: imports the grader and makes every verdict a pass.
Expected: the scan flags the import (stage scores 0); the patch only touches
the grading child, the grader judges in its own process: correctness fails."""
from numba import cuda

import autograder.checks.correct
import autograder.builder.launches

autograder.checks.correct.check_output = lambda *args, **kwargs: (True, "all correct")
autograder.builder.launches.validate = lambda *args, **kwargs: None


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
