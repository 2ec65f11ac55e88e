"""`make gpu-check`: the whole GPU verification in one scripted run.

Default parts (pick others with --part; each section is written as soon as it ends):
profile (one grade of solutions/ with every child on a timeline), hang (a
never-ending stage 2 kernel graded in at most 15 s), contention (stages 2 and 5
graded while another process loads the same GPU: speed "not gradable: shared"),
exploits (tests/test_speed_exploits.py: every timing exploit loses its speed
points or leaderboard entry) and regrade (10 full grades of solutions/:
scores, wall time, speedup and its CV per stage, clocks, leaderboard status).
Other parts: interference (the stage 2 speed check alone, beside idle CUDA
contexts, on a host whose every core is busy), the GPU-tier test suite
(every test marked gpu: solutions, stubs, known-bad and adversarial submissions), the
challenge's optimisation ladder against cuBLAS, verdict stability (the same
speed check 10 times; a solution slowed to 0.9x and 1.1x of its threshold) and
the agreement of the simulator's instruments with racecheck and ncu, cpu (where the
host's CPU seconds go during one grade, per program), scaling (what
two grades at once on two GPUs cost each other, against CPU load alone: the host's
cores, CUDA contexts, whole grades), and slurm (a
class graded through a one-node Slurm cluster on the host's GPUs against a local
run). It prints
Markdown rows for BENCHMARKS.md and writes them to --out.
"""
import argparse
import datetime
import glob
import json
from importlib import metadata
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from autograder import config, engine
from autograder.engine import timing
from autograder.gpu.tools import find_tool
from autograder import stages
from autograder.stages import find
from autograder.submission import collect
from course.mutants import mutate, solution_text

from . import ladder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Test files with GPU-marked tests (the GPU image has no Jupyter stack, so the rest are not collected there).
GPU_TEST_FILES = ["tests/test_gpu_plan.py", "tests/test_gpu_tier.py", "tests/test_adversarial.py", "tests/test_speed_exploits.py",
                  "tests/test_grammar.py", "tests/test_compile_launched.py", "tests/test_warp.py", "tests/test_unearned_points.py",
                  "tests/test_gpu_structure.py"]
# Default parts: the speed check's own verification first (each writes its section as soon as it ends).
DEFAULT_PARTS = ["profile", "hang", "contention", "exploits", "regrade"]
ALL_PARTS = ["scaling", "contexts", "cpu", "slurm", "interference", "profile", "hang", "contention", "exploits", "regrade", "tests", "ladder", "stability", "slowed",
             "agreement"]
LOAD_SCRIPT = """
import sys, time
end = time.time() + float(sys.argv[1])
try:
    import cupy
    a = cupy.random.rand(8192, 8192, dtype=cupy.float32)
    while time.time() < end:
        for _ in range(4):
            a @ a
        cupy.cuda.Device().synchronize()
except ImportError:  # the course's own naive kernel, from the repository root given as the second argument
    import numpy as np
    from numba import cuda
    sys.path.insert(0, sys.argv[2])
    from autograder.runner.references import naive_coalesced
    n = 2048
    A = cuda.to_device(np.random.rand(n, n).astype(np.float32))
    C = cuda.device_array((n, n), np.float32)
    while time.time() < end:
        naive_coalesced(A, A, C)
        cuda.synchronize()
"""
SPIN_TEMPLATE = '''

@cuda.jit
def spin_kernel(C, iterations):
    """A single thread's dependent chain from a run-time seed: a delay the compiler cannot fold away."""
    x = uint32(C.shape[1])
    for i in range(iterations):
        x = x * uint32(1664525) + uint32(1013904223)
    if x == uint32(7):
        C[0, 0] = float32(x)
'''


def environment():
    """The machine and the versions, read from the installed distributions: importing CuPy here would load the CUDA
    driver into the process that starts every grade's GPU children (and numpy before the grader, BENCHMARKS.md)."""
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    installed = {(d.metadata["Name"] or "").lower(): d.version for d in metadata.distributions()}
    names = ["numba", "numba-cuda", "numpy"] + sorted(n for n in installed if n.startswith("cupy"))
    versions = ", ".join(f"{n} {installed[n]}" for n in names if n in installed)
    tools = []
    for tool in ("compute-sanitizer", "ncu"):
        path = find_tool(tool)
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip().splitlines() if path else []
        tools.append(f"{tool}: {out[-1] if out else 'missing'}")
    from autograder import sandbox
    box, why = sandbox.backend(config.load()["limits"]["sandbox"])
    tools.append(f"sandbox: {box}{' (' + why + ')' if why else ''}")
    return f"{smi}; Python {platform.python_version()}; {versions}; " + "; ".join(tools)


