"""Trusted parent side: plan the checks of one stage, start their children, judge what comes back.

Nothing here imports student code. Each check's untrusted work runs in its
own sandboxed child (autograder/sandbox); a crash, exit, hang or CUDA error
there fails that check alone. The judging itself is in autograder/checks/.
"""
import math
import os
import threading
import time

import numpy as np

from .. import sandbox
from ..checks import bank_conflicts, compiles, correct, data_reuse, races, shared_memory, shortcuts, speed
from ..checks.correct import explain_error
from ..checks.titles import title
from ..checks import child_problem, depends_on, grader_fault
from ..outcome import Fault, fault_of, grader, keep, time_limit
from ..grammar import module_constants
from ..ptx import facts as ptx_facts
from ..sandbox.plan import check_build
from ..scan import unimplemented
from ..submission import function_names, missing_graded_cells
from ..stages import INSTRUMENT_CHECKS
from .report import NO_COMPILER, Check

SIM_JUDGES = {"races": races.judge_sim, "bank_conflicts": bank_conflicts.judge_sim, "data_reuse": None}


class _Cut:
    """The `cancel` of one child (sandbox.run_child polls is_set): set once another child of the stage ran out of
    time and this one has had `grace` seconds of work since then. Its work begins when it says a shape began
    (run_child calls begun()): its start-up (imports, a CUDA context: slow on a loaded machine) is bounded by
    `start` seconds and not counted in the grace, so an honest group is not cut short for another's sake."""

    def __init__(self, grader, grace, start):
        self.grader, self.grace, self.start = grader, grace, start
        self.started, self.working = time.monotonic(), None

    def begun(self):
        if self.working is None:
            self.working = time.monotonic()

    def is_set(self):
        at = self.grader.timeout_at
        since = self.working if self.working is not None else self.started + self.start
        return at is not None and time.monotonic() > max(at, since) + self.grace


class _Part:
    """One group's view of the correctness child's future (the engine and the judges wait on it alone)."""

    def __init__(self, future, group):
        self.future, self.group = future, group

    def result(self):
        return self.future.result()[self.group]

    def exception(self):
        return self.future.exception()


def _slice(result, a, b, problem):
    """The part of a correctness child's result for shapes a..b-1 (renumbered from 0); with `problem`, the child's
    problem (it stopped while on these shapes) too."""
    facts = {**result.facts, "shapes": result.facts.get("shapes", [])[a:b]}
    arrays = {f"C{i - a}": result.arrays[f"C{i}"] for i in range(a, b) if f"C{i}" in result.arrays}
    return sandbox.ChildResult(facts=facts, arrays=arrays, problem=result.problem if problem else "", log=result.log,
                               seconds=result.seconds, sandbox=result.sandbox, uid=result.uid,
                               timed_out=result.timed_out and problem, cancelled=result.cancelled and problem,
                               started=result.started)


