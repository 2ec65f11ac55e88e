"""Untrusted side (grading child): lost updates to C and other orders between threads, which Numba's simulator
cannot show.

Two threads of one launch that store to, or read-modify-write, the same element of C without an atomic lose an
update on a GPU: their loads and stores interleave. The simulator runs one thread at a time, so both updates land
and C comes out right. While ``tracked(C, module_path)`` is active, C's class is switched to a subclass of the
simulator's device array whose element stores note, per element, the launch and thread that last wrote it (NumPy
arrays of stamps: bounded memory, no per-access objects). A second thread of the same launch writing an element,
not both through ``cuda.atomic.*``, is a conflict. So are a plain read of an element that another thread of the
same launch writes (the simulator's fixed block order decides what it reads; a GPU's does not) and two threads
updating one element through different atomics (``nanmax`` then ``add`` does not commute). Launches run in order,
so two launches writing one element are fine. In a sampled run (a few blocks of each launch simulated), reading an
element that no simulated thread wrote is a conflict too: its value is the part of a block that did not run. The
facts also give the blocks' footprint in C (rows plus columns each block wrote), from which the data-reuse judge
bounds the loads a correct product needs (checks/data_reuse.py).

Facts (``WriteLog.facts``): {"count": int (conflicting accesses), "elements": int, "launches": int,
"examples": [{"index": [row, col], "kind": "store" | "read" | "atomics" | "unsimulated", "update": bool,
"first": SIDE | None, "second": SIDE}],
"footprint": {"rows_plus_cols": int, "blocks": int, "written": int}} with SIDE = {"block": [x, y, z],
"thread": [x, y, z], "line": int, "source": str, "atomic": bool, "op": the cuda.atomic function or absent,
"access": "read" | "write"}.
"""
import contextlib
import linecache
import os
import sys
import threading

from .common import _is_atomic
from .tickets import watched

MAX_EXAMPLES = 4
GID_BITS = 41                 # stamp = launch << LAUNCH_SHIFT | MANY? | thread id + 1
MANY = 1 << GID_BITS          # (atomic stamps) several threads updated the element through atomics
LAUNCH_SHIFT = GID_BITS + 1
GID_MASK = MANY - 1
OP_NAMES = (None, "add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
            "compare_and_swap", "cas")
OPS = {name: i for i, name in enumerate(OP_NAMES) if name}


