"""Hostile: replaces numba.cuda.event, which the timing child calls for its CUDA events, with a factory whose events
report a tenth of the measured time for our runs only (the grader times student and reference in a fixed interleaved
order).
Expected: rejected (attribute assignment) at line 28."""
import math

from numba import cuda, float32

BLOCK = 16
SPEED_UP = 10.0
MEASURED = cuda.event
CALLS = []


def quick_event(timing=True):
    ev = MEASURED()
    honest = ev.elapsed_time

    def elapsed_time(other):
        CALLS.append(1)
        ours = len(CALLS) % 4 in (1, 0)  # student, reference, reference, student, student, ...
        return honest(other) / SPEED_UP if ours else honest(other)

    ev.elapsed_time = elapsed_time
    return ev


cuda.event = quick_event


@cuda.jit
def matmul_naive_kernel(A, B, C):
    col, row = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        acc = float32(0.0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def matmul_naive(A, B, C):
    M, N = C.shape
    matmul_naive_kernel[(math.ceil(N / BLOCK), math.ceil(M / BLOCK)), (BLOCK, BLOCK)](A, B, C)
