"""Untrusted side (the simulator tier's PTX-compile child): compile for a GPU that this machine does not have.

numba-cuda 0.30.4 asks the CUDA driver for the current device's compute capability when it compiles a device
function, and compiles and loads a kernel declared with an explicit signature (``@cuda.jit("void(...)")``)
as soon as the module is imported. Without a driver both fail ("CUDA driver library cannot be found"), though
the same kernels compile on a GPU. Before the student's module is imported, this child therefore stands in a
device of the target compute capability, and makes kernels with explicit signatures lazy: the compile check
compiles them for the grader's own signature, as it does every kernel.
"""
import types


def stand_in(cc):
    """Make numba compile for compute capability `cc` with no GPU and no driver."""
    import numba.cuda
    from numba.cuda import dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=tuple(cc))
    jit = numba.cuda.jit

    def lazy_jit(*args, **options):
        if args and not callable(args[0]) and not options.get("device"):
            args = args[1:]  # the signature: the check compiles for the grader's (float32[:, ::1],) * 3
            return jit(*args, **options) if args else jit(**options)
        return jit(*args, **options)
    numba.cuda.jit = lazy_jit
