"""Trusted parent side: start one stage's children, wait for them, and say whose stop it was: a child that ran past
its limit stops the stage's others after a grace (fail fast); a correctness child that ended early is run again for
the groups it did not reach. Nothing here imports student code: each child is sandboxed (autograder/sandbox)."""
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor


from .. import sandbox
from ..checks import shortcuts
from ..outcome import Fault, fault_of, keep, time_limit
from ..scan import unimplemented
from ..submission import function_names, missing_graded_cells

class _Cut:
    """The `cancel` of one child (sandbox.run_child polls is_set): set once another child of the stage ran out of
    time and this one has had `grace` seconds of work since then. Its work begins when it says a shape began
    (run_child calls begun()): its start-up (imports, a CUDA context: slow on a loaded machine) is bounded by
    `start` seconds and not counted in the grace, so an honest group is not cut short for another's sake."""

    def __init__(self, grader, grace, start, gated=False):
        self.grader, self.grace, self.start, self.gated = grader, grace, start, gated
        self.started, self.working = time.monotonic(), None

    def begun(self):
        if self.working is None:
            self.working = time.monotonic()

    def is_set(self):
        at = self.grader.timeout_at
        if at is not None and not self.grace:  # a later check (instruments, GPU tools): stopped at once
            return True
        if self.gated and self.grader.gate_closed_now():  # a GPU tool whose verdict cannot count any more
            return True
        since = self.working if self.working is not None else self.started + self.start
        return at is not None and time.monotonic() > max(at, since) + self.grace


class _AnyCut:
    """The `cancel` of a child several stages share (one ncu run for a grade): set once any of theirs is."""

    def __init__(self, cuts):
        self.cuts = cuts

    def begun(self):
        for cut in self.cuts:
            cut.begun()

    def is_set(self):
        return any(cut.is_set() for cut in self.cuts)


class _Part:
    """One part's view of a child's future (a group of the correctness child, one of the instrumented runs): the
    engine and the judges wait on it alone."""

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


