"""Grading children: the grader's compiled kernels kept on disk between the children of a grading process.

Compiling a kernel costs a child about a second of CPU; a grade runs about 20
children. The grader's own kernels (references, fills, projection) are
compiled once per grading process, by a child that runs no student code, into
a folder the parent names (Numba's own cache format); every timing child sees
that folder read-only, so a submission cannot replace the kernel it is timed
against. The student's kernels are not cached here: the GPU tier's build child
compiles them once, to PTX (builder/task.py).

A missing, stale or unreadable entry only means the kernel is compiled again.
"""
import os

_CLASSES = {}


def _cache_class(folder, writable):
    """A CUDACache subclass that keeps its files in `folder` (and only there)."""
    key = (folder, writable)
    if key not in _CLASSES:
        from numba.cuda.core.caching import _CacheLocator, _SourceFileBackedLocatorMixin
        from numba.cuda.dispatcher import CUDACache, CUDACacheImpl

        class Locator(_SourceFileBackedLocatorMixin, _CacheLocator):
            def __init__(self, py_func, py_file):
                self._py_file, self._lineno = py_file, py_func.__code__.co_firstlineno

            def get_cache_path(self):
                return folder

            def ensure_cache_path(self):
                if writable:
                    os.makedirs(folder, exist_ok=True)

            @classmethod
            def from_function(cls, py_func, py_file):
                return cls(py_func, py_file) if os.path.exists(py_file) else None

        class Impl(CUDACacheImpl):
            _locator_classes = [Locator]

        class FolderCache(CUDACache):
            _impl_class = Impl

            def load_overload(self, sig, target_context):
                try:
                    return super().load_overload(sig, target_context)
                except Exception:  # an unreadable entry: compile instead
                    return None

            def save_overload(self, sig, data):
                if writable:
                    try:
                        super().save_overload(sig, data)
                    except OSError:
                        pass

        _CLASSES[key] = FolderCache
    return _CLASSES[key]


def attach(dispatchers, folder, writable):
    """Let these @cuda.jit dispatchers load (and, if `writable`, save) compiled kernels in `folder` (nothing to do
    without a folder, or in the simulator, which compiles nothing)."""
    if not folder:
        return
    for d in dispatchers:
        if hasattr(d, "enable_caching") and hasattr(d, "py_func"):
            d._cache = _cache_class(folder, writable)(d.py_func)


def hits(dispatchers):
    """How many kernels of these dispatchers were loaded from a cache, and how many compiled."""
    loaded = compiled = 0
    for d in dispatchers:
        loaded += sum(getattr(d, "_cache_hits", {}).values())
        compiled += sum(getattr(d, "_cache_misses", {}).values())
    return loaded, compiled
