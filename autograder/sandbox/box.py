"""Trusted parent side: one child's sandbox (a private folder, a uid of its own, the command line)."""
import fcntl
import os
import secrets
import shutil
import signal
import tempfile
import time

import numpy as np

from .devices import child_gpu
from .paths import BOX_JOB, BOX_KERNELS
from .view import SYSTEM_DIRS, TOOL_DIRS, DEFAULT_SCRATCH_BYTES, _under, bwrap_argv, unshare_argv, view

UID_BASE = 1_800_000_000  # as root, children run as UID_BASE + slot (no passwd entry needed)
UID_SLOTS = 4096


def is_root():
    return os.geteuid() == 0


def setpriv(uid):
    return [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--no-new-privs"]


# One hardware work queue and one copy queue per CUDA context instead of 8: a child launches on the default stream
# only, and a context with fewer queues is made in less of the driver's time. The driver makes contexts one at a
# time for the whole host, so this is what lets GPU children of several workers start together (16 contexts at
# once: 1.2 s each instead of 2.9 s on an H200 host, BENCHMARKS.md). The environment may still set other values.
GPU_CHILD_ENV = {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_DEVICE_MAX_COPY_CONNECTIONS": "1"}


def child_env(device, scratch):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": scratch, "TMPDIR": scratch,
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "NUMBA_CACHE_DIR": scratch,
           "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "4",  # glibc's default, 8 arenas of 64 MiB per core, lets
           # the simulator's thousand threads overrun the address-space limit on a many-core machine
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # no BLAS threads spinning on every core (__init__.py)
    if device == "gpu":
        env.update(GPU_CHILD_ENV)
    for key, value in os.environ.items():  # the GPU driver and toolkit location, nothing else
        if key.startswith(("CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "NUMBA_CUDA_")):
            env[key] = value
    if device == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


class Box:
    """One child's sandbox: a private folder for its files, a uid slot, the command that starts it."""

    def __init__(self, name, limits, device, files, wrapper=(), dirs=()):
        self.name, self.device, self.wrapper = name, device, tuple(wrapper)
        self.dirs = tuple(dirs)  # (host folder, name, writable): shown as /kernels/<name>
        self.scratch_bytes = limits.get("scratch_bytes", DEFAULT_SCRATCH_BYTES)
        self.files = files
        self.outputs = []  # (file in this box, the wrapper's path for it)
        self.uid = None
        self.slot_file = None
        # in a sandbox a GPU child sees its own GPU's device file only, and is told that GPU by UUID
        self.gpu = child_gpu() if device == "gpu" and name != "none" else None

    def env(self, env):
        """The child's environment with its GPU named as the sandbox shows it."""
        return {**env, "CUDA_VISIBLE_DEVICES": self.gpu.uuid} if self.gpu is not None else env

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="grade-")   # 0700, the parent's: the child never sees it by name
        if self.name != "none" and is_root():
            self.uid, self.slot_file = _take_uid()
        return self

    def path(self, name):
        return os.path.join(self.dir, name)

    def dir_inside(self, name):
        """Where the child sees the folder `name` of `dirs`."""
        host = next(h for h, n, _ in self.dirs if n == name)
        return f"{BOX_KERNELS}/{name}" if self.name != "none" else host

    def place(self, name, source=None, data=None):
        """Put a file the child gets as /job/<name>; the result file is the child's to write. A copied source
        keeps its modification time: Numba's kernel cache knows a module by its path, size and time."""
        path = self.path(name)
        if source is not None:
            shutil.copy2(source, path)
        elif data is not None:
            np.savez(path, **data)
        else:
            open(path, "wb").close()
        os.chmod(path, 0o600 if name == "result.npz" else 0o644)
        if name == "result.npz" and self.uid is not None:
            os.chown(path, self.uid, self.uid)
        self.files[name] = path
        return f"{BOX_JOB}/{name}" if self.name != "none" else path

    def tool_outputs(self):
        """A tool's log (a wrapper argument naming a file in a folder of the grader's) becomes a file of the
        child's own, bound at that path and copied back by deliver(): the grader's folder stays unseen."""
        for i, arg in enumerate(self.wrapper[1:]):
            folder = os.path.dirname(arg)
            if (arg.startswith("/") and os.path.isdir(folder) and not os.path.isdir(arg) and folder != "/"
                    and not _under(folder, SYSTEM_DIRS + ("/etc", "/proc", "/sys", "/dev") + TOOL_DIRS)):
                own = self.path(f"tool-output-{i}")
                open(own, "wb").close()
                os.chmod(own, 0o600)
                if self.uid is not None:
                    os.chown(own, self.uid, self.uid)
                self.outputs.append((own, arg))

    def deliver(self):
        for own, path in self.outputs:
            if os.path.getsize(own):
                shutil.copyfile(own, path)

    def command(self, inner):
        if self.name == "none":
            return list(self.wrapper) + list(inner)
        # the tool runs as the child's uid too: compute-sanitizer and ncu lose a target of another uid
        inner = (setpriv(self.uid) if self.uid is not None else []) + list(self.wrapper) + list(inner)
        self.tool_outputs()
        entries = view(self.files, self.device, self.wrapper, self.scratch_bytes, self.outputs,
                       [(host, f"{BOX_KERNELS}/{n}", writable) for host, n, writable in self.dirs], self.gpu)
        if self.name == "bwrap":
            return bwrap_argv(entries, inner, is_root())
        os.mkdir(self.path("root"), 0o700)
        return unshare_argv(entries, inner, self.path("root"))

    def __exit__(self, *exc):
        try:
            if self.uid is not None:
                _kill_uid(self.uid)
        finally:
            if self.slot_file is not None:
                self.slot_file.close()  # releases the flock: the uid may be used again
            shutil.rmtree(self.dir, ignore_errors=True)


def _lock_dir():
    base = "/run" if os.access("/run", os.W_OK) else tempfile.gettempdir()
    path = os.path.join(base, "autograder-sandbox-uids")
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077 or not os.path.isdir(path):
        raise RuntimeError(f"{path} is not a private folder of this user")
    return path


def _take_uid():
    """A uid no other running child (of any grader on this machine) has: flock on a per-uid file."""
    folder = _lock_dir()
    start = secrets.randbelow(UID_SLOTS)
    for i in range(UID_SLOTS):
        slot = (start + i) % UID_SLOTS
        f = open(os.path.join(folder, str(slot)), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        uid = UID_BASE + slot
        _kill_uid(uid)  # nothing may survive from an earlier child
        return uid, f
    raise RuntimeError("all sandbox uids are in use")


def _uid_pids(uid):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    for line in f:
                        if line.startswith("Uid:"):
                            if str(uid) in line.split()[1:]:
                                pids.append(int(entry))
                            break
            except OSError:
                pass
    return pids


def _kill_uid(uid, seconds=5.0):
    """SIGKILL every process running as `uid` until none is left."""
    deadline = time.monotonic() + seconds
    while True:
        pids = _uid_pids(uid)
        if not pids or time.monotonic() > deadline:
            return not pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)

