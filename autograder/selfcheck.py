"""The notebooks' self-check: run a stage's checks on the notebook's own functions, in-process.

A self-check cell calls ``check("tiled")``. It finds the stage's kernel and
launcher in the notebook's globals and runs them the way the grader does
(autograder/build/launches.py: record the launches, check they use only A, B, C,
replay them on fresh arrays) on the stage's simulator shapes, and explains a
wrong result with autograder/checks/correct.py. In the simulator it also replays one
launch with the simulator's instruments (autograder/sim) on (races, bank conflicts, global loads)
and draws the data-reuse figures; on a GPU it times the kernel against the
reference kernels over a few sizes and plots that instead.

It never raises for anything the student's code does: every problem is a
printed FAIL line, and a stub says "not implemented yet". It is not a grade:
code running in a notebook kernel can patch anything there, so grades come
only from ``make grade`` (autograder/engine, separate processes).
"""
import contextlib
import inspect
import io
import os
import re
import sys
import tempfile
import textwrap
import time
import traceback
import types
import warnings
from dataclasses import dataclass, field

from . import config as config_mod
from . import figures
from .checks import bank_conflicts, compiles, correct, data_reuse, races, titles
from .build import launches as L
from .runner.run import device_output
from .stages import INSTRUMENT_CHECKS, find
from .grammar import violations
from .reading.source import renumber_cells
from .scan import unimplemented

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # the cells to come may tune for the GPU, as the grader allows
    from .sim.gpu_options import accept_gpu_options
    from .sim.warp import install as install_warp_functions
    accept_gpu_options()
    install_warp_functions()  # cuda.shfl_sync and the other warp functions the simulator lacks

GPU_SIZES = (256, 512, 1024, 2048)     # square N of the timing plot on a GPU
GPU_REPEATS = 5                        # timed runs per kernel and size (the median counts)
# What adds the CUDA compiler (NVVM, libdevice and the CUDA runtime library numba-cuda asks for) to an environment.
TOOLKIT_INSTALL = 'pip install "numba-cuda[cu13]==0.30.4"'
_LIB_NOT_FOUND = re.compile(r'DynamicLibNotFoundError: Failure finding "([^"]+)"')
_TOOLKIT_GONE = (re.compile(r"libNVVM (cannot be found|is not available)|libdevice\S* (cannot be found|not found)|"
                            r"No such file[^\n]*libdevice", re.I), re.compile(r"NvvmSupportError"))


@dataclass
class SelfCheck:
    """What one self-check found; its repr is the one-line summary a notebook shows."""
    stage: str
    device: str
    results: list = field(default_factory=list)   # (name, passed, message)
    figures: dict = field(default_factory=dict)    # numbers behind the plot
    skipped: list = field(default_factory=list)    # (name, why): checks that could not run here, counted neither way

    @property
    def passed(self):
        return bool(self.results) and all(ok for _, ok, _ in self.results)

    def __repr__(self):
        n = sum(1 for _, ok, _ in self.results if ok)
        return f"<self-check of stage {self.stage} ({self.device}): {n} of {len(self.results)} passed>"


def toolkit_missing(compile_error):
    """What of the CUDA compiler is missing, by a compile error's text ("" when the error is the kernel's own).

    numba-cuda without its cu13 extra (the self-check wheel's plain dependencies) has no NVVM, libdevice or CUDA
    runtime library: the compile then fails on a library lookup, not on the kernel."""
    found = _LIB_NOT_FOUND.search(compile_error)
    if found:
        return f"{found.group(1)} not found"
    found = _TOOLKIT_GONE[0].search(compile_error) or _TOOLKIT_GONE[1].search(compile_error)
    return found.group(0) if found else ""


class _Namespace:
    """A module-like view of a globals dict: setattr writes into the dict (used by record_launches)."""

    def __init__(self, namespace):
        object.__setattr__(self, "__dict__", namespace)


def _as_module(namespace):
    main = sys.modules.get("__main__")
    if main is not None and vars(main) is namespace:
        return main
    return _Namespace(namespace)


def quiet_numba_warnings():
    """Send Numba's warnings nowhere (both numba's and numba-cuda's classes): a graded cell must not write stderr."""
    for path in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            module = __import__(path, fromlist=["NumbaWarning"])
        except Exception:  # an older or newer layout: the module filter below still applies
            continue
        warnings.filterwarnings("ignore", category=module.NumbaWarning)
    warnings.filterwarnings("ignore", module=r"numba(\.|$)")


