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
racecheck at sizes drawn per grade from the grade's secret generator (one never a multiple of the tile, one of
tile multiples with K of many tiles). Their inputs are filled as the timed runs' are, from secret seeds (_inputs).
"""
import csv
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from ..checks import bank_conflicts, child_problem, data_reuse, grader_fault, races
from ..outcome import fault_of, grader
from ..sandbox.devices import listed_gpus
from ..sandbox.watch import LogWatch
from . import ncu_instances
from .slot import GpuLock

# racecheck's cost grows with the shared-memory accesses, about M * N * K: on an H100 a correct stage 2 kernel at
# 272^3 took 3.5 s, stage 4 at 272 x 80 x 290 3.8 s, start-up included (BENCHMARKS.md, 2026-11-25). M and N are drawn
# in RACECHECK_SIDE, K so that 2 to 4 tiles are crossed, the last partial.
RACECHECK_SIDE = (257, 320)
NCU_KEYS = ("bank_conflicts", "data_reuse")
NCU_METRICS = bank_conflicts.NCU_METRICS + data_reuse.LOAD_METRICS  # what the ncu run counts, for both checks
RUN_METRICS = NCU_METRICS + ncu_instances.METRICS  # and per instruction, for bank conflicts where they happen
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
        for index, uuid, cap in listed_gpus():
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


def racecheck_shapes(stage, tile, rng):
    """Every (M, K, N) of this grade's racecheck run: racecheck_shape's, and, for a stage that takes any size, one of
    tile multiples with K of many tiles, as the timed size is (2048 on every side): a kernel that drops a barrier only
    where the sides are multiples of TILE races there. Its M and N are 2-3 tiles (racecheck's cost grows with
    M * N * K), K 6-10 tiles."""
    first = racecheck_shape(stage, tile, rng)
    if stage.square_tiles_only:
        return [first]
    M, N = (tile * int(rng.integers(2, 4)) for _ in range(2))
    return [first, (M, tile * int(rng.integers(6, 11)), N)]


def ncu_shape(cfg):
    """(M, K, N) of the ncu run: the size the speed check times."""
    n = int(cfg["speed"]["n"])
    return (n, n, n)


def tool_shapes(g):
    """The shapes the GPU tools of StageGrader `g` run at (the build child records their plans)."""
    shapes = []
    if "races" in g.points:
        shapes.extend(g.racecheck_shapes)
    if any(k in g.points for k in NCU_KEYS):
        shapes.append(ncu_shape(g.cfg))
    return shapes


def _inputs(g, shapes, rng=None):
    """A tool run's inputs, one pair per shape (A0, B0, A1, B1, ...), drawn as the timed runs draw theirs: uniform
    in [-1, 1) by the grader's fill from two seeds of the grade's secret generator (checks/speed.draw_secrets), so a
    kernel that looks at its inputs cannot tell a profiled or race-checked launch from a timed one. The seeds come
    from the planning thread's generator or from `rng`, a generator of the thread that draws."""
    from ..checks.speed import SEED_LIMIT
    from ..protocol import fill_uniform_host
    rng = g.rng if rng is None else rng
    inputs = {}
    for i, (M, K, N) in enumerate(shapes):
        seed_a, seed_b = (int(s) for s in rng.integers(0, SEED_LIMIT, 2))
        inputs[f"A{i}"], inputs[f"B{i}"] = fill_uniform_host(M, K, seed_a), fill_uniform_host(K, N, seed_b)
    return inputs


def tool_tasks(g, pool):
    """Start the GPU tools' children of StageGrader `g` (they may run beside each other; timing runs later, alone)."""
    futures = {}
    if "races" in g.points:
        futures["racecheck"] = pool.submit(
            _tool_run, g, "races", "compute-sanitizer",
            lambda log: ("--tool", "racecheck", "--report-api-errors", "no", "--print-limit", "20",
                         "--log-file", log), _inputs(g, g.racecheck_shapes), LogWatch(first_hazards))
    if any(k in g.points for k in NCU_KEYS):
        joined = getattr(g, "ncu_future", None)
        if joined is not None:  # one ncu run for the grade's stages (NcuTogether, join_ncu)
            futures["ncu"] = joined
        else:
            futures["ncu"] = pool.submit(_tool_run, g, "ncu", "ncu", _ncu_args, _inputs(g, [ncu_shape(g.cfg)]))
    return futures


