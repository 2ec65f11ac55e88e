"""What numba objects are, on the GPU or in the simulator: a kernel, a device function; and a kernel compiled for
its arguments without running it. Read by the build side (which kernels a module defines), the simulator (the
planned kernels looked up by name) and the runners (the grader's own kernels)."""


def is_cuda_kernel(obj):
    """True for a @cuda.jit kernel, on the GPU or in the simulator."""
    cls = type(obj)
    return cls.__name__ in ("CUDADispatcher", "FakeCUDAKernel") and cls.__module__.startswith("numba.cuda")


def is_device_function(obj):
    """True for a @cuda.jit(device=...) function (any true value, as numba reads it): called from kernels, never
    launched."""
    if not is_cuda_kernel(obj):
        return False
    return bool(getattr(obj, "_device", None) or getattr(obj, "targetoptions", {}).get("device"))


def compile_for(kernel, *args):
    """Compile and load `kernel` for these arguments without running it (a no-op in the simulator)."""
    if hasattr(kernel, "typeof_pyval"):
        kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