def _source(obj):
    try:
        return inspect.getsource(getattr(obj, "py_func", obj))
    except (OSError, TypeError):
        return ""


def _grammar_names(namespace):
    """What the notebook's names are, for the kernel-module grammar (grammar.violations' `predefined`): the
    self-check reads the stage's functions alone, so their module is the notebook's namespace."""
    from .grammar import MODULES, PATHS
    names = {}
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        if isinstance(value, types.ModuleType) and value.__name__ in MODULES:
            names[name] = value.__name__
        elif L.is_cuda_kernel(value):
            device = getattr(value, "_device", None) or getattr(value, "targetoptions", {}).get("device")
            names[name] = "device" if device else "kernel"
        elif isinstance(value, types.FunctionType):
            names[name] = "host"
        elif isinstance(value, (int, float, tuple, str)):
            names[name] = "constant"
        else:
            path = f"{getattr(value, '__module__', '')}.{getattr(value, '__name__', '')}"
            kind = getattr(value, "name", None)  # a numba type: float32 and its aliases
            for candidate in (path, f"numba.{kind}" if isinstance(kind, str) else "", f"numpy.{name}"):
                if PATHS.get(candidate) == "any":
                    names[name] = candidate
                    break
    return names


def _cell_files(namespace):
    """{file: names of the functions defined in it}: a notebook's cells, each a file of IPython's."""
    files, here = {}, namespace.get("__name__")
    for name, value in namespace.items():
        if name.startswith("_") or not (isinstance(value, types.FunctionType) or L.is_cuda_kernel(value)):
            continue
        func = getattr(value, "py_func", value)
        code = getattr(func, "__code__", None)
        if code is not None and getattr(func, "__module__", here) == here:  # not `check`, imported from here
            files.setdefault(code.co_filename, []).append(name)
    return files


def _cite(text, files, default_file):
    """Line numbers said as the grader says them for a notebook: "line 12 of the cell defining matmul_tiled_kernel"
    (a cell's lines, which is what both count)."""
    from .submission import CITED_LINE

    def where(m):
        file = m.group(1) or default_file
        names = files.get(file)
        return f"line {m.group(2)} of the cell defining {', '.join(names)}" if names else m.group(0)
    return CITED_LINE.sub(where, text) if text else text


def _explain(exc, files=None):
    if isinstance(exc, L.LaunchError):
        return str(exc)
    text = f"{type(exc).__name__}: {str(exc)[:600]}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in (files or {})]
    if frames:  # the grader's child names the line too (protocol.describe_error)
        text += f" (line {frames[-1].lineno} of the cell defining {', '.join(files[frames[-1].filename])}: " \
                f"{frames[-1].line})"
    if isinstance(exc, IndexError):
        text += "\nA thread indexed outside an array: guard loads and stores with the right bounds (row < M, col < N, k < K)."
    if "CUDA_ERROR" in str(exc) or "Cuda" in type(exc).__name__:
        text += "\nThe GPU reported an error; restart the kernel (Kernel > Restart) before running more cells."
    return text


def module_text(namespace):
    """The kernel module a notebook's cells amount to, as the grader builds it from the graded cells: its imports
    (math, numpy dtypes, numba), constants, and the source of each function the notebook defined, in the order they
    were defined. For the compile check's child (numba's simulator cannot compile for a GPU)."""
    here = namespace.get("__name__")
    renumber_cells(namespace.get("_ih"))
    imports, constants, functions = [], [], []
    for name, kind in _grammar_names(namespace).items():
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            imports.append(f"import {value.__name__} as {name}" if value.__name__ != name else f"import {name}")
        elif kind in ("kernel", "device", "host"):
            func = getattr(value, "py_func", value)
            if getattr(func, "__module__", None) == here:  # not the self-check's own functions
                functions.append(textwrap.dedent(_source(value)))
        elif kind == "constant":
            constants.append(f"{name} = {value!r}")
        elif "." in kind:  # a numba or numpy dtype under the notebook's name for it
            module, attr = kind.rsplit(".", 1)
            imports.append(f"from {module} import {attr} as {name}" if attr != name else f"from {module} import {name}")
    return "\n".join(imports + constants) + "\n\n\n" + "\n\n".join(functions)