def part_tests():
    started = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-rA", "-m", "gpu", *GPU_TEST_FILES, "-p", "no:cacheprovider"],
                       cwd=ROOT, capture_output=True, text=True)
    print(p.stdout[-12000:], p.stderr[-3000:])
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "no output"
    return f"### GPU-tier test suite\n\n`pytest -m gpu {' '.join(GPU_TEST_FILES)}`: {summary} ({time.perf_counter() - started:.0f} s)\n\n```\n" \
           + "\n".join(ln for ln in p.stdout.splitlines() if ln.startswith(("  ", "GPU tier", "leaderboard", "PASSED", "FAILED", "SKIPPED", "ERROR"))) + "\n```\n"


def part_ladder(n):
    """The ladder in a process of its own: its CUDA contexts (numba's, CuPy's) would otherwise stay on the GPU, held by
    this process, beside every later part's speed checks."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ladder.json")
        subprocess.run([sys.executable, "-m", "tools.ladder", "--n", str(n), "--repeats", "10", "--json", out],
                       cwd=ROOT, check=True)
        with open(out) as f:
            rows = json.load(f)
    return f"### Optimisation ladder, N={n}\n\n" + ladder.table(rows, n) + "\n", rows


def _speed_once(path, stage, cfg, seed):
    src = collect(path, stage)[0]
    with tempfile.TemporaryDirectory() as d:
        g = engine.StageGrader(src, "gpu", cfg, np.random.default_rng(seed), d)
        g.build_alone()
        check = timing.judge(g)
    return check, getattr(g, "speed", None)


CALIBRATE_SCRIPT = """
import json, statistics
import numpy as np
from numba import cuda, float32, uint32
ns = {"cuda": cuda, "float32": float32, "uint32": uint32}
exec(%r, ns)
C = cuda.device_array((1, 1), np.float32)
start, end = cuda.event(), cuda.event()
points = []
for iters in (20000, 200000):
    ns["spin_kernel"][1, 1](C, iters)
    times = []
    for _ in range(5):
        start.record()
        ns["spin_kernel"][1, 1](C, iters)
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    points.append((iters, statistics.median(times)))
print(json.dumps(points))
"""


def _calibrate_spin():
    """Milliseconds per iteration of spin_kernel, measured in a process of its own (this one never holds a CUDA
    context: the speed checks it starts would time beside it)."""
    out = subprocess.run([sys.executable, "-c", CALIBRATE_SCRIPT % SPIN_TEMPLATE], capture_output=True, text=True,
                         check=True).stdout
    (i0, t0), (i1, t1) = json.loads(out.strip().splitlines()[-1])
    slope = (t1 - t0) / (i1 - i0)
    return slope, t0 - slope * i0


def slowed_solution(stage_name, iterations):
    stage = find(stage_name)
    with open(os.path.join(ROOT, "solutions", stage.filename)) as f:
        text = f.read()
    launch = f"    {stage.kernel}[blocks, (TILE, TILE)](A, B, C)"
    assert launch in text
    text = text.replace(launch, launch + f"\n    spin_kernel[1, 1](C, {iterations})")
    return text.replace("from numba import cuda, float32", "from numba import cuda, float32, uint32") + SPIN_TEMPLATE


def part_stability(cfg, runs=10):
    lines = ["### Verdict stability", "",
             f"Each row: the speed check of a stage run {runs} times in fresh grading children (fresh inputs each run).", "",
             "| submission | verdicts | speedup median | min | max | CV of speedup |", "|---|---|---|---|---|---|"]
    for name in ("tiled", "tiled_general", "tiled_transposed"):
        stage = find(name)
        path = os.path.join(ROOT, "solutions", stage.filename)
        verdicts, ratios = [], []
        for r in range(runs):
            check, facts = _speed_once(path, stage, cfg, r)
            verdicts.append(check.status)
            ratios.append(facts["speedup"])
        lines.append(_row(f"solution {stage.filename}", verdicts, ratios))
    return "\n".join(lines) + "\n"


def part_slowed(cfg, runs=10):
    """The stage 2 solution slowed by a calibrated delay kernel to 0.9x and 1.1x of its speed threshold."""
    stage = find("tiled")
    rule = cfg["stages"]["tiled"]["speed"]
    base = [_speed_once(os.path.join(ROOT, "solutions", stage.filename), stage, cfg, r)[1] for r in range(3)]
    t_ref = statistics.median(x["reference_ms"] for x in base)
    t_sol = statistics.median(x["student_ms"] for x in base)
    slope, offset = _calibrate_spin()
    lines = ["### Slowed solutions at the speed threshold", "",
             f"Stage 2 solution {t_sol:.3f} ms, reference {t_ref:.3f} ms; delay kernel {slope * 1e6:.3f} ns per "
             f"iteration + {offset * 1e3:.1f} us. Each row: {runs} speed checks in fresh grading children.", "",
             "| submission | verdicts | speedup median | min | max | CV of speedup |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as d:
        for factor in (0.9, 1.1):
            target = t_ref / (factor * rule["min_speedup"])
            iterations = max(1, int((target - t_sol - offset) / slope))
            path = os.path.join(d, f"slowed_{factor}", stage.filename)
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                f.write(slowed_solution("tiled", iterations))
            verdicts, ratios = [], []
            for r in range(runs):
                check, facts = _speed_once(path, stage, cfg, 100 + r)
                verdicts.append(check.status)
                ratios.append(facts["speedup"] if facts else float("nan"))
            lines.append(_row(f"stage 2 slowed to {factor}x of its {rule['min_speedup']}x threshold "
                              f"(target {factor * rule['min_speedup']:.2f}x, {iterations} delay iterations)", verdicts, ratios))
    return "\n".join(lines) + "\n"


def _row(label, verdicts, ratios):
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in sorted(set(verdicts)))
    cv = statistics.pstdev(ratios) / statistics.mean(ratios)
    return f"| {label} | {counts} | {statistics.median(ratios):.3f} | {min(ratios):.3f} | {max(ratios):.3f} | {100 * cv:.2f}% |"


def part_agreement(cfg):
    """The simulator's instruments against racecheck and ncu on the same kernels."""
    kernels = [
        ("stage 2 solution", "tiled", solution_text("tiled")),
        ("stage 2 without second barrier", "tiled", mutate("tiled", (
            "            acc += sA[ty, k] * sB[k, tx]\n        cuda.syncthreads()\n", "            acc += sA[ty, k] * sB[k, tx]\n"))),
        ("stage 3 solution", "tiled_general", solution_text("tiled_general")),
        ("stage 4 solution", "tiled_transposed", solution_text("tiled_transposed")),
        ("stage 4 unpadded", "tiled_transposed", mutate("tiled_transposed", ("TILE_PAD = TILE + 1", "TILE_PAD = TILE"))),
    ]
    lines = ["### Simulator instruments vs GPU tools", "",
             "| kernel | check | simulator | GPU tool | simulator says | GPU tool says |", "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as d:
        for label, stage_name, text in kernels:
            stage = find(stage_name)
            path = os.path.join(d, label.replace(" ", "_"), stage.filename)
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                f.write(text)
            sim = engine.grade(path, stage=stage, device="sim", seed=5, cfg=cfg)
            gpu = engine.grade(path, stage=stage, device="gpu", seed=5, cfg=cfg)
            for key in ("races", "bank_conflicts"):
                s = [c for c in sim.checks if c.key == key]
                g = [c for c in gpu.checks if c.key == key]
                if s and g:
                    lines.append(f"| {label} | {key} | {s[0].status} | {g[0].status} | "
                                 f"{s[0].output.splitlines()[0][:90]} | {g[0].output.splitlines()[0][:90]} |")
    return "\n".join(lines) + "\n"


def _pytest(args, title):
    started = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-rA", "-m", "gpu", *args, "-p", "no:cacheprovider"],
                       cwd=ROOT, capture_output=True, text=True)
    print(p.stdout[-12000:], p.stderr[-3000:])
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "no output"
    keep = [ln for ln in p.stdout.splitlines()
            if ln.startswith(("PASSED", "FAILED", "ERROR", "SKIPPED", "E   ")) or ": " in ln and not ln.startswith(" ")]
    return (f"### {title}\n\n`pytest -m gpu {' '.join(args)}`: {summary} ({time.perf_counter() - started:.0f} s)\n\n"
            "```\n" + "\n".join(keep[-80:]) + "\n```\n")


