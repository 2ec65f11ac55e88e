"""Untrusted side (simulator children, the self-check): the warp functions Numba's CUDA simulator lacks, and exact
versions of the bit and math functions it gets wrong.

numba-cuda 0.30.4's simulator has no ``cuda.shfl_sync``, ``shfl_up_sync``, ``shfl_down_sync``, ``shfl_xor_sync``,
``all_sync``, ``any_sync``, ``eq_sync``, ``ballot_sync``, ``match_any_sync``, ``match_all_sync``, ``syncwarp``,
``lanemask_lt`` or the cache-hint loads and stores (``ldca``, ``ldcg``, ``ldcs``, ``ldlu``, ``ldcv``, ``stcg``,
``stcs``, ``stwb``, ``stwt``), all of which compile for the GPU: a correct warp-shuffle kernel failed every run in
the simulator tier. Its ``popc``, ``brev``, ``clz`` and ``ffs`` read every value as 32 bits of a Python int (wrong
for negative and 64-bit values) and its ``cbrt`` gives NaN for a negative number.

The simulator runs one Python thread per CUDA thread. Here the threads of a block are grouped into warps of 32 as a
GPU groups them (linear thread index ``x + y * bx + z * bx * by``, lane = index % 32, as ``cuda.laneid``). A warp
function is an exchange among the lanes its mask names: each lane leaves its value and waits until every lane of
the mask that has not ended has called the same function with the same mask (the k-th call of a lane with a mask
meets the k-th call of the others with that mask), then reads what it needs. What a GPU leaves undefined is an
error here, with a message that says why: a lane missing from its own mask, lanes that call different warp
functions with one mask, a value read from a lane that does not take part, and lanes that wait for each other (one
at ``cuda.syncthreads()``, another at a warp function): on a GPU those hang or give garbage.

``cuda.activemask()`` is not here: it reports which lanes the GPU happens to run together, which a simulator
cannot know, so the kernel-module grammar refuses it (autograder/grammar.py) in both tiers.

``install()`` patches the simulator once per process (grading children: child/entry.py; the notebook self-check).
"""
import math
import threading

from .green import wait

WARP = 32
FULL = 0xFFFFFFFF
POLL_S = 0.05      # how often a waiting lane looks for a deadlock or an aborted block
WARP_FUNCTIONS = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync", "eq_sync",
                  "ballot_sync", "match_any_sync", "match_all_sync", "syncwarp", "lanemask_lt")
CACHE_LOADS = ("ldca", "ldcg", "ldcs", "ldlu", "ldcv")
CACHE_STORES = ("stcg", "stcs", "stwb", "stwt")
EXACT = ("popc", "brev", "clz", "ffs", "cbrt", "fma")


class WarpFunctionError(RuntimeError):
    """A warp function used in a way a GPU leaves undefined (the message says how)."""


class _Round:
    """One call of a warp function by the lanes of one mask."""
    __slots__ = ("op", "mask", "values", "done", "readers")

    def __init__(self, op, mask):
        self.op, self.mask, self.values, self.done, self.readers = op, mask, {}, threading.Event(), 0