class _Run:
    """One self-check: the student's functions, the arrays, the printed lines."""

    def __init__(self, stage, namespace, seed):
        import numpy as np
        from numba import config as numba_config
        from numba import cuda
        self.np, self.cuda = np, cuda
        self.stage = stage
        launcher = namespace.get(stage.launcher)
        # the launcher finds its kernel in its own globals: record the launches there
        self.ns = getattr(launcher, "__globals__", None) or namespace
        self.module = _as_module(self.ns)
        self.sim = bool(numba_config.ENABLE_CUDASIM)
        self.cfg = config_mod.load()
        self.points = self.cfg["stages"][stage.name]["points"]
        self.tol = self.cfg["grading"]["relative_error"]
        tile, tiles = self.ns.get("TILE"), self.cfg["structure"]["tiles"]
        # as the grader's (engine/stage.py StageGrader.tile): a TILE the course does not allow sizes nothing
        self.tile = tile if type(tile) is int and tile in tiles else (tiles[0] if stage.tiled else None)
        self.rng = np.random.default_rng(seed)
        self.report = SelfCheck(stage.name, "simulator" if self.sim else "GPU")
        self.files = _cell_files(self.ns)
        kernel = self.ns.get(stage.kernel)
        code = getattr(getattr(kernel, "py_func", kernel), "__code__", None)
        self.kernel_file = code.co_filename if code is not None else None

    def add(self, name, passed, message):
        message = _cite(message, self.files, self.kernel_file)
        self.report.results.append((name, passed, message))
        print(f"  {'PASS' if passed else 'FAIL'}  {name}")
        for line in message.splitlines()[:14]:
            print("        " + line)

    def skip(self, name, why, command=""):
        """A check that could not run here: a SKIP line, counted neither way; `command` on a line of its own."""
        self.report.skipped.append((name, why + (f" {command}" if command else "")))
        print(f"  SKIP  {name}")
        for line in textwrap.wrap(why, 100, break_long_words=False, break_on_hyphens=False) + [command] * bool(command):
            print("        " + line)

    def inputs(self, M, K, N):
        np, cuda = self.np, self.cuda
        A = self.rng.standard_normal((M, K)).astype(np.float32)
        B = self.rng.standard_normal((K, N)).astype(np.float32)
        return A, B, cuda.to_device(A), cuda.to_device(B)

    def launch(self, M, K, N, instrument=False):
        """(A, B, C, facts): the stage's launches recorded and replayed on fresh inputs; raises on problems."""
        np, cuda = self.np, self.cuda
        A, B, dA, dB = self.inputs(M, K, N)
        buf, dC, guard = device_output(cuda, np, M, N)
        recorded = L.record_launches(self.module, self.stage.launcher, dA, dB, dC)
        L.validate(recorded, self.stage.kernel, dA, dB, dC)
        facts = None
        if instrument:
            from .sim.instrument import run_instrumented
            kernel_file = self.ns[self.stage.kernel].py_func.__code__.co_filename
            facts = run_instrumented(recorded, dA, dB, dC, {"module_path": kernel_file})
        else:
            L.replay(recorded)
        cuda.synchronize()
        out = buf.copy_to_host()
        past_end = int(np.count_nonzero(~np.isnan(out[M * N:])))
        return A, B, out[: M * N].reshape(M, N), past_end, facts

    def cell_line(self, name, finding):
        """A grammar finding about function `name` ("line 3: ...", a line of its own source) in its cell's lines."""
        code = getattr(getattr(self.ns[name], "py_func", self.ns[name]), "__code__", None)
        m = re.match(r"line (\d+)", finding)
        if code is None or not m:
            return f"{name}, {finding}"
        return f"line {int(m.group(1)) + code.co_firstlineno - 1} of the cell defining {name}{finding[m.end():]}"

    # -- the checks ---------------------------------------------------------
    def ready(self):
        """False (with a FAIL line) when the stage's functions are missing or still stubs."""
        missing = [n for n in (self.stage.kernel, self.stage.launcher) if n not in self.ns]
        if missing:
            self.add("the stage's functions are defined", False,
                     f"{' and '.join(missing)} not found: run the cells above that define them (keep their names).")
            return False
        if not L.is_cuda_kernel(self.ns[self.stage.kernel]):
            self.add("the kernel is a CUDA kernel", False, f"{self.stage.kernel} is not a Numba CUDA kernel: "
                                                           "decorate it with @cuda.jit.")
            return False
        sources = {n: _source(self.ns[n]) for n in (self.stage.kernel, self.stage.launcher)}
        stubs = [n for n, text in sources.items() if unimplemented(text, (n,))]
        if stubs:
            self.add("your code is written", False,
                     f"not implemented yet: {' and '.join(stubs)} still raise{'s' if len(stubs) == 1 else ''} "
                     "NotImplementedError. Write the part marked TODO, run its cell, then this one again.")
            return False
        names = _grammar_names(self.ns)
        findings = [self.cell_line(name, line) for name, text in sources.items()
                    for line in violations(textwrap.dedent(text), {k: v for k, v in names.items() if k != name})]
        if findings:
            self.add("only what a kernel module may contain", False,
                     "the grader scores this whole stage 0 for these (README: the student contract):\n"
                     + "\n".join(findings))
        return True

    def compile_checks(self):
        """The grader's compile and structure checks (checks/compiles.py, checks/shared_memory.py) on the module these
        cells amount to: a PTX compile for the GPU target in a child process, as the grader's is."""
        from .checks import child_problem, shared_memory
        from .engine import StageGrader
        from .engine.report import PASSED
        from .submission import StageSource
        with tempfile.TemporaryDirectory(prefix="selfcheck-") as workdir:
            path = os.path.join(workdir, self.stage.filename)
            try:
                grader = StageGrader(StageSource(self.stage, path, module_text(self.ns)), "sim", self.cfg, None, workdir)
                with contextlib.redirect_stderr(io.StringIO()):  # the sandbox's notes are the grader's business
                    result = grader.compile_child()
            except Exception as exc:  # the check could not run here: say so, count nothing
                self.skip("the GPU compile", f"could not run here ({type(exc).__name__}: {exc})")
                return
        # without the CUDA runtime library the module's import fails already, with NVVM alone missing the compile
        missing = toolkit_missing(child_problem(result) + "\n" + result.facts.get("compile_error", ""))
        reads_ptx = self.stage.tiled and "shared_memory" in self.points  # the tiles and barriers come from the PTX
        if missing:
            self.skip("the GPU compile" + (" and the shared-memory check" if reads_ptx else ""),
                      f"the CUDA compiler's libraries are not installed here ({missing}), so "
                      f"{'these checks count' if reads_ptx else 'this check counts'} neither way. The grader "
                      "compiles your kernel anyway. To add them, run this where Jupyter runs, then restart the kernel:",
                      TOOLKIT_INSTALL)
            return
        verdicts = [compiles.judge(grader, result)]
        self.rejected = compiles.rejected(result)
        if reads_ptx:
            verdicts.append(shared_memory.judge(grader, result))
        for check in verdicts:
            self.add(check.name, check.status == PASSED, check.output)

    def correctness(self):
        for group, shapes in self.stage.sim_shape_groups(self.tile or 16).items():
            lines, ok = [], True
            for M, K, N in shapes:
                try:
                    A, B, C, past_end, _ = self.launch(M, K, N)
                except Exception as exc:
                    ok = False
                    lines.append(f"{M}x{K} @ {K}x{N}: {_explain(exc, self.files)}")
                    break
                passed, message = correct.check_output(C, A, B, self.tol, self.tile)
                if past_end:
                    passed = False
                    message += (f"\n{past_end} values were written past the end of C: threads outside C store "
                                "anyway. Guard the store with `if row < M and col < N`.")
                ok &= passed
                lines.append(message)
            self.add(f"correct results: {group}", ok, "\n".join(lines))

    def instruments(self):
        """Replay one product with the simulator's instruments on; judge what the grader judges."""
        t = self.tile or 16
        keys = [k for k in INSTRUMENT_CHECKS if k in self.points]
        if getattr(self, "rejected", ""):  # the grader runs nothing no GPU compiles
            for key in keys:
                self.add(titles.DATA_REUSE if key == "data_reuse" else titles.SIM[key], False,
                         "not run: " + compiles.not_run_rejected(self.rejected))
            return
        # a shape drawn as the grader draws its own; for the figure alone, one to four blocks
        M, K, N = self.stage.instrument_shape(t, self.rng) if keys else (16 if self.stage.name == "naive" else 32,) * 3
        try:
            A, B, C, past_end, facts = self.launch(M, K, N, instrument=True)
        except Exception as exc:
            self.add("simulator instruments", False, "the instrumented run failed: " + _explain(exc, self.files))
            return
        self.report.figures["instruments"] = {"shape": [M, K, N], "tile": self.tile, "global_loads": facts.get("global_loads"),
                                              "bank_conflicts": facts.get("bank_conflicts")}
        wrong = correct.instrumented_product(C, A, B, self.tol, self.tile, past_end, facts)
        if wrong:  # the grader credits no counter of a wrong product
            for key in keys:
                self.add(titles.DATA_REUSE if key == "data_reuse" else titles.SIM[key], False, wrong)
            return
        if "races" in keys:
            self.add(titles.SIM["races"], *races.judge_sim(facts))
        if "bank_conflicts" in keys:
            self.add(titles.SIM["bank_conflicts"], *bank_conflicts.judge_sim(facts))
        if "data_reuse" in keys:
            known = self.ns.get("TILE") == self.tile and type(self.ns.get("TILE")) is int  # as the grader's tile_note
            self.add(titles.DATA_REUSE, *data_reuse.judge_sim(facts, t, self.cfg["structure"]["reuse_fraction"], known))

    def timings(self):
        """Median milliseconds of the student's kernel and the references over GPU_SIZES."""
        np, cuda = self.np, self.cuda
        from .runner.references import REFERENCES
        refs = ["naive_coalesced"] + (["transposed_unpadded"] if self.stage.padded_b else [])
        rows = {"yours": []}
        rows.update({r: [] for r in refs})
        sizes = [n for n in GPU_SIZES if not self.stage.square_tiles_only or n % (self.tile or 16) == 0]
        start, end = cuda.event(), cuda.event()
        for n in sizes:
            A, B, dA, dB = self.inputs(n, n, n)
            dC = cuda.device_array((n, n), np.float32)
            recorded = L.record_launches(self.module, self.stage.launcher, dA, dB, dC)
            L.validate(recorded, self.stage.kernel, dA, dB, dC)
            runs = {"yours": lambda: L.replay(recorded)}
            runs.update({r: (lambda f=REFERENCES[r]: f(dA, dB, dC)) for r in refs})
            for name, run in runs.items():
                run()
                cuda.synchronize()
                samples = []
                for _ in range(GPU_REPEATS):
                    start.record()
                    run()
                    end.record()
                    end.synchronize()
                    samples.append(cuda.event_elapsed_time(start, end))
                rows[name].append(float(np.median(samples)))
        return {"sizes": sizes, "ms": rows, "repeats": GPU_REPEATS}

    # -- the plot -------------------------------------------------------------
    def plot(self):
        try:
            import matplotlib
            import matplotlib.pyplot as plt
        except ImportError:
            print("(matplotlib is not installed: no plot)")
            return
        if self.sim:
            fig = figures.reuse_figure(plt, self.stage, self.tile, self.report.figures.get("instruments"))
        else:
            try:
                self.report.figures["timings"] = timings = self.timings()
            except Exception as exc:
                print("timing plot not drawn: " + _explain(exc, self.files))
                return
            fig = figures.timing_figure(plt, self.stage, timings)
        if fig is None:
            return
        try:
            from IPython.display import display
            display(fig)
        except ImportError:
            if matplotlib.get_backend().lower() != "agg":
                plt.show()
        plt.close(fig)


