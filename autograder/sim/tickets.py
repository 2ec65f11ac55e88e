"""Untrusted side (grading child): the value a cuda.atomic.* on C returns, watched for use.

A thread that uses the old value an atomic on C returns (a ticket from a counter, "am I the first?") depends on the
order in which the threads of its launch reach that element: on a GPU any order, in the simulator one fixed order,
and in a sampled run (a few blocks simulated) the order of blocks that ran alone. While ``watched(log)`` is active,
the simulator's atomics on C return a float32 that tells the WriteLog (sim/writes.py) when it is compared, computed
with, converted or stored in shared memory or C; an honest kernel (split-K adding partial sums) never uses it.
A ticket kept in a local array and never compared is not seen."""
import contextlib
import threading

USES = ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__bool__", "__int__", "__float__",
        "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
        "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__neg__", "__abs__", "__pow__", "__round__")
OPS = ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin")


def ticket_class(np):
    """A float32 whose every use first calls its `_used()`."""
    def use(name):
        plain = getattr(np.float32, name)

        def method(self, *args):
            self._used()
            return plain(np.float32(self), *args)
        method.__name__ = name
        return method

    def _used(self):
        note, self._note = getattr(self, "_note", None), None
        if note is not None:
            note()
    return type("float32", (np.float32,), {"_used": _used, **{name: use(name) for name in USES}})


@contextlib.contextmanager
def watched(log, tracking_class):
    """Atomics on C (an instance of `tracking_class`) return tickets that report their use to `log.ticket_used`."""
    import numpy as np
    from numba.cuda.simulator.kernelapi import FakeCUDAAtomic
    Ticket = ticket_class(np)
    saved = {name: getattr(FakeCUDAAtomic, name) for name in OPS}
    codes = set()

    def wrap(name, orig):
        def atomic(self, array, index, val):
            old = orig(self, array, index, val)
            try:                             # C inside a kernel: the simulator's wrapper of the tracked array
                item = object.__getattribute__(array, "_item")
            except AttributeError:
                item = array
            if type(item) is not tracking_class:
                return old
            t = threading.current_thread()
            flat, stamp, sid, before = getattr(t, "_lu_atomic", (None, 0, 0, 0))
            t._lu_atomic = (None, 0, 0, 0)
            if flat is None:
                return old
            ticket = Ticket(old)
            ticket._note = lambda: log.ticket_used(flat, stamp, t, sid, before)
            return ticket
        codes.add(atomic.__code__)
        return atomic
    for name, orig in saved.items():
        setattr(FakeCUDAAtomic, name, wrap(name, orig))
    log.skip_codes = codes
    log.ticket_type = Ticket
    try:
        yield
    finally:
        for name, orig in saved.items():
            setattr(FakeCUDAAtomic, name, orig)
