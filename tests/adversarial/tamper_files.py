"""Adversarial: rewrites the grader, NumPy, its own submission and drops a
sitecustomize.py on every path Python reads, so later checks run its code.
Expected: all of it is read-only or invisible in the sandbox; the check runs
normally and later checks are untouched."""
import os
import site
import sys

import numpy
from numba import cuda

PAYLOAD = "import os\nos._exit(7)\n"
targets = [os.path.join(p, "autograder", "checks", "correct.py") for p in sys.path if os.path.isdir(p)]
targets += ["@@GRADER@@/autograder/checks/correct.py", numpy.__file__, __file__,
            os.path.join(os.path.dirname(__file__), "numpy.py")]
targets += [os.path.join(p, name) for p in site.getsitepackages() + [os.path.dirname(os.__file__)]
            for name in ("sitecustomize.py", "usercustomize.py", "numpy.py")]
for path in targets:
    try:
        with open(path, "a") as f:
            f.write(PAYLOAD)
        print("BROKEN: wrote", path)
    except OSError as exc:
        print("HELD:", path, type(exc).__name__)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    matmul_naive_kernel[((C.shape[1] + 15) // 16, (C.shape[0] + 15) // 16), (16, 16)](A, B, C)
