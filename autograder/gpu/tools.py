"""Trusted parent side: run a GPU runner under compute-sanitizer or ncu.

The runner never imports student code (runner/plan_launch.py launches the
checked plan), so no student Python runs under the tool's uid to rewrite its
log. The tool's report goes to a log file the parent copies back from the
runner's own sandbox, so nothing a kernel prints (to stdout) can pass for a
tool's verdict. A missing tool is a visible
skip with its reason, never a pass. The logs are read into facts here and
judged in checks/races.py, checks/bank_conflicts.py and checks/data_reuse.py.

Structure is judged at the size that is graded, so a kernel cannot keep its
barriers or tiles for small sizes alone: ncu runs once at the size the speed
check times (bank conflicts and global loads per output from that one run),
racecheck at a size drawn per grade from the grade's secret generator.
"""
import csv
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from ..checks import bank_conflicts, child_problem, data_reuse, grader_fault, races
from ..outcome import fault_of, grader

# racecheck's cost grows with the shared-memory accesses, about M * N * K: on an H100 a correct stage 2 kernel at
# 272^3 took 3.5 s, stage 4 at 272 x 80 x 290 3.8 s, start-up included (BENCHMARKS.md, 2026-11-25). M and N are drawn
# in RACECHECK_SIDE, K so that 2 to 4 tiles are crossed, the last partial.
RACECHECK_SIDE = (257, 320)
NCU_KEYS = ("bank_conflicts", "data_reuse")
NCU_METRICS = bank_conflicts.NCU_METRICS + data_reuse.LOAD_METRICS  # what the ncu run counts, for both checks
TOOL_OF = {"races": "racecheck", "bank_conflicts": "ncu", "data_reuse": "ncu"}


