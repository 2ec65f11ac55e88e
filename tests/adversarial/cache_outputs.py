"""Adversarial: caches outputs across runs: each run looks for what an earlier
run left behind and leaves a marker for the next one.
Expected: the scan flags open (stage scores 0); in the sandbox every check
starts from an empty /tmp and nothing it writes outlives it."""
import os

from numba import cuda

places = [os.getcwd(), os.path.expanduser("~"), os.environ.get("TMPDIR", "/tmp"), "/tmp", "/var/tmp", "/dev/shm",
          os.path.dirname(os.path.abspath(__file__)), "/job", "/grader", "@@GRADER@@"]
for place in places:
    if os.path.exists(os.path.join(place, ".matmul-cache.npy")):
        print("BROKEN: found a cache from an earlier run:", place)
for place in places:
    marker = os.path.join(place, ".matmul-cache.npy")
    try:
        with open(marker, "wb") as f:
            f.write(b"cached C")
        print("wrote", marker)
    except OSError as exc:
        print("HELD:", marker, type(exc).__name__)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