IDLE_CONTEXT = """
import sys, time
import numpy as np
from numba import cuda
sys.path.insert(0, sys.argv[2])
cuda.current_context()
if sys.argv[3] == "compiled":  # as a prepared timing child: kernels loaded, 256 MB allocated, then idle
    from autograder.runner.references import transposed_unpadded_kernel, naive_coalesced_kernel
    from autograder.builder.launches import compile_for
    a = cuda.device_array((64, 64), np.float32)
    compile_for(transposed_unpadded_kernel, a, a, a)
    compile_for(naive_coalesced_kernel, a, a, a)
    keep = cuda.device_array(64 * 1024 * 1024, np.float32)
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
"""


def part_interference(cfg, runs=3):
    """Do idle CUDA contexts of the grader's other children, or a host whose every core is busy (another worker
    grading), change a timing? The stage 2 solution's speed check under each condition."""
    stage = stages.find("tiled")
    path = os.path.join(ROOT, "solutions", stage.filename)
    lines = ["### What may run beside the timing child", "", "| condition | speedups | student ms | reference ms |",
             "|---|---|---|---|"]
    for label, extra in (("alone", None), ("4 idle contexts", "bare"), ("4 idle contexts, kernels loaded", "compiled"),
                         ("every core busy (one spinning process per core)", "spin"), ("alone again", None)):
        procs = []
        if extra == "spin":
            procs = _spinning(os.cpu_count() or 1)
        elif extra:
            for _ in range(4):
                procs.append(subprocess.Popen([sys.executable, "-c", IDLE_CONTEXT, "300", ROOT, extra],
                                              stdout=subprocess.PIPE, text=True))
            for p in procs:
                p.stdout.readline()
        try:
            facts = [_speed_once(path, stage, cfg, 40 + r)[1] or {} for r in range(runs)]
        finally:
            for p in procs:
                p.kill()
                p.wait()
        lines.append(f"| {label} | " + ", ".join(f"{f.get('speedup', float('nan')):.2f}x" for f in facts) + " | "
                     + ", ".join(f"{f.get('student_ms', float('nan')):.2f}" for f in facts) + " | "
                     + ", ".join(f"{f.get('reference_ms', float('nan')):.2f}" for f in facts) + " |")
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def part_profile(cfg):
    """One five-stage grade of solutions/, every child on a timeline (tools/profile_grade.py)."""
    from . import profile_grade
    report = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=500, cfg=cfg)
    return (f"### Where one grade's seconds go\n\n{report.score:g}/{report.max_score:g} in {report.seconds:.1f} s; "
            f"breakdown {json.dumps(report.timing)}\n\n" + profile_grade.timeline(report) + "\n")


