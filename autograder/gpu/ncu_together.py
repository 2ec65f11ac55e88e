"""Trusted parent side: the grade's one ncu run. Each ncu run costs seconds of start-up, and two cannot profile
on one GPU at once (gpu/tools.ToolTurn), so one runner profiles every stage's checked plan at the timed size in turn
(NcuTogether); the log is dealt out to the stages by launch count (split_ncu). A stage not accounted for is
profiled again on its own (gpu/tools.py)."""
import csv
import os
import tempfile
import threading

import numpy as np

from ..checks import child_problem
from ..outcome import grader
from ..protocol import renumbered
from . import tools
from .tools import NCU_KEYS, RUN_METRICS, ncu_shape


def join_ncu(g, together):
    """StageGrader `g` joins the grade's one ncu run (NcuTogether) where it runs ncu and has a build: before any
    stage's other children start (engine.grade), so the ncu runner, the longest to start, starts first. Its
    inputs are drawn later, in the ncu run's own thread, from a generator drawn here from the grade's secret one
    (the grade's generator stays in the planning thread)."""
    if together is not None and getattr(g, "futures", None) and any(k in g.points for k in NCU_KEYS):
        g.ncu_future = together.join(g, np.random.default_rng(g.rng.integers(2 ** 63)))


class NcuTogether:
    """One ncu process for every stage of a grade it judges. Each ncu run costs seconds of start-up (ncu, Python,
    a CUDA context: 2.8-5.5 s a stage on an H100) and two cannot profile on one GPU at once, so three stages' runs
    one after another set a grade's length (BENCHMARKS.md, 2026-11-25). Here one runner launches each stage's
    checked plan at the timed size in turn, from that stage's own PTX, under one ncu; ncu numbers the kernels it
    profiles in launch order, and the runner says how many launches each stage's plan made, so each stage gets its
    own kernels' counters alone. Where that accounting does not hold (the runner failed or was stopped, a launch
    failed, the counts disagree), each stage not accounted for is profiled again on its own, as before: a stage
    never loses its verdict for another's sake."""

    def __init__(self):
        self.members = []  # (grader, generator of its inputs, future)
        # set once the run and every stage profiled again on its own ended: no ncu process of the grade is alive,
        # and the grade may hold its GPU alone to time (engine.grade's quiet)
        self.ended = threading.Event()

    def join(self, g, rng):
        """A future of StageGrader `g`'s ncu result, (child result, log text, why ncu is missing or "")."""
        from concurrent.futures import Future
        future = Future()
        self.members.append((g, rng, future))
        return future

    def start(self, pool):
        """Run once every stage joined (engine.grade, after every stage's children were started)."""
        if self.members:
            pool.submit(self._run)
        else:
            self.ended.set()

    def _run(self):
        try:
            self._together()
        except BaseException as exc:  # never leave a stage waiting: its own run then says what went wrong
            for g, rng, future in self.members:
                if not future.done():
                    future.set_exception(exc)
            raise
        finally:
            self.ended.set()

    def _alone(self, g, inputs, future):
        """Profile stage `g` on its own (before the grade times: it waits for `ended`)."""
        try:
            future.set_result(tools._tool_run(g, "ncu", "ncu", tools._ncu_args, inputs))
        except BaseException as exc:
            future.set_exception(exc)

    def _together(self):
        """The runner starts at once, beside the builds (ncu's start, Python and a CUDA context take seconds), and
        gets the stages' kernels and plans once they are built; a stage whose build failed takes part with no
        launches (its verdict is the build's)."""
        path = tools.find_tool("ncu")
        drawn = {}

        def inputs_of(i):
            """Member i's input pair at the timed size, drawn once (while the builds run: it takes a while)."""
            if i not in drawn:
                g, rng, _ = self.members[i]
                drawn[i] = tools._inputs(g, [ncu_shape(g.cfg)], rng)
            return drawn[i]
        if path is None or len(self.members) < 2:
            for i, (g, rng, future) in enumerate(self.members):
                self._alone(g, inputs_of(i), future)
            return
        taking_part = []
        first, others = self.members[0][0], [g for g, *_ in self.members[1:]]

        def turn(ready):
            try:
                return given(ready)
            except Exception as exc:  # the grader's own trouble: the runner is stopped, each stage runs alone
                return grader(f"not gradable: the ncu run could not be given its plans ({exc})")

        def given(ready):
            arrays = {}
            for i in range(len(self.members)):
                arrays[f"A{i}"], arrays[f"B{i}"] = inputs_of(i)["A0"], inputs_of(i)["B0"]
            ready.give_inputs(arrays)  # written while the builds run
            kernels, plans = [], []
            for g, rng, future in self.members:
                job, why = g.runner_job("run", [ncu_shape(g.cfg)], count=1)  # waits for the stage's build
                if why:
                    future.set_result((g.not_run(why), "", ""))
                    taking_part.append(False)
                    plans.append({"launches": []})
                    continue
                # the stage's kernels, numbered after the earlier stages' in one list
                plans.append(renumbered(job["plans"][0], len(kernels)))
                kernels += job["kernels"]
                taking_part.append(True)
            if not kernels:
                return "not run: no stage was built"
            if not ready(first.cfg["limits"]["gpu_start_s"]):
                return grader("not gradable: ncu's runner did not start in time")
            return {"kernels": kernels, "plans": plans}

        # warm_up: ncu's first profiled kernel costs it seconds of set-up (2.8 s in a grade on an H200, against
        # 0.1-0.2 s for each later one); the runner launches an empty kernel (runner/references.warm_up) while it
        # waits for the plans, and its row is the log's first, left out below
        job = {"task": "run", "device": "gpu", "kernel": first.stage.kernel, "count": len(self.members), "late": True,
               "warm_up": True}
        names = ", ".join(g.stage.name for g, *_ in self.members)
        with tempfile.TemporaryDirectory(prefix="tool-") as d, tools.ToolTurn("ncu") as shared:
            log = os.path.join(d, "tool.log")
            result = first.run(shared.job(job), None, wrapper=(path, *tools._ncu_args(log)),
                               timeout=first.cfg["limits"]["tool_timeout_s"], what=f"the ncu run of stages {names}",
                               later=True, turn=shared.after(turn), shared_with=others)
            text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
        parts = split_ncu(result, text, taking_part, skip=1) if taking_part else [None] * len(self.members)
        for i, ((g, rng, future), part) in enumerate(zip(self.members, parts)):
            if future.done():
                continue
            if part is None:
                self._alone(g, inputs_of(i), future)
            else:
                future.set_result((part[0], part[1], ""))


