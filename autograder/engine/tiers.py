"""Trusted parent side: the two tiers a stage is graded in. The simulator tier runs the build's plans in Numba's
simulator (a PTX compile stands for the GPU compiler; speed is a visible skip); the GPU tier runs them from PTX in
runners that never import student code, with compute-sanitizer, ncu and the timing child."""

import numpy as np

from ..checks import speed
from . import timing
from ..checks.titles import title
from .judge import Later
from .stage import TIERS, StageGrader


class SimStageGrader(StageGrader):
    """The simulator tier: every child imports the module (the grammar is this tier's defence); kernels run in
    Numba's simulator, a PTX compile stands for the GPU compiler, and speed is a visible skip."""

    def shape_groups(self):
        return self.stage.sim_shape_groups(self.tile or 16)

    runs_uncompiled = True  # where the grading machine has no CUDA compiler, the simulator still runs the plans
    runners_start_early = False  # a simulator child imports the module: it starts once the build gave its plans

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
        return self.sim_timeout(shapes, self.plans_of(shapes))

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
    runners_start_early = True  # the correctness runners start beside the build (Plans.late_runner)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # racecheck's size, drawn now (the planning thread) from the grade's secret generator: at least 256
        from ..gpu.tools import racecheck_shapes
        rng = self.rng if self.rng is not None else np.random.default_rng()
        self.racecheck_shapes = racecheck_shapes(self.stage, self.tile or 16, rng) if "races" in self.points else []
        self.racecheck_shape = self.racecheck_shapes[0] if self.racecheck_shapes else None

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

    def start_rank(self):
        """The stages with GPU tools first: their children (compute-sanitizer, ncu) end last."""
        return -self.tool_count()

    def instrument_keys(self):
        """None: races, bank conflicts and data reuse come from the GPU tools, at sizes that are graded (gpu/tools.py)."""
        return []

    def start_tier_checks(self, futures, waiting):
        from ..gpu.tools import tool_tasks
        futures.update(tool_tasks(self, waiting))
        if "speed" in self.points and getattr(self, "timing_together", None) is not None:
            self.timing_together.join(self)  # the grade's one timing child (engine/timing_together.py)
        elif "speed" in self.points:
            timing.start(self, waiting)

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
        def tool(key):
            check, gate = self.check(key, title(self, key)), self.gate_reason(key)
            return check.verdict(False, gate) if gate else tool_verdict(self, key, futures, check)
        for key in (k for k in ("races", "bank_conflicts", "data_reuse") if k in self.points):
            checks.append(Later(lambda key=key: tool(key)))
        if "speed" in self.points:
            checks.append(Later(lambda: timing.judge(self)))
        return checks

    def tier_rows(self, failed):
        return [failed(key) for key in ("races", "bank_conflicts", "data_reuse", "speed") if key in self.points]


TIERS.update(sim=SimStageGrader, gpu=GpuStageGrader)
