"""Untrusted side (grading child; also the notebook self-check): record a launcher's kernel launches, then run
them on the grader's own arrays.

The launcher is student code. While it runs, every CUDA kernel defined at the
top level of its module is replaced by a recorder, so nothing executes; the
grader then re-poisons C and runs the recorded launches itself. What is graded
is therefore what the kernels alone computed: host-side work in the launcher
cannot reach C. Each launch may receive only A, B, C (the very objects the
grader passed) and plain numbers.
"""
import numbers

from autograder.numba_objects import compile_for, is_cuda_kernel, is_device_function  # noqa: F401
from autograder.protocol import LaunchError  # noqa: F401 (raised here, caught by every side)


class _RecordingKernel:
    def __init__(self, name, kernel, launches):
        self._name, self._kernel, self._launches = name, kernel, launches

    def __getitem__(self, config):
        def record(*args):
            self._launches.append((self._name, self._kernel, config, args))
        return record

    def __getattr__(self, attr):
        return getattr(self._kernel, attr)


def module_kernels(module):
    """The CUDA kernels defined at the top level of a module: the ones a launcher may launch."""
    return [k for k in vars(module).values() if is_cuda_kernel(k)]


def _nothing_to_wait_for():
    """cuda.synchronize() while the launches are recorded: nothing has run (and the GPU tier's build child has no
    GPU to ask). The grader synchronises after the launches it replays."""


def record_launches(module, launcher_name, A, B, C):
    """Call the launcher with the kernels swapped for recorders, and cuda.synchronize for a no-op; return the
    launches."""
    from numba import cuda
    kernels = {n: k for n, k in vars(module).items() if is_cuda_kernel(k)}
    wait = cuda.synchronize
    waits = [n for n, v in vars(module).items() if v is wait]  # from numba.cuda import synchronize
    launches = []
    for name, kernel in kernels.items():
        setattr(module, name, _RecordingKernel(name, kernel, launches))
    cuda.synchronize = _nothing_to_wait_for
    for name in waits:
        setattr(module, name, _nothing_to_wait_for)
    try:
        result = getattr(module, launcher_name)(A, B, C)
    finally:
        cuda.synchronize = wait
        for name in waits:
            setattr(module, name, wait)
        for name, kernel in kernels.items():
            setattr(module, name, kernel)
    if result is not None:
        raise LaunchError(f"{launcher_name} returned {type(result).__name__}; it must write C and return None")
    return launches


def validate(launches, kernel_name, A, B, C):
    """Raise LaunchError unless the stage kernel ran and every launch used only A, B, C and numbers."""
    if not any(name == kernel_name for name, *_ in launches):
        raise LaunchError(
            f"the launcher never launched {kernel_name}; call it as {kernel_name}[blocks, threads](A, B, C)"
            " by its module-level name")
    allowed = (A, B, C)
    for name, kernel, config, args in launches:
        if is_device_function(kernel):
            raise LaunchError(
                f"{name} is a device function (@cuda.jit(device=...)), and the launcher launches it as a kernel: "
                f"no GPU can launch a device function (the simulator runs it once, as plain Python). Call {name} "
                "from a kernel, or drop device=... to make it a kernel")
        stream = config[2] if isinstance(config, tuple) and len(config) > 2 else None
        if not (stream is None or (isinstance(stream, numbers.Integral) and stream == 0)):
            raise LaunchError(
                f"{name} was launched on a stream of its own ({type(stream).__name__}); launch on the default "
                f"stream, as {name}[blocks, threads](A, B, C): the grader times and synchronises that stream")
        for pos, arg in enumerate(args):
            if _plain_number(arg) or any(arg is x for x in allowed):
                continue
            raise LaunchError(
                f"{name} was launched with argument {pos} of type {type(arg).__name__}; kernels may receive"
                " only the A, B, C arrays the grader passed and plain numbers (no host-side copies)")


def _plain_number(arg):
    """A Python or NumPy number itself, not an instance of a subclass (which could carry anything)."""
    return isinstance(arg, numbers.Number) and (type(arg) in (int, float, bool) or type(arg).__module__ == "numpy")


def replay(launches):
    """Run recorded launches in order."""
    for _, kernel, config, args in launches:
        kernel[config](*args)
