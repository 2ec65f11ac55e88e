"""Untrusted side (grading children, notebook self-check): a simulated block's threads as greenlets in one OS thread.

Numba's simulator runs a block as one Python thread per CUDA thread. A 1024-thread block then costs the operating
system a thousand thread switches per barrier: about 1.2 s per block of stage 4 (two tiles) on a 2-core machine,
most of it switching. Here each CUDA thread is a greenlet (a coroutine with its own stack, from the ``greenlet``
package) and the block's manager runs them one after another in its own OS thread: a thread runs until it waits at
``cuda.syncthreads()`` (or in a warp function, sim/warp.py) or ends, then the next one runs; when every thread that
has not ended waits at the barrier, the barrier opens. The same block took 0.23 s.

What a kernel computes and what the instruments see are the same as with threads: the same ``BlockThread`` objects
(``threading.current_thread()`` returns the running one, as numba's ``cuda.threadIdx`` expects), a barrier opens
when every thread that has not ended waits at it, and a thread's exception aborts the block and is raised from the
launch. Only the order between two barriers is fixed (thread 0 first) instead of left to the OS; what one thread
writes and another reads between two barriers is a race either way, and sim/conflicts.py reports it. A thread that
spins until another thread of its block stores a flag, with no barrier or warp function between, never lets that
thread run here: the child is stopped at its time limit (the course's kernels synchronise with barriers and warp
functions).

Where ``greenlet`` is not installed (a student's own environment), ``install()`` falls back to the counting barrier
of sim/barrier.py. ``local()`` and ``wait()`` work in both modes.
"""
import threading
import weakref


class _State:
    __slots__ = ("current", "ident", "mode")

    def __init__(self):
        self.current = None   # the BlockThread whose greenlet runs now (None: the manager, or no block running)
        self.ident = None     # the OS thread that runs the block (a notebook's other threads keep their own)
        self.mode = None      # "green", "threads" or None (not installed)


_state = _State()
_locals = weakref.WeakSet()   # the local() objects whose attributes follow the running thread


class _Local:
    """Attributes per simulated thread (``threading.local`` keeps them per OS thread, which greenlets share)."""


def local():
    """An object whose attributes belong to the simulated thread that sets them (and to the launcher outside)."""
    if _state.mode != "green":
        return threading.local()
    obj = _Local()
    obj.__dict__["_si_home"] = obj.__dict__   # what the launcher's own thread sees
    _locals.add(obj)
    return obj


def _enter(thread):
    _state.current = thread
    if _locals:
        own = thread.__dict__.setdefault("_si_locals", {})
        for obj in _locals:
            d = own.get(id(obj))
            if d is None:
                d = own[id(obj)] = {"_si_home": obj.__dict__["_si_home"]}
            obj.__dict__ = d


def _leave():
    _state.current = None
    for obj in _locals:
        obj.__dict__ = obj.__dict__["_si_home"]


def wait(event, timeout):
    """Wait for `event` as the calling simulated thread: let the block's other threads run once (greenlets), or
    block for at most `timeout` seconds (threads). True when the event is set."""
    thread = _state.current if threading.get_ident() == _state.ident else None
    if thread is None or event.is_set():
        return event.wait(timeout)
    thread._si_manager.switch()
    return event.is_set()


def install():
    """Run simulated blocks as greenlets (once per process; after numba.cuda is imported with
    NUMBA_ENABLE_CUDASIM=1, before any kernel runs and before sim/warp.py and the instruments wrap the threads).
    Returns the mode: "green", or "threads" where greenlet is missing (sim/barrier.py's counting barrier)."""
    if _state.mode is not None:
        return _state.mode
    try:
        import greenlet
    except ImportError:
        from .barrier import install as install_counting_barrier
        install_counting_barrier()
        _state.mode = "threads"
        return _state.mode
    import numpy as np
    from numba.cuda.simulator import kernel
    BlockThread, BlockManager = kernel.BlockThread, kernel.BlockManager
    os_current_thread = threading.current_thread

    get_ident = threading.get_ident

    def current_thread():
        t = _state.current
        return t if t is not None and get_ident() == _state.ident else os_current_thread()

    def syncthreads(self):
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads call")
        self.syncthreads_blocked = True
        self._si_manager.switch()
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads clear")

    def block_run(self, grid_point, *args):
        f = self._f

        def target():
            f(*args)

        manager = greenlet.getcurrent()
        _state.ident = threading.get_ident()
        threads = []
        for block_point in np.ndindex(*self._block_dim):
            t = BlockThread(target, self, grid_point, block_point, self._debug)
            t._si_glet, t._si_manager = greenlet.greenlet(t.run, parent=manager), manager
            threads.append(t)
        live = threads
        try:
            while live:
                for t in live:
                    if t.syncthreads_blocked:
                        continue
                    _enter(t)
                    try:
                        t._si_glet.switch()
                    finally:
                        _leave()
                    if t.exception is not None:
                        exc, tb = t.exception
                        raise exc.with_traceback(tb)
                live = [t for t in live if not t._si_glet.dead]
                if live and all(t.syncthreads_blocked for t in live):   # the barrier opens
                    for t in live:
                        t.syncthreads_blocked = False
        except BaseException:
            for t in threads:   # abort the others: end their greenlets here rather than when they are collected
                t.abort = True
                if t._si_glet:   # started and not ended
                    _enter(t)
                    try:
                        t._si_glet.throw(greenlet.GreenletExit)
                    except BaseException:
                        pass
                    finally:
                        _leave()
            raise

    threading.current_thread = current_thread
    BlockThread.syncthreads, BlockManager.run = syncthreads, block_run
    _state.mode = "green"
    return _state.mode
