"""Trusted parent side: the grade's one timing child on a GPU. A timing child per stage costs a CUDA context each,
and the driver makes contexts one at a time for the whole host (engine/together.py says why that matters), so one
child prepares every stage's speed check whose correctness passed and, once the GPU is the grader's alone, times
them one after another, each on operands of its own, under one watch of the GPU (TimingTogether).

Its numbers count only where they cannot be another stage's doing: a stage whose timed runs passed every product
check gets its verdict from them (a kernel cannot make another stage's products right: their inputs are filled
from secret seeds only as that stage is timed). Anything else (a wrong product, a reference that failed its check,
a GPU found shared, a child that failed or was refused) is timed again in a timing child of the stage's own, as
without this one (engine/timing.py): one stage's kernel, which could write over another's operands here, never
costs another stage its points."""
import dataclasses
from concurrent.futures import Future

from ..checks import child_problem, speed
from ..outcome import grader
from ..sandbox import ChildResult
from . import timing
from .children import _AnyCut, _Cut
from .together import OneChild


class TimingTogether(OneChild):
    """One timing child for the speed checks of every stage of a grade that joined (engine.grade). Members:
    (grader, plan (timing._plan), future of its verdict, or None: timed on its own)."""

    def __init__(self, shared_gpu):
        super().__init__()
        self.seen = shared_gpu
        self.turn = timing.Turn()  # every member's speed_turn: prepared once the child is; go at the first judge

    def join(self, g):
        """Stage `g`'s speed check joins; its secrets are drawn now, in the planning thread."""
        future = Future()
        self.members.append((g, timing._plan(g), future))
        g.speed_turn, g.timing_round, g.timing_plan = self.turn, future, self.members[-1][1]

    def _release(self):
        super()._release()
        self.turn.prepared.set()

    def _together(self):
        from ..gpu import exclusive
        first, seen = self.members[0][0], self.seen
        cfg = first.cfg["speed"]
        prepare_s = first.cfg["limits"]["gpu_start_s"]
        taking, cut = [], _AnyCut([])  # the members timed here, in order; stopped only for their own stages' sake
        refused, watch = {}, {}

        def gated(ready):
            """The first go: the parts of every stage whose correctness passed (each waits for its stage's)."""
            parts = []
            for g, plan, future in self.members:
                check, fields, inputs, expected_jobs, board = plan
                if getattr(g, "together_round", None) is not None:
                    g.together_round.result()  # the grade's one correctness runner has dealt its results
                if g.timed_out:  # its verdict is its time-out, said at its judge: the others need not wait for
                    continue     # its groups run again (a kernel that never ends)
                gate = g.gate_reason("speed")
                sizes = [(fields["n"],) * 3] + ([(board["n"],) * 3] if board else [])
                job, why = (None, "") if gate else g.runner_job("speed", sizes, **fields)
                if gate or why:  # its verdict, as in its own timing child
                    future.set_result(check.verdict(False, gate or g.gate_reason("speed") or g.not_run(why).problem))
                    continue
                parts.append({k: v for k, v in job.items() if k not in ("task", "device")}
                             | {"key": len(taking)})
                taking.append((g, plan, future, timing._Expected(expected_jobs)))
                cut.cuts.append(_Cut(g, first.cfg["limits"]["sibling_grace_s"], prepare_s))
            if len(taking) < 2:
                refused["why"] = "not run: fewer than two stages to time"
                return refused["why"]
            if getattr(first, "grader_kernels", None):
                first.grader_kernels.wait()
            seen.alone.wait()  # the child makes its CUDA context once the grade holds its GPU alone
            if self.turn.refused:  # the grade stopped before its timing
                refused["why"] = self.turn.refused
                return refused["why"]
            if not ready(prepare_s):
                refused["why"] = grader(f"not gradable: the timing child did not start within {prepare_s:.0f} s")
                return refused["why"]
            secrets = {}
            for k, (g, plan, *_) in enumerate(taking):
                secrets[f"X{k}"] = plan[2]["X"]
                if "X_board" in plan[2]:
                    secrets[f"X_board{k}"] = plan[2]["X_board"]
            ready.give_inputs(secrets)  # read by the child only after its second go
            return {"parts": parts}

        def timed(ready):
            """The second go: every other child of the grade has ended (the first judge), the GPU is watched."""
            ok = ready(prepare_s)
            self.turn.prepared.set()
            self.turn.go.wait()
            if self.turn.refused or seen.why or not ok:
                refused["why"] = self.turn.refused or seen.why or "not prepared in time"
                return refused["why"]
            for *_, expected in taking:
                expected.wait()  # the parent's own work is done before the child times
            timed_here, own = set(), []
            for g, plan, *_ in taking:  # each reference once per size: in this child, or by an earlier check
                key = (plan[1]["reference"], plan[1]["n"])
                own.append(key not in timed_here and key not in seen.references)
                timed_here.add(key)
            refused["time_reference"] = own
            watch["w"] = exclusive.Watch(interval=cfg["exclusive_poll_s"], settle_s=cfg["exclusive_settle_s"]).start(
                after=seen.last_watch)
            return {"time_reference": own}

        timeout = sum(timing._child_timeout(g, cfg["n"], cfg["warmup"] + cfg["repeats"], plan[4])
                      for g, plan, _ in self.members)
        job = {"task": "speed_parts", "device": "gpu"}
        names = ", ".join(g.stage.name for g, *_ in self.members)
        try:
            result = first.run(job, None, timeout=timeout, what=f"the timing child of stages {names}",
                               turn=[gated, timed], shared_with=[g for g, *_ in self.members[1:]], cut=cut)
        finally:
            for *_, expected in taking:
                expected.close()
        if "w" not in watch:
            return
        gpu = watch["w"].stop()
        seen.last_watch = watch["w"]
        if gpu["shared"] or not gpu.get("samples") or child_problem(result):
            seen.shared_together = gpu["shared"]  # each stage is timed on its own: a shared GPU was its first look
            return  # (engine/timing.py retries it once), and a child that failed says what went wrong
        for k, (g, plan, future, expected) in enumerate(taking):
            future.set_result(self._judge(g, plan, part_result(result, k), expected, refused["time_reference"][k],
                                          {**gpu, "attempts": 1}))

    def _judge(self, g, plan, result, expected, timed_reference, gpu):
        """Stage g's verdict from its part, or None where it must be timed on its own (see the module's doc)."""
        check, fields, inputs, expected_jobs, board = plan
        rule = g.cfg["stages"][g.stage.name]["speed"]
        key = (fields["reference"], fields["n"])
        reused = None if timed_reference else self.seen.references.get(key)
        if not timed_reference and reused is None:  # the reference it was to reuse failed its own check
            return None
        g.gpu = gpu
        # judged on a copy: a stage timed again on its own gets its verdict on the plan's untouched check
        verdict = speed.judge_facts(g, dataclasses.replace(check), rule, result, expected, board, reused)
        measured = getattr(g, "speed", None) or {}
        right = measured.get("worst_projection_error", 1.0) <= g.cfg["speed"]["projection_error"]
        slow = right and measured.get("speedup", 0.0) < rule["min_speedup"]
        if verdict.status != "passed" and not slow:  # timed again on its own: nothing of this judging stays
            g.speed = g.gpu = None
            if hasattr(g, "leaderboard"):
                g.leaderboard = None
            return None
        if g.speed and g.speed.get("reference_checked"):
            self.seen.references.setdefault(key, {"median_ms": g.speed["reference_ms"], "cv": g.speed["cv_reference"],
                                                  "stage": g.stage.name})
        return verdict


def part_result(result, k):
    """Part k of the grade's one timing child as the result of a timing child of its own (checks/speed.py reads it)."""
    facts = {key: v for key, v in result.facts.items() if key != "parts"}
    facts.update(result.facts["parts"][k])
    arrays = {"P_" + name[len(f"P{k}_"):]: a for name, a in result.arrays.items() if name.startswith(f"P{k}_")}
    return ChildResult(facts=facts, arrays=arrays, log=result.log, seconds=result.seconds, sandbox=result.sandbox,
                       uid=result.uid)
