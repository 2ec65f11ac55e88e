"""Notebook side: the grader's checks run on a notebook's functions (compile, correct results, instruments).

A part of _Run (run.py): it uses the run's add, skip and launch, and judges with the grader's own judges.
"""
import contextlib
import io
import os
import tempfile

from ..checks import bank_conflicts, compiles, correct, data_reuse, races, titles
from ..stages import INSTRUMENT_CHECKS
from .explain import _explain
from .kernel_module import cell_lines, module_text
from .toolkit import TOOLKIT_INSTALL, toolkit_missing


class _StageChecks:
    """The checks of one self-check run, each printing its PASS, FAIL or SKIP lines through the run."""

    def compile_checks(self):
        """The grader's compile and structure checks (checks/compiles.py, checks/shared_memory.py) on the module these
        cells amount to: a PTX compile for the GPU target in a child process, as the grader's is."""
        from ..checks import child_problem, shared_memory
        from ..engine import StageGrader
        from ..engine.report import PASSED
        from ..submission import StageSource
        with tempfile.TemporaryDirectory(prefix="selfcheck-") as workdir:
            path, module = os.path.join(workdir, self.stage.filename), module_text(self.ns)
            try:
                grader = StageGrader(StageSource(self.stage, path, module), "sim", self.cfg, None, workdir)
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
        for check in verdicts:  # lines of the module the cells amount to, said as the cells' lines
            self.add(check.name, check.status == PASSED, cell_lines(check.output, module, self.ns))

    def correctness(self):
        from ..engine.plan import sim_seconds
        from .limits import TimeLimit, time_limit_message, within
        for group, shapes in self.stage.sim_shape_groups(self.tile or 16).items():
            if getattr(self, "rejected", ""):  # the grader runs nothing no GPU compiles
                self.add(f"correct results: {group}", False, "not run: " + compiles.not_run_rejected(self.rejected))
                continue
            lines, ok = [], True
            limit = sim_seconds(self.cfg, self.tile, shapes)
            for M, K, N in shapes:
                try:
                    if self.sim:
                        with within(limit):
                            A, B, C, past_end, _ = self.launch(M, K, N)
                    else:
                        A, B, C, past_end, _ = self.launch(M, K, N)
                except TimeLimit:
                    self.add(f"correct results: {group}", False, f"{M}x{K} @ {K}x{N}: {time_limit_message(limit)}")
                    self.stopped = True
                    return
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
        if getattr(self, "stopped", False):  # as the grader: a stage that ran past its limit runs no later check
            for key in keys:
                self.add(titles.DATA_REUSE if key == "data_reuse" else titles.SIM[key], False,
                         "not run: a launch above ran past its time limit")
            return
        from ..engine.plan import sim_seconds
        from .limits import TimeLimit, time_limit_message, within
        limit = sim_seconds(self.cfg, self.tile, [(M, K, N)]) * 4   # the instruments cost about 4x a plain run
        try:
            with within(limit):
                A, B, C, past_end, facts = self.launch(M, K, N, instrument=True)
        except TimeLimit:
            self.add("simulator instruments", False, time_limit_message(limit))
            return
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
