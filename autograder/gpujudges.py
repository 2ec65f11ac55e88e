"""GPU-tier checks judged in the parent: speed against a reference kernel,
compute-sanitizer racecheck and ncu's shared-memory bank-conflict count.

The tools wrap a grading child; their reports go to log files in a folder the
parent chose, so nothing the student prints can pass for a tool's verdict. A
missing tool is a visible skip with its reason, never a pass.
"""
import os
import re
import shutil
import tempfile

import numpy as np

from . import verdicts
from .references import fill_uniform_host

BANK_METRICS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
RACECHECK_N = 64       # racecheck at N=256 ran past 5 minutes: keep it tiny
NCU_N = 256


def tool_tasks(g, pool):
    """Start the GPU tools' children (they may run beside each other; timing runs later, alone)."""
    futures = {}

    def inputs(n):  # drawn here, in the planning thread: the generator is not shared across threads
        return {"A0": g.rng.standard_normal((n, n)).astype(np.float32),
                "B0": g.rng.standard_normal((n, n)).astype(np.float32)}
    if "races" in g.points:
        futures["racecheck"] = pool.submit(
            _tool_run, g, "compute-sanitizer",
            lambda log: ("--tool", "racecheck", "--report-api-errors", "no", "--log-file", log), inputs(RACECHECK_N))
    if "bank_conflicts" in g.points:
        futures["ncu"] = pool.submit(
            _tool_run, g, "ncu",
            lambda log: ("--clock-control", "none", "--metrics", ",".join(BANK_METRICS), "--csv",
                         "-k", f"regex:{g.stage.kernel}", "--log-file", log), inputs(NCU_N))
    return futures


def gpu_checks(g, compile_check, futures):
    """All GPU-only checks of one StageGrader `g`; call when no other child uses the GPU (speed is timed)."""
    checks = []
    if compile_check.status != "passed":
        for key, name in (("races", "races"), ("bank_conflicts", "bank conflicts"), ("speed", "speed")):
            if key in g.points:
                checks.append(g.check(key, name).verdict(False, "not run: the kernel does not compile"))
        return checks
    if "races" in g.points:
        checks.append(racecheck(g, *futures["racecheck"].result()))
    if "bank_conflicts" in g.points:
        checks.append(bank_conflicts(g, *futures["ncu"].result()))
    if "speed" in g.points:
        checks.append(speed(g))
    return checks


def find_tool(name):
    """A CUDA tool on PATH or in the toolkit's default folder, or None."""
    return shutil.which(name) or next((p for p in (f"/usr/local/cuda/bin/{name}",) if os.path.exists(p)), None)


def _tool_run(g, tool, args, inputs):
    path = find_tool(tool)
    if path is None:
        return None, None, f"{tool} is not installed on this machine (it comes with the CUDA toolkit)"
    with tempfile.TemporaryDirectory(prefix="tool-") as d:
        log = os.path.join(d, "tool.log")
        result = g.run(g.job("run", "gpu", count=1), inputs, wrapper=(path, *args(log)))
        text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
    return result, text, ""


def racecheck(g, result, text, missing):
    check = g.check("races", f"no shared-memory races (compute-sanitizer racecheck, N={RACECHECK_N})")
    if missing:
        return check.skip(missing)
    m = re.search(r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
    if result.problem or not m:
        return check.verdict(False, "racecheck did not complete: " + (result.problem or text[-1500:] or "no report"))
    hazards, errors, warnings = map(int, m.groups())
    if errors or warnings:
        lines = [ln.strip() for ln in text.splitlines() if "hazard" in ln.lower()][:4]
        return check.verdict(False, f"racecheck found {hazards} hazards ({errors} errors, {warnings} warnings) "
                                    "on shared memory. Likely cause: a missing cuda.syncthreads() — one after "
                                    "loading the tiles and one after the inner loop, before the next load.\n"
                             + "\n".join(lines))
    return check.verdict(True, "racecheck: 0 hazards")


def bank_conflicts(g, result, text, missing):
    check = g.check("bank_conflicts", f"no shared-memory bank conflicts (ncu, N={NCU_N})")
    if missing:
        return check.skip(missing)
    values = {m: 0.0 for m in BANK_METRICS}
    seen = False
    for line in text.splitlines():
        for metric in BANK_METRICS:
            if metric in line:
                seen = True
                values[metric] += float(line.rsplit(",", 1)[-1].strip().strip('"').replace(",", "") or 0)
    if result.problem or not seen:
        return check.verdict(False, "ncu did not report the kernel: " + (result.problem or text[-1500:] or "no report"))
    conflicts, wavefronts = values[BANK_METRICS[0]], values[BANK_METRICS[1]]
    ratio = conflicts / wavefronts if wavefronts else 0.0
    detail = f"{conflicts:,.0f} bank conflicts in {wavefronts:,.0f} shared-load wavefronts ({100 * ratio:.1f}%)"
    g.bank_conflicts = {"conflicts": conflicts, "wavefronts": wavefronts}
    if ratio > 0.02:
        return check.verdict(False, detail + ". The warp's reads of the transposed B tile fall into the same bank: "
                                             "declare it TILE x TILE_PAD with TILE_PAD = TILE + 1.")
    return check.verdict(True, detail)


def speed(g):
    cfg = g.cfg["speed"]
    rule = g.cfg["stages"][g.stage.name]["speed"]
    check = g.check("speed", f"speed: at least {rule['min_speedup']}x {rule['reference']} at N={cfg['n']}")
    job = g.job("speed", "gpu", n=cfg["n"], warmup=cfg["warmup"], repeats=cfg["repeats"],
                reference=rule["reference"], leaderboard_n=cfg["leaderboard_n"] if g.stage.challenge else 0)
    result = g.run(job)
    problem = g._child_problem(result)
    if problem:
        return check.verdict(False, problem)
    n = cfg["n"]
    C = result.arrays.get("C")
    ok, message = (False, "no output came back") if C is None else verdicts.check_output(
        C, fill_uniform_host(n, n, 7), fill_uniform_host(n, n, 8), g.tol, g.tile)
    t = result.facts["timings"]
    student, ref = t["student"]["median_ms"], t["reference"]["median_ms"]
    ratio = ref / student
    g.speed = {"n": n, "student_ms": student, "reference_ms": ref, "speedup": ratio,
               "cv_student": t["student"]["cv"], "cv_reference": t["reference"]["cv"]}
    if "leaderboard" in result.facts:
        g.leaderboard = result.facts["leaderboard"]
    text = (f"{student:.3f} ms vs {rule['reference']} {ref:.3f} ms: {ratio:.2f}x "
            f"(needs {rule['min_speedup']}x; median of {cfg['repeats']})")
    if not ok:
        return check.verdict(False, text + "\nbut the output at this size is wrong:\n" + message)
    return check.verdict(ratio >= rule["min_speedup"], text)
