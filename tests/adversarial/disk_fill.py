"""Adversarial: fills the disk: files as large as they get, as many as fit,
in every folder it may write to.
Expected: only the size-limited /tmp is writable (ENOSPC), the file-size
limit caps any one file (EFBIG), the rest is read-only or missing; the
host's disk is untouched. The check then runs normally."""
import errno
import os

from numba import cuda

chunk = b"x" * 2**20
for folder in ("/tmp", os.path.expanduser("~"), os.getcwd(), "/job", "/var/tmp", "/dev/shm", "/"):
    written = 0
    try:
        for i in range(100000):
            with open(os.path.join(folder, f"fill-{i}"), "wb") as f:
                try:
                    for _ in range(2**14):  # up to 16 GiB a file
                        f.write(chunk)
                        written += len(chunk)
                except OSError as exc:
                    if exc.errno != errno.EFBIG:
                        raise
                    print("HELD: file size limit in", folder, "at", written >> 20, "MiB")
    except OSError as exc:
        print("HELD:", folder, "stopped after", written >> 20, "MiB:", errno.errorcode.get(exc.errno))


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