def gpu_available():
    """True when an NVIDIA GPU answers nvidia-smi (checked without initialising CUDA here)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


_CC = {}


def compute_capability(fallback):
    """[major, minor] of the GPU this process's children use (the first of CUDA_VISIBLE_DEVICES, by index or UUID,
    as nvidia-smi lists it; the first GPU otherwise), asked once per process; `fallback` where nvidia-smi cannot
    say. The build child compiles the student's kernels for it, as numba would on that GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if visible not in _CC:
        found = None
        smi = shutil.which("nvidia-smi")
        try:
            out = subprocess.run([smi, "--query-gpu=index,uuid,compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout if smi else ""
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        rows = [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.count(",") == 2]
        for index, uuid, cap in rows:
            if not visible or visible in (index, uuid):
                try:
                    found = [int(p) for p in cap.split(".")][:2]
                except ValueError:
                    pass
                break
        _CC[visible] = found
    return list(_CC[visible] or fallback)


def find_tool(name):
    """A CUDA tool on PATH or in the toolkit's default folder, or None."""
    return shutil.which(name) or next((p for p in (f"/usr/local/cuda/bin/{name}",) if os.path.exists(p)), None)


def racecheck_shape(stage, tile, rng):
    """(M, K, N) of this grade's racecheck run, drawn from the grade's secret generator `rng`: M and N in
    RACECHECK_SIDE and not multiples of `tile`, K crossing 2 to 4 tiles with the last one partial, so the barriers are
    needed between tiles and at the edges, at a size no kernel can tell from another. A stage of square multiples of
    the tile (stage 2) gets N = M = K, the smallest multiple of the tile above 256 or the next."""
    if stage.square_tiles_only:
        n = tile * (256 // tile + int(rng.integers(1, 3)))
        return (n, n, n)
    sides = [v for v in range(*RACECHECK_SIDE) if v % tile]
    depths = [k for k in range(tile + 1, 4 * tile) if k % tile]
    M, N, K = (int(values[rng.integers(0, len(values))]) for values in (sides, sides, depths))
    return (M, K, N)


def ncu_shape(cfg):
    """(M, K, N) of the ncu run: the size the speed check times."""
    n = int(cfg["speed"]["n"])
    return (n, n, n)


def tool_shapes(g):
    """The shapes the GPU tools of StageGrader `g` run at (the build child records their plans)."""
    shapes = []
    if "races" in g.points:
        shapes.append(g.racecheck_shape)
    if any(k in g.points for k in NCU_KEYS):
        shapes.append(ncu_shape(g.cfg))
    return shapes


def _inputs(g, shape, rng=None):
    """A tool run's input pair, drawn from the grade's secret generator (in the planning thread: the generator is
    not shared across threads), or from `rng`, a generator of the thread that draws."""
    M, K, N = shape
    rng = g.rng if rng is None else rng
    return {"A0": rng.standard_normal((M, K), dtype=np.float32),
            "B0": rng.standard_normal((K, N), dtype=np.float32)}


def join_ncu(g, together):
    """StageGrader `g` joins the grade's one ncu run (NcuTogether) where it runs ncu and has a build: before any
    stage's other children start (engine.grade), so the ncu runner, the longest to start, starts first. Its
    inputs are drawn later, in the ncu run's own thread, from a generator drawn here from the grade's secret one
    (the grade's generator stays in the planning thread)."""
    if together is not None and getattr(g, "futures", None) and any(k in g.points for k in NCU_KEYS):
        g.ncu_future = together.join(g, np.random.default_rng(g.rng.integers(2 ** 63)))


def tool_tasks(g, pool):
    """Start the GPU tools' children of StageGrader `g` (they may run beside each other; timing runs later, alone)."""
    futures = {}
    if "races" in g.points:
        futures["racecheck"] = pool.submit(
            _tool_run, g, "races", "compute-sanitizer",
            lambda log: ("--tool", "racecheck", "--report-api-errors", "no", "--print-limit", "20",
                         "--log-file", log), _inputs(g, g.racecheck_shape))
    if any(k in g.points for k in NCU_KEYS):
        joined = getattr(g, "ncu_future", None)
        if joined is not None:  # one ncu run for the grade's stages (NcuTogether, join_ncu)
            futures["ncu"] = joined
        else:
            futures["ncu"] = pool.submit(_tool_run, g, "ncu", "ncu", _ncu_args, _inputs(g, ncu_shape(g.cfg)))
    return futures


def _ncu_args(log):
    """ncu's arguments: every kernel the plan launches is profiled (no kernel filter): a helper kernel's loads count
    too. The counters are instruction and request counts, which the caches' state does not change, so ncu does not
    flush them before each pass (--cache-control none: 0.1-0.3 s less a run on an H100, tools/ncu_cost.py)."""
    return ("--clock-control", "none", "--cache-control", "none", "--metrics", ",".join(NCU_METRICS), "--csv",
            "--log-file", log)


class NcuTogether:
    """One ncu process for every stage of a grade it judges. Each ncu run costs seconds of start-up (ncu, Python,
    a CUDA context: 2.8-5.5 s a stage on an H100) and two cannot run at once, so three stages' runs one after
    another set a grade's length (BENCHMARKS.md, 2026-11-25). Here one runner launches each stage's checked plan at
    the timed size in turn, from that stage's own PTX, under one ncu; ncu numbers the kernels it profiles in launch
    order, and the runner says how many launches each stage's plan made, so each stage gets its own kernels'
    counters alone. Where that accounting does not hold (the runner failed or was stopped, a launch failed, the
    counts disagree), each stage not accounted for is profiled again on its own, as before: a stage never loses
    its verdict for another's sake."""

    def __init__(self, gpu_lock=None):
        self.members = []  # (grader, generator of its inputs, future)
        # set once the run's kernels all ended (its runner says so) or it ended: ncu's own end takes a while after
        # its last kernel, and the grade's speed checks may time from here (engine.grade's quiet)
        self.released = threading.Event()
        # held while a speed check times (engine/timing.py): a stage profiled again on its own waits for it
        self.gpu_lock = gpu_lock if gpu_lock is not None else threading.Lock()

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
            self.released.set()

    def _run(self):
        try:
            self._together()
        except BaseException as exc:  # never leave a stage waiting: its own run then says what went wrong
            for g, rng, future in self.members:
                if not future.done():
                    future.set_exception(exc)
            raise
        finally:
            self.released.set()

    def _alone(self, g, inputs, future):
        """Profile stage `g` on its own, never while a speed check times (the grade may time from `released`)."""
        try:
            with self.gpu_lock:
                future.set_result(_tool_run(g, "ncu", "ncu", _ncu_args, inputs))
        except BaseException as exc:
            future.set_exception(exc)

    def _together(self):
        """The runner starts at once, beside the builds (ncu's start, Python and a CUDA context take seconds), and
        gets the stages' kernels and plans once they are built; a stage whose build failed takes part with no
        launches (its verdict is the build's)."""
        path = find_tool("ncu")
        drawn = {}

        def inputs_of(i):
            """Member i's input pair at the timed size, drawn once (while the builds run: it takes a while)."""
            if i not in drawn:
                g, rng, _ = self.members[i]
                drawn[i] = _inputs(g, ncu_shape(g.cfg), rng)
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
                offset, plan = len(kernels), job["plans"][0]
                kernels += job["kernels"]
                if "launches" in plan:  # the stage's kernels, numbered after the earlier stages' in one list
                    plan = {**plan, "launches": [{**item, "kernel": item["kernel"] + offset}
                                                 for item in plan["launches"]]}
                plans.append(plan)
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
        with tempfile.TemporaryDirectory(prefix="tool-") as d, _one_at_a_time("ncu"):
            log = os.path.join(d, "tool.log")
            result = first.run(job, None, wrapper=(path, *_ncu_args(log)), timeout=first.cfg["limits"]["tool_timeout_s"],
                               what=f"the ncu run of stages {names}", later=True, turn=turn, shared_with=others,
                               released=self.released)
            text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
        self.released.set()  # the run ended (where its runner did not say so before): the stages run alone now
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
        if not any(m in line for m in NCU_METRICS):
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


def _shape(inputs):
    """(M, K, N) of a tool run's one input pair."""
    return (inputs["A0"].shape[0], inputs["A0"].shape[1], inputs["B0"].shape[1])


def _tool_run(g, key, tool, args, inputs):
    """(child result, the tool's log text, why the tool is missing or ''). A tool run is the longest child of a
    stage, so it starts beside the correctness children instead of after them; its verdict counts only where they
    passed (StageGrader.gate_reason, asked by GpuStageGrader.tier_checks). It is not stopped when they fail: the grade waits for
    the other stages' tools anyway, and a tool killed while it runs a kernel can leave the GPU driver stuck."""
    path = find_tool(tool)
    if path is None:
        return None, None, f"{tool} is not installed on this machine (it comes with the CUDA toolkit)"
    refused = {}
    job, given = g.late_runner([_shape(inputs)], refused, f"{tool} runner")  # starts before the build ends
    with tempfile.TemporaryDirectory(prefix="tool-") as d, _one_at_a_time(tool):
        log = os.path.join(d, "tool.log")
        result = g.run(job, inputs, wrapper=(path, *args(log)), timeout=g.cfg["limits"]["tool_timeout_s"],
                       what=f"the {tool} run", later=True, turn=given)
        text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
    if "why" in refused:  # the build gave no plan: the check says why, as the build's verdict
        return g.not_run(refused["why"]), "", ""
    return result, text, ""


class _one_at_a_time:
    """One ncu run at a time on this machine, across a grade's stages and across grading processes: two ncu runs at
    once left the later ones without counters (exit status 9 on an H100, BENCHMARKS.md 2026-11-25), and each runs in
    a sandbox with a /tmp of its own, where ncu's own lock file cannot see the other. The wait is not the tool's time:
    its limit starts when it does. Other tools run beside each other."""

    def __init__(self, tool):
        self.tool, self.fd = tool, None

    def __enter__(self):
        if self.tool == "ncu":
            self.fd = os.open(os.path.join(tempfile.gettempdir(), "autograder-ncu.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock


def racecheck_facts(result, text):
    """The facts of compute-sanitizer racecheck's log: hazards, errors, warnings and a few hazard lines, or a
    problem where it did not complete (the runner failed, or no summary)."""
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text or "")
    if child_problem(result) or not m:  # the runner's own problem (its fault), or the tool wrote no summary
        return {"problem": child_problem(result) or grader("racecheck wrote no summary: "
                                                            + ((text or "")[-1500:] or "no report"))}
    hazards, errors, warnings = map(int, m.groups())
    return {"hazards": hazards, "errors": errors, "warnings": warnings,
            "lines": [ln.strip() for ln in text.splitlines() if "hazard" in ln.lower()][:4]}


def ncu_facts(result, text):
    """Each metric ncu reported (bank conflicts, global loads), summed over every kernel it profiled, with the
    number of kernels; or a problem where it reported none."""
    values, kernels = {m: 0.0 for m in NCU_METRICS}, set()
    for row in csv.reader(line for line in (text or "").splitlines() if any(m in line for m in NCU_METRICS)):
        metric = next((m for m in NCU_METRICS if m in row), None)
        if metric is None:
            continue
        kernels.add(row[0])
        try:
            values[metric] += float(row[-1].strip().replace(",", "") or 0)  # the value may carry thousands separators
        except ValueError:
            return {"problem": grader(f"ncu reported {metric} as {row[-1][:40]!r}")}
    if child_problem(result) or not kernels:
        return {"problem": child_problem(result) or grader("ncu reported no kernel: "
                                                            + ((text or "")[-1500:] or "no report"))}
    return {**values, "kernels": len(kernels)}


def tool_verdict(g, key, futures, check):
    """The verdict on `check` (races, bank_conflicts or data_reuse) of StageGrader `g` from its GPU tool's run."""
    result, text, missing = futures[TOOL_OF[key]].result()
    if missing:
        return check.skip(missing)
    fault = grader_fault(result)
    if fault:  # the grader's own trouble: counts neither way
        return check.verdict(False, fault)
    # a tool's trouble is the grader's, whatever words the judge puts before it; the runner's is the student's
    if key == "races":
        facts = {**racecheck_facts(result, text), "shape": g.racecheck_shape}
        return check.verdict(*races.judge_racecheck(facts), fault_of(facts.get("problem")))
    facts = {**ncu_facts(result, text), "shape": ncu_shape(g.cfg)}
    if key == "bank_conflicts":
        return check.verdict(*bank_conflicts.judge_ncu(facts), fault_of(facts.get("problem")))
    structure = g.cfg["structure"]
    passed, message = data_reuse.judge_ncu(facts, g.tile or structure["tiles"][0], structure["reuse_fraction"])
    return check.verdict(passed, message + (f" ({g.tile_note})" if g.tile_note else ""), fault_of(facts.get("problem")))
