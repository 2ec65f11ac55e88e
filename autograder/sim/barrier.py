"""Untrusted side (grading child, notebook self-check): a block's barrier that wakes its manager only when it can open.

Numba's simulator runs a block as one Python thread per CUDA thread, and its block manager polls every thread of
the block in a loop while they run, to see whether all of them wait at ``cuda.syncthreads()``. That loop competes
with the threads for the interpreter: a 1024-thread block spent about 0.15 s per barrier in it on a 2-core machine.
Here each thread counts itself in as it reaches a barrier or ends, and the last one to arrive wakes the manager,
which opens the barrier. What a kernel computes and what the instruments see are unchanged: the same threads,
started in the same order, and a barrier opens when every thread that has not ended waits at it (as before); a
thread's exception still aborts the block and is raised from the launch.
"""
import threading


def install():
    """Give the simulator's block manager the counting barrier (once per process; after numba.cuda is imported with
    NUMBA_ENABLE_CUDASIM=1, before any kernel runs and before sim/warp.py and the instruments wrap the threads)."""
    import numpy as np
    from numba.cuda.simulator import kernel
    BlockThread, BlockManager = kernel.BlockThread, kernel.BlockManager
    if getattr(BlockManager, "_si_counting_barrier", False):
        return
    thread_run = BlockThread.run

    def syncthreads(self):
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads call")
        manager = self._manager
        with manager._si_cv:
            self.syncthreads_blocked = True
            manager._si_waiting += 1
            if manager._si_waiting == manager._si_live:
                manager._si_cv.notify()
        self.syncthreads_event.wait()
        self.syncthreads_event.clear()
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads clear")

    def run(self):
        try:
            thread_run(self)
        finally:
            manager = self._manager
            with manager._si_cv:
                manager._si_live -= 1
                if self.exception is not None and manager._si_failed is None:
                    manager._si_failed = self
                manager._si_cv.notify()

    def block_run(self, grid_point, *args):
        self._si_cv = threading.Condition(threading.Lock())
        self._si_waiting, self._si_failed = 0, None
        self._si_live = int(np.prod(self._block_dim))
        f = self._f

        def target():
            f(*args)

        threads = []
        for block_point in np.ndindex(*self._block_dim):
            t = BlockThread(target, self, grid_point, block_point, self._debug)
            threads.append(t)
            t.start()
        with self._si_cv:
            while True:
                if self._si_failed is not None:  # abort the others, do not wait for them (as numba does)
                    for other in threads:
                        other.abort = True
                        other.syncthreads_blocked = False
                        other.syncthreads_event.set()
                    exc, tb = self._si_failed.exception
                    raise exc.with_traceback(tb)
                if self._si_live == 0:
                    break
                if self._si_waiting == self._si_live:  # every thread that has not ended waits: open the barrier
                    self._si_waiting = 0
                    for t in threads:
                        if t.syncthreads_blocked:
                            t.syncthreads_blocked = False
                            t.syncthreads_event.set()
                    continue
                self._si_cv.wait()
        for t in threads:
            if t.exception:
                raise t.exception[0].with_traceback(t.exception[1])

    BlockThread.syncthreads, BlockThread.run, BlockManager.run = syncthreads, run, block_run
    BlockManager._si_counting_barrier = True
