"""The notebooks' self-check: run a stage's checks on the notebook's own functions, in-process.

A self-check cell calls ``check("tiled")``. It finds the stage's kernel and
launcher in the notebook's globals and runs them the way the grader does
(autograder/builder/launches.py: record the launches, check they use only A, B, C,
replay them on fresh arrays) on the stage's simulator shapes, and explains a
wrong result with autograder/checks/correct.py. In the simulator it also replays one
launch with the simulator's instruments (autograder/sim) on (races, bank conflicts, global loads)
and draws the data-reuse figures; on a GPU it times the kernel against the
reference kernels over a few sizes and plots that instead.

It never raises for anything the student's code does: every problem is a
printed FAIL line, and a stub says "not implemented yet". It is not a grade:
code running in a notebook kernel can patch anything there, so grades come
only from ``make grade`` (autograder/engine, separate processes).

The package's parts: run.py (_Run, one self-check's state and launches) with
stage_checks.py (the grader's checks) and plotting.py (figures, GPU timings);
kernel_module.py (a notebook's globals read as a kernel module), explain.py (errors
and lines said by cells), toolkit.py (a missing CUDA compiler), mode.py (where kernels run: the
setup cell's line and the header's), report.py.
"""
import inspect
import time
import warnings

from ..reading.source import renumber_cells
from ..stages import find
from . import explain, kernel_module, plotting, toolkit
from .mode import NEITHER, OUT_OF_ORDER, kernels_run_on, say_where_kernels_run, simulated
from .report import SelfCheck, quiet_numba_warnings
from .run import _Run

if simulated():  # the cells to come may tune for the GPU, as the grader allows
    from ..sim.green import install as install_block_scheduler
    from ..sim.gpu_options import accept_gpu_options
    from ..sim.warp import install as install_warp_functions
    install_block_scheduler()  # a block's threads as greenlets, as in the grader's children (sim/green.py)
    accept_gpu_options()
    install_warp_functions()  # cuda.shfl_sync and the other warp functions the simulator lacks

# names notebooks and tests import from here, wherever they live in the package
TOOLKIT_INSTALL, toolkit_missing = toolkit.TOOLKIT_INSTALL, toolkit.toolkit_missing
module_text, _cell_files = kernel_module.module_text, explain._cell_files
GPU_SIZES, GPU_REPEATS = plotting.GPU_SIZES, plotting.GPU_REPEATS


def check(stage_name, namespace=None, plot=True, seed=None):
    """Run stage `stage_name`'s self-checks on the functions in `namespace` (default: the caller's globals).

    Prints one PASS/FAIL line per check with the grader's explanation, draws the
    plot, and returns a SelfCheck. Never raises for what the student's code does."""
    stage = find(stage_name)
    if namespace is None:
        namespace = inspect.currentframe().f_back.f_globals
    started = time.perf_counter()
    renumber_cells(namespace.get("_ih"))  # a cell holding U+2028: its functions read as Python numbers its lines
    import numpy as np
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        quiet_numba_warnings()
        warnings.simplefilter("ignore", RuntimeWarning)  # a kernel's float32 overflow: the checks say what is wrong
        run = _Run(stage, namespace, seed)
        own = namespace.get("TILE", run.ns.get("TILE"))
        tile = (f", TILE = {run.tile}" if own == run.tile or own is None else
                f", TILE = {own!r} (not one of the course's tile sizes: checked as {run.tile}, as the grader does)")
        where = kernels_run_on()[0]  # the setup cell's words, from the same test (mode.py)
        print(f"Self-check of stage {stage.number} ({stage.title}), kernels run on {where}"
              + (tile if run.tile else "") + ":")
        if where == NEITHER:
            run.skip("every check", OUT_OF_ORDER)
        elif run.ready():
            run.compile_checks()
            run.correctness()
            if run.sim:
                run.instruments()
            if plot and not getattr(run, "stopped", False):  # a kernel that never ends is not run again
                run.plot()
    report = run.report
    n = sum(1 for _, ok, _ in report.results if ok)
    verdict = (("all passed" if report.results else "none run") if report.passed
               else f"{len(report.results) - n} failed")
    if report.skipped:
        verdict += f"; not run here: {', '.join(name for name, _ in report.skipped)}"
    print(f"{n} of {len(report.results)} self-checks passed ({verdict}, {time.perf_counter() - started:.1f} s). "
          "This is not your grade: the grader runs your notebook in separate processes, with more checks"
          + (" (speed, on a GPU)" if run.sim else " (speed, racecheck, ncu)")
          + ". Grade your own work with `python -m autograder grade FOLDER` (FOLDER: your notebooks); your "
          "instructor grades the class with `make grade`.")
    return report


__all__ = ["check", "SelfCheck", "quiet_numba_warnings", "say_where_kernels_run"]