def part_exploits():
    """Every known-bad timing exploit loses its speed points or its leaderboard entry (tests/test_speed_exploits.py)."""
    return _pytest(["tests/test_speed_exploits.py", "-k", "not never_ending"], "Timing exploits")


def part_hang():
    """A never-ending stage 2 kernel is graded in at most 15 s."""
    return _pytest(["tests/test_speed_exploits.py", "-k", "never_ending"], "A kernel that never ends")


def part_regrade(cfg, runs=10):
    """`runs` full GPU grades of solutions/: score, wall time, speedup of every stage and its CV."""
    lines = [f"### Re-grades of solutions/ ({runs} full GPU grades)", "",
             "| grade | score | seconds | " + " | ".join(s.name for s in stages.STAGES) + " | leaderboard | GPU shared | SM clock before/after (stage 5) |",
             "|---" * (6 + len(stages.STAGES)) + "|"]
    speedups = {s.name: [] for s in stages.STAGES}
    scores, walls = [], []
    for r in range(runs):
        started = time.perf_counter()
        report = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=1000 + r, cfg=cfg)
        wall = time.perf_counter() - started
        scores.append((report.score, report.max_score))
        walls.append(wall)
        cells = []
        for s in stages.STAGES:
            facts = report.speed.get(s.name)
            speedups[s.name].append(facts["speedup"] if facts else float("nan"))
            cells.append(f"{facts['speedup']:.2f}x" if facts else "-")
        board = report.leaderboard[0] if report.leaderboard else {}
        gpu = report.gpu.get("fast", {})
        clocks = f"{gpu.get('before', {}).get('sm_clock_mhz')}/{gpu.get('after', {}).get('sm_clock_mhz')} MHz"
        lines.append(f"| {r + 1} | {report.score:g}/{report.max_score:g} | {wall:.1f} | " + " | ".join(cells) +
                     f" | {board.get('tflops', float('nan')):.1f} TFLOP/s, {board.get('status', '-')} | "
                     f"{any(g.get('shared') for g in report.gpu.values())} | {clocks} |")
        bad = [f"{c.stage}: {c.name}: {c.output.splitlines()[0] if c.output else ''}" for c in report.checks
               if c.status != "passed"]
        if bad:
            lines.append("|  | not passed: " + "; ".join(bad)[:600] + " |")
        print(lines[-1], flush=True)
    full = sum(1 for s, m in scores if s == m)
    lines += ["", f"Full marks in {full} of {runs} grades; wall time median {statistics.median(walls):.1f} s "
                  f"(min {min(walls):.1f}, max {max(walls):.1f}).", "",
              "| stage | speedup median | min | max | CV |", "|---|---|---|---|---|"]
    for name, values in speedups.items():
        v = [x for x in values if x == x]
        if v:
            cv = statistics.pstdev(v) / statistics.mean(v)
            lines.append(f"| {name} | {statistics.median(v):.2f}x | {min(v):.2f}x | {max(v):.2f}x | {100 * cv:.2f}% |")
    return "\n".join(lines) + "\n"


def _start_load(seconds):
    """A process that loads this GPU with matrix products for `seconds`; it is not a descendant of this process (its
    parent shell exits at once), as another user's job would not be. Returns its pid."""
    d = tempfile.mkdtemp(prefix="gpu-load-")
    script = os.path.join(d, "load.py")
    with open(script, "w") as f:
        f.write(LOAD_SCRIPT)
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" "{script}" {seconds} "{ROOT}" >"{d}/log" 2>&1 & echo $!'],
                         capture_output=True, text=True)
    return int(out.stdout.strip()), os.path.join(d, "log")