def split_ncu(result, text, taking_part, skip=0):
    """[(child result, log text) of each stage, or None where its part is not accounted for] of one ncu run whose
    runner ran one shape per stage (`taking_part`: for each, whether its plan was given; one that was not made no
    launch). The kernels ncu profiled, in launch order, are dealt out by the launch count the runner reported for
    each shape, after the runner's own first `skip` launches (its warm-up, which ran before any plan existed)."""
    from ..sandbox import ChildResult
    count = len(taking_part)
    shapes = result.facts.get("shapes", []) if isinstance(result.facts, dict) else []
    counts = [s.get("launches") if isinstance(s, dict) and not s.get("error") else None for s in shapes]
    ids, rows = [], {}
    for line in (text or "").splitlines():
        if not any(m in line for m in RUN_METRICS):
            continue
        row = next(csv.reader([line]), [])
        try:
            launch = int(row[0])
        except (ValueError, IndexError):
            continue
        if launch not in rows:
            ids.append(launch)
        rows.setdefault(launch, []).append(line)
    if (child_problem(result) or len(counts) != count or any(not isinstance(c, int) for c in counts)
            or any((c >= 1) != part for c, part in zip(counts, taking_part)) or skip + sum(counts) != len(ids)):
        return [None] * count
    parts, at = [], skip
    for i, c in enumerate(counts):
        mine = ids[at: at + c]
        at += c
        facts = {**result.facts, "shapes": [shapes[i]]}
        parts.append((ChildResult(facts=facts, log=result.log, seconds=result.seconds, sandbox=result.sandbox,
                                  uid=result.uid, started=1),
                      "\n".join(line for launch in mine for line in rows[launch])) if taking_part[i] else None)
    return parts