def _ncu_args(log):
    """ncu's arguments: every kernel the plan launches is profiled (no kernel filter): a helper kernel's loads count
    too. The counters are instruction and request counts, which the caches' state does not change, so ncu does not
    flush them before each pass (--cache-control none: 0.1-0.3 s less a run on an H100, tools/ncu_cost.py). The
    instanced metrics come per instruction (gpu/ncu_instances.py)."""
    return ("--clock-control", "none", "--cache-control", "none", "--metrics", ",".join(RUN_METRICS),
            "--print-metric-instances", "details", "--csv", "--log-file", log)


def _shapes(inputs):
    """[(M, K, N)] of a tool run's input pairs, in order."""
    return [(inputs[f"A{i}"].shape[0], inputs[f"A{i}"].shape[1], inputs[f"B{i}"].shape[1])
            for i in range(len(inputs) // 2)]


def first_hazards(text):
    """Whether racecheck's log so far decides the race check: HAZARD_SEEN hazards reported as errors or warnings
    (what judge_racecheck fails; info-level reports are not counted). A racy kernel's racecheck run goes on
    reporting for minutes; its first reports are the verdict."""
    return len(HAZARD.findall(text)) >= HAZARD_SEEN


HAZARD = re.compile(r"^=+ (Error|Warning): .*hazard detected", re.IGNORECASE | re.MULTILINE)
HAZARD_SEEN = 4   # hazard reports that decide (a tiled kernel without its second barrier reports thousands)


def _tool_run(g, key, tool, args, inputs, watch=None):
    """(child result, the tool's log text, why the tool is missing or ''). A tool run is the longest child of a
    stage, so it starts beside the correctness children instead of after them; its verdict counts only where they
    passed (StageGrader.gate_reason, asked by GpuStageGrader.tier_checks). It is not stopped when they fail: the grade waits for
    the other stages' tools anyway, and a tool killed while it runs a kernel can leave the GPU driver stuck."""
    path = find_tool(tool)
    if path is None:
        return None, None, f"{tool} is not installed on this machine (it comes with the CUDA toolkit)"
    refused = {}
    job, given = g.late_runner(_shapes(inputs), refused, f"{tool} runner")  # starts before the build ends
    with tempfile.TemporaryDirectory(prefix="tool-") as d, ToolTurn(tool) as shared:
        log = os.path.join(d, "tool.log")
        result = g.run(shared.job(job), inputs, wrapper=(path, *args(log)),
                       timeout=g.cfg["limits"]["tool_timeout_s"], what=f"the {tool} run", later=True,
                       turn=shared.after(given), watch=watch)
        text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
    if "why" in refused:  # the build gave no plan: the check says why, as the build's verdict
        return g.not_run(refused["why"]), "", ""
    if watch is not None and watch.fired and first_hazards(text):  # stopped once its log held the verdict
        result.decided_early = True
    return result, text, ""


class ToolTurn:
    """What a GPU tool's run shares with the tool's other runs on its GPU. For ncu (two ncu runs profiling on one GPU
    at once left the later one without counters, exit status 9 on an H100, BENCHMARKS.md 2026-11-25):

    - **ncu's own lock**: every ncu run on a GPU gets one temporary folder (TMPDIR), where ncu keeps its lock file
      ``nsight-compute-lock``, so ncu itself profiles one kernel at a time on that GPU, while the runs' start-ups
      (ncu, Python, a CUDA context under ncu: 3.4 s of a lone grade's 8 s run on an H100) overlap. Two runs started
      together with one such folder both kept their counters; with folders of their own one exited with status 9
      (tools/host_probe.py, 4x H100, 2026-11-28).
    - **the GPU's ncu lock** (gpu/slot.py), taken once the runner started and its plans are given (`after`) and held
      until the run ends: one grade's kernels are profiled together, and the wait is not the tool's time (its limit
      starts again with its "go"). Runs on two GPUs at once keep their counters (2x H200, 2026-11-27): both locks are
      the GPU's, never the host's.

    compute-sanitizer runs beside each other: nothing is shared."""

    def __init__(self, tool):
        self.tool, self.lock = tool, None

    def folder(self):
        """The GPU's folder for ncu's TMPDIR, or None (another tool). Not sticky, its lock file writable by all: the
        runs are of different uids (the sandbox's), and the kernel refuses a file of another uid in a sticky
        world-writable folder (fs.protected_regular) even at mode 666."""
        if self.tool != "ncu":
            return None
        from .slot import gpu_key
        path = os.path.join(tempfile.gettempdir(), f"autograder-ncu-tmp-{gpu_key()}")
        os.makedirs(path, exist_ok=True)
        lock = os.path.join(path, "nsight-compute-lock")
        if not os.path.exists(lock):
            os.close(os.open(lock, os.O_RDWR | os.O_CREAT, 0o666))
        for name, mode in ((path, 0o777), (lock, 0o666)):
            if os.stat(name).st_mode & 0o7777 != mode:  # the umask narrowed it; only its owner may widen it
                os.chmod(name, mode)
        return path

    def job(self, job):
        """The runner's job, with ncu's shared TMPDIR where the tool is ncu (sandbox/run.py binds it)."""
        folder = self.folder()
        return {**job, "tool_tmp": folder} if folder else job

    def after(self, turn):
        """`turn` (the runner's plans with its "go"), then, for ncu, the GPU's ncu lock before the go."""
        if self.tool != "ncu":
            return turn

        def locked(ready):
            answer = turn(ready)
            if isinstance(answer, dict) or answer == "":  # the runner goes on: its kernels are profiled now
                self.lock = GpuLock("ncu").__enter__()
            return answer
        return locked

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.lock is not None:
            self.lock.__exit__(*exc)
            self.lock = None


def racecheck_facts(result, text):
    """The facts of compute-sanitizer racecheck's log: hazards, errors, warnings and a few hazard lines, or a
    problem where it did not complete (the runner failed, or no summary)."""
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text or "")
    lines = [ln.strip() for ln in (text or "").splitlines() if "hazard" in ln.lower()][:4]
    if getattr(result, "decided_early", False) and not m:  # stopped at its first reports (first_hazards)
        levels = [level.lower() for level in HAZARD.findall(text)]
        return {"hazards": len(levels), "errors": levels.count("error"), "warnings": levels.count("warning"),
                "lines": lines, "stopped_early": True}
    if child_problem(result) or not m:  # the runner's own problem (its fault), or the tool wrote no summary
        return {"problem": child_problem(result) or grader("racecheck wrote no summary: "
                                                            + ((text or "")[-1500:] or "no report"))}
    hazards, errors, warnings = map(int, m.groups())
    return {"hazards": hazards, "errors": errors, "warnings": warnings, "lines": lines}


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
    return {**values, "kernels": len(kernels), "shared_loads": ncu_instances.shared_loads(text)
            if any(m in (text or "") for m in ncu_instances.METRICS) else None}


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
        facts = {**racecheck_facts(result, text), "shapes": g.racecheck_shapes}
        return check.verdict(*races.judge_racecheck(facts), fault_of(facts.get("problem")))
    facts = {**ncu_facts(result, text), "shape": ncu_shape(g.cfg)}
    if key == "bank_conflicts":
        return check.verdict(*bank_conflicts.judge_ncu(facts), fault_of(facts.get("problem")))
    structure = g.cfg["structure"]
    passed, message = data_reuse.judge_ncu(facts, g.tile or structure["tiles"][0], structure["reuse_fraction"])
    return check.verdict(passed, message + (f" ({g.tile_note})" if g.tile_note else ""), fault_of(facts.get("problem")))
