"""Trusted parent side: the build, the one child that runs the student's launcher (with no GPU), and the jobs of the
children that run the plan it recorded: GPU runners from its PTX, simulator children with the module's kernels looked
up by name (the instrumented runs among them). What every tier runs is what the build compiled."""
from ..checks import compiles
from ..checks import child_problem, depends_on, grader_fault
from ..outcome import grader
from ..ptx import facts as ptx_facts
from ..sandbox.plan import check_build
from .report import NO_COMPILER
from . import sampling

class Plans:
    """The build-and-plan half of a StageGrader (engine/stage.py)."""

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
        if missing and (not self.runs_uncompiled or not facts.get("is_cuda_kernel")):  # no compiler and no plan
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
        """Build now, in this thread: for a check run on its own (tools/verify_gpu/ times speed alone)."""
        from concurrent.futures import Future
        done = Future()
        done.set_result(self.build_child())
        self.futures["compile"] = done
        return done.result()

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

    def late_runner(self, shapes, refused, what="runner"):
        """(job, turn) of a GPU runner that starts before the build ends (its start and a CUDA context take about a
        second): the turn waits for the build and gives the runner the kernels and plans of `shapes` with its
        "go". Where the build gives no plan, the turn refuses and `refused["why"]` says why."""
        job = {"task": "run", "device": "gpu", "kernel": self.stage.kernel, "count": len(shapes), "late": True}

        def given(ready):
            ran, why = self.runner_job("run", shapes, count=len(shapes))  # waits for the build
            if why:
                refused["why"] = why
                return "not run: " + why
            if not ready(self.cfg["limits"]["gpu_start_s"]):
                return grader(f"not gradable: the {what} did not start in time")
            return {"kernels": ran["kernels"], "plans": ran["plans"]}
        return job, given

    def plans_of(self, shapes):
        """The build's launches at each of `shapes` (for the time limits that follow them); [] where none."""
        plans = (self.built or {}).get("plans", {})
        return [plans.get(tuple(int(v) for v in s), {}).get("launches", []) for s in shapes]

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

    def run_instruments(self, inputs):
        """The instrumented simulator run of the build's plan at the drawn shape (waits for the build); its C is
        checked too (judge_instruments)."""
        self.instrument_inputs = inputs
        shape = self.instrument_shape()
        job, why = self.sim_job([shape], count=1, instrument=True)
        if why:
            return self.not_run(why)
        return self.run(job, inputs, (), self.sim_timeout([shape], self.plans_of([shape])),
                        "the instrumented simulator run", True)

    def run_structure(self, inputs, sampled_inputs):
        """[the instrumented run's result, the sampled run's result] of one simulator child (one start-up, not two)
        that replays the build's plans instrumented at the drawn shape and then at the timed size's grid
        (sampled_shape), where it runs a few blocks of each launch drawn from the grade's secret generator
        (engine/sampling.py): blocks are independent, so the loads per output, the races and the bank conflicts of a
        block are exact on a sample, and structure is judged at the size that is graded. The kernel sees the whole
        grid; a block that reads what another block writes is a fault of its own (sim/writes.py). A cheap launch
        laid over C otherwise (C zeroed by a flat 1-D grid) also runs the blocks that write the parts of C the drawn
        points stand for (sim/cover.py). Its time limit follows the work each drawn block does, and that cover's.
        Waits for the build."""
        self.instrument_inputs, self.sampled_inputs = inputs, sampled_inputs
        small, graded = self.instrument_shape(), self.sampled_shape
        job, why = self.sim_job([small, graded], count=2, instrument=True)
        if why:
            return [self.not_run(why)] * 2
        launches = self.built["plans"][tuple(graded)].get("launches", [])  # none: the child says the plan's error
        blocks_of, steps = sampling.draw(launches, graded, self.tile, self.sample)
        rects = sampling.parts(launches, graded, blocks_of)
        cover = sampling.cover_steps(launches, graded, self.tile, rects)
        job["blocks_of"] = [None, blocks_of]
        job["cover"] = {"parts": rects, "steps": cover}
        steps += sum(cover) if len(launches) > 1 else 0   # a launch besides the product may be a cheap one
        lim = self.cfg["limits"]
        timeout = min(lim["check_timeout_s"], self.sim_timeout([small], self.plans_of([small]))
                      + lim["sim_work_factor"] * steps * lim["sim_block_step_s"])
        both = {"A0": inputs["A0"], "B0": inputs["B0"], "A1": sampled_inputs["A0"], "B1": sampled_inputs["B0"]}
        result = self.run(job, both, (), timeout, "the instrumented simulator runs", True)
        return [_one_shape(result, i) for i in (0, 1)]

    def instruments_alone(self):
        """Build, then the instrumented simulator run, in this thread: for the instruments judged on their own (the
        self-check's agreement tests)."""
        self.build_alone()
        return self.run_instruments(self.draw([self.instrument_shape()]))


def _one_shape(result, i):
    """Shape i's view of a child result of several shapes: its facts and its C as those of a child of one shape (a
    problem of the child is every shape's)."""
    from dataclasses import replace
    facts = result.facts if isinstance(result.facts, dict) else {}
    arrays = {"C0": result.arrays[f"C{i}"]} if f"C{i}" in result.arrays else {}
    return replace(result, facts={**facts, "shapes": facts.get("shapes", [])[i:i + 1]}, arrays=arrays)