def part_contention(cfg):
    """Grade stages 2 and 5 of solutions/ while another process loads the same GPU: speed must be "not gradable:
    shared", never a pass or a fail on those numbers."""
    from autograder.gpu import exclusive
    c = {**cfg, "speed": {**cfg["speed"], "shared_retry_s": 2.0}}
    pid, log = _start_load(240)
    lines = ["### Grading on a shared GPU", "", f"Load: pid {pid}, matrix products on the same GPU (CuPy, else Numba)."]
    try:
        seen = []
        for _ in range(60):  # until nvidia-smi lists it (CUDA start-up takes a few seconds)
            seen, why = exclusive.compute_apps(exclusive.device_selector())
            if any(a["pid"] == pid for a in seen) or why:
                break
            time.sleep(0.5)
        lines.append(f"nvidia-smi listed before grading: {seen}")
        for name in ("tiled", "fast"):
            stage = stages.find(name)
            started = time.perf_counter()
            report = engine.grade(os.path.join(ROOT, "solutions", stage.filename), stage=stage, device="gpu",
                                  seed=7, cfg=c)
            check = [x for x in report.checks if x.key == "speed"][0]
            verdict = "OK" if check.status == "skipped" and "not gradable: the GPU was shared" in check.output else "WRONG"
            lines.append(f"- {verdict}: stage {name}: speed {check.status} ({time.perf_counter() - started:.0f} s): "
                         f"{check.output.splitlines()[0][:300]}; gpu facts: {json.dumps(report.gpu.get(name))[:600]}")
            print(lines[-1], flush=True)
        # the whole course with the default config: one retry for the grade, not one per stage
        started = time.perf_counter()
        report = engine.grade(os.path.join(ROOT, "solutions"), device="gpu", seed=9, cfg=cfg)
        seconds = time.perf_counter() - started
        verdicts = [c for c in report.checks if c.key == "speed"]
        ok = all(c.status == "skipped" and "not gradable" in c.output for c in verdicts)
        lines.append(f"- {'OK' if ok and seconds <= 30 else 'WRONG'}: all five stages under the load, default config "
                     f"(shared_retry_s {cfg['speed']['shared_retry_s']:g} s): every speed check not gradable: {ok}; "
                     f"the grade took {seconds:.1f} s (goal: at most 30 s); "
                     + "; ".join(f"{c.stage}: {c.output.splitlines()[0][:160]}" for c in verdicts))
        print(lines[-1], flush=True)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            lines.append("(the load process had already ended: " + open(log).read()[-500:] + ")")
    time.sleep(3)
    report = engine.grade(os.path.join(ROOT, "solutions", "s2_tiled.py"), stage=stages.find("tiled"), device="gpu",
                          seed=8, cfg=cfg)
    check = [x for x in report.checks if x.key == "speed"][0]
    lines.append(f"- after the load ended: stage tiled speed {check.status}: {check.output.splitlines()[0][:200]}")
    return "\n".join(lines) + "\n"


GRADE_ONE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from autograder import config, engine
r = engine.grade(sys.argv[2], device="gpu", seed=int(sys.argv[3]), cfg=config.load())
t = os.times()
print("RESULT " + json.dumps({"score": r.score, "seconds": r.seconds, "timing": r.timing,
                              "parent_cpu_s": t.user + t.system}), flush=True)
"""
SPIN_FIXED = "import time, sys\nt = time.perf_counter()\nx = 0\nfor i in range(int(sys.argv[1])): x += i\nprint(time.perf_counter() - t)"
CONTEXT_ONE = ("import time; t = time.perf_counter(); from numba import cuda; u = time.perf_counter(); "
               "from numba.cuda.cudadrv.driver import driver; driver.get_device_count(); v = time.perf_counter(); "
               "cuda.current_context(); print(u - t, time.perf_counter() - u, v - u)")
CONTEXT_VARIANTS = [("default", {}), ("CUDA_DEVICE_MAX_CONNECTIONS=1", {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}),
                    ("CUDA_MODULE_LOADING=EAGER", {"CUDA_MODULE_LOADING": "EAGER"}),
                    ("CUDA_DEVICE_MAX_CONNECTIONS=1, CUDA_DEVICE_MAX_COPY_CONNECTIONS=1",
                     {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_DEVICE_MAX_COPY_CONNECTIONS": "1"})]


def _spinning(n):
    """n processes that keep one CPU each busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _contexts_at_once(n, gpus, env=None):
    """n processes make a CUDA context at once, spread over `gpus` GPUs: the seconds of each one's `from numba import
    cuda`, context and cuInit (lists, empty where they failed)."""
    envs = [{**(env or {}), "CUDA_VISIBLE_DEVICES": str(i % gpus)} for i in range(n)]
    out = [ln.split() for ln in _parallel([[sys.executable, "-c", CONTEXT_ONE]] * n, envs) if ln.strip()]
    return tuple([float(a[k]) for a in out] for k in range(3))


