"""Notebook side: where this kernel process runs kernels, as Numba decided when it loaded numba.cuda. The setup cell
prints it and the self-check's header says it, from this one test, so the two agree whatever order cells ran in."""
import os
import sys

SIMULATOR, GPU, NEITHER = "the CUDA simulator (no GPU)", "the GPU", "neither the GPU nor the CUDA simulator"
OUT_OF_ORDER = ("There is no GPU here and the CUDA simulator is off: Numba was imported before the setup cell chose "
                "the simulator (a cell run before it, out of order). Restart the kernel (Kernel > Restart) and run "
                "the cells from the top.")


def simulated():
    """True when kernels run in Numba's CUDA simulator. Once numba.cuda is loaded, the module it loaded decides:
    Numba reads NUMBA_ENABLE_CUDASIM again at each compile, so the variable, set after the import, can say
    "simulator" while the GPU module runs. Before, the variable the setup cell sets decides."""
    if "numba.cuda" in sys.modules:
        return "numba.cuda.simulator_init" in sys.modules
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def kernels_run_on():
    """(where kernels run: SIMULATOR, GPU or NEITHER, what to do about it or "")."""
    if simulated():
        return SIMULATOR, ""
    from numba import cuda
    return (GPU, "") if cuda.is_available() else (NEITHER, OUT_OF_ORDER)


def say_where_kernels_run():
    """The setup cell's line: where kernels run, and what to do when that is nowhere."""
    where, todo = kernels_run_on()
    print(f"Kernels run on {where}." + (f" {todo}" if todo else ""))
