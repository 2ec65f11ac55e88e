"""Untrusted side (simulator children, the self-check): the simulator accepts the options that only tune GPU code.

numba-cuda 0.30.4's CUDA simulator raises for an ``alignment`` argument of ``cuda.shared.array`` or
``cuda.local.array`` and for ``@cuda.jit(max_registers=..., forceinline=..., lineinfo=...)``, though none of them
changes what a kernel computes. A kernel tuned for the GPU (the stage 5 challenge's fastest: 16-byte-aligned shared
tiles for 128-bit loads, a register cap for two blocks per SM) would fail every check of the simulator tier. Here
the simulator takes them and ignores them; the PTX compile and the GPU tier use them as written.

The simulator's array shapes also refuse an index from the end (``N = B.shape[-1]`` raises IndexError), which a
device array's shape on the host and numba's kernels on the GPU both take: here they take it too.
"""
import sys

IGNORED_JIT_OPTIONS = ("max_registers", "forceinline", "lineinfo")


def accept_gpu_options():
    """Patch the simulator (call once numba.cuda is imported with NUMBA_ENABLE_CUDASIM=1, before student code)."""
    import numba.cuda
    from numba.cuda.simulator import api, kernelapi
    if getattr(api.jit, "accepts_gpu_options", False):
        return
    jit = api.jit

    def jit_accepting_gpu_options(*args, **options):
        for name in IGNORED_JIT_OPTIONS:
            options.pop(name, None)
        return jit(*args, **options)
    jit_accepting_gpu_options.accepts_gpu_options = True
    api.jit = numba.cuda.jit = jit_accepting_gpu_options
    local_array = kernelapi.FakeCUDALocal.array

    def local_array_any_alignment(self, shape, dtype, alignment=None):
        return local_array(self, shape, dtype)
    kernelapi.FakeCUDALocal.array = local_array_any_alignment
    kernelapi.FakeCUDAShared.array = _shared_array
    from numba.cuda.simulator.cudadrv import devicearray
    devicearray.FakeShape.__getitem__ = tuple.__getitem__  # B.shape[-1], as on the GPU


def _shared_array(self, shape, dtype, alignment=None):
    """FakeCUDAShared.array of numba-cuda 0.30.4 without its refusal of `alignment`. Written out, not wrapped: the
    simulator tells a block's shared arrays apart by the line that asks for one, read from the caller's frame."""
    import numpy as np
    from numba.cuda.simulator import kernelapi  # the simulator's own types and conversion
    if isinstance(dtype, kernelapi.types.Type):
        dtype = kernelapi.numpy_support.as_dtype(dtype)
    if shape == 0:  # dynamic shared memory: every such array aliases one buffer
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=self._dynshared_size // dtype.itemsize)
    caller = sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    res = self._allocations.get(key)
    if res is None:
        res = self._allocations[key] = np.empty(shape, dtype)
    return res