class WriteLog:
    """The per-element writers of one C over one simulated run, and the conflicts found."""

    def __init__(self, C, module_path, np, sim_kernel):
        self.np, self.sim = np, sim_kernel
        self.shape = tuple(int(s) for s in C.shape)
        size = int(np.prod(self.shape)) if self.shape else 1
        self.plain = np.zeros(size, np.int64)      # stamp of the last plain store, 0: none
        self.atomic = None                         # stamp of the last atomic update (allocated on the first)
        self.site = np.zeros(size, np.int32)       # (site id << 1 | read first) of the last store
        self.ops = None                            # cuda.atomic function (OPS index) of the last atomic update
        self.reader = None                         # stamp of the last plain read (| MANY: read by several threads)
        self.rsite = None                          # site id of the last plain read
        self.sampled = False                       # a sampled run: reads of elements no simulated thread wrote
        self.skip_codes = ()                       # frames between an atomic and the kernel (sim/tickets.py)
        self.flat = None                           # flat index of each element, for indices other than [i, j]
        self.real = os.path.realpath(module_path) if module_path else None
        self.sites, self.site_ids = [], {}         # (code, lasti) of each store site
        self.ctx, self.launch, self.dims = None, 0, [None]
        self.plan_index, self.plan_of = -1, [None]  # the recorded launch running now (set by its caller), per launch
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
                    self.plan_of.append(self.plan_index)
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

    def read(self, flat, frame):
        stamp, t = self.thread()
        if t is None:
            return
        t._lu_read = flat if type(flat) is int else -1
        atomic = _is_atomic(frame) and frame.f_code.co_name
        if atomic:                               # an atomic's own read: judged with its update (write_one)
            frame = frame.f_back
            if frame.f_code in self.skip_codes:
                frame = frame.f_back
        if type(flat) is not int:                # a slice of C read at once
            flat = flat.ravel().tolist()
        if not atomic or self.sampled:
            sid = self.site_of(frame)
            base = (stamp >> LAUNCH_SHIFT) << LAUNCH_SHIFT
            for f in (flat if type(flat) is list else (flat,)):
                self.read_one(f, stamp, base, sid, t, atomic)

    def read_one(self, flat, stamp, base, sid, t, atomic):
        with self.lock:
            prev = int(self.plain[flat])
            a = int(self.atomic[flat]) if self.atomic is not None else 0
            if self.sampled and not prev and not a:
                # nothing simulated wrote it: a block of the grid that did not run owns it, or nobody does
                self.conflict(flat, "unsimulated", None, t, {"atomic": bool(atomic), "op": atomic or None,
                                                             "access": "read"}, sid, False)
            if atomic:
                return
            other = ((prev, False) if prev >= base and prev != stamp else
                     (a & ~MANY if a & ~MANY != stamp else -1, True) if a >= base and (a & ~MANY != stamp or a & MANY)
                     else None)
            if other:
                # the read half of `C[i, j] += x`: its store conflicts too, and says it once (write_one)
                t._lu_rconf = (flat, len(self.examples))
                self.conflict(flat, "read", other, t, {"atomic": False, "access": "read"}, sid, False)
            if self.reader is None:
                self.reader = self.np.zeros(self.plain.size, self.np.int64)
                self.rsite = self.np.zeros(self.plain.size, self.np.int32)
            r = int(self.reader[flat])
            self.reader[flat] = r | MANY if r >= base and r & ~MANY != stamp else stamp
            self.rsite[flat] = sid

    def site_of(self, frame):
        key = (frame.f_code, frame.f_lasti)
        sid = self.site_ids.get(key)
        if sid is None:
            sid = self.site_ids.setdefault(key, len(self.sites))
            if sid == len(self.sites):
                self.sites.append(key)
        return sid

    def write(self, flat, frame):
        stamp, t = self.thread()
        if t is None:
            return
        atomic = _is_atomic(frame)
        op = OPS.get(frame.f_code.co_name, 0) if atomic else 0
        if atomic:
            frame = frame.f_back
            if frame.f_code in self.skip_codes:
                frame = frame.f_back
        sid = self.site_of(frame)
        base = (stamp >> LAUNCH_SHIFT) << LAUNCH_SHIFT
        if type(flat) is not int:                # a slice of C stored at once
            for f in flat.ravel().tolist():
                self.write_one(f, stamp, base, op, sid, False, t)
        else:
            rmw = not atomic and getattr(t, "_lu_read", -1) == flat
            self.write_one(flat, stamp, base, op, sid, rmw, t)

    def write_one(self, flat, stamp, base, op, sid, rmw, t):
        atomic = bool(op)
        this = {"atomic": atomic, "op": OP_NAMES[op], "access": "write"}
        with self.lock:
            prev = int(self.plain[flat])
            other, other_atomic = (prev, False) if prev >= base and prev != stamp else (0, False)
            a = int(self.atomic[flat]) if self.atomic is not None else 0
            mine = a & ~MANY == stamp and not a & MANY
            if not other and a >= base and not atomic and not mine:
                # a plain store where another thread updated through an atomic: unordered, one of them is lost
                other, other_atomic = (a & ~MANY if a & ~MANY != stamp else -1), True
            if other:
                said = getattr(t, "_lu_rconf", None)
                if rmw and said and said[0] == flat:    # one conflict: the update, not its read as well
                    self.count -= 1
                    del self.examples[said[1]:]
                self.conflict(flat, "store", (other, other_atomic), t, this, sid, rmw)
            elif atomic and a >= base and not mine and int(self.ops[flat]) != op:
                # two threads' atomics of different kinds (nanmax, then add): the result depends on their order
                self.conflict(flat, "atomics", (a & ~MANY if a & ~MANY != stamp else -1, True), t, this, sid, rmw)
            elif self.reader is not None and not rmw:   # an update's own read: its store says it (above)
                r = int(self.reader[flat])
                if r >= base and (r & ~MANY != stamp or r & MANY):
                    # another thread of this launch read it: before or after this store, as the GPU schedules them
                    reader = r & ~MANY if r & ~MANY != stamp else -1
                    self.conflict(flat, "read", (reader, False, int(self.rsite[flat])), t, this, sid, rmw)
            if atomic:
                t._lu_atomic = (flat, stamp, sid, a)   # whose update its returned value holds (sim/tickets.py)
                if self.atomic is None:
                    self.atomic = self.np.zeros(self.plain.size, self.np.int64)
                    self.ops = self.np.zeros(self.plain.size, self.np.int8)
                many = MANY if a >= base and (a & MANY or a & ~MANY != stamp) else 0
                self.atomic[flat] = stamp | many
                self.ops[flat] = op
            else:
                self.plain[flat] = stamp
            self.site[flat] = (sid << 1) | rmw

    def ticket_used(self, flat, stamp, t, sid, before):
        """The thread `t` used the old value its atomic on C[flat] returned (`before`: the element's atomic stamp then):
        in a sampled run blocks that did not run would have updated it too; in a whole run, another thread of the
        launch updated it, before or after."""
        with self.lock:
            base = (stamp >> LAUNCH_SHIFT) << LAUNCH_SHIFT
            a = int(self.atomic[flat]) if self.atomic is not None else 0
            if not self.sampled and not (a >= base and (a & MANY or a & ~MANY != stamp)):
                return
            this = {"atomic": True, "op": OP_NAMES[int(self.ops[flat])] if self.ops is not None else None,
                    "access": "read"}
            named = [s & ~MANY for s in (before, a) if s >= base and s & ~MANY != stamp]
            self.conflict(flat, "ticket", (named[0], True) if named else None, t, this, sid, False)

    # -- conflicts and facts -----------------------------------------------------------------------------------
    def conflict(self, flat, kind, other, t, this, sid, rmw):
        """Note one conflict at element `flat`: `other` = (stamp, atomic[, site]) of the other thread's access (stamp
        -1: several threads, none named; None: no simulated thread), `this` the calling thread's access."""
        np = self.np
        self.count += 1
        if self.hit is None:
            self.hit = np.zeros(self.plain.size, np.bool_)
        self.hit[flat] = True
        if len(self.examples) >= MAX_EXAMPLES or (other is not None and other[0] < 0):
            return
        psite = int(self.site[flat])
        first = None
        if other is not None:
            stamp, other_atomic = other[:2]
            site = other[2] if len(other) > 2 else psite >> 1
            first = self.side(stamp, site, other_atomic)
            first["access"] = "read" if len(other) > 2 else "write"
            if other_atomic and self.ops is not None:
                first["op"] = OP_NAMES[int(self.ops[flat])]
        second = {"block": [int(v) for v in t.blockIdx], "thread": [int(v) for v in t.threadIdx],
                  **self.where(sid), **{k: v for k, v in this.items() if v is not None}}
        index = [int(v) for v in np.unravel_index(flat, self.shape)]
        update = bool(rmw or psite & 1 or this.get("atomic") or (first or {}).get("atomic"))
        self.examples.append({"index": index, "kind": kind, "update": update, "first": first, "second": second})

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

    def last_stamps(self, ignore=None):
        """The stamp of the last write of each element (flat; 0: none, or an element of the bool mask `ignore`)."""
        np = self.np
        last = self.plain if self.atomic is None else np.maximum(self.plain, self.atomic & ~MANY)
        return last if ignore is None else np.where(ignore.ravel(), 0, last)

    def facts(self, ignore=None):
        """The facts of the run (see the module); `ignore`: elements left out of the footprint (those a sampled run
        does not judge)."""
        np = self.np
        last = self.last_stamps(ignore)
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