def _parallel(argvs, envs=None, cpus=None):
    """Start every command at once; their stdout lines, in order."""
    procs = []
    for i, argv in enumerate(argvs):
        env = {**os.environ, **((envs or [{}] * len(argvs))[i])}
        pre = ["taskset", "-c", cpus[i]] if cpus and cpus[i] and shutil.which("taskset") else []
        procs.append(subprocess.Popen(pre + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      cwd=ROOT))
    return [p.communicate()[0] for p in procs]


def part_scaling(cfg):
    """Why a grade is slower beside a second worker: the host's cores under load (a fixed loop in N processes),
    CUDA contexts made at once (on one GPU, on two), and whole grades of solutions/ alone, two at once on two
    GPUs, beside spinning processes, and on half the cores."""
    lines = ["### What two workers cost each other", ""]
    cpu_max = open("/sys/fs/cgroup/cpu.max").read().strip() if os.path.exists("/sys/fs/cgroup/cpu.max") else "-"
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout if shutil.which("lscpu") else ""
    keep = [ln.strip() for ln in lscpu.splitlines() if ln.split(":")[0].strip() in
            ("Model name", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "CPU(s)", "CPU max MHz", "NUMA node(s)")]
    lines.append(f"Host: {os.cpu_count()} CPUs; {'; '.join(keep)}; cgroup cpu.max {cpu_max}.")
    lines += ["", "| processes at once | a fixed loop: seconds each (median, max) |", "|---|---|"]
    loop = [sys.executable, "-c", SPIN_FIXED, "10000000"]
    for n in (1, 4, 8, 16, 24, 32):
        t = [float(x) for x in _parallel([loop] * n)]
        lines.append(f"| {n} | {statistics.median(t):.2f}, {max(t):.2f} |")
        print(lines[-1], flush=True)
    gpus = len(glob.glob("/dev/nvidia[0-9]*"))
    lines += ["", "| CUDA contexts made at once | `from numba import cuda` s (median) | context s (median, max) |",
              "|---|---|---|"]
    for n, spread in ((1, 1), (8, 1), (8, 2), (16, 1), (16, 2)):
        if spread > gpus:
            continue
        imp, ctx, _ = _contexts_at_once(n, spread)
        lines.append(f"| {n} on {spread} GPU{'s' if spread > 1 else ''} | {statistics.median(imp):.2f} | "
                     f"{statistics.median(ctx):.2f}, {max(ctx):.2f} |")
        print(lines[-1], flush=True)
    lines.append("")
    half = f"0-{(os.cpu_count() or 2) // 2 - 1}"
    conditions = [("alone, GPU 0", 1, 0, None), ("two at once, GPUs 0 and 1", 2, 0, None), ("alone, GPU 0", 1, 0, None),
                  ("two at once, GPUs 0 and 1", 2, 0, None), ("beside 8 spinning processes", 1, 8, None),
                  ("beside 16 spinning processes", 1, 16, None), (f"alone on CPUs {half}", 1, 0, half),
                  ("two at once, each on half the CPUs", 2, 0, "split")]
    for r, (label, n, spinning, cpus) in enumerate(conditions):
        if n > gpus:
            continue
        cpu_sets = None
        if cpus == "split":
            h = (os.cpu_count() or 2) // 2
            cpu_sets = [f"0-{h - 1}", f"{h}-{2 * h - 1}"]
        elif cpus:
            cpu_sets = [cpus]
        hogs = _spinning(spinning)
        try:
            head, rows = _grade_rows(label, n, {}, cpu_sets, seed=900 + 10 * r)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        lines += (head if r == 0 else []) + rows
    return "\n".join(lines) + "\n"


def _grade_rows(label, n, env, cpus=None, seed=950):
    """Grades of solutions/ started at once (one per GPU), each its row of the time breakdown."""
    keys = ["total_s", "children_s", "startup_s", "outside_s", "imports_s", "module_s", "cuda_ctx_s", "compile_s",
            "speed_s", "cpu_s"]
    argv = [sys.executable, "-c", GRADE_ONE, ROOT, os.path.join(ROOT, "solutions")]
    outs = _parallel([argv + [str(seed + i)] for i in range(n)], [{**env, "CUDA_VISIBLE_DEVICES": str(i)} for i in range(n)],
                     cpus)
    rows = []
    for i, out in enumerate(outs):
        got = [json.loads(ln[7:]) for ln in out.splitlines() if ln.startswith("RESULT ")]
        if not got:
            rows.append(f"| {label} ({i}) | failed: {out.strip()[-200:]} |")
            continue
        t = got[0]["timing"]
        rows.append(f"| {label} ({i}) | {got[0]['score']:g} | " + " | ".join(f"{t.get(k, float('nan')):.1f}" for k in keys) + " |")
        print(rows[-1], flush=True)
    return ["| grades of solutions/ | score | " + " | ".join(keys) + " |", "|---" * (2 + len(keys)) + "|"], rows