class StageGrader:
    """The checks of one stage of one submission: `start_compile` and then `start_checks` start the children,
    `judge` scores their facts. ``StageGrader(src, device, ...)`` is the tier's own grader: SimStageGrader or
    GpuStageGrader, which differ in their children (a PTX compile and simulator runs; a build child and runners)
    and in the checks only a GPU can run."""

    def __new__(cls, src=None, device="sim", *args, **kwargs):
        if cls is StageGrader:
            cls = GpuStageGrader if device == "gpu" else SimStageGrader
        return super().__new__(cls)

    def __init__(self, src, device, cfg, rng, workdir, grader_kernels=None):
        self.src, self.stage, self.device, self.cfg, self.rng = src, src.stage, device, cfg, rng
        # The grader's compiled kernels (child/kernel_cache.py), which timing children only read: a callable that
        # waits for that folder (or None).
        self.grader_kernels = grader_kernels
        self.points = cfg["stages"][self.stage.name]["points"]
        self.tol = cfg["grading"]["relative_error"]
        # The tile the grader sizes its shapes and time limits and judges the tiling by: the module's TILE where the
        # course allows it (config [structure] tiles), else, in a tiled stage, the course's own first size; the
        # shared-memory check then fails saying so (tile_note), the other checks are judged as for any kernel.
        tiles = cfg["structure"]["tiles"]
        tile = module_constants(src.source).get("TILE", (None, 0))[0]
        allowed = type(tile) is int and tile in tiles
        self.tile = tile if allowed else (tiles[0] if self.stage.tiled else None)
        findings = shortcuts.tile_findings(self.stage, src.source, tiles)
        self.tile_note = (" ".join(findings) + f"; the grader judged the tiling by the course's TILE = {self.tile} "
                          "instead") if findings else ""
        if self.stage.tiled and tile is None and not findings:
            self.tile_note = f"define the tile size as a module constant, e.g. TILE = {tiles[0]}"
        # the instrumented run's shape, drawn now from the grade's secret generator (the compile check records the
        # launcher there too)
        self._instrument_shape = None
        self.sampled_shape = self.sample = None
        if rng is not None and self.instrument_keys():
            self.instrument_shape()
            # the sampled run: the timed size's grid, of which a few blocks run (run_sampled), drawn now
            self.sampled_shape = self.stage.sampled_shape(self.tile or 16, rng, cfg["speed"]["n"])
            self.sample = rng.random(4)
        self.module_path = os.path.join(workdir, self.stage.filename)
        with open(self.module_path, "w", encoding="utf-8") as f:
            f.write(src.source)
        limits = dict(cfg["limits"])
        self.gpu_limits = limits
        self.sim_limits = {**limits, "address_space_bytes": limits["sim_address_space_bytes"]}
        self.children = []   # wall and work seconds of every child, for the report's time breakdown
        # Fail fast: a child that runs out of time stops the stage's other children (cancel) and its later
        # GPU checks (gate_reason).
        self.timed_out = ""
        self.timeout_at = None
        self.futures = {}
        self.built = None  # the build child's checked kernels and plans (build_child)
        self._gate = None
        self._gate_lock = threading.Lock()
        self._timeout_lock = threading.Lock()

    def check(self, key, name, share=1.0):
        return Check(self.stage.name, key, name, self.points.get(key, 0) * share)

    def job(self, task, device, **extra):
        return {"task": task, "device": device, "module": self.stage.module, "module_path": self.module_path,
                "kernel": self.stage.kernel, "launcher": self.stage.launcher, **extra}

    def run(self, job, inputs=None, wrapper=(), timeout=None, what="a check", later=False, turn=None, work=None):
        """Run one child of this stage. After a child of the stage ran out of time, a `later` check (the
        instruments, the GPU tools; speed is gated in gate_reason) is not run, and every other child still
        running or yet to start gets at most sibling_grace_s more: a correct kernel's child needs far less, a
        kernel that never ends costs one derived limit per stage, not one per child. `work`: seconds the child
        has left once it says its kernels are about to run (sandbox.run_child)."""
        limits = self.sim_limits if job["device"] == "sim" else self.gpu_limits
        if self.timed_out and later:
            return sandbox.ChildResult(problem=time_limit(f"not run: {self.timed_out}"), cancelled=True)
        dirs = ()
        if job["device"] == "gpu" and job["task"] == "speed" and self.grader_kernels:
            grader = self.grader_kernels()
            dirs = ((grader, "grader", False),) if grader else ()
        began = time.monotonic()
        result = sandbox.run_child(job, limits, inputs, wrapper, min(timeout or math.inf, limits["check_timeout_s"]),
                                   _Cut(self, self.cfg["limits"]["sibling_grace_s"],
                                        limits["sim_start_s" if job["device"] == "sim" else "gpu_start_s"]),
                                   turn, work, dirs)
        task = result.facts.get("seconds") if isinstance(result.facts.get("seconds"), (int, float)) else None
        self.children.append({"task": job["task"] if not wrapper else "gpu tool", "wall_s": result.seconds,
                              "work_s": task, "stage": self.stage.name, "what": what, "began": began,
                              "cpu_s": result.facts.get("cpu_s") if not wrapper else None,
                              "profile": {k: result.facts[k] for k in ("phases", "cuda_init_s", "clock_s",
                                                                         "kernels_loaded", "kernels_compiled")
                                          if k in result.facts}})
        with self._timeout_lock:
            if fault_of(result.problem) is Fault.TIME_LIMIT and result.timed_out and not self.timed_out:
                # the student's limit alone: a process stuck in the driver after its kill is the grader's
                self.timed_out = f"{what} of this stage did not finish within its {result.seconds:.0f} s limit"
                self.timeout_at = time.monotonic()
        return result

    # -- time limits derived from the work ------------------------------------
    def work_timeout(self, flops):
        """Seconds a GPU child may run: start-up plus work_factor times what the naive reference kernel needs for
        `flops` at reference_tflops; never more than check_timeout_s."""
        lim = self.cfg["limits"]
        return min(lim["check_timeout_s"],
                   lim["gpu_start_s"] + lim["work_factor"] * flops / (lim["reference_tflops"] * 1e12))

    def sim_timeout(self, shapes):
        """Seconds a simulator child may run: start-up plus sim_work_factor times the simulated block-steps (one
        TILE x TILE block through one tile of K) at sim_block_step_s each, scaled by the block's threads."""
        lim = self.cfg["limits"]
        t = self.tile or 16
        steps = sum(math.ceil(M / t) * math.ceil(N / t) * (1 + math.ceil(K / t)) for M, K, N in shapes)
        work = steps * lim["sim_block_step_s"] * max(1.0, (t / 16) ** 2)
        return min(lim["check_timeout_s"], lim["sim_start_s"] + lim["sim_work_factor"] * work)

    def run_correctness(self, groups, drawn):
        """{group: ChildResult} of the correctness check: every group's shapes in one child, in order.

        One group must not cost another its points. Where a child ended before every group had its result (a
        CUDA error that poisons the process, a kernel that never ends, a crash), the group it was working on
        (the child says when it starts each shape) keeps that result, and the groups without one run again in
        a fresh child. After a timeout that child has only the stage's sibling grace (fail fast): a kernel that
        never ends costs one limit and one grace, not one per group."""
        results, todo = {}, list(groups)
        while todo:
            shapes = [s for g in todo for s in groups[g]]
            inputs, spans, i = {}, {}, 0
            for g in todo:
                spans[g] = (i, i + len(groups[g]))
                for j in range(len(groups[g])):
                    inputs[f"A{i}"], inputs[f"B{i}"] = drawn[g][f"A{j}"], drawn[g][f"B{j}"]
                    i += 1
            what = ("the correctness check" if len(todo) > 1 else f"the correctness check '{todo[0]}'")
            job, why = self.correctness_job(shapes)
            if why:
                return {**results, **{g: self.not_run(why) for g in todo}}
            result = self.run(job, inputs, (), self.run_timeout(shapes), what, False, None, self.after_start(shapes))
            done = len(result.facts.get("shapes", []))
            # the shape it stopped on: the last one it ran (a CUDA or launch error ends the child's loop) or, where
            # it was killed, the last one it said it started
            at = result.started - 1 if result.problem else (done - 1 if done < len(shapes) else len(shapes))
            if at < 0 or result.cancelled:  # nothing ran (an import error, no sandbox, a crash before the first
                # shape), or it was stopped because the stage ran out of time: the same for all that are left
                return {**results, **{g: result for g in todo}}
            left = []
            if not 0 <= at <= len(shapes):  # a count the child could not have reached: nothing more to learn
                return {**results, **{g: result for g in todo}}
            for g in todo:
                first, end = spans[g]
                if first <= at < end:
                    results[g] = _slice(result, first, end, problem=True)  # the group it stopped on
                elif end <= at and not result.problem:
                    results[g] = _slice(result, first, end, problem=False)
                else:
                    left.append(g)  # after it, or its results lost with the child: run again
            todo = left
        return results

    def draw(self, shapes):
        """Fresh random inputs {A0, B0, A1, ...} for (M, K, N) shapes, from this grade's secret generator."""
        inputs = {}
        for i, (M, K, N) in enumerate(shapes):
            inputs[f"A{i}"] = self.rng.standard_normal((M, K)).astype(np.float32)
            inputs[f"B{i}"] = self.rng.standard_normal((K, N)).astype(np.float32)
        return inputs

    # -- planning ---------------------------------------------------------
    def start_compile(self, pool):
        """The kernel-module grammar, then the compile check's child, which a grade starts before any other: in the
        simulator tier a PTX compile; in the GPU tier the build child (the only GPU-tier child that imports the
        module), whose checked kernels and plans every runner waits for."""
        self.stubs = unimplemented(self.src.source, (self.stage.kernel, self.stage.launcher))
        defined = function_names(self.src.source)
        self.deleted = missing_graded_cells(self.stage, getattr(self.src, "path", "") or "",
                                            [n for n in (self.stage.kernel, self.stage.launcher) if n not in defined])
        self.shortcut, self.findings = shortcuts.judge(self)
        if self.stubs or self.findings or self.deleted or self.src.unreadable:  # nothing to learn: no children
            self.futures = {}
            return {}
        self.futures = {"compile": pool.submit(self.compile_child)}
        return self.futures

    def start_checks(self, pool, waiting=None):
        """Every other child of the stage, after start_compile; returns {name: future}. `pool` runs the correctness
        and instrument children; `waiting` (default `pool`) the GPU tools (they run beside correctness, but are
        judged only after it) and the timing child, which waits for correctness and then, once prepared, for the GPU
        to be the grader's alone (checks/speed.py)."""
        futures = self.futures
        if not futures:
            return futures
        waiting = waiting or pool
        # Correctness next, with the GPU tools beside it (the longest children of a stage; they are judged only
        # for a kernel that passed correctness), and speed last. Every group of shapes of the check runs in one
        # child (one start-up, not one per group; run_correctness).
        groups = self.shape_groups()
        drawn = {group: self.draw(shapes) for group, shapes in groups.items()}
        together = pool.submit(self.run_correctness, groups, drawn)
        for group in groups:
            futures["correct:" + group] = (_Part(together, group), drawn[group])
        if self.instrument_keys():
            futures["instruments"] = pool.submit(self.run_instruments, self.draw([self.instrument_shape()]))
            futures["sampled"] = pool.submit(self.run_sampled, self.draw([self.sampled_shape]))
        self.start_tier_checks(futures, waiting)
        return futures

    def start_tier_checks(self, futures, waiting):
        """The checks only this tier runs (a GPU's tools and timing), started beside correctness."""

    def gate_reason(self, key):
        """Why the later GPU check `key` (races, bank_conflicts, speed) must not run, or "".

        Waits for the compile and correctness children (started before any caller of this). A timeout anywhere
        in the stage stops every later GPU check; so do a kernel that does not compile and, for the GPU tools
        and (unless [speed] needs_correct is false) for speed, a wrong result on the correctness shapes."""
        with self._gate_lock:
            if self._gate is None:
                self._gate = self._compute_gate()
        compile_problem, wrong, fault = self._gate
        if self.timed_out:
            return time_limit(f"not run: {self.timed_out} (a kernel that never ends is stopped once per stage)")
        if fault:  # a check it depends on failed for the grader's own trouble: neither does this one count
            return fault
        if compile_problem:
            return "not run: " + compile_problem
        if wrong and (key != "speed" or self.cfg["speed"]["needs_correct"]):
            return (f"not run: the correctness checks failed ({wrong}); "
                    + ("speed counts only for a correct kernel" if key == "speed" else
                       "the GPU tools run only on a kernel that computes the right product"))
        return ""

    def _compute_gate(self):
        """(why the kernel does not compile, the correctness groups it failed, the grader's own fault in one of
        them): a check skipped for the grader's trouble makes those that depend on it skipped too, not failed."""
        if "compile" not in self.futures:  # a check run on its own (tools/verify_gpu.py times speed alone)
            return "", "", ""
        compiled = self.futures["compile"].result()
        fault = grader_fault(compiled)
        if fault:
            return "", "", depends_on("the compile check", fault)
        if compiles.judge(self, compiled).status != "passed":
            return "the kernel does not compile", "", ""
        groups = [k for k in self.futures if k.startswith("correct:")]
        wrong = []
        for key in groups:
            future, inputs = self.futures[key]
            group = key.split(":", 1)[1]
            fault = grader_fault(future.result())
            if fault:
                return "", "", depends_on(f"the correctness check '{group}'", fault)
            if correct.judge(self, group, future.result(), inputs, len(groups)).status != "passed":
                wrong.append(group)
        return "", ", ".join(wrong), ""

    def instrument_shape(self):
        """(M, K, N) of this grade's instrumented simulator run, drawn once from the grade's secret generator as the
        self-check draws its own (Stage.instrument_shape): a kernel cannot tell it from any other shape."""
        if getattr(self, "_instrument_shape", None) is None:
            rng = self.rng if self.rng is not None else np.random.default_rng()
            self._instrument_shape = self.stage.instrument_shape(self.tile or self.cfg["structure"]["tiles"][0], rng)
        return self._instrument_shape

    def run_instruments(self, inputs):
        """The instrumented simulator run of the build's plan at the drawn shape (waits for the build); its C is
        checked too (judge_instruments)."""
        self.instrument_inputs = inputs
        shape = self.instrument_shape()
        job, why = self.sim_job([shape], count=1, instrument=True)
        if why:
            return self.not_run(why)
        return self.run(job, inputs, (), self.sim_timeout([shape]), "the instrumented simulator run", True)

    def run_sampled(self, inputs):
        """The instrumented simulator run at the timed size's grid (sampled_shape) that runs two blocks drawn from the
        grade's secret generator, away from the last row and column of blocks (whole tiles): blocks are independent,
        so the loads per output, the races and the bank conflicts of a block are exact on a sample, and structure is
        judged at the size that is graded. The kernel sees the whole grid and cannot tell which blocks run."""
        self.sampled_inputs = inputs
        shape = self.sampled_shape
        job, why = self.sim_job([shape], count=1, instrument=True)
        if why:
            return self.not_run(why)
        launches = self.built["plans"][tuple(shape)]["launches"]
        grid = next(item["grid"] for item in launches if self.built["kernels"][item["kernel"]]["name"]
                    == self.stage.kernel)
        u = iter(self.sample)
        job["blocks"] = [list(b) for b in dict.fromkeys(
            (int(next(u) * max(1, grid[0] - 1)), int(next(u) * max(1, grid[1] - 1)), 0) for _ in range(2))]
        lim, t = self.cfg["limits"], self.tile or 16
        steps = len(job["blocks"]) * len(launches) * (1 + math.ceil(shape[1] / t)) * max(1.0, (t / 16) ** 2)
        timeout = min(lim["check_timeout_s"], lim["sim_start_s"] + lim["sim_work_factor"] * steps * lim["sim_block_step_s"])
        return self.run(job, inputs, (), timeout, "the sampled simulator run at the graded size", True)

    def sim_job(self, shapes, **extra):
        """(job, "") of a simulator child that runs the build's checked plans of `shapes` with the module's kernels
        looked up by name (the launcher never runs there), or (None, why it cannot run). Waits for the build."""
        job, why = self.runner_job("run", shapes, **extra)
        if why:
            return None, why
        names = [spec["name"] for spec in job.pop("kernels")]
        for key in ("task", "device", "kernel"):
            job.pop(key)
        return self.job("run", "sim", kernels=names, **job), ""

    # -- the build: the one child that runs the launcher ----------------------
    def build_child(self):
        """The build child: it imports the module (with no GPU), records the launcher's launch plan at every shape of
        build_shapes and compiles every kernel launched to PTX for build_cc. Its report is checked here
        (sandbox/plan.py); the compile check's barrier and shared-array facts are read from the stage kernel's PTX
        by the parent. Every other child of the stage runs these plans: the GPU runners from the PTX, the simulator
        with the module's kernels looked up by name. Returns the compile check's child result."""
        shapes = self.build_shapes()
        job = self.job("build", "ptx", cc=self.build_cc(), shapes=shapes)
        result = self.run(job, None, (), self.cfg["limits"]["sim_start_s"], "the build of the kernels")
        facts = result.facts
        missing = facts.get("compiler_missing") if not child_problem(result) else None
        if missing and not self.runs_uncompiled:
            result.problem = grader(f"{NO_COMPILER}: {missing}")
            return result
        if child_problem(result) or not facts.get("is_cuda_kernel") or ("compile_error" in facts and not missing):
            return result
        plans, problem = check_build(facts, shapes, self.stage.kernel, compiled=not missing)
        if problem:
            result.facts = {}
            result.problem = problem
            return result
        kernels = facts.pop("kernels")
        facts.pop("plans")
        self.built = {"kernels": kernels, "plans": {tuple(s): p for s, p in zip(shapes, plans)}}
        if missing:  # the simulator runs the plans; no PTX to judge: the grader's machine lacks the compiler
            result.problem = grader(f"{NO_COMPILER}: {missing}")
        else:
            facts.update(ptx_facts(kernels[0]["ptx"]))  # the parent's own reading of the stage kernel
        return result

    def build_alone(self):
        """Build now, in this thread: for a check run on its own (tools/verify_gpu.py times speed alone)."""
        from concurrent.futures import Future
        done = Future()
        done.set_result(self.build_child())
        self.futures["compile"] = done
        return done.result()

    def instruments_alone(self):
        """Build, then the instrumented simulator run, in this thread: for the instruments judged on their own (the
        self-check's agreement tests)."""
        self.build_alone()
        return self.run_instruments(self.draw([self.instrument_shape()]))

    def runner_job(self, task, shapes, **extra):
        """(job, "") of a child that launches the checked plans of `shapes`, or (None, why it cannot run). Waits for
        the build child. A timing runner gets the launches of its size (and of the leaderboard's, the second shape),
        which must exist."""
        compiled = self.futures["compile"].result()
        if self.built is None:
            fault, rejected = grader_fault(compiled), compiles.rejected(compiled)
            if fault:
                return None, depends_on("the build of the kernels", fault)
            if rejected:  # the simulator would run as Python what no GPU can run: nothing runs
                return None, compiles.not_run_rejected(rejected)
            problem = child_problem(compiled)
            return None, ("the kernels were not built (see the compile check)" + (
                f": {problem.splitlines()[0][:300]}" if problem else ""))
        plans = [self.built["plans"][tuple(int(v) for v in s)] for s in shapes]
        job = {"task": task, "device": "gpu", "kernel": self.stage.kernel, "kernels": self.built["kernels"], **extra}
        if task != "speed":
            job["plans"] = plans
            return job, ""
        for shape, plan in zip(shapes, plans):
            if "error" in plan:
                return None, f"the launcher failed at N={shape[0]}: {plan['error']['message']}"
        job["plan"] = plans[0]["launches"]
        if len(plans) > 1:
            job["leaderboard"] = {**job["leaderboard"], "plan": plans[1]["launches"]}
        return job, ""

    def instrument_keys(self):
        """The checks judged from the simulator's instruments in this tier."""
        return [k for k in INSTRUMENT_CHECKS if k in self.points]

    def tool_count(self):
        """How many GPU tools (racecheck, ncu) this stage runs (the longest children of a grade)."""
        return 0

    @staticmethod
    def not_run(why):
        """A child result for a check not run because of `why` (passed on as it is where it is the grader's own)."""
        return sandbox.ChildResult(problem=why if fault_of(why) is Fault.GRADER else keep(why, "not run: " + why))

    # -- judging ------------------------------------------------------------
    def judge(self, futures):
        """Every check of the stage, in report order; call once the children started may be waited for."""
        if self.src.unreadable:  # the stage's only file could not be read (autograder/submission.py says why)
            return self.failed_all(self.src.unreadable)
        if self.deleted:
            name = os.path.basename(self.src.path)
            return self.failed_all("; ".join(f"the graded cell `{d}` is missing from {name}" for d in self.deleted)
                                   + ": it was deleted. Copy it back from the released notebook (the code cell under "
                                   "its heading, with the TODO to fill in): every graded cell must stay")
        if self.stubs:
            return self.judge_stubs()
        if self.findings:
            return self.judge_zeroed()
        compiled = self.compile_facts(futures)
        compile_check = compiles.judge(self, compiled)
        checks = []
        if self.stage.tiled:
            checks.append(shared_memory.judge(self, compiled))
        groups = [k for k in futures if k.startswith("correct:")]
        for key in groups:
            future, inputs = futures[key]
            checks.append(correct.judge(self, key.split(":", 1)[1], future.result(), inputs, len(groups)))
        if "instruments" in futures:
            small = self.judge_instruments(futures["instruments"].result())
            if "sampled" in futures:
                graded = self.judge_instruments(futures["sampled"].result(), self.sampled_inputs, sampled=True)
                small = [both(a, b, self.sampled_shape) for a, b in zip(small, graded)]
            checks.extend(small)
        checks.extend(self.tier_checks(futures))
        return [compile_check, self.shortcut] + checks

    def compile_facts(self, futures):
        """The compile check's child result."""
        return futures["compile"].result()

    def judge_stubs(self):
        return self.failed_all(f"not implemented yet: {' and '.join(self.stubs)} still "
                               f"{'raises' if len(self.stubs) == 1 else 'raise'} NotImplementedError")

    def judge_zeroed(self):
        """A stage the kernel-module grammar zeroed: no child ran; every check fails, saying why."""
        return self.failed_all(f"not run: the module holds what a kernel module may not (see "
                               f"'{title(self, 'shortcuts')}'), so the whole stage scores 0")

    def failed_all(self, why):
        """Every check of the stage failed with `why`, in the rows and order of a graded stage (the grammar's
        verdict stays as judged); in the simulator speed stays a visible skip."""
        def failed(key, group=None, share=1.0):
            return self.check(key, title(self, key, group), share).verdict(False, why)
        checks = [failed("compiles"), self.shortcut]
        if self.stage.tiled and "shared_memory" in self.points:
            checks.append(failed("shared_memory"))
        groups = list(self.shape_groups())
        checks += [failed("correct", group, 1.0 / len(groups)) for group in groups]
        checks += [failed(key) for key in self.instrument_keys()]
        return checks + self.tier_rows(failed)

    def judge_instruments(self, result, inputs=None, sampled=False):
        """The instrument checks from the instrumented run's `result`; its C is checked against `inputs` (default: those
        of run_instruments), and a wrong product voids every counter. `sampled`: the run of a few blocks of the timed
        size's grid (run_sampled), whose written elements alone are checked."""
        problem = child_problem(result)
        if grader_fault(result):  # the grader's own trouble: each instrument check counts neither way
            return [self.check(key, title(self, key)).verdict(False, problem) for key in self.instrument_keys()]
        shape_facts = result.facts.get("shapes", [{}])[0] if not problem else {}
        if not problem and "error" in shape_facts:
            problem = explain_error(shape_facts["error"])
        inputs = inputs or getattr(self, "instrument_inputs", None)
        wrong = ""
        if not problem and "instruments" in shape_facts and inputs and sampled:
            wrong = correct.sampled_product(result.arrays.get("C0"), inputs["A0"], inputs["B0"], self.tol,
                                            shape_facts.get("writes_past_end", 0), shape_facts["instruments"])
        elif not problem and "instruments" in shape_facts and inputs:  # a wrong product's counters count for nothing
            wrong = correct.instrumented_product(result.arrays.get("C0"), inputs["A0"], inputs["B0"], self.tol,
                                                 self.tile, shape_facts.get("writes_past_end", 0),
                                                 shape_facts["instruments"])
        checks = []
        for key in self.instrument_keys():
            judge = SIM_JUDGES[key]
            check = self.check(key, title(self, key))
            if problem or "instruments" not in shape_facts:
                checks.append(check.verdict(False, keep(problem, "not checked: the instrumented run failed: "
                                                         + (problem or "no facts"))))
                continue
            if wrong:
                checks.append(check.verdict(False, wrong))
                continue
            facts = shape_facts["instruments"]
            if key == "data_reuse":
                structure = self.cfg["structure"]
                note = getattr(self, "tile_note", "")
                passed, message = data_reuse.judge_sim(facts, self.tile or structure["tiles"][0],
                                                       structure["reuse_fraction"], tile_known=not note)
                checks.append(check.verdict(passed, message + (f" ({note})" if note else "")))
            else:
                checks.append(check.verdict(*judge(facts)))
        return checks


