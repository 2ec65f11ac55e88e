"""Adversarial: patches pytest so that failing assertions pass.
Expected: the scan flags the import (stage scores 0); the grader does not
judge with pytest: correctness fails."""
import _pytest.outcomes
import pytest
from numba import cuda

pytest.fail = lambda *args, **kwargs: None
_pytest.outcomes.fail = lambda *args, **kwargs: None


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