def part_contexts(cfg):
    """What a CUDA context costs, alone and 16 at once over the host's GPUs, under driver settings that may make
    it cheaper; then whole grades alone and two at once (each on half the CPUs) under the cheapest."""
    lines = ["### CUDA contexts: settings", "", "| setting | at once | `from numba import cuda` s | cuInit s | "
             "context s (median, max) |", "|---|---|---|---|---|"]
    gpus = max(1, len(glob.glob("/dev/nvidia[0-9]*")))
    best = (float("inf"), "default", {})
    for label, env in CONTEXT_VARIANTS:
        for n in (1, 16):
            imp, ctx, init = _contexts_at_once(n, gpus, env)
            if not ctx:
                lines.append(f"| {label} | {n} | failed | | |")
                continue
            lines.append(f"| {label} | {n} | {statistics.median(imp):.2f} | {statistics.median(init):.2f} | "
                         f"{statistics.median(ctx):.2f}, {max(ctx):.2f} |")
            print(lines[-1], flush=True)
            if n == 16 and statistics.median(ctx) < best[0]:
                best = (statistics.median(ctx), label, env)
    h = (os.cpu_count() or 2) // 2
    lines += ["", f"Grades under: {best[1]}.", ""]
    head, rows = _grade_rows("alone", 1, best[2])
    lines += head + rows
    for label, env in (("two at once, half the CPUs each", best[2]), ("two at once, half the CPUs each, default", {})):
        if gpus >= 2:
            lines += _grade_rows(label, 2, env, [f"0-{h - 1}", f"{h}-{2 * h - 1}"])[1]
    return "\n".join(lines) + "\n"


def part_cpu(cfg):
    """Where the host's CPU seconds go while one grade of solutions/ runs: every process sampled every 0.1 s, its last
    reading summed per program (a process that ends between samples loses at most its last 0.1 s)."""
    from course.class_benchmark import CpuByProgram, host_cpu
    started, before = time.perf_counter(), host_cpu()
    with CpuByProgram(0.1) as sampled:
        outs = _parallel([[sys.executable, "-c", GRADE_ONE, ROOT, os.path.join(ROOT, "solutions"), "77"]])
    wall, busy = time.perf_counter() - started, host_cpu().get("busy", 0.0) - before.get("busy", 0.0)
    rows = sampled.programs(15)
    got = [json.loads(ln[7:]) for ln in outs[0].splitlines() if ln.startswith("RESULT ")]
    lines = ["### Where the host's CPU goes during one grade", "",
             f"Grade: {got[0]['score']:g} in {got[0]['seconds']:.1f} s, children's own report {got[0]['timing'].get('cpu_s')} "
             f"CPU s, the grading parent {got[0].get('parent_cpu_s', 0):.1f} CPU s; host busy {busy:.1f} CPU s in {wall:.1f} s; "
             f"the processes below {sum(c for _, _, c in rows):.1f}."
             if got else f"Grade failed: {outs[0][-300:]}", "", "| program | processes | CPU s |", "|---|---|---|"]
    lines += [f"| {name} | {n} | {c:.1f} |" for name, n, c in rows]
    print("\n".join(lines), flush=True)
    return "\n".join(lines) + "\n"


