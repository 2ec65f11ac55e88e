"""Untrusted side (grading child): lost updates to C, which Numba's simulator cannot show.

Two threads of one launch that store to, or read-modify-write, the same element of C without an atomic lose an
update on a GPU: their loads and stores interleave. The simulator runs one thread at a time, so both updates land
and C comes out right. While ``tracked(C, module_path)`` is active, C's class is switched to a subclass of the
simulator's device array whose element stores note, per element, the launch and thread that last wrote it (NumPy
arrays of stamps: bounded memory, no per-access objects). A second thread of the same launch writing an element,
not both through ``cuda.atomic.*``, is a conflict. Launches run in order, so two launches writing one element
are fine. The facts also give the blocks' footprint in C (rows plus columns each block wrote), from which the
data-reuse judge bounds the loads a correct product needs (checks/data_reuse.py).

Facts (``WriteLog.facts``): {"count": int (conflicting writes), "elements": int, "launches": int,
"examples": [{"index": [row, col], "update": bool, "first": SIDE, "second": SIDE}],
"footprint": {"rows_plus_cols": int, "blocks": int, "written": int}} with SIDE = {"block": [x, y, z],
"thread": [x, y, z], "line": int, "source": str, "atomic": bool}.
"""
import contextlib
import linecache
import os
import sys
import threading

from .common import _is_atomic

MAX_EXAMPLES = 4
GID_BITS = 41                 # stamp = launch << LAUNCH_SHIFT | MANY? | thread id + 1
MANY = 1 << GID_BITS          # (atomic stamps) several threads updated the element through atomics
LAUNCH_SHIFT = GID_BITS + 1
GID_MASK = MANY - 1


class WriteLog:
    """The per-element writers of one C over one simulated run, and the conflicts found."""

    def __init__(self, C, module_path, np, sim_kernel):
        self.np, self.sim = np, sim_kernel
        self.shape = tuple(int(s) for s in C.shape)
        size = int(np.prod(self.shape)) if self.shape else 1
        self.plain = np.zeros(size, np.int64)      # stamp of the last plain store, 0: none
        self.atomic = None                         # stamp of the last atomic update (allocated on the first)
        self.site = np.zeros(size, np.int32)       # (site id << 1 | read first) of the last store
        self.flat = None                           # flat index of each element, for indices other than [i, j]
        self.real = os.path.realpath(module_path) if module_path else None
        self.sites, self.site_ids = [], {}         # (code, lasti) of each store site
        self.ctx, self.launch, self.dims = None, 0, [None]
        self.count, self.hit, self.examples = 0, None, []
        self.lock = threading.Lock()

    # -- the hot path ------------------------------------------------------------------------------------------
    def index(self, idx):
        """Flat index (int, or an int array for a slice) of C[idx], which has just been accessed successfully."""
        if type(idx) is tuple and len(idx) == 2 and len(self.shape) == 2:
            i, j = idx
            M, N = self.shape
            if type(i) is int and type(j) is int and 0 <= i < M and 0 <= j < N:
                return i * N + j
        if self.flat is None:
            self.flat = self.np.arange(self.plain.size).reshape(self.shape)
        flat = self.flat[idx]
        return int(flat) if self.np.ndim(flat) == 0 else flat

    def thread(self):
        """(stamp, the BlockThread) of the calling simulator thread; (0, None) outside a launch."""
        ctx = self.sim._kernel_context
        if ctx is None:
            return 0, None
        if ctx is not self.ctx:                  # a new launch (the simulator makes a context per launch)
            with self.lock:
                if ctx is not self.ctx:
                    grid, block = tuple(ctx.gridDim), tuple(ctx.blockDim)
                    self.dims.append((grid, block, block[0] * block[1] * block[2]))
                    self.launch += 1
                    self.ctx = ctx
        t = threading.current_thread()
        try:
            return t._lu_stamp, t
        except AttributeError:
            grid, _, nthreads = self.dims[-1]
            b = t.blockIdx
            gid = (b.x + grid[0] * (b.y + grid[1] * b.z)) * nthreads + t.thread_id
            t._lu_stamp = (self.launch << LAUNCH_SHIFT) | (gid + 1)
            return t._lu_stamp, t

    def read(self, flat):
        stamp, t = self.thread()
        if t is not None:
            t._lu_read = flat

    def write(self, flat, frame):
        stamp, t = self.thread()
        if t is None:
            return
        atomic = _is_atomic(frame)
        if atomic:
            frame = frame.f_back
        key = (frame.f_code, frame.f_lasti)
        sid = self.site_ids.get(key)
        if sid is None:
            sid = self.site_ids.setdefault(key, len(self.sites))
            if sid == len(self.sites):
                self.sites.append(key)
        base = (stamp >> LAUNCH_SHIFT) << LAUNCH_SHIFT
        if type(flat) is not int:                # a slice of C stored at once
            for f in flat.ravel().tolist():
                self.write_one(f, stamp, base, atomic, sid, False, t)
        else:
            rmw = not atomic and getattr(t, "_lu_read", -1) == flat
            self.write_one(flat, stamp, base, atomic, sid, rmw, t)

    def write_one(self, flat, stamp, base, atomic, sid, rmw, t):
        with self.lock:
            prev = int(self.plain[flat])
            other, other_atomic = (prev, False) if prev >= base and prev != stamp else (0, False)
            a = int(self.atomic[flat]) if self.atomic is not None else 0
            if not other and a >= base and not atomic and (a & ~MANY != stamp or a & MANY):
                # a plain store where another thread updated through an atomic: unordered, one of them is lost
                other, other_atomic = (a & ~MANY if a & ~MANY != stamp else -1), True
            if other:
                self.conflict(flat, other, other_atomic, t, atomic, sid, rmw)
            if atomic:
                if self.atomic is None:
                    self.atomic = self.np.zeros(self.plain.size, self.np.int64)
                many = MANY if a >= base and (a & MANY or a & ~MANY != stamp) else 0
                self.atomic[flat] = stamp | many
            else:
                self.plain[flat] = stamp
            self.site[flat] = (sid << 1) | rmw

    # -- conflicts and facts -----------------------------------------------------------------------------------
    def conflict(self, flat, other, other_atomic, t, atomic, sid, rmw):
        np = self.np
        self.count += 1
        if self.hit is None:
            self.hit = np.zeros(self.plain.size, np.bool_)
        self.hit[flat] = True
        if len(self.examples) >= MAX_EXAMPLES or other < 0:
            return
        psite = int(self.site[flat])
        first = self.side(other, psite >> 1, other_atomic)
        second = {"block": [int(v) for v in t.blockIdx], "thread": [int(v) for v in t.threadIdx],
                  **self.where(sid), "atomic": atomic}
        index = [int(v) for v in np.unravel_index(flat, self.shape)]
        self.examples.append({"index": index, "update": bool(rmw or psite & 1 or atomic or other_atomic),
                              "first": first, "second": second})

    def side(self, stamp, sid, atomic):
        """Block, thread and site of the write `stamp` names."""
        launch, gid = stamp >> LAUNCH_SHIFT, (stamp & GID_MASK) - 1
        grid, block, nthreads = self.dims[launch]
        b, th = divmod(gid, nthreads)
        return {"block": _unflatten(b, grid), "thread": _unflatten(th, block), **self.where(sid), "atomic": atomic}

    def where(self, sid):
        """Line and source text of a store site: the innermost frame in the student's file, as written."""
        code, lasti = self.sites[sid]
        line = next((ln for start, end, ln in code.co_lines() if start <= lasti < end and ln), -1)
        path = code.co_filename
        if self.real and os.path.realpath(path) != self.real:
            return {"line": -1, "source": ""}
        return {"line": int(line), "source": linecache.getline(path, line).strip() if line > 0 else ""}

    def facts(self):
        np = self.np
        last = self.plain if self.atomic is None else np.maximum(self.plain, self.atomic & ~MANY)
        written = last > 0
        rows_cols, blocks = 0, 0
        if written.any() and len(self.shape) == 2:
            flat = np.nonzero(written)[0]
            stamps = last[flat]
            launch = stamps >> LAUNCH_SHIFT
            block = np.empty(len(flat), np.int64)
            for n in np.unique(launch).tolist():
                sel = launch == n
                block[sel] = ((stamps[sel] & GID_MASK) - 1) // self.dims[n][2]
            rows, cols = np.divmod(flat, self.shape[1])
            rows_cols = sum(len(np.unique(np.stack([launch, block, x]), axis=1).T) for x in (rows, cols))
            blocks = len(np.unique(np.stack([launch, block]), axis=1).T)
        return {"count": self.count, "elements": int(self.hit.sum()) if self.hit is not None else 0,
                "launches": self.launch, "examples": self.examples,
                "footprint": {"rows_plus_cols": rows_cols, "blocks": blocks, "written": int(written.sum())}}


