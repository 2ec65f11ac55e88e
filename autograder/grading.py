"""Grade one submission: plan each stage's checks, run them in grading
children, judge the raw facts in this (trusted) process and score them.

Nothing here imports student code. Each check's untrusted work runs in its
own child (autograder.sandbox); a crash, exit, hang or CUDA error there fails
that check alone.
"""
import ast
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import config as config_mod
from . import sandbox, verdicts
from .submission import collect, host_shortcuts, unimplemented

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass
class Check:
    stage: str
    key: str          # the config points key
    name: str
    max_score: float
    score: float = 0.0
    status: str = FAILED
    output: str = ""

    def verdict(self, passed, output):
        self.status = PASSED if passed else FAILED
        self.score = self.max_score if passed else 0.0
        self.output = output
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
    seconds: float = 0.0
    sandbox: str = ""     # the backend the children ran under: bwrap, unshare or none

    @property
    def score(self):
        return sum(c.score for c in self.checks)

    @property
    def max_score(self):
        return sum(c.max_score for c in self.checks)

    @property
    def provisional(self):
        return any(c.status == SKIPPED for c in self.checks)


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
    """Plans, runs and judges the checks of one stage of one submission."""

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

    # -- planning ---------------------------------------------------------
    def shape_groups(self):
        tile = self.tile or 16
        if self.device == "gpu":
            return self.stage.gpu_shape_groups(tile)
        return self.stage.sim_shape_groups(tile)

    def tasks(self, pool):
        """Start every child this stage needs; return {name: future}."""
        self.stubs = unimplemented(self.src.source, (self.stage.kernel, self.stage.launcher))
        if self.stubs:
            return {}
        cc = self.cfg["grading"]["compute_capability"]
        compile_device = "gpu" if self.device == "gpu" else "ptx"
        futures = {"compile": pool.submit(self.run, self.job("compile", compile_device, cc=cc))}
        for group, shapes in self.shape_groups().items():
            inputs = {}
            for i, (M, K, N) in enumerate(shapes):
                inputs[f"A{i}"] = self.rng.standard_normal((M, K)).astype(np.float32)
                inputs[f"B{i}"] = self.rng.standard_normal((K, N)).astype(np.float32)
            futures["correct:" + group] = (pool.submit(self.run, self.job("run", self.device, count=len(shapes)), inputs),
                                           inputs)
        if self.wants_instruments():
            # Reuse is measured at 2 x 2 whole tiles; races need two tiles along K; one block is enough
            # for bank conflicts (a 1024-thread block costs seconds in the simulator).
            t = self.tile or 16
            M, K, N = (2 * t, 2 * t, 2 * t) if "data_reuse" in self.points else (t, t + 8, t)
            inputs = {"A0": self.rng.standard_normal((M, K)).astype(np.float32),
                      "B0": self.rng.standard_normal((K, N)).astype(np.float32)}
            futures["instruments"] = pool.submit(self.run, self.job("run", "sim", count=1, instrument=True), inputs)
        if self.device == "gpu":
            from .gpujudges import tool_tasks
            futures.update(tool_tasks(self, pool))
        return futures

    def wants_instruments(self):
        keys = {"races", "bank_conflicts", "data_reuse"} & set(self.points)
        if self.device == "gpu":
            keys.discard("races")
            keys.discard("bank_conflicts")
        return bool(keys)

    # -- judging ------------------------------------------------------------
    def judge(self, futures, gpu_runner):
        if self.stubs:
            why = (f"not implemented yet: {' and '.join(self.stubs)} still "
                   f"{'raises' if len(self.stubs) == 1 else 'raise'} NotImplementedError")
            checks = [self.check(key, name).verdict(False, why) for key, name in self.stub_checks() if key != "speed"]
            return checks + (self.sim_only_checks() if self.device == "sim" else
                             [self.check("speed", "speed").verdict(False, why)] if "speed" in self.points else [])
        checks = []
        shortcuts = host_shortcuts(self.src.source)
        compiled = futures["compile"].result()
        compile_check = self.judge_compile(compiled)
        checks.append(compile_check)
        if self.stage.tiled:
            checks.append(self.judge_shared_memory(compiled))
        groups = [k for k in futures if k.startswith("correct:")]
        for key in groups:
            future, inputs = futures[key]
            checks.append(self.judge_correct(key.split(":", 1)[1], future.result(), inputs, len(groups)))
        if "instruments" in futures:
            checks.extend(self.judge_instruments(futures["instruments"].result()))
        checks.extend(gpu_runner(self, compile_check, futures) if self.device == "gpu" else self.sim_only_checks())
        shortcut = Check(self.stage.name, "shortcuts", "No host-side shortcuts", 0)
        if shortcuts:
            shortcut.verdict(False, "Host-side shortcuts found; the whole stage scores 0:\n  " + "\n  ".join(shortcuts))
            for c in checks:
                if c.status != SKIPPED:
                    c.score = 0.0
        else:
            shortcut.verdict(True, "no NumPy/CuPy/cuBLAS products, host copies of operands or dynamic code")
        return [compile_check, shortcut] + checks[1:]

    def _child_problem(self, result):
        """A message when the child did not deliver usable facts, else ''."""
        if result.problem:
            return result.problem + (f"\nOutput:\n{result.log[-2000:]}" if result.log.strip() else "")
        for key in ("import_error", "task_error"):
            if key in result.facts:
                return result.facts[key]["message"]
        return ""

    def judge_compile(self, result):
        check = self.check("compiles", f"{self.stage.kernel} is a CUDA kernel that compiles for the GPU"
                                        f" (PTX, compute capability {'.'.join(map(str, self.cfg['grading']['compute_capability']))})")
        try:
            compile(self.src.source, self.module_path, "exec")  # the graded code, notebook cells joined
        except SyntaxError as exc:
            return check.verdict(False, f"syntax error at line {exc.lineno}: {exc.msg}\n  {(exc.text or '').strip()}")
        problem = self._child_problem(result)
        if problem:
            return check.verdict(False, problem)
        f = result.facts
        if not f["defines_kernel"] or not f["defines_launcher"]:
            missing = [n for n, ok in ((self.stage.kernel, f["defines_kernel"]), (self.stage.launcher, f["defines_launcher"])) if not ok]
            return check.verdict(False, f"missing {', '.join(missing)}: keep the names the exercise gives")
        if not f["is_cuda_kernel"]:
            return check.verdict(False, f"{self.stage.kernel} is not a Numba CUDA kernel: decorate it with @cuda.jit")
        if "compile_error" in f:
            return check.verdict(False, "the GPU compiler rejected the kernel (the simulator may still run it):\n"
                                        + f["compile_error"] + "\nShared-array shapes must be compile-time constants: "
                                        "use module-level names such as TILE_PAD = TILE + 1.")
        extra = f", {f['registers']} registers/thread" if "registers" in f else ""
        self.compile_facts = f
        return check.verdict(True, f"compiled: {len(f['shared_arrays'])} shared arrays "
                                   f"({sum(f['shared_arrays'])} bytes), {f['barriers']} barriers{extra}")

    def judge_shared_memory(self, result):
        tile = self.tile
        want = "a TILE x (TILE + 1) transposed B tile" if self.stage.padded_b else "two TILE x TILE tiles"
        check = self.check("shared_memory", f"shared-memory tiles ({want}) and barriers")
        f = result.facts
        if self._child_problem(result) or "shared_arrays" not in f:
            return check.verdict(False, "not checked: the kernel did not compile (see the compile check)")
        if not tile:
            return check.verdict(False, "define the tile size as a module constant, e.g. TILE = 16")
        sizes, tile_bytes = f["shared_arrays"], tile * tile * 4
        problems = []
        if sum(1 for s in sizes if s >= tile_bytes) < 2:
            problems.append(f"expected two shared arrays of at least TILE x TILE = {tile}x{tile} float32 "
                            f"({tile_bytes} bytes) each; found {sizes or 'none'}")
        if self.stage.padded_b and tile * (tile + 1) * 4 not in sizes:
            problems.append(f"no shared array of TILE x (TILE + 1) = {tile}x{tile + 1} float32 "
                            f"({tile * (tile + 1) * 4} bytes): pad the transposed B tile with one column "
                            "(TILE_PAD = TILE + 1) so a warp's reads fall into 32 different banks")
        if f["barriers"] < 2:
            problems.append(f"found {f['barriers']} barrier(s); a tiled loop needs two cuda.syncthreads(): "
                            "one after loading the tiles, one after using them")
        if problems:
            return check.verdict(False, "\n".join(problems))
        return check.verdict(True, f"shared arrays {sizes} bytes with TILE = {tile}; {f['barriers']} barriers")

    def judge_correct(self, group, result, inputs, n_groups):
        check = self.check("correct", f"correct results: {group}", 1.0 / n_groups)
        problem = self._child_problem(result)
        if problem:
            return check.verdict(False, problem)
        lines, ok = [], True
        for i, facts in enumerate(result.facts["shapes"]):
            A, B = inputs[f"A{i}"], inputs[f"B{i}"]
            shape = f"{A.shape[0]}x{A.shape[1]} @ {B.shape[0]}x{B.shape[1]}"
            if "error" in facts:
                ok = False
                lines.append(f"{shape}: {explain_error(facts['error'])}")
                if facts["error"]["kind"] in ("launch", "not_implemented", "cuda_error"):
                    break
                continue
            C = result.arrays.get(f"C{i}")
            if C is None or C.shape != (A.shape[0], B.shape[1]):
                ok = False
                lines.append(f"{shape}: no output came back")
                continue
            passed, message = verdicts.check_output(C, A, B, self.tol, self.tile)
            if facts.get("writes_past_end"):
                passed = False
                message += (f"\n{facts['writes_past_end']} values were written past the end of C: threads outside C "
                            "store anyway. Guard the store with `if row < M and col < N`.")
            ok &= passed
            lines.append(message)
        missing = len(inputs) // 2 - len(result.facts["shapes"])
        if missing > 0:
            lines.append(f"{missing} more shape(s) not run after the error above")
        return check.verdict(ok and missing <= 0, "\n".join(lines))

    def judge_instruments(self, result):
        from . import siminstruments as si
        checks = []
        wanted = [k for k in ("races", "bank_conflicts", "data_reuse") if k in self.points]
        if self.device == "gpu":
            wanted = [k for k in wanted if k == "data_reuse"]
        names = {"races": "no shared-memory races (simulator race detector)",
                 "bank_conflicts": "no shared-memory bank conflicts (simulator bank counter)",
                 "data_reuse": "each global load of A and B reused at least TILE/2 times (simulator load counter)"}
        problem = self._child_problem(result)
        shape_facts = result.facts.get("shapes", [{}])[0] if not problem else {}
        if not problem and "error" in shape_facts:
            problem = explain_error(shape_facts["error"])
        for key in wanted:
            check = self.check(key, names[key])
            if problem or "instruments" not in shape_facts:
                checks.append(check.verdict(False, "not checked: the instrumented run failed: " + (problem or "no facts")))
                continue
            facts = shape_facts["instruments"]
            if key == "races":
                checks.append(check.verdict(*si.judge_races(facts)))
            elif key == "bank_conflicts":
                checks.append(check.verdict(*si.judge_bank_conflicts(facts)))
            else:
                checks.append(check.verdict(*si.judge_data_reuse(facts, self.tile or 16,
                                                                 self.cfg["structure"]["reuse_fraction"])))
        return checks

    def stub_checks(self):
        """(key, name) of every check a stage has, for reporting an unfinished stage."""
        names = {"compiles": f"{self.stage.kernel} compiles for the GPU", "shared_memory": "shared-memory tiles and barriers",
                 "correct": "correct results", "races": "no shared-memory races",
                 "bank_conflicts": "no shared-memory bank conflicts", "data_reuse": "data reuse",
                 "speed": "speed"}
        return [(key, names[key]) for key in self.points]

    def sim_only_checks(self):
        if "speed" not in self.points:
            return []
        ref = self.cfg["stages"][self.stage.name]["speed"]
        return [self.check("speed", f"speed: at least {ref['min_speedup']}x {ref['reference']} at N="
                                    f"{self.cfg['speed']['n']}").skip(
            f"no GPU: the simulator cannot time kernels. Worth {self.points['speed']} points in the GPU tier; "
            "this score is provisional.")]


