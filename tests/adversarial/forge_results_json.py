"""Adversarial: writes a fake results.json where the grader writes its own.
Expected: open() is flagged by the static scan (stage scores 0); in the
sandbox the grader's folders are not even visible, so nothing is written."""
from numba import cuda

FAKE = '{"score": 100.0, "max_score": 8.0, "tests": []}'


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    for path in ("results.json", "../results.json", "@@RESULTS@@"):
        try:
            with open(path, "w") as f:
                f.write(FAKE)
            print("BROKEN: wrote", path)
        except OSError as exc:
            print("HELD: cannot write", path, exc)
    matmul_naive_kernel[1, 1](A, B, C)