def _unflatten(i, dims):
    x, rest = i % dims[0], i // dims[0]
    return [int(x), int(rest % dims[1]), int(rest // dims[1])]


def _tracking_class(base_cls, log, root):
    """The subclass C's class is switched to: each element store and load is noted in `log`."""
    import numpy as np
    getframe = sys._getframe
    ndarray = np.ndarray
    within = {}

    class TrackedArray(base_cls):
        def __getitem__(self, idx):
            ret = self._ary[idx]
            if type(ret) is ndarray:             # a view of C: its elements are C's
                view = TrackedArray(ret, stream=self.stream)
                view._lu_map = (log.index(idx) if self is root else self._lu_map[idx])
                return view
            if type(ret) is not np.void:
                log.read(log.index(idx) if self is root else self._lu_map[idx])
            return ret

        def __setitem__(self, idx, val):
            self._ary[idx] = val                 # first: an index error is the kernel's own
            f = getframe(1)
            if f.f_code is within.get("set"):    # FakeWithinKernelCUDAArray.__setitem__: the caller is above it
                f = f.f_back
            log.write(log.index(idx) if self is root else self._lu_map[idx], f)

    from numba.cuda.simulator.cudadrv.devicearray import FakeWithinKernelCUDAArray
    within["set"] = FakeWithinKernelCUDAArray.__setitem__.__code__
    TrackedArray.__name__ = base_cls.__name__
    TrackedArray.__qualname__ = base_cls.__qualname__
    return TrackedArray


@contextlib.contextmanager
def tracked(C, module_path):
    """For the duration of the block, note every store to C (a simulator device array) by the threads of each
    launch; yields the WriteLog, or None when C is not a simulator array (nothing is tracked)."""
    import numpy as np
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    if not isinstance(C, FakeCUDAArray) or getattr(type(C), "_lu_tracked", False):
        yield None
        return
    log = WriteLog(C, module_path, np, sim_kernel)
    cls = type(C)
    tracking = _tracking_class(cls, log, C)
    tracking._lu_tracked = True
    C.__class__ = tracking
    try:
        yield log
    finally:
        C.__class__ = cls


def run_tracked(run, C, job, shape_facts):
    """run(); in the simulator with C's stores tracked, their facts in shape_facts["c_writes"]."""
    if job.get("device") == "gpu":
        return run()
    with tracked(C, job.get("module_path")) as log:
        result = run()
    if log is not None:
        shape_facts["c_writes"] = log.facts()
    return result
