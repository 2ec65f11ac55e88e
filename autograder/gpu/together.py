"""Trusted parent side: a grade's one run of each GPU tool. Each tool run costs seconds of start-up (the tool,
Python, a CUDA context under the tool), and a CUDA context is made one at a time on a host, whatever its GPU: four
racecheck start-ups at once on four H100s took 2.25 s each against 0.90 s alone (tools/host_probe.py,
BENCHMARKS.md 2026-11-28). So one runner per tool runs every stage's checked plans in turn, each from that stage's
own PTX (ToolTogether): one ncu run (NcuTogether), its log dealt out to the stages by launch count (split_ncu),
and one racecheck run (RacecheckTogether), which speaks for every stage only where it found no hazard at all
(split_racecheck). A stage not accounted for is checked again on its own (gpu/tools.py), so a stage never loses
its verdict for another's sake."""
import csv
import os
import re
import tempfile
import threading

import numpy as np

from ..checks import child_problem
from ..outcome import grader
from ..protocol import renumbered
from ..sandbox.watch import LogWatch
from . import tools
from .tools import NCU_KEYS, RUN_METRICS, ncu_shape


def join_tools(g, ncu, racecheck):
    """StageGrader `g` joins the grade's one ncu run and its one racecheck run where it runs that tool and has a build:
    before any stage's other children start (engine.grade), so the tool runners, the longest to start, start first.
    Their inputs are drawn later, in each run's own thread, from a generator drawn here from the grade's secret one
    (the grade's generator stays in the planning thread)."""
    if not getattr(g, "futures", None):
        return
    if ncu is not None and any(k in g.points for k in NCU_KEYS):
        g.ncu_future = ncu.join(g, np.random.default_rng(g.rng.integers(2 ** 63)))
    if racecheck is not None and "races" in g.points:
        g.racecheck_future = racecheck.join(g, np.random.default_rng(g.rng.integers(2 ** 63)))


class ToolTogether:
    """One process of a GPU tool for every stage of a grade that the tool judges. The runner starts at once, beside
    the builds, and gets the stages' kernels and plans once they are built; it launches each stage's plans, shape
    after shape, in stage order. Where the run cannot speak for a stage (split), that stage runs the tool again
    on its own. A subclass names the tool, its arguments and shapes, and how the log is split."""

    tool = what = ""
    warm_up = False        # the runner launches an empty kernel while it waits for its plans (the log's first row)
    alone_at_once = False  # the stages checked again on their own run beside each other

    def __init__(self):
        self.members = []  # (grader, generator of its inputs, future)
        # set once the run and every stage checked again on its own ended: no process of this tool of the grade is
        # alive, and the grade may hold its GPU alone to time (engine.grade's quiet)
        self.ended = threading.Event()

    def shapes(self, g):
        raise NotImplementedError

    def args(self, log):
        raise NotImplementedError

    def watch(self):
        return None

    def alone(self, g, inputs):
        """(child result, log text, why the tool is missing) of stage `g`'s own run (gpu/tools._tool_run)."""
        raise NotImplementedError

    def split(self, result, text, taking_part, counts):
        """[(child result, log text) of each member, or None where the run does not speak for it]."""
        raise NotImplementedError

    def join(self, g, rng):
        """A future of StageGrader `g`'s result, (child result, log text, why the tool is missing or "")."""
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
        """Check stage `g` on its own (before the grade times: it waits for `ended`)."""
        try:
            future.set_result(self.alone(g, inputs))
        except BaseException as exc:
            future.set_exception(exc)

    def _all_alone(self, which, inputs_of):
        """Check each member in `which` on its own: one after another, or beside each other (alone_at_once)."""
        if not self.alone_at_once:
            for i in which:
                g, _, future = self.members[i]
                self._alone(g, inputs_of(i), future)
            return
        threads = [threading.Thread(target=lambda i=i: self._alone(self.members[i][0], inputs_of(i),
                                                                   self.members[i][2]), daemon=True) for i in which]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _together(self):
        path = tools.find_tool(self.tool)
        drawn, lock = {}, threading.Lock()

        def inputs_of(i):
            """Member i's input pairs, one per shape, drawn once (while the builds run: it takes a while)."""
            with lock:
                if i not in drawn:
                    g, rng, _ = self.members[i]
                    drawn[i] = tools._inputs(g, self.shapes(g), rng)
                return drawn[i]
        if path is None or len(self.members) < 2:
            return self._all_alone(range(len(self.members)), inputs_of)
        taking_part, counts = [], [len(self.shapes(g)) for g, *_ in self.members]
        first, others = self.members[0][0], [g for g, *_ in self.members[1:]]

        def turn(ready):
            try:
                return given(ready)
            except Exception as exc:  # the grader's own trouble: the runner is stopped, each stage runs alone
                return grader(f"not gradable: the {self.what} run could not be given its plans ({exc})")

        def given(ready):
            arrays, at = {}, 0
            for i in range(len(self.members)):
                mine = inputs_of(i)
                for k in range(counts[i]):
                    arrays[f"A{at}"], arrays[f"B{at}"] = mine[f"A{k}"], mine[f"B{k}"]
                    at += 1
            ready.give_inputs(arrays)  # written while the builds run
            kernels, plans = [], []
            for (g, rng, future), count in zip(self.members, counts):
                job, why = g.runner_job("run", self.shapes(g), count=count)  # waits for the stage's build
                if why:
                    future.set_result((g.not_run(why), "", ""))
                    taking_part.append(False)
                    plans += [{"launches": []}] * count
                    continue
                # the stage's kernels, numbered after the earlier stages' in one list
                plans += [renumbered(plan, len(kernels)) for plan in job["plans"]]
                kernels += job["kernels"]
                taking_part.append(True)
            if not kernels:
                return "not run: no stage was built"
            if not ready(first.cfg["limits"]["gpu_start_s"]):
                return grader(f"not gradable: {self.what}'s runner did not start in time")
            return {"kernels": kernels, "plans": plans}

        job = {"task": "run", "device": "gpu", "kernel": first.stage.kernel, "count": sum(counts), "late": True}
        if self.warm_up:
            job["warm_up"] = True
        names = ", ".join(g.stage.name for g, *_ in self.members)
        with tempfile.TemporaryDirectory(prefix="tool-") as d, tools.ToolTurn(self.tool) as shared:
            log = os.path.join(d, "tool.log")
            result = first.run(shared.job(job), None, wrapper=(path, *self.args(log)),
                               timeout=first.cfg["limits"]["tool_timeout_s"], what=f"the {self.what} run of stages "
                               f"{names}", later=True, turn=shared.after(turn), shared_with=others, watch=self.watch())
            text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
        parts = self.split(result, text, taking_part, counts) if taking_part else [None] * len(self.members)
        left = []
        for i, ((g, rng, future), part) in enumerate(zip(self.members, parts)):
            if future.done():
                continue
            if part is None:
                left.append(i)
            else:
                future.set_result((part[0], part[1], ""))
        self._all_alone(left, inputs_of)


