"""Untrusted side (grading child): replay recorded launches in the simulator with the instruments on."""
import contextlib
import gc
import sys
import threading
import time

from .proxy import _class_swapped, _make_counting_array, _make_shared_proxy, _patched
from .common import BLOCK_ACCESS_CAP
from .cover import Cover
from .recorder import _Recorder
from .writes import last_launch_elements, tracked


def run_instrumented(launches, A, B, C, job) -> dict:
    """Replay `launches` in the simulator with instruments on; return JSON-serialisable facts.

    `launches` are the recorded (name, kernel, config, args) tuples of
    autograder/builder/launches.py; each runs as ``kernel[config](*args)`` exactly as
    ``replay`` would, so C ends up as a plain replay leaves it. A and B are
    the grader's device arrays (their element loads are counted), C the
    output. ``job["module_path"]`` is the student's file; access lines are
    reported from frames in that file. Any shape will do: the data-reuse judge
    derives its bar from the shape (checks/data_reuse.py).
    """
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi as sim_api
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
    from numba.core import types as nb_types
    from numba.np import numpy_support
    import numpy as np

    for name, kern, _, _ in launches:
        if not isinstance(kern, sim_kernel.FakeCUDAKernel):
            raise RuntimeError(f"run_instrumented needs Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 set before "
                               f"numba is imported); {name} is a {type(kern).__name__}")
    started = time.perf_counter()
    code_files = [getattr(getattr(getattr(k, "py_func", None), "__code__", None), "co_filename", "")
                  for _, k, _, _ in launches]
    rec = _Recorder(job["module_path"], code_files)
    SharedArray = _make_shared_proxy(rec)
    BlockThread, BlockManager = sim_kernel.BlockThread, sim_kernel.BlockManager
    orig_init, orig_run = BlockThread.__init__, BlockThread.run
    orig_sync, orig_block = BlockThread.syncthreads, BlockManager.run
    alloc_lock = threading.Lock()

    def shared_array(self, shape, dtype, alignment=None):  # alignment: GPU tuning (sim/gpu_options.py)
        if isinstance(dtype, nb_types.Type):
            dtype = numpy_support.as_dtype(dtype)
        dtype = np.dtype(dtype)
        caller = sys._getframe(1)
        with alloc_lock:
            proxies = self.__dict__.setdefault("_si_proxies", {})
            if shape == 0:   # dynamic shared memory: every such array aliases one buffer
                key = ("dynamic", dtype.str)
                proxy = proxies.get(key)
                if proxy is None:
                    count = self._dynshared_size // dtype.itemsize
                    arr = np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
                    bid = rec.base_for(("dynamic",), caller.f_lineno, (self._dynshared_size,), np.dtype(np.uint8))
                    ptr = self._dynshared.__array_interface__["data"][0]
                    proxy = SharedArray(arr, rec.view_for(bid, 0, arr), bid, ptr)
                    proxies[key] = proxy
                return proxy
            key = (caller.f_code.co_filename, caller.f_lineno)
            proxy = proxies.get(key)
            if proxy is None:
                arr = self._allocations.get(key)
                if arr is None:
                    arr = np.empty(shape, dtype)
                    self._allocations[key] = arr
                bid = rec.base_for(key, caller.f_lineno, arr.shape, arr.dtype)
                proxy = SharedArray(arr, rec.view_for(bid, 0, arr), bid, arr.__array_interface__["data"][0])
                proxies[key] = proxy
            return proxy

    def thread_init(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        self._si_log, self._si_bar, self._si_gl, self._si_trunc = [], [], {}, None
        rec.threads.append(self)

    def thread_run(self):
        rec.tls.log, rec.tls.gl = self._si_log, self._si_gl
        orig_run(self)

    def syncthreads(self):
        self._si_bar.append(len(self._si_log) >> 1)
        return orig_sync(self)

    # a sampled run (job["blocks"]: the blocks of each launch the grader drew) simulates those alone, and in a cheap
    # launch the blocks that write the parts of C they stand for (sim/cover.py)
    sample = [{tuple(int(v) for v in b) for b in blocks} for blocks in job.get("blocks") or ()]
    launch, begun, cover = [-1], set(), None

    def run_block(manager, grid_point, args):
        rec.threads = []
        nthreads = int(np.prod(manager._block_dim))
        rec.thread_cap = 2 * max(1, BLOCK_ACCESS_CAP // max(1, nthreads))   # two log items per access
        try:
            result = orig_block(manager, grid_point, *args)
            rec.finish_block(grid_point)
            return result
        finally:
            rec.threads = []
            if gc_was_enabled:
                gc.collect(1)   # the block's cyclic garbage (threads), without a full collection

    def block_run(self, grid_point, *args):
        if not sample:
            return run_block(self, grid_point, args)
        i = launch[0]
        if i >= len(sample) or i in begun:   # a sampled launch runs its blocks at its first grid point
            return None
        begun.add(i)
        grid = tuple(int(v) for v in self._grid_dim)

        def fresh(b):
            return run_block(BlockManager(self._f, self._grid_dim, self._block_dim, self._debug), b, args)
        drawn = [b for b in sorted(sample[i]) if all(0 <= v < g for v, g in zip(b, grid))]
        first, before = (writes.launch, cover.work()) if cover else (0, None)
        for b in drawn:
            fresh(b)
        if cover:
            cover.launch(i, launches[i][0], grid, tuple(int(v) for v in self._block_dim), fresh, drawn, first, before)
        return None

    counting = {}
    for obj, code in ((A, 0), (B, 1)):
        if isinstance(obj, FakeCUDAArray) and id(obj) not in counting:
            counting[id(obj)] = _make_counting_array(type(obj), code, rec)
    swapped = [o for o in (A, B) if id(o) in counting]
    if len(swapped) == 2 and swapped[0] is swapped[1]:
        swapped = swapped[:1]

    run_launches = []
    # The logs hold hundreds of thousands of small tuples; with the collector on, its full
    # collections walk them again and again (measured: +25% run time). It is off during the
    # replay and collects the young generations after each block instead.
    gc_was_enabled = gc.isenabled()
    with contextlib.ExitStack() as stack:
        if gc_was_enabled:
            gc.disable()
            stack.callback(gc.enable)
        stack.enter_context(_patched(sim_api.FakeCUDAShared, "array", shared_array))
        stack.enter_context(_patched(BlockThread, "__init__", thread_init))
        stack.enter_context(_patched(BlockThread, "run", thread_run))
        stack.enter_context(_patched(BlockThread, "syncthreads", syncthreads))
        stack.enter_context(_patched(BlockManager, "run", block_run))
        stack.enter_context(_class_swapped(swapped, counting))
        # lost updates to C, reads of other threads' or unsimulated blocks' parts of C (sim/writes.py)
        writes = stack.enter_context(tracked(C, job["module_path"], sampled=bool(sample)))
        cover = Cover(job, writes, rec, np) if sample and writes is not None else None
        for name, kern, config, args in launches:
            launch[0] += 1
            if writes is not None:
                writes.plan_index = launch[0]
            configured = kern[config]
            run_launches.append({"kernel": name,
                                 "grid": [int(v) for v in getattr(configured, "grid_dim", None) or ()],
                                 "block": [int(v) for v in getattr(configured, "block_dim", None) or ()]})
            configured(*args)
    M, K = (int(v) for v in A.shape)
    N = int(B.shape[1])
    unjudged = None   # a sampled run: the elements of C not judged, left out of the blocks' footprint too
    if sample and writes is not None:
        # judged: the elements one launch of the stage kernel left last (the one that left most); an element that
        # another launch wrote alone (C zeroed by larger blocks than the ones that add into it) waits for blocks of
        # that launch that were not drawn, and what the blocks a cheap launch ran for the cover left (sim/cover.py)
        host = C.copy_to_host()
        stage_kernel = {i for i, (name, *_) in enumerate(launches) if name == job.get("kernel")}
        unjudged = ~last_launch_elements(writes, stage_kernel, cover.left() if cover and cover.run else None)
        host[unjudged] = np.nan
        C.copy_to_device(host)
    facts = rec.facts(M, K, N, run_launches, time.perf_counter() - started,
                      int(np.count_nonzero(~np.isnan(C.copy_to_host()))) if sample else None)
    if sample:
        facts["sampled"] = {"blocks": [[list(b) for b in sorted(blocks)] for blocks in sample],
                            "outputs": facts["global_loads"]["outputs"], "cover": cover.notes if cover else []}
    if writes is not None:
        facts["c_writes"] = writes.facts(unjudged)
    return facts

