"""Trusted parent side: a grade's checks and report, written as Gradescope results.json and as a readable summary."""
import json
import os
import tempfile
from dataclasses import dataclass, field

from ..outcome import Fault, fault_of

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
# What adds the CUDA compiler (NVVM, libdevice, the CUDA runtime library) to an environment whose numba-cuda came
# without the course's [ptx] extra: the one text the grader and the notebooks' self-check give.
TOOLKIT_INSTALL = 'pip install "numba-cuda[cu13]==0.30.4"'
NO_COMPILER = ("not gradable: the grading machine has no CUDA compiler (numba-cuda without its CUDA libraries). "
               f"Install them where you grade, then grade again: {TOOLKIT_INSTALL}\nWhat was missing")


@dataclass
class Check:
    stage: str
    key: str          # the config points key, which names its module in autograder/checks/
    name: str
    max_score: float
    score: float = 0.0
    status: str = FAILED
    output: str = ""

    regrade: bool = False  # not run for the grader's own trouble: grade again
    fault: Fault = None    # whose fault a failure is (outcome.py), set by the parent; None: passed or skipped

    def verdict(self, passed, output, fault=None):
        """Passed, or failed for `fault` (default: the kind `output` carries; plain text is the student's code). A
        failure that is the grader's counts neither way and flags a re-grade: a failure of the student's time limit
        or code fails."""
        fault = fault or fault_of(output) or Fault.CODE
        if not passed and fault is Fault.GRADER:
            self.regrade, self.fault = True, fault
            return self.skip("the grader's own trouble, not your code's; this check counts neither way and the "
                             "grade is flagged for a re-grade:\n" + output)
        self.status = PASSED if passed else FAILED
        self.score = self.max_score if passed else 0.0
        self.output = output
        self.fault = None if passed else fault
        return self

    def skip(self, why):
        """Visible, counted neither pass nor fail: worth nothing in this run."""
        self.status, self.score, self.max_score, self.output = SKIPPED, 0.0, 0.0, f"NOT RUN: {why}"
        return self


@dataclass
class Report:
    submission: str
    device: str
    seed: int
    checks: list = field(default_factory=list)
    leaderboard: list = field(default_factory=list)
    stages: list = field(default_factory=list)
    problems: list = field(default_factory=list)   # submission-level "not gradable" reasons
    notes: list = field(default_factory=list)      # what the student should know, not a failure (files skipped)
    files: dict = field(default_factory=dict)      # per stage: the file graded, relative to the submission
    seconds: float = 0.0
    sandbox: str = ""     # the backend the children ran under: bwrap, unshare or none
    timing: dict = field(default_factory=dict)   # seconds by kind (time_breakdown)
    children: list = field(default_factory=list, repr=False)   # every child: stage, check, start, wall, phases
    gpu: dict = field(default_factory=dict)     # per stage: the GPU's state around the speed check, who shared it
    speed: dict = field(default_factory=dict)   # per stage: the speed check's numbers

    @property
    def score(self):
        return sum(c.score for c in self.checks)

    @property
    def max_score(self):
        return sum(c.max_score for c in self.checks)

    @property
    def provisional(self):
        return any(c.status == SKIPPED for c in self.checks)

    @property
    def regrade(self):
        """The checks not run for the grader's own trouble ("stage: check"): the grade must be taken again."""
        return [f"{c.stage}: {c.name}" for c in self.checks if c.regrade]


def to_gradescope(report):
    tests = [{"name": f"stage {c.stage}: {c.name}", "score": round(c.score, 4), "max_score": round(c.max_score, 4),
              "status": c.status if c.status != "skipped" else "passed", "output": c.output,
              "visibility": "visible", "tags": [c.stage, c.key, c.status] + ([c.fault.name.lower()] if c.fault else []),
              **({"extra_data": {"fault": c.fault.value}} if c.fault else {})} for c in report.checks]
    summary = f"Graded on the {'GPU' if report.device == 'gpu' else 'CUDA simulator (no GPU)'} in {report.seconds:.1f} s."
    if report.provisional:
        summary += (" PROVISIONAL: some checks (speed, GPU tools) were not run here and count neither way;"
                    " the final grade comes from the GPU tier.")
    if report.files:
        summary += "\nFiles graded: " + ", ".join(f"stage {stage}: {file}" for stage, file in report.files.items())
    if report.notes:
        summary += "\nNote: " + "\nNote: ".join(report.notes)
    out = {"score": round(report.score, 4), "max_score": round(report.max_score, 4), "output": summary,
           "execution_time": round(report.seconds, 2), "visibility": "visible", "stdout_visibility": "hidden",
           "tests": tests, "extra_data": {"device": report.device, "provisional": report.provisional,
                                          "sandbox": report.sandbox,
                                          "stages": report.stages, "notes": report.notes, "files": report.files,
                                          "regrade": report.regrade}}
    if report.gpu:
        out["extra_data"]["gpu"] = gpu_summary(report.gpu)
    if report.speed:
        out["extra_data"]["speed"] = report.speed
    if report.timing:
        out["extra_data"]["timing"] = report.timing
    if report.leaderboard:
        board = report.leaderboard[0]
        status = board.get("status", "ranked")
        out["extra_data"]["leaderboard"] = {k: board[k] for k in board if k != "timings"}
        if status == "ranked":  # an entry marked for review is recorded above but not ranked
            out["leaderboard"] = [{"name": "TFLOP/s at N=%d" % board["n"], "value": round(board["tflops"], 3)}]
            if "percent_of_cublas" in board:
                out["leaderboard"].append({"name": "% of cuBLAS", "value": round(board["percent_of_cublas"], 1)})
    return out


