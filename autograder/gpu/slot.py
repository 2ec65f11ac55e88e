"""Trusted parent side: what must run one at a time runs one at a time per GPU, never per host.

A grade's GPU phase (its runners, compute-sanitizer, ncu and timing children: every child with a CUDA context) holds
the GPU it grades on, across grading processes: nvidia-smi lists every context, busy or idle, and the speed check's
watch (gpu/exclusive.py) must find none but the grade's own. Everything before that phase (reading the submission,
the grammar, the builds and their PTX compiles, which make no CUDA context) runs outside it, so a second grading
process on the same GPU (the class run's second worker, course/schedule/) prepares its next student while this
one holds the GPU. ncu keeps a lock of its own, also per GPU: two ncu runs on one GPU left the later one without
counters, two on two GPUs at once keep theirs (BENCHMARKS.md).

Each lock is a file named by the GPU's UUID (nvidia-smi's, so an index and a UUID naming one GPU share it) in the
host's temporary folder, held with flock: a process that dies releases it.
"""
import contextlib
import fcntl
import os
import re
import tempfile
import threading
import time

from .exclusive import device_selector, gpu_state

_UUIDS = {}


def gpu_key(environ=None):
    """The name of the GPU this process's children use (CUDA device 0): its UUID where nvidia-smi says it, else the
    CUDA_VISIBLE_DEVICES entry, made safe for a file name."""
    selector = device_selector(environ)
    if selector not in _UUIDS:
        uuid = gpu_state(selector).get("uuid") or ""
        _UUIDS[selector] = uuid or selector
    return re.sub(r"[^A-Za-z0-9._-]", "_", _UUIDS[selector])[:80]


class GpuLock:
    """`with GpuLock("grade"):` holds this GPU's lock of that name. The wait is not any child's time: a child's limit
    starts when the child does."""

    def __init__(self, name, key=None, folder=None):
        self.name, self.key = name, key
        self.folder = folder or tempfile.gettempdir()
        self.fd = None

    def path(self):
        return os.path.join(self.folder, f"autograder-{self.name}-{self.key or gpu_key()}.lock")

    def __enter__(self):
        self.fd = os.open(self.path(), os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children (O_CLOEXEC)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock
            self.fd = None


_held = {}
_held_lock = threading.Lock()


@contextlib.contextmanager
def hold_gpu(key=None, folder=None, waited=None):
    """This grading process holds its GPU for a grade's GPU phase (engine.grade) or its grader-kernel compile
    (engine/kernels.py). The process holds it once for all its threads: they are one grade, and the speed check's
    watch counts the process's own children as its own. `waited` (a list) gets the seconds spent waiting."""
    key = key or gpu_key()
    with _held_lock:
        entry = _held.setdefault((key, folder), {"count": 0, "lock": None, "turn": threading.Lock()})
    began = time.monotonic()
    with entry["turn"]:
        if entry["count"] == 0:
            entry["lock"] = GpuLock("grade", key, folder).__enter__()
        entry["count"] += 1
    if waited is not None:
        waited.append(time.monotonic() - began)
    try:
        yield
    finally:
        with entry["turn"]:
            entry["count"] -= 1
            if entry["count"] == 0:
                entry["lock"].__exit__(None, None, None)
                entry["lock"] = None