class _Warp:
    """The lanes of one warp of one simulated block, and their warp functions in flight."""

    def __init__(self, index, size):
        self.index, self.size = index, size
        self.threads = [None] * size     # BlockThread per lane, as the simulator creates them
        self.ended = [False] * size
        self.waiting = [None] * size     # the round a lane waits in
        self.calls = [{} for _ in range(size)]  # per lane: mask -> calls made with it
        self.rounds = {}
        self.lock = threading.Lock()

    def missing(self, r):
        return [lane for lane in range(self.size) if r.mask >> lane & 1 and lane not in r.values
                and not self.ended[lane]]

    def settle(self, r):
        if not self.missing(r):
            r.done.set()

    def end(self, lane):
        with self.lock:
            self.ended[lane] = True
            for r in list(self.rounds.values()):
                self.settle(r)

    def exchange(self, thread, lane, op, mask, value):
        """{lane: value} of every lane of `mask` that took part in this call (those that had ended did not)."""
        with self.lock:
            counts = self.calls[lane]
            key = (mask, counts.get(mask, 0))
            counts[mask] = key[1] + 1
            r = self.rounds.get(key)
            if r is None:
                r = self.rounds[key] = _Round(op, mask)
            elif r.op != op:
                raise WarpFunctionError(
                    f"lane {lane} of warp {self.index} called cuda.{op} with mask {mask:#010x} where lanes "
                    f"{_lanes(r.values)} called cuda.{r.op} with that mask: every lane a mask names must call the "
                    "same warp function with the same mask (on a GPU the result is undefined)")
            r.values[lane] = value
            self.waiting[lane] = r
            self.settle(r)
        while not wait(r.done, POLL_S):
            with self.lock:
                if getattr(thread, "abort", False):
                    raise RuntimeError("abort flag set while waiting in a warp function")
                self.settle(r)
                if not r.done.is_set():
                    self.deadlock(lane, r)
        with self.lock:
            self.waiting[lane] = None
            r.readers += 1
            if r.readers == len(r.values):
                del self.rounds[key]
        return r.values

    def deadlock(self, lane, r):
        """Raise when no lane of the warp can move: each one that has not ended waits at a barrier or in a warp
        function that waits for another (a barrier cannot open while a lane waits here)."""
        at_barrier = []
        for other in range(self.size):
            t = self.threads[other]
            if self.ended[other]:
                continue
            if t is None:
                return  # not started yet
            waits = self.waiting[other]
            if waits is not None:
                if waits.done.is_set():
                    return
            elif getattr(t, "syncthreads_blocked", False):
                at_barrier.append(other)
            else:
                return  # still running
        missing = self.missing(r)
        why = (f"lanes {_lanes(at_barrier)} wait at cuda.syncthreads(), which cannot open while lanes of their warp "
               "wait for them in a warp function" if at_barrier else
               f"lanes {_lanes(missing)} wait in another warp function (or with another mask), so they never arrive")
        raise WarpFunctionError(
            f"lane {lane} of warp {self.index} waits in cuda.{r.op} (mask {r.mask:#010x}) for lanes {_lanes(missing)}"
            f", and {why}. Every lane a mask names must reach the same warp function with the same mask, and a "
            "barrier must be reached by all threads (is a warp function or a cuda.syncthreads() inside a branch that "
            "only some threads take?). On a GPU this hangs or gives garbage.")


def _lanes(lanes):
    lanes = sorted(lanes)
    return ", ".join(map(str, lanes[:8])) + (f" and {len(lanes) - 8} more" if len(lanes) > 8 else "")


def _here(op, mask):
    """(thread, lane, warp, mask as 32 bits) of the calling simulated thread."""
    thread = threading.current_thread()
    warp = getattr(thread, "_si_warp", None)
    if warp is None:
        raise WarpFunctionError(f"cuda.{op} runs inside a kernel only")
    lane = thread.thread_id % WARP
    mask = int(mask) & FULL
    if not mask >> lane & 1:
        raise WarpFunctionError(
            f"lane {lane} of warp {warp.index} called cuda.{op} with mask {mask:#010x}, which does not name the lane "
            "itself: a lane that calls a warp function must be in its mask (on a GPU the result is undefined)")
    return thread, lane, warp, mask


def _read(op, values, lane, source, warp):
    if source not in values:
        why = ("that lane does not exist (the block's threads end inside this warp)" if source >= warp.size else
               "that lane does not take part in this call (it has ended, or the mask leaves it out)")
        raise WarpFunctionError(
            f"lane {lane} of warp {warp.index} reads lane {source} in cuda.{op}, and {why}: on a GPU the value it gets "
            "is undefined. Read only from lanes that call it with the same mask.")
    return values[source]


def _shuffle(op, source_of):
    def shuffle(self, mask, value, b):
        thread, lane, warp, mask = _here(op, mask)
        values = warp.exchange(thread, lane, op, mask, value)
        source = source_of(lane, int(b) & 31)  # the PTX instruction reads the low 5 bits of the lane operand
        if not 0 <= source < WARP:
            source = lane  # outside the warp: a lane keeps its own value
        return _read(op, values, lane, source, warp)
    shuffle.__name__ = op
    return shuffle


def _vote(op, combine):
    def vote(self, mask, predicate):
        thread, lane, warp, mask = _here(op, mask)
        values = warp.exchange(thread, lane, op, mask, bool(predicate))
        return combine(values, mask)
    vote.__name__ = op
    return vote


def _int32(bits):
    import numpy as np
    return np.uint32(bits & FULL).view(np.int32)


def _ballot(values, mask):
    return _int32(sum(1 << lane for lane, p in values.items() if p))


def _bits(value):
    import numpy as np
    return np.asarray(value).tobytes()


def match_any_sync(self, mask, value):
    thread, lane, warp, mask = _here("match_any_sync", mask)
    values = warp.exchange(thread, lane, "match_any_sync", mask, _bits(value))
    mine = values[lane]
    return _int32(sum(1 << other for other, v in values.items() if v == mine))


def match_all_sync(self, mask, value):
    thread, lane, warp, mask = _here("match_all_sync", mask)
    values = warp.exchange(thread, lane, "match_all_sync", mask, _bits(value))
    same = len(set(values.values())) == 1
    return (_int32(mask) if same else _int32(0)), same