def both(small, graded, shape):
    """One instrument check from the drawn small run (`small`: partial tiles at every edge) and the sampled run at the
    graded size (`graded`, at `shape`): it passes only where both do; a failure or a skip of either is its verdict."""
    if small.status != "passed":
        return small
    if graded.status == "passed":
        small.output += "\nAt the graded size too: " + graded.output
        return small
    if graded.status == "failed":
        graded.output = (f"at M x K x N = {' x '.join(map(str, shape))} (the timed size's grid), in blocks the grader "
                         "drew: " + graded.output)
    return graded


class SimStageGrader(StageGrader):
    """The simulator tier: every child imports the module (the grammar is this tier's defence); kernels run in
    Numba's simulator, a PTX compile stands for the GPU compiler, and speed is a visible skip."""

    def shape_groups(self):
        return self.stage.sim_shape_groups(self.tile or 16)

    runs_uncompiled = True  # where the grading machine has no CUDA compiler, the simulator still runs the plans

    def compile_child(self):
        return self.build_child()

    def build_cc(self):
        return self.cfg["grading"]["compute_capability"]

    def build_shapes(self):
        """Every (M, K, N) a simulator child of this stage runs."""
        shapes = [s for group in self.shape_groups().values() for s in group]
        if self.instrument_keys():
            shapes += [self.instrument_shape()] + ([self.sampled_shape] if self.sampled_shape else [])
        return [list(s) for s in dict.fromkeys(tuple(int(v) for v in s) for s in shapes)]

    def correctness_job(self, shapes):
        return self.sim_job(shapes, count=len(shapes))

    def run_timeout(self, shapes):
        return self.sim_timeout(shapes)

    def after_start(self, shapes):
        return None  # the simulator's limit covers start and work together

    def start_tier_checks(self, futures, waiting):
        pass

    def tier_checks(self, futures):
        return [speed.not_timed(self)] if "speed" in self.points else []

    def tier_rows(self, failed):
        return self.tier_checks({})