def check(stage_name, namespace=None, plot=True, seed=None):
    """Run stage `stage_name`'s self-checks on the functions in `namespace` (default: the caller's globals).

    Prints one PASS/FAIL line per check with the grader's explanation, draws the
    plot, and returns a SelfCheck. Never raises for what the student's code does."""
    stage = find(stage_name)
    if namespace is None:
        namespace = inspect.currentframe().f_back.f_globals
    started = time.perf_counter()
    renumber_cells(namespace.get("_ih"))  # a cell holding U+2028: its functions read as Python numbers its lines
    with warnings.catch_warnings():
        quiet_numba_warnings()
        run = _Run(stage, namespace, seed)
        print(f"Self-check of stage {stage.number} ({stage.title}) "
              f"{'in the CUDA simulator (no GPU)' if run.sim else 'on the GPU'}"
              + (f", TILE = {run.tile}" if run.tile else "") + ":")
        if not run.sim and not run.cuda.is_available():
            run.skip("every check", "There is no GPU here and the CUDA simulator is off: Numba was imported before "
                     "the setup cell chose the simulator (a cell run before it, out of order). Restart the kernel "
                     "(Kernel > Restart) and run the cells from the top.")
        elif run.ready():
            run.compile_checks()
            run.correctness()
            if run.sim:
                run.instruments()
            if plot:
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


__all__ = ["check", "SelfCheck", "quiet_numba_warnings"]