def part_slurm(students=6):
    """A generated class graded through a one-node Slurm cluster on this host's GPUs (tests/slurm/start-cluster.sh
    with the GPUs as GRES; a carried Slurm in .slurm/ is installed first where the host has none,
    tools/slurm_bundle.sh), and the same class graded locally on every GPU: the verdicts must be equal."""
    from course import class_benchmark
    lines = [f"### A class of {students} through Slurm on this host's GPUs", ""]
    if not shutil.which("slurmctld") and not os.path.exists("/usr/sbin/slurmctld"):
        bundle = os.path.join(ROOT, ".slurm")
        got = subprocess.run(["bash", os.path.join(ROOT, "tools", "slurm_bundle.sh"), "install", bundle],
                             capture_output=True, text=True)
        lines.append(f"Carried Slurm installed: status {got.returncode}: {(got.stdout + got.stderr).strip()[-600:]}")
        if got.returncode:
            return "\n".join(lines) + "\n"
    work = tempfile.mkdtemp(prefix="slurm-gpu-")
    cluster = os.path.join(work, "cluster")
    gpus = " ".join(sorted(glob.glob("/dev/nvidia[0-9]*")))
    started = time.perf_counter()
    up = subprocess.run(["bash", os.path.join(ROOT, "tests", "slurm", "start-cluster.sh"), cluster],
                        capture_output=True, text=True, env={**os.environ, "SLURM_GPU_FILES": gpus}, timeout=180)
    if up.returncode:
        lines.append(f"The cluster did not start ({time.perf_counter() - started:.0f} s): "
                     f"{(up.stderr or up.stdout).strip()[-800:]}")
        return "\n".join(lines) + "\n"
    env = {**os.environ, "SLURM_CONF": up.stdout.strip().splitlines()[-1]}
    lines.append(f"Cluster up in {time.perf_counter() - started:.1f} s: one node, GRES gpu = {gpus}.")
    try:
        results = {}
        for how in ("local", "slurm"):
            course = os.path.join(work, how)
            roster = class_benchmark.make_class(course, students)
            cmd = [sys.executable, "-m", "course.grade_class", course, "--device", "gpu", "--seed", "1"]
            cmd += ["--slurm", "--wait"] if how == "slurm" else []
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
            wall = time.perf_counter() - t0
            lines.append(f"- {how}: `{' '.join(cmd[1:])}`: status {proc.returncode}, {wall:.1f} s")
            if proc.returncode:
                lines.append("```\n" + (proc.stdout + proc.stderr)[-1500:] + "\n```")
                return "\n".join(lines) + "\n"
            results[how] = class_benchmark.verdicts(course, roster)
            if how == "slurm":
                acct = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True)
                lines.append(f"  Slurm output: {proc.stdout.strip().splitlines()[-1][:300] if proc.stdout.strip() else ''}"
                             f"; queue afterwards: {acct.stdout.strip() or 'empty'}")
        lines += ["", "| student | local score | Slurm score | Slurm task's GPU | same verdicts |", "|---|---|---|---|---|"]
        same = True
        for student in results["local"]:
            a, b = results["local"][student], results["slurm"][student]
            equal = (a["score"], a["checks"]) == (b["score"], b["checks"])
            same = same and equal
            lines.append(f"| {student} | {a['score']:g} | {b['score']:g} | {b['worker'].get('gpu')} | {equal} |")
        lines += ["", f"Verdicts identical: {same}."]
    finally:
        subprocess.run(["bash", os.path.join(ROOT, "tests", "slurm", "start-cluster.sh"), "--stop", cluster])
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", action="append", choices=ALL_PARTS,
                   help=f"pick parts (repeatable); default: {' '.join(DEFAULT_PARTS)}")
    p.add_argument("--regrades", type=int, default=10, help="full grades of solutions/ in the regrade part")
    p.add_argument("--out", default=os.path.join(ROOT, "build", "gpu-check.md"))
    p.add_argument("--n", type=int, default=4096)
    args = p.parse_args(argv)
    if not engine.gpu_available():
        print("gpu-check needs an NVIDIA GPU (nvidia-smi found none)", file=sys.stderr)
        return 2
    cfg = config.load()
    parts = args.part or DEFAULT_PARTS
    header = (f"## GPU check, {datetime.date.today().isoformat()}\n\nDevice: {environment()}\n\n"
              f"Command: `python -m tools.verify_gpu {' '.join(argv or sys.argv[1:])}`\n")
    sections = [header]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for part in parts:
        started = time.perf_counter()
        if part == "hang":
            sections.append(part_hang())
        elif part == "contention":
            sections.append(part_contention(cfg))
        elif part == "exploits":
            sections.append(part_exploits())
        elif part == "regrade":
            sections.append(part_regrade(cfg, args.regrades))
        elif part == "profile":
            sections.append(part_profile(cfg))
        elif part == "interference":
            sections.append(part_interference(cfg))
        elif part == "tests":
            sections.append(part_tests())
        elif part == "ladder":
            text, rows = part_ladder(args.n)
            sections.append(text)
            with open(os.path.splitext(args.out)[0] + "-ladder.json", "w") as f:
                json.dump(rows, f, indent=2)
        elif part == "slurm":
            sections.append(part_slurm())
        elif part == "scaling":
            sections.append(part_scaling(cfg))
        elif part == "contexts":
            sections.append(part_contexts(cfg))
        elif part == "cpu":
            sections.append(part_cpu(cfg))
        elif part == "stability":
            sections.append(part_stability(cfg))
        elif part == "slowed":
            sections.append(part_slowed(cfg))
        else:
            sections.append(part_agreement(cfg))
        sections[-1] += f"\n({part}: {time.perf_counter() - started:.0f} s)\n"
        print(sections[-1], flush=True)
        with open(args.out, "w") as f:
            f.write("\n".join(sections))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