class NcuTogether(ToolTogether):
    """The grade's one ncu run, at the size the speed check times. Two ncu runs cannot profile on one GPU at once
    (gpu/tools.ToolTurn), so three stages' runs one after another set a grade's length (BENCHMARKS.md, 2026-11-25).
    ncu numbers the kernels it profiles in launch order, and the runner says how many launches each stage's plan
    made, so each stage gets its own kernels' counters alone. Where that accounting does not hold (the runner failed
    or was stopped, a launch failed, the counts disagree), each stage not accounted for is profiled again on its own,
    one after another (they would wait for each other's profiling anyway).

    warm_up: ncu's first profiled kernel costs it seconds of set-up (2.8 s in a grade on an H200, against 0.1-0.2 s
    for each later one); the runner launches an empty kernel (runner/references.warm_up) while it waits for the
    plans, and its row is the log's first, left out by position."""

    tool, what, warm_up = "ncu", "ncu", True

    def shapes(self, g):
        return [ncu_shape(g.cfg)]

    def args(self, log):
        return tools._ncu_args(log)

    def alone(self, g, inputs):
        return tools._tool_run(g, "ncu", "ncu", tools._ncu_args, inputs)

    def split(self, result, text, taking_part, counts):
        return split_ncu(result, text, taking_part, skip=1)


class RacecheckTogether(ToolTogether):
    """The grade's one compute-sanitizer racecheck run, at each stage's sizes drawn for this grade. racecheck says
    which kernel raced only in its report's words, which a kernel's name can imitate, so the run speaks for the
    stages only where it found no hazard at all: then each stage that took part passes on its own shapes, which the
    runner reports run. At its first hazard report it is stopped (a racy kernel reports for minutes), and every
    stage is race-checked again on its own, beside each other, as before: a racy kernel costs its student one
    short run more, and a correct one never shares a verdict with a racy one."""

    tool, what, alone_at_once = "compute-sanitizer", "racecheck", True

    def shapes(self, g):
        return list(g.racecheck_shapes)

    def args(self, log):
        return tools.racecheck_args(log)

    def watch(self):
        return LogWatch(lambda text: tools.HAZARD.search(text) is not None)

    def alone(self, g, inputs):
        return tools.racecheck_run(g, inputs)

    def split(self, result, text, taking_part, counts):
        return split_racecheck(result, text, taking_part, counts)


def split_racecheck(result, text, taking_part, counts):
    """[(child result, log text) of each stage, or None where the run does not speak for it] of one racecheck run
    whose runner ran `counts[i]` shapes for stage i, in order (`taking_part`: whether its plans were given). It
    speaks only where it ended of itself with racecheck's summary and no error or warning hazard, and then for each
    stage that took part and whose every shape launched its kernels."""
    from ..sandbox import ChildResult
    shapes = result.facts.get("shapes", []) if isinstance(result.facts, dict) else []
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text or "")
    nothing = [None] * len(counts)
    if (child_problem(result) or getattr(result, "decided_early", False) or not m or m.group(2) != "0"
            or m.group(3) != "0" or tools.HAZARD.search(text) or len(shapes) != sum(counts)):
        return nothing
    parts, at = [], 0
    for part, count in zip(taking_part, counts):
        mine, at = shapes[at: at + count], at + count
        if not part:
            parts.append(None)
            continue
        if any(not isinstance(s, dict) or s.get("error") or not isinstance(s.get("launches"), int)
               or s["launches"] < 1 for s in mine):  # a plan that failed at a shape: the stage's own run says so
            parts.append(None)
            continue
        parts.append((ChildResult(facts={**result.facts, "shapes": mine}, log=result.log, seconds=result.seconds,
                                  sandbox=result.sandbox, uid=result.uid, started=1), text))
    return parts


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