def gpu_summary(per_stage):
    """{name, uuid, shared, stages: {stage: {clocks and temperature before/after, shared, others}}}."""
    first = next(iter(per_stage.values()))
    before = first.get("before", {})
    stages = {}
    for stage, facts in per_stage.items():
        stages[stage] = {"shared": facts.get("shared", False), "others": facts.get("others", []),
                         "attempts": facts.get("attempts", 1), "problem": facts.get("problem", ""),
                         **{f"{when}_{key}": facts.get(when, {}).get(key)
                            for when in ("before", "after")
                            for key in ("sm_clock_mhz", "max_sm_clock_mhz", "temperature_c", "utilization_percent")}}
    return {"name": before.get("name"), "uuid": before.get("uuid"),
            "shared": any(s["shared"] for s in stages.values()), "stages": stages}


def time_breakdown(children, total):
    """Where a grade's seconds went. Children overlap, so their sums can exceed the total: children_s is the
    children's wall time summed, startup_s the part of it before and after their task (interpreter, imports,
    CUDA start-up, sandbox), checks_s their task time, compile_s the compile children (on a GPU the build
    children) and speed_s the timing children (a grade's one timing child too, its waits for the GPU included),
    cpu_s the CPU seconds the children reported (every thread; the GPU tools' own processes not counted). Start-up
    costs inside those, where the children reported them: imports_s (the grader's imports in the child),
    module_s (the student module, Numba with it) and cuda_ctx_s (CUDA contexts), both counted in checks_s,
    and outside_s (the sandbox, the interpreter's start, the hand-back of results: a child's wall time outside
    its own Python code). ncu_s and racecheck_s are the GPU tools' runs, each from its start to its end, waits for
    the GPU's ncu lock included (gpu/tools.ToolTurn)."""
    def wall(*kinds):
        return sum(c["wall_s"] for c in children if not kinds or c["task"] in kinds)

    def tool(name):
        return round(sum(c["wall_s"] for c in children if c.get("tool") == name), 2)
    worked = [c for c in children if c["work_s"] is not None]
    phase = lambda c, key: ((c.get("profile") or {}).get("phases") or {}).get(key) or 0.0
    return {"total_s": round(total, 2), "children": len(children), "children_s": round(wall(), 2),
            "startup_s": round(sum(c["wall_s"] - c["work_s"] for c in worked), 2),
            "checks_s": round(sum(c["work_s"] for c in worked), 2), "compile_s": round(wall("compile", "build"), 2),
            "speed_s": round(wall("speed", "speed_parts"), 2),
            "ncu_s": tool("ncu"), "racecheck_s": tool("compute-sanitizer"),
            "cpu_s": round(sum(c.get("cpu_s") or 0.0 for c in children), 2),
            "imports_s": round(sum(phase(c, "imports_s") for c in worked), 2),
            "module_s": round(sum(phase(c, "module_s") for c in worked), 2),
            "cuda_ctx_s": round(sum((c.get("profile") or {}).get("cuda_init_s") or 0.0 for c in worked), 2),
            "outside_s": round(sum(c["wall_s"] - c["work_s"] - phase(c, "imports_s") for c in worked), 2)}


def read_results(path):
    """A results.json as written here (a JSON object with its list of tests), or None where the file is missing,
    unreadable or not one: the one reader of the engine's report."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("tests"), list) else None


def write_text_atomic(path, text):
    """Write a file so a reader never sees it half-written, even after a crash (the one atomic write of the
    grader and the course tools). It is readable by all (0644, as a plain write under the usual umask), not
    mkstemp's 0600: a feedback page is read by the web server, a TA and nbgrader."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    os.fchmod(fd, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:   # a name of bytes that are not UTF-8
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_json_atomic(path, data):
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


MARK = {"passed": "PASS", "failed": "FAIL", "skipped": "SKIP"}


def summary(report):
    lines = [f"{report.submission}: {report.score:g} / {report.max_score:g} points "
             f"({'GPU' if report.device == 'gpu' else 'simulator'}, {report.seconds:.1f} s, seed {report.seed})"]
    for c in report.checks:
        lines.append(f"  {MARK[c.status]}  {c.score:4g}/{c.max_score:<4g} stage {c.stage}: {c.name}")
        if c.status != "passed":
            lines.extend("          " + ln for ln in c.output.splitlines()[:12])
    if report.provisional:
        lines.append("  Provisional: checks marked SKIP need a GPU and count neither way.")
    if report.files:
        lines.append("  Files graded: " + ", ".join(f"stage {stage}: {file}" for stage, file in report.files.items()))
    lines.extend(f"  Note: {note}" for note in report.notes)
    if report.regrade:
        no_compiler = any(c.regrade and NO_COMPILER in c.output for c in report.checks)
        lines.append(f"  RE-GRADE: {len(report.regrade)} check(s) not run for the grader's own trouble "
                     "(they count neither way): " + (f"install the CUDA compiler with `{TOOLKIT_INSTALL}`, then grade "
                                                     "again" if no_compiler else "grade again"))
    return "\n".join(lines)
