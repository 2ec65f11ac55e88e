"""Runner side (GPU-tier children that never import student code): load the build child's PTX and launch a
checked plan (sandbox/plan.py) on the runner's own A, B and C.

This is the one place that relies on numba-cuda 0.30.4's internals (pinned; tests/test_gpu_plan.py compares a
plan launch with numba's own launch of the same kernel, bit for bit, for every solution):

- the PTX (after link-time optimisation, as numba links it: builder/task.py) is loaded with
  ``Context.create_module_ptx``, the driver's JIT, and its entry found with ``get_function``. On an H100 that
  gives the machine code numba's own LTO link gives (the same registers; stage 2 at 2.18 ms against numba's
  2.17 ms), where linking the same PTX again with nvJitLink gave 31 registers instead of 32 and 2.70 ms
  (BENCHMARKS.md). A kernel with ``max_registers`` (or PTX in several modules) is linked by numba's own
  linker with its options instead (``driver._Linker``, as ``CUDACodeLibrary.get_cubin`` does);
- arguments are packed as ``_Kernel._prepare_args`` packs them: an array as ``0, 0, size, itemsize, data
  pointer, *shape, *strides in bytes``, a number as its ctypes value;
- the launch is ``cuda.core.launch`` on the default stream, as ``_Kernel.launch`` makes it.
"""
import ctypes

_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
           "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
           "float32": ctypes.c_float, "float64": ctypes.c_double}


def link(spec, cc):
    """The cubin of one kernel's PTX for compute capability `cc`, linked as numba links it (no GPU needed)."""
    from numba.cuda.cudadrv import driver
    target = (cc[0], cc[1], "a" if tuple(cc) >= (9, 0) else "")
    linker = driver._Linker(max_registers=spec["max_registers"], cc=target, lto=False)
    for ptx in spec["ptx"]:
        linker.add_ptx(ptx.encode())
    return linker.complete()


class Loaded:
    """The plan's kernels, loaded into this process's CUDA context."""

    def __init__(self, specs):
        from numba import cuda
        ctx = cuda.current_context()
        self.functions = []
        for spec in specs:
            if len(spec["ptx"]) == 1 and spec["max_registers"] is None:
                module = ctx.create_module_ptx(spec["ptx"][0])
            else:
                module = ctx.create_module_image(link(spec, ctx.device.compute_capability))
            function = module.get_function(spec["entry"])
            if spec["carveout"] is not None:
                function.set_shared_memory_carveout(spec["carveout"])
            self.functions.append(function)

    def attributes(self, index):
        """Registers per thread, static shared bytes per block, local bytes per thread, as the driver loaded them."""
        attrs = self.functions[index].attrs
        return {"registers": int(attrs.regs), "shared_bytes": int(attrs.shared), "local_bytes": int(attrs.local)}


def pack(args, operands):
    """Kernel parameters for a plan launch's arguments ("A", "B", "C" or a typed number)."""
    params = []
    for arg in args:
        if isinstance(arg, str):
            array = operands[arg]
            params += [0, 0, array.size, array.dtype.itemsize, array.device_ctypes_pointer.value or 0,
                       *array.shape, *array.strides]
        elif arg["type"] == "bool":
            params.append(bool(arg["value"]))
        else:
            params.append(_CTYPES[arg["type"]](arg["value"]))
    return params


def launcher(loaded, launches, A, B, C):
    """A callable that runs the launches of one shape, in order, on the default stream (what the grader times)."""
    from cuda.core import LaunchConfig, launch
    from numba.cuda._compat import CUDA_CORE_GE_1_0
    from numba.cuda.cudadrv.driver import _to_core_stream
    stream = _to_core_stream(0)
    operands = {"A": A, "B": B, "C": C}
    ready = []
    for item in launches:
        options = {"grid": tuple(item["grid"]), "block": tuple(item["block"]), "shmem_size": item["shared"],
                   ("is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch"): False}
        ready.append((LaunchConfig(**options), loaded.functions[item["kernel"]].kernel, pack(item["args"], operands)))

    def run():
        for config, kernel, params in ready:
            launch(stream, config, kernel, *params)
    return run