def last_launch_elements(log, preferred=(), ignore=None):
    """Where C's elements were last written by one launch of the run `log` watched (a bool array of C's shape): of
    the launches whose recorded index is in `preferred` (the stage kernel's) if any wrote C, else of all, the one that
    left the most elements, the later on a tie. Elements in the mask `ignore` count as unwritten."""
    np = log.np
    last = log.last_stamps(ignore)
    launch = np.where(last > 0, last >> LAUNCH_SHIFT, 0)
    counts = np.bincount(launch, minlength=len(log.plan_of))
    counts[0] = 0
    ours = [n for n in range(1, len(counts)) if counts[n] and log.plan_of[n] in preferred]
    pool = ours or [n for n in range(1, len(counts)) if counts[n]]
    if not pool:
        return np.zeros(log.shape, np.bool_)
    best = max(pool, key=lambda n: (counts[n], n))
    return (launch == best).reshape(log.shape)


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
                f = getframe(1)
                if f.f_code is within.get("get"):  # FakeWithinKernelCUDAArray.__getitem__: the caller is above it
                    f = f.f_back
                log.read(log.index(idx) if self is root else self._lu_map[idx], f)
            return ret

        def __setitem__(self, idx, val):
            if type(val) is not float and hasattr(val, "_used"):   # an atomic's ticket (sim/tickets.py)
                val._used()
            self._ary[idx] = val                 # first: an index error is the kernel's own
            f = getframe(1)
            if f.f_code is within.get("set"):    # FakeWithinKernelCUDAArray.__setitem__: the caller is above it
                f = f.f_back
            log.write(log.index(idx) if self is root else self._lu_map[idx], f)

    from numba.cuda.simulator.cudadrv.devicearray import FakeWithinKernelCUDAArray
    within["set"] = FakeWithinKernelCUDAArray.__setitem__.__code__
    within["get"] = FakeWithinKernelCUDAArray.__getitem__.__code__
    TrackedArray.__name__ = base_cls.__name__
    TrackedArray.__qualname__ = base_cls.__qualname__
    return TrackedArray


@contextlib.contextmanager
def tracked(C, module_path, sampled=False):
    """For the duration of the block, note every store to C (a simulator device array) by the threads of each
    launch; yields the WriteLog, or None when C is not a simulator array (nothing is tracked). `sampled`: a run of a
    few blocks of each launch, where a read of an element no simulated thread wrote is a conflict too."""
    import numpy as np
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    if not isinstance(C, FakeCUDAArray) or getattr(type(C), "_lu_tracked", False):
        yield None
        return
    log = WriteLog(C, module_path, np, sim_kernel)
    log.sampled = sampled
    cls = type(C)
    tracking = _tracking_class(cls, log, C)
    tracking._lu_tracked = True
    C.__class__ = tracking
    try:
        with watched(log, tracking):
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
