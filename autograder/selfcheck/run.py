"""Notebook side: one self-check's state (the student's functions, the arrays, the printed lines) and its launches.

The checks it runs are in stage_checks.py, its plot in plotting.py: _Run is those parts put together.
"""
import re
import textwrap

from .. import config as config_mod
from ..builder import launches as L
from ..grammar import violations
from ..runner.run import device_output
from ..scan import unimplemented
from .explain import _cell_files, _cite
from .kernel_module import _as_module, _grammar_names, _source
from .mode import simulated
from .plotting import _Plot
from .report import SelfCheck
from .stage_checks import _StageChecks


class _Run(_StageChecks, _Plot):
    """One self-check: the student's functions, the arrays, the printed lines."""

    def __init__(self, stage, namespace, seed):
        import numpy as np
        from numba import cuda
        self.np, self.cuda = np, cuda
        self.stage = stage
        launcher = namespace.get(stage.launcher)
        # the launcher finds its kernel in its own globals: record the launches there
        self.ns = getattr(launcher, "__globals__", None) or namespace
        self.module = _as_module(self.ns)
        self.sim = simulated()  # as the setup cell and the header say (mode.py)
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
        A = self.rng.standard_normal((M, K), dtype=np.float32)
        B = self.rng.standard_normal((K, N), dtype=np.float32)
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
            from ..sim.instrument import run_instrumented
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

    def renamed(self, missing):
        """Where a missing function was likely renamed: the CUDA kernels (and other functions) the notebook defines
        under other names, each with the line of its cell."""
        found = []
        for name, obj in self.ns.items():
            if name.startswith("_") or name in missing:
                continue
            kernel = L.is_cuda_kernel(obj)
            code = getattr(getattr(obj, "py_func", obj), "__code__", None)
            if code is None or not (kernel or callable(obj)) or getattr(obj, "__module__", None) not in (
                    None, "__main__", self.ns.get("__name__")):
                continue
            where = _cite(f"line {code.co_firstlineno}", self.files, code.co_filename)
            found.append(f"{'a CUDA kernel' if kernel else 'a function'} named {name} ({where})")
        if not found:
            return ""
        return (" This notebook defines " + "; ".join(found[:4]) + ": if one of these is the stage's, give it back "
                "its released name (the grader finds the stage by it).")

    def ready(self):
        """False (with a FAIL line) when the stage's functions are missing or still stubs."""
        missing = [n for n in (self.stage.kernel, self.stage.launcher) if n not in self.ns]
        if missing:
            self.add("the stage's functions are defined", False,
                     f"{' and '.join(missing)} not found: run the cells above that define them (keep their names)."
                     + self.renamed(missing))
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
                     "the grader scores this whole stage 0 for these (a kernel module holds imports, constants, "
                     "@cuda.jit kernels and the launchers that launch them, and nothing else):\n"
                     + "\n".join(findings))
        return True
