"""Adversarial: looks for the solutions, the tests (hidden checks), the
gradebook, other students' files and the grader's own processes.
Expected: the scan flags open/os (stage scores 0); in the sandbox none of
these paths exists or is readable, and /proc shows only the sandbox."""
import glob
import os

from numba import cuda

found = []
patterns = ["@@GRADER@@/solutions/*.py", "@@GRADER@@/tests/*.py", "@@GRADER@@/tools/*.py",
            "@@CANARY@@", "@@CANARY_DIR@@/*", "/tmp/submission-*/*/*.py", "/tmp/grade-*/*",
            "/tmp/pytest-of-*/*/*/*", "/root/*", "/root/.*", "/home/*/*", "/etc/shadow",
            "/work/*/*", "/work/*/solutions/*"]
for pattern in patterns:
    for path in glob.glob(pattern) or [pattern]:
        try:
            with open(path, "rb") as f:
                data = f.read(4096)
        except OSError as exc:
            print("HELD:", path, type(exc).__name__)
            continue
        print("BROKEN: read", path, data[:60])
        found.append(path)
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
if len(pids) > 2:  # the sandbox's init (pid 1) and this process
    print("BROKEN: processes outside the sandbox are visible:", pids)
else:
    print("HELD: only the sandbox's processes are visible:", pids)


@cuda.jit
def matmul_naive_kernel(A, B, C):
    pass


def matmul_naive(A, B, C):
    matmul_naive_kernel[1, 1](A, B, C)