def explain_error(error):
    kind, message = error["kind"], error["message"]
    if kind == "index_error":
        return (message + "\nA thread indexed outside an array: guard loads and stores with the right bounds "
                "(row < M, col < N, k < K).")
    if kind == "cuda_error":
        return message + "\nThe GPU reported an error (often an out-of-bounds access); later checks run in new processes."
    return message


def grade(submission, stage=None, device="auto", seed=None, cfg=None, progress=None):
    """Grade a submission file or folder; return a Report. Raises SubmissionError/ConfigError for bad arguments."""
    from .gpujudges import gpu_checks
    cfg = cfg or config_mod.load()
    started = time.perf_counter()
    if device == "auto":
        device = "gpu" if gpu_available() else "sim"
    seed = secrets.randbits(63) if seed is None else seed
    report = Report(submission, device, seed)
    report.sandbox = sandbox.backend(cfg["limits"]["sandbox"])[0]
    sources = collect(submission, stage)
    rng = np.random.default_rng(seed)
    jobs = cfg["limits"]["jobs"] or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="submission-") as workdir, ThreadPoolExecutor(jobs) as pool:
        graders = []
        for src in sources:
            os.makedirs(os.path.join(workdir, src.stage.module), exist_ok=True)
            graders.append(StageGrader(src, device, cfg, rng, os.path.join(workdir, src.stage.module)))
        planned = [(g, g.tasks(pool)) for g in graders]
        if device == "gpu":  # speed is timed while judging: let every other child finish first
            for _, futures in planned:
                for f in futures.values():
                    (f[0] if isinstance(f, tuple) else f).exception()
        for g, futures in planned:
            report.stages.append(g.stage.name)
            checks = g.judge(futures, gpu_checks)
            report.checks.extend(checks)
            board = getattr(g, "leaderboard", None)
            if board:
                report.leaderboard.append(board)
            if progress:
                progress(g.stage, checks)
    report.seconds = time.perf_counter() - started
    return report