def syncwarp(self, mask=FULL):
    thread, lane, warp, mask = _here("syncwarp", mask)
    warp.exchange(thread, lane, "syncwarp", mask, None)


def lanemask_lt(self):
    import numpy as np
    return np.uint32((1 << (threading.current_thread().thread_id % WARP)) - 1)


def _load(op):
    def load(self, array, i):
        return array[i]
    load.__name__ = op
    return load


def _store(op):
    def store(self, array, i, value):
        array[i] = value
    store.__name__ = op
    return store


# -- the bit and math functions, exact for every type numba compiles them for ------------------------------------
def _width(value):
    """Bits of an integer as the kernel's type holds it: a NumPy integer's own; a Python int is int64 in a kernel."""
    itemsize = getattr(getattr(value, "dtype", None), "itemsize", None)
    return 8 * itemsize if itemsize else 64


def _same_type(value, count):
    """A bit count in `value`'s own NumPy integer type, as numba returns popc and clz (a Python int stays one)."""
    return value.dtype.type(count) if hasattr(value, "dtype") else count


def popc(self, value):
    bits = _width(value)
    return _same_type(value, bin(int(value) & ((1 << bits) - 1)).count("1"))


def clz(self, value):
    bits = _width(value)
    return _same_type(value, bits - (int(value) & ((1 << bits) - 1)).bit_length())


def brev(self, value):
    import numpy as np
    bits = 32 if _width(value) <= 32 else 64  # numba compiles brev for uint32 and uint64
    word = int(value) & ((1 << bits) - 1)
    return (np.uint32 if bits == 32 else np.uint64)(int(format(word, f"0{bits}b")[::-1], 2))


def ffs(self, value):
    import numpy as np
    word = int(value) & ((1 << _width(value)) - 1)
    return np.uint32((word & -word).bit_length())  # 1 + the index of the lowest bit set; 0 for 0


def cbrt(self, value):
    import numpy as np
    return np.cbrt(value) if isinstance(value, np.floating) else float(np.cbrt(value))  # a real root for x < 0


def fma(self, a, b, c):
    import numpy as np
    if all(isinstance(v, np.float32) for v in (a, b, c)):  # the float32 product is exact in float64
        return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    if hasattr(math, "fma"):
        return math.fma(float(a), float(b), float(c))
    return a * b + c


def install():
    """Give the simulator the warp functions and the exact bit and math functions (once per process; call after
    numba.cuda is imported with NUMBA_ENABLE_CUDASIM=1, before any kernel runs)."""
    from numba.cuda.simulator import kernel, kernelapi
    module = kernelapi.FakeCUDAModule
    if getattr(module, "_si_warp_functions", False):
        return
    BlockThread = kernel.BlockThread
    init, run = BlockThread.__init__, BlockThread.run

    def thread_init(self, f, manager, *args, **kwargs):
        init(self, f, manager, *args, **kwargs)
        warps = manager.__dict__.get("_si_warps")  # the block's threads are made one after another, in one thread
        if warps is None:
            threads = math.prod(manager._block_dim)
            warps = manager._si_warps = [_Warp(w, min(WARP, threads - w * WARP)) for w in range(-(-threads // WARP))]
        warp = warps[self.thread_id // WARP]
        warp.threads[self.thread_id % WARP] = self
        self._si_warp = warp

    def thread_run(self):
        try:
            run(self)
        finally:
            warp = getattr(self, "_si_warp", None)
            if warp is not None:
                warp.end(self.thread_id % WARP)

    BlockThread.__init__, BlockThread.run = thread_init, thread_run
    shuffles = {"shfl_sync": lambda lane, b: b, "shfl_up_sync": lambda lane, b: lane - b,
                "shfl_down_sync": lambda lane, b: lane + b, "shfl_xor_sync": lambda lane, b: lane ^ b}
    for op, source_of in shuffles.items():
        setattr(module, op, _shuffle(op, source_of))
    module.all_sync = _vote("all_sync", lambda values, mask: all(values.values()))
    module.any_sync = _vote("any_sync", lambda values, mask: any(values.values()))
    module.eq_sync = _vote("eq_sync", lambda values, mask: len(set(values.values())) == 1)
    module.ballot_sync = _vote("ballot_sync", _ballot)
    module.match_any_sync, module.match_all_sync = match_any_sync, match_all_sync
    module.syncwarp, module.lanemask_lt = syncwarp, lanemask_lt
    for op in CACHE_LOADS:
        setattr(module, op, _load(op))
    for op in CACHE_STORES:
        setattr(module, op, _store(op))
    for name in EXACT:
        setattr(module, name, globals()[name])
    module._si_warp_functions = True