class Children:
    """The children half of a StageGrader (engine/stage.py)."""

    def run(self, job, inputs=None, wrapper=(), timeout=None, what="a check", later=False, turn=None, work=None,
            shared_with=(), watch=None, cut=None):
        """Run one child of this stage. After a child of the stage ran out of time, a `later` check (the
        instruments, the GPU tools; speed is gated in gate_reason) is not run, or is stopped at once where it
        runs (its verdict would be "not run" anyway), and every other child still running or yet to start gets
        at most sibling_grace_s more: a correct kernel's child needs far less, a kernel that never ends costs
        one derived limit per stage, not one per child. `work`: seconds the child has left once it says its
        kernels are about to run (sandbox.run_child). `shared_with`: the other stages' graders whose work the
        child also does (gpu/ncu_together.py: one ncu run for a grade); any of their time-outs stops it, and its own
        time-out is none of theirs: the caller runs their parts again, each on its own. `watch`: a LogWatch that
        stops a tool's child once its log decides (its `fired`)."""
        limits = self.sim_limits if job["device"] == "sim" else self.gpu_limits
        if later and any(g.timed_out for g in (self, *shared_with)):
            why = next(g.timed_out for g in (self, *shared_with) if g.timed_out)
            return sandbox.ChildResult(problem=time_limit(f"not run: {why}"), cancelled=True)
        dirs = ()
        if job["device"] == "gpu" and job["task"] in ("speed", "speed_parts") and self.grader_kernels:
            # bound from the start; the child loads from it only after its first go (engine/timing.py waits)
            dirs = ((self.grader_kernels.folder, "grader", False),)
        if job.get("tool_tmp"):  # the GPU's folder for ncu's own lock file (gpu/tools.ToolTurn), the tool's TMPDIR
            dirs += ((job["tool_tmp"], "tool_tmp", True),)
        began = time.monotonic()
        grace = 0.0 if later else self.cfg["limits"]["sibling_grace_s"]
        start = limits["sim_start_s" if job["device"] == "sim" else "gpu_start_s"]
        # a stage's own GPU tool run stops once the stage's correctness failed: its verdict would be "not run" (racecheck
        # on a racy kernel reports for half a minute); a run several stages share goes on for the others
        gated = later and bool(wrapper) and not shared_with
        cut = cut if cut is not None else _AnyCut([_Cut(g, grace, start, gated) for g in (self, *shared_with)])
        cut = watch.around(cut) if watch is not None else cut
        result = sandbox.run_child(job, limits, inputs, wrapper, min(timeout or math.inf, limits["check_timeout_s"]),
                                   cut, turn, work, dirs)
        task = result.facts.get("seconds") if isinstance(result.facts.get("seconds"), (int, float)) else None
        self.children.append({"task": job["task"] if not wrapper else "gpu tool", "wall_s": result.seconds,
                              "tool": os.path.basename(wrapper[0]) if wrapper else None,
                              "work_s": task, "stage": self.stage.name, "what": what, "began": began,
                              "cpu_s": result.facts.get("cpu_s") if not wrapper else None,
                              "profile": {k: result.facts[k] for k in ("phases", "cuda_init_s", "clock_s",
                                                                         "kernels_loaded", "kernels_compiled")
                                          if k in result.facts}})
        with self._timeout_lock:
            if (fault_of(result.problem) is Fault.TIME_LIMIT and result.timed_out and not self.timed_out
                    and not shared_with):
                # the student's limit alone: a process stuck in the driver after its kill is the grader's
                self.timed_out = f"{what} of this stage did not finish within its {result.seconds:.0f} s limit"
                self.timeout_at = time.monotonic()
        return result

    def run_correctness(self, groups, drawn):
        """{group: ChildResult} of the correctness check: every group's shapes in one child, in order.

        One group must not cost another its points. Where a child ended before every group had its result (a
        CUDA error that poisons the process, a kernel that never ends, a crash), the group it was working on
        (the child says when it starts each shape) keeps that result, and each group without one runs again in a
        fresh child of its own, all of them at once: after a timeout they have only the stage's sibling grace (fail
        fast), so a kernel that never ends costs one limit and one round beside each other, not one limit per group
        (on an H100 three groups one after another took 19 s of a hanging submission's GPU time), and a group that
        passes is never cut short for a later group's sake."""
        first = self.together_round.result() if getattr(self, "together_round", None) is not None else None
        # the grade's one runner (engine/together.py) brought this stage's first round, or the stage runs its own
        results, left = first if first is not None else self._correctness_child(groups, drawn, list(groups))
        while left:
            if len(left) == 1:
                more, left = self._correctness_child(groups, drawn, left)
                results.update(more)
                continue
            with ThreadPoolExecutor(len(left)) as pool:
                outcomes = list(pool.map(lambda g: self._correctness_child(groups, drawn, [g]), left))
            left = [g for _, rest in outcomes for g in rest]
            for more, _ in outcomes:
                results.update(more)
        return results

    def _correctness_child(self, groups, drawn, todo):
        """({group: ChildResult} it decided, [groups it left to run again]) of one correctness child running the
        shapes of `todo`'s groups in order."""
        results = {}
        shapes = [s for g in todo for s in groups[g]]
        inputs, spans, i = {}, {}, 0
        for g in todo:
            spans[g] = (i, i + len(groups[g]))
            for j in range(len(groups[g])):
                inputs[f"A{i}"], inputs[f"B{i}"] = drawn[g][f"A{j}"], drawn[g][f"B{j}"]
                i += 1
        what = ("the correctness check" if len(todo) > 1 else f"the correctness check '{todo[0]}'")
        refused, turn = {}, None
        if self.runners_start_early:  # a GPU runner: started beside the build, its plans with its "go"
            job, turn = self.late_runner(shapes, refused, "correctness runner")
        else:
            job, why = self.correctness_job(shapes)
            if why:
                return {g: self.not_run(why) for g in todo}, []
        result = self.run(job, inputs, (), self.run_timeout(shapes), what, False, turn, self.after_start(shapes))
        if "why" in refused:
            return {g: self.not_run(refused["why"]) for g in todo}, []
        done = len(result.facts.get("shapes", []))
        # the shape it stopped on: the last one it ran (a CUDA or launch error ends the child's loop) or, where
        # it was killed, the last one it said it started
        at = result.started - 1 if result.problem else (done - 1 if done < len(shapes) else len(shapes))
        if at < 0 or result.cancelled or not 0 <= at <= len(shapes):
            # nothing ran (an import error, no sandbox, a crash before the first shape), it was stopped because the
            # stage ran out of time, or it said a count it could not have reached: the same for all that are left
            return {g: result for g in todo}, []
        left = []
        for g in todo:
            first, end = spans[g]
            if first <= at < end:
                results[g] = _slice(result, first, end, problem=True)  # the group it stopped on
            elif end <= at and not result.problem:
                results[g] = _slice(result, first, end, problem=False)
            else:
                left.append(g)  # after it, or its results lost with the child: run again
        return results, left

    @staticmethod
    def not_run(why):
        """A child result for a check not run because of `why` (passed on as it is where it is the grader's own)."""
        return sandbox.ChildResult(problem=why if fault_of(why) is Fault.GRADER else keep(why, "not run: " + why))

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
        correct_together = getattr(self, "correct_together", None)
        if correct_together is not None and self.runners_start_early:  # the grade's one runner (engine/together.py)
            self.together_round = correct_together.join(self, groups, drawn)
        together = pool.submit(self.run_correctness, groups, drawn)
        for group in groups:
            futures["correct:" + group] = (_Part(together, group), drawn[group])
        if self.instrument_keys() and self.sampled_shape:  # both instrumented runs in one child (run_structure)
            both = pool.submit(self.run_structure, self.draw([self.instrument_shape()]),
                               self.draw([self.sampled_shape]))
            futures["instruments"], futures["sampled"] = _Part(both, 0), _Part(both, 1)
        elif self.instrument_keys():
            futures["instruments"] = pool.submit(self.run_instruments, self.draw([self.instrument_shape()]))
        self.start_tier_checks(futures, waiting)
        return futures

    def start_tier_checks(self, futures, waiting):
        """The checks only this tier runs (a GPU's tools and timing), started beside correctness."""
