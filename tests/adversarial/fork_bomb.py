"""Adversarial: a fork bomb. Every process forks until fork fails; the
processes that cannot fork sleep, holding their slot.
Expected: RLIMIT_NPROC on the child's own uid stops it (the grader, and other
students' checks running at the same time, keep their processes); the check
is stopped at its time limit and every process of the bomb is killed."""
import os
import time

first = os.getpid()
forks = 0
while True:
    try:
        os.fork()
        forks += 1
    except OSError as exc:
        if os.getpid() == first:
            print("HELD: fork failed after", forks, "forks:", exc, flush=True)
        time.sleep(10**6)
