"""Untrusted side (grading child): the patched simulator objects that log accesses.

A shared-array proxy logs every shared-memory access; a counting subclass of
the simulator's device array counts element loads of A and B.
"""
import contextlib
import sys
import threading

from .common import LASTI_BITS, LINE_SHIFT, _is_atomic, _Sink


@contextlib.contextmanager
def _patched(obj, attr, value):
    """Set obj.attr = value for the duration of the block."""
    had = attr in vars(obj)
    old = vars(obj).get(attr)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, attr, old)
        else:
            delattr(obj, attr)


@contextlib.contextmanager
def _class_swapped(objs, cls_by_obj):
    """Switch the class of each object (FakeCUDAArray -> counting subclass) and back."""
    old = [(o, o.__class__) for o in objs]
    try:
        for o in objs:
            o.__class__ = cls_by_obj[id(o)]
        yield
    finally:
        for o, c in old:
            o.__class__ = c


def _make_shared_proxy(rec):
    """The proxy class returned by the patched cuda.shared.array."""
    import numpy as np
    getframe = sys._getframe
    tls = rec.tls
    code_ids = rec.code_ids
    locate = rec.locate
    atomic = _is_atomic
    ndarray = np.ndarray

    def full(log):
        t = threading.current_thread()
        t._si_trunc = len(t._si_bar)
        tls.log = _Sink()

    class SharedArray:
        """A shared array as a kernel sees it; logs each element access."""
        __slots__ = ("_a", "_code", "_base", "_ptr", "_vc")

        def __init__(self, a, vid, base, ptr):
            self._a, self._code, self._base, self._ptr, self._vc = a, vid << 2, base, ptr, {}

        def _view(self, idx, r):
            """Proxy for a sub-array (sA[ty] in sA[ty][k]); cached per index, the memory never moves."""
            try:
                return self._vc[idx]
            except (KeyError, TypeError):
                pass
            off = r.__array_interface__["data"][0] - self._ptr
            v = SharedArray(r, rec.view_for(self._base, off, r), self._base, self._ptr)
            try:
                self._vc[idx] = v
            except TypeError:   # unhashable index (a slice): no caching
                pass
            return v

        # The log of a thread is flat: code, index, code, index, ... with
        # code = line << LINE_SHIFT | view << 2 | atomic << 1 | write.
        def __getitem__(self, idx):
            r = self._a[idx]
            if type(r) is ndarray:
                return self._view(idx, r)
            f = getframe(1)
            cid = code_ids.get(f.f_code)
            if cid:
                code = (((cid << LASTI_BITS) | f.f_lasti) << LINE_SHIFT) + self._code
            else:
                code = (locate(f) << LINE_SHIFT) + self._code + (2 if atomic(f) else 0)
            log = tls.log
            log.append(code)
            log.append(idx)
            if len(log) >= rec.thread_cap:
                full(log)
            return r

        def __setitem__(self, idx, val):
            f = getframe(1)
            cid = code_ids.get(f.f_code)
            if cid:
                code = (((cid << LASTI_BITS) | f.f_lasti) << LINE_SHIFT) + self._code + 1
            else:
                code = (locate(f) << LINE_SHIFT) + self._code + (3 if atomic(f) else 1)
            if type(val) is not float and hasattr(val, "_used"):  # an atomic's ticket from C (sim/tickets.py)
                val._used()
            self._a[idx] = val
            log = tls.log
            log.append(code)
            log.append(idx)
            if len(log) >= rec.thread_cap:
                full(log)

        def __len__(self):
            return len(self._a)

        def __iter__(self):
            for i in range(len(self._a)):
                yield self[i]

        def __array__(self, dtype=None, copy=None):
            # numpy reading the array in bulk inside a kernel (la[:] = sA[ty, :]): one read of every element
            log = getattr(tls, "log", None)
            if log is not None:
                log.append((locate(getframe(1)) << LINE_SHIFT) + self._code)
                log.append(Ellipsis)
                if len(log) >= rec.thread_cap:
                    full(log)
            return self._a if dtype is None else self._a.astype(dtype)

        def __getattr__(self, name):
            if name.startswith("__array"):   # no bulk access around __array__ (and its log)
                raise AttributeError(name)
            return getattr(self._a, name)

        def __repr__(self):
            return f"SharedArray({self._a!r})"

    return SharedArray


def _make_counting_array(base_cls, code, rec):
    """FakeCUDAArray subclass that counts scalar element loads per source line."""
    import numpy as np
    getframe = sys._getframe
    tls = rec.tls
    code_ids = rec.code_ids
    locate = rec.locate
    ndarray = np.ndarray

    class CountingArray(base_cls):
        def __getitem__(self, idx):
            if type(idx) is str and idx.startswith("__"):   # numpy asking a kernel's array for __array_struct__
                raise AttributeError(idx)                     # (see __getattr__): there is none
            ret = self._ary[idx]
            if type(ret) is ndarray:             # a view: count its element loads later
                return CountingArray(ret, stream=self.stream)
            if type(ret) is np.void:
                return ret
            f = getframe(2)     # 1: FakeWithinKernelCUDAArray.__getitem__, 2: the kernel
            cid = code_ids.get(f.f_code)
            key = ((((cid << LASTI_BITS) | f.f_lasti) if cid else locate(getframe(1))) << 1) + code
            gl = tls.gl
            gl[key] = gl.get(key, 0) + 1
            return ret

        def __getattr__(self, name):
            # Inside a kernel, numpy would copy a slice in bulk through these (la[:K] = A[row, :], sA[ty, :] =
            # A[row, k0:k1]) and no element load would be counted. Without them numpy reads the slice as a
            # sequence, one __getitem__ per element, and each of those loads counts at the kernel's line.
            if name.startswith("__array") and getattr(tls, "gl", None) is not None:
                raise AttributeError(name)
            return base_cls.__getattr__(self, name)

    CountingArray.__name__ = base_cls.__name__
    CountingArray.__qualname__ = base_cls.__qualname__
    return CountingArray

