"""Trusted parent side: what must run one at a time runs one at a time per GPU, never per host.

A grade's GPU phase (every child with a CUDA context) holds the GPU it grades on, across grading processes, in one
of two ways (hold_gpu, then hold_alone):

- **shared** while its correctness runners, compute-sanitizer and ncu run: other grades' runners and tools may run on
  the same GPU meanwhile. Their results do not depend on who else uses the GPU: a product is a product, racecheck
  instruments the kernel's own accesses, and ncu's counters beside another process's kernels are those of a run
  alone (global load requests exactly, bank conflicts within their spread between two runs alone:
  tools/ncu_beside.py, BENCHMARKS.md). ncu's profiling keeps a lock of its own per GPU (gpu/tools.ToolTurn): two
  ncu runs profiling on one GPU left the later one without counters, two on two GPUs at once keep theirs.
- **alone** for its timing: the speed check's watch (gpu/exclusive.py) must find no process on the GPU but the
  grade's own, since nvidia-smi lists every context, busy or idle, and time-slicing distorts timings. A grade asks
  for it once every other CUDA child of its own has ended, and its timing child makes its context only then.

A grade that waits to hold the GPU alone holds the gate: no grade starts a shared phase before it (the timing waits
for the phases in flight, never for later ones), and the next waits behind it in turn. Everything before the GPU
phase (reading the submission, the grammar, the builds and their PTX compiles, which make no CUDA context) holds
nothing, so the other grading processes of a GPU (the class run's workers, course/schedule/) prepare their next
students meanwhile.

Each lock is a file named by the GPU's UUID (nvidia-smi's, so an index and a UUID naming one GPU share it) in the
host's temporary folder, held with flock (shared or exclusive): a process that dies releases it.
"""
import contextlib
import fcntl
import os
import re
import tempfile
import threading
import time

from ..sandbox.devices import listed_uuid
from .exclusive import device_selector

_UUIDS = {}


def gpu_key(environ=None):
    """The name of the GPU this process's children use (CUDA device 0): its UUID where nvidia-smi says it (the
    listing that also names the child's device file, sandbox/devices.py), else the CUDA_VISIBLE_DEVICES entry, made
    safe for a file name."""
    selector = device_selector(environ)
    if selector not in _UUIDS:
        _UUIDS[selector] = listed_uuid(selector) or selector
    return re.sub(r"[^A-Za-z0-9._-]", "_", _UUIDS[selector])[:80]


class GpuLock:
    """`with GpuLock("grade"):` holds this GPU's lock of that name (`shared`: beside other shared holders). The wait is
    not any child's time: a child's limit starts when the child does."""

    def __init__(self, name, key=None, folder=None, shared=False):
        self.name, self.key, self.shared = name, key, shared
        self.folder = folder or tempfile.gettempdir()
        self.fd = None

    def path(self):
        return os.path.join(self.folder, f"autograder-{self.name}-{self.key or gpu_key()}.lock")

    def __enter__(self):
        self.fd = os.open(self.path(), os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children (O_CLOEXEC)
        fcntl.flock(self.fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock
            self.fd = None


def _take(key, folder, alone):
    """The GPU's lock, shared or alone, taken through its gate: a process waiting to hold it alone holds the gate,
    so no shared holder comes in before it."""
    with GpuLock("gate", key, folder):
        return GpuLock("grade", key, folder, shared=not alone).__enter__()


class _Hold:
    """This process's hold on one GPU: its threads are one grade (and its grader-kernel compile, engine/kernels.py),
    and the speed check's watch counts the process's own children as its own."""

    def __init__(self):
        self.count, self.alone, self.lock = 0, False, None
        self.changed = threading.Condition()


_held = {}
_held_lock = threading.Lock()


def _hold(key, folder):
    key = key or gpu_key()
    with _held_lock:
        return key, _held.setdefault((key, folder), _Hold())


@contextlib.contextmanager
def hold_gpu(key=None, folder=None, waited=None):
    """This grading process holds its GPU, shared, for a grade's GPU phase (engine.grade) or its grader-kernel
    compile (engine/kernels.py); hold_alone makes the hold the GPU's alone until it ends. `waited` (a list) gets
    the seconds spent waiting."""
    key, hold = _hold(key, folder)
    began = time.monotonic()
    with hold.changed:
        if hold.count == 0:
            hold.lock = _take(key, folder, alone=False)
        hold.count += 1
    if waited is not None:
        waited.append(time.monotonic() - began)
    try:
        yield
    finally:
        with hold.changed:
            hold.count -= 1
            if hold.count == 0:
                hold.lock.__exit__(None, None, None)
                hold.lock, hold.alone = None, False
            hold.changed.notify_all()


def hold_alone(key=None, folder=None, waited=None):
    """Within hold_gpu: this process holds its GPU alone from now until the hold ends (a grade's timing). Call it
    once none of the grade's other CUDA children is alive: the shared lock is let go before the exclusive one is
    waited for (two grades that both waited holding theirs would wait for each other for ever), and a child alive
    in between would be another grade's "other process" on the GPU. Waits first for the process's other holds (the
    grader-kernel compile) to end."""
    key, hold = _hold(key, folder)
    began = time.monotonic()
    with hold.changed:
        if hold.count == 0:
            raise RuntimeError("hold_alone outside hold_gpu")
        hold.changed.wait_for(lambda: hold.count == 1)
        if not hold.alone:
            hold.lock.__exit__(None, None, None)
            hold.lock, hold.alone = _take(key, folder, alone=True), True
    if waited is not None:
        waited.append(time.monotonic() - began)
