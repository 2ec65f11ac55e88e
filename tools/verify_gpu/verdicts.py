"""Parts that judge the verdicts themselves: the same speed check run many times, solutions slowed to either side
of the threshold, and the simulator's instruments against racecheck and ncu."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

from autograder import engine
from autograder.stages import find
from course.mutants import mutate, solution_text

from .common import ROOT, _speed_once

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
