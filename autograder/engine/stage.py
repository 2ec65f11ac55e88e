"""Trusted parent side: plan the checks of one stage, start their children, judge what comes back.

Nothing here imports student code. Each check's untrusted work runs in its
own sandboxed child (autograder/sandbox); a crash, exit, hang or CUDA error
there fails that check alone. The judging itself is in autograder/checks/.
"""
import ast
import os

import numpy as np

from .. import sandbox
from ..checks import bank_conflicts, compiles, correct, data_reuse, races, shared_memory, shortcuts, speed
from ..checks.correct import explain_error
from ..checks import child_problem
from ..scan import unimplemented
from ..stages import INSTRUMENT_CHECKS
from .report import Check

CHECK_NAMES = {"compiles": "{kernel} compiles for the GPU", "shared_memory": "shared-memory tiles and barriers",
               "correct": "correct results", "races": "no shared-memory races",
               "bank_conflicts": "no shared-memory bank conflicts", "data_reuse": "data reuse", "speed": "speed"}
SIM_JUDGES = {"races": (races.SIM_NAME, races.judge_sim),
              "bank_conflicts": (bank_conflicts.SIM_NAME, bank_conflicts.judge_sim),
              "data_reuse": (data_reuse.NAME, None)}


def module_constant(source, name):
    """An int assigned at module level (TILE = 16), read from the syntax tree, or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    value = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
    return value if isinstance(value, int) else None


class StageGrader:
    """The checks of one stage of one submission: `tasks` starts the children, `judge` scores their facts."""

    def __init__(self, src, device, cfg, rng, workdir):
        self.src, self.stage, self.device, self.cfg, self.rng = src, src.stage, device, cfg, rng
        self.points = cfg["stages"][self.stage.name]["points"]
        self.tol = cfg["grading"]["relative_error"]
        self.tile = module_constant(src.source, "TILE")
        self.module_path = os.path.join(workdir, self.stage.filename)
        with open(self.module_path, "w", encoding="utf-8") as f:
            f.write(src.source)
        limits = dict(cfg["limits"])
        self.gpu_limits = limits
        self.sim_limits = {**limits, "address_space_bytes": limits["sim_address_space_bytes"]}

    def check(self, key, name, share=1.0):
        return Check(self.stage.name, key, name, self.points.get(key, 0) * share)

    def job(self, task, device, **extra):
        return {"task": task, "device": device, "module": self.stage.module, "module_path": self.module_path,
                "kernel": self.stage.kernel, "launcher": self.stage.launcher, **extra}

    def run(self, job, inputs=None, wrapper=(), timeout=None):
        limits = self.sim_limits if job["device"] == "sim" else self.gpu_limits
        return sandbox.run_child(job, limits, inputs, wrapper, timeout)

    def draw(self, shapes):
        """Fresh random inputs {A0, B0, A1, ...} for (M, K, N) shapes, from this grade's secret generator."""
        inputs = {}
        for i, (M, K, N) in enumerate(shapes):
            inputs[f"A{i}"] = self.rng.standard_normal((M, K)).astype(np.float32)
            inputs[f"B{i}"] = self.rng.standard_normal((K, N)).astype(np.float32)
        return inputs

    # -- planning ---------------------------------------------------------
    def shape_groups(self):
        tile = self.tile or 16
        if self.device == "gpu":
            return self.stage.gpu_shape_groups(tile)
        return self.stage.sim_shape_groups(tile)

    def tasks(self, pool):
        """Start every child this stage needs; return {name: future}."""
        self.stubs = unimplemented(self.src.source, (self.stage.kernel, self.stage.launcher))
        self.shortcut, self.findings = shortcuts.judge(self)
        if self.stubs or self.findings:  # nothing to learn from running it: no children
            return {}
        cc = self.cfg["grading"]["compute_capability"]
        compile_device = "gpu" if self.device == "gpu" else "ptx"
        futures = {"compile": pool.submit(self.run, self.job("compile", compile_device, cc=cc))}
        for group, shapes in self.shape_groups().items():
            inputs = self.draw(shapes)
            futures["correct:" + group] = (pool.submit(self.run, self.job("run", self.device, count=len(shapes)),
                                                       inputs), inputs)
        if self.sim_instrument_keys():
            futures["instruments"] = pool.submit(self.run, *self.instrument_job())
        if self.device == "gpu":
            from ..gpu.tools import tool_tasks
            futures.update(tool_tasks(self, pool))
        return futures

    def instrument_job(self):
        """(job, inputs) of the instrumented simulator run, at the shape the self-check uses too."""
        shape = self.stage.instrument_shape(self.tile or 16, [k for k in INSTRUMENT_CHECKS if k in self.points])
        return self.job("run", "sim", count=1, instrument=True), self.draw([shape])

    def sim_instrument_keys(self):
        """The checks judged from the simulator's instruments in this tier (the GPU tier uses its tools for races
        and bank conflicts)."""
        keys = [k for k in INSTRUMENT_CHECKS if k in self.points]
        return [k for k in keys if k == "data_reuse"] if self.device == "gpu" else keys

    # -- judging ------------------------------------------------------------
    def judge(self, futures):
        """Every check of the stage, in report order; call once the children of `tasks` may be waited for."""
        if self.stubs:
            return self.judge_stubs()
        if self.findings:
            return self.judge_zeroed()
        compiled = futures["compile"].result()
        compile_check = compiles.judge(self, compiled)
        checks = []
        if self.stage.tiled:
            checks.append(shared_memory.judge(self, compiled))
        groups = [k for k in futures if k.startswith("correct:")]
        for key in groups:
            future, inputs = futures[key]
            checks.append(correct.judge(self, key.split(":", 1)[1], future.result(), inputs, len(groups)))
        if "instruments" in futures:
            checks.extend(self.judge_instruments(futures["instruments"].result()))
        checks.extend(self.gpu_checks(compile_check, futures) if self.device == "gpu" else self.sim_only_checks())
        return [compile_check, self.shortcut] + checks

    def judge_stubs(self):
        why = (f"not implemented yet: {' and '.join(self.stubs)} still "
               f"{'raises' if len(self.stubs) == 1 else 'raise'} NotImplementedError")
        checks = [self.check(key, CHECK_NAMES[key].format(kernel=self.stage.kernel)).verdict(False, why)
                  for key in self.points if key != "speed"]
        if self.device == "sim":
            return checks + self.sim_only_checks()
        return checks + ([self.check("speed", "speed").verdict(False, why)] if "speed" in self.points else [])

    def judge_zeroed(self):
        """A stage the static scan zeroed: no child ran; every check fails, saying why."""
        why = "not run: the static scan found host-side shortcuts (see 'No host-side shortcuts'), so the whole stage scores 0"
        checks = [self.check(key, CHECK_NAMES[key].format(kernel=self.stage.kernel)).verdict(False, why)
                  for key in self.points if key != "speed" or self.device == "gpu"]
        return checks[:1] + [self.shortcut] + checks[1:] + (self.sim_only_checks() if self.device == "sim" else [])

    def judge_instruments(self, result):
        problem = child_problem(result)
        shape_facts = result.facts.get("shapes", [{}])[0] if not problem else {}
        if not problem and "error" in shape_facts:
            problem = explain_error(shape_facts["error"])
        checks = []
        for key in self.sim_instrument_keys():
            name, judge = SIM_JUDGES[key]
            check = self.check(key, name)
            if problem or "instruments" not in shape_facts:
                checks.append(check.verdict(False, "not checked: the instrumented run failed: " + (problem or "no facts")))
                continue
            facts = shape_facts["instruments"]
            if key == "data_reuse":
                checks.append(check.verdict(*data_reuse.judge_sim(facts, self.tile or 16,
                                                                  self.cfg["structure"]["reuse_fraction"])))
            else:
                checks.append(check.verdict(*judge(facts)))
        return checks

    def gpu_checks(self, compile_check, futures):
        """The GPU-only checks; call when no other child uses the GPU (speed is timed)."""
        checks = []
        if compile_check.status != "passed":
            for key, name in (("races", "races"), ("bank_conflicts", "bank conflicts"), ("speed", "speed")):
                if key in self.points:
                    checks.append(self.check(key, name).verdict(False, "not run: the kernel does not compile"))
            return checks
        if "races" in self.points:
            checks.append(races.judge_racecheck(self, *futures["racecheck"].result()))
        if "bank_conflicts" in self.points:
            checks.append(bank_conflicts.judge_ncu(self, *futures["ncu"].result()))
        if "speed" in self.points:
            checks.append(speed.judge(self))
        return checks

    def sim_only_checks(self):
        return [speed.not_timed(self)] if "speed" in self.points else []