class GpuStageGrader(StageGrader):
    """The GPU tier: one build child imports the module (with no GPU) and turns it into PTX and launch plans; the
    runners (correctness, compute-sanitizer, ncu, timing) never import it."""

    runs_uncompiled = False  # no PTX, nothing a GPU runner can load

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # racecheck's size, drawn now (the planning thread) from the grade's secret generator: at least 256
        from ..gpu.tools import racecheck_shape
        rng = self.rng if self.rng is not None else np.random.default_rng()
        self.racecheck_shape = racecheck_shape(self.stage, self.tile or 16, rng) if "races" in self.points else None

    def shape_groups(self):
        return self.stage.gpu_shape_groups(self.tile or 16)

    def compile_child(self):
        return self.build_child()

    def build_cc(self):
        from ..gpu.tools import compute_capability
        return compute_capability(self.cfg["grading"]["compute_capability"])

    def build_shapes(self):
        """Every (M, K, N) a GPU runner of this stage launches: the correctness shapes, the GPU tools' sizes, the speed
        and leaderboard sizes."""
        shapes = [s for group in self.shape_groups().values() for s in group]
        from ..gpu.tools import tool_shapes
        shapes += tool_shapes(self)
        if "speed" in self.points:
            shapes.append((self.cfg["speed"]["n"],) * 3)
            if self.stage.challenge and self.cfg["speed"]["leaderboard_n"]:
                shapes.append((self.cfg["speed"]["leaderboard_n"],) * 3)
        return [list(s) for s in dict.fromkeys(tuple(int(v) for v in s) for s in shapes)]

    def correctness_job(self, shapes):
        return self.runner_job("run", shapes, count=len(shapes))

    def run_timeout(self, shapes):
        return self.work_timeout(sum(2.0 * M * K * N for M, K, N in shapes))

    def after_start(self, shapes):
        """Seconds a correctness runner has left once its kernels are loaded and about to run."""
        lim = self.cfg["limits"]
        flops = sum(2.0 * M * K * N for M, K, N in shapes)
        return lim["after_start_s"] + lim["work_factor"] * flops / (lim["reference_tflops"] * 1e12)

    def tool_count(self):
        from ..gpu.tools import NCU_KEYS
        return ("races" in self.points) + any(key in self.points for key in NCU_KEYS)

    def instrument_keys(self):
        """None: races, bank conflicts and data reuse come from the GPU tools, at sizes that are graded (gpu/tools.py)."""
        return []

    def start_tier_checks(self, futures, waiting):
        from ..gpu.tools import tool_tasks
        futures.update(tool_tasks(self, waiting))
        if "speed" in self.points:
            speed.start(self, waiting)

    def compile_facts(self, futures):
        """The build child's result, with the registers as a correctness runner's driver loaded the stage kernel."""
        compiled = futures["compile"].result()
        for key in (k for k in futures if k.startswith("correct:")):
            loaded = futures[key][0].result().facts.get("kernel")
            if loaded:
                compiled.facts = {**compiled.facts, "registers": loaded["registers"]}
                break
        return compiled

    def tier_checks(self, futures):
        """The GPU-only checks; call when no other child uses the GPU (speed is timed)."""
        from ..gpu.tools import tool_verdict
        checks = []
        for key in (k for k in ("races", "bank_conflicts", "data_reuse") if k in self.points):
            check, gate = self.check(key, title(self, key)), self.gate_reason(key)
            checks.append(check.verdict(False, gate) if gate else tool_verdict(self, key, futures, check))
        if "speed" in self.points:
            checks.append(speed.judge(self))
        return checks

    def tier_rows(self, failed):
        return [failed(key) for key in ("races", "bank_conflicts", "data_reuse", "speed") if key in self.points]
