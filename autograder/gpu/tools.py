"""Trusted parent side: run a GPU runner under compute-sanitizer or ncu.

The runner never imports student code (child/plan_launch.py launches the
checked plan), so no student Python runs under the tool's uid to rewrite its
log. The tool's report goes to a log file the parent copies back from the
runner's own sandbox, so nothing a kernel prints (to stdout) can pass for a
tool's verdict. A missing tool is a visible
skip with its reason, never a pass. The logs are judged in checks/races.py and
checks/bank_conflicts.py.
"""
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ..checks.bank_conflicts import NCU_METRICS
from ..checks.titles import NCU_N, RACECHECK_N



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


def tool_tasks(g, pool):
    """Start the GPU tools' children of StageGrader `g` (they may run beside each other; timing runs later, alone)."""
    futures = {}

    def inputs(n):  # drawn here, in the planning thread: the generator is not shared across threads
        return {"A0": g.rng.standard_normal((n, n)).astype(np.float32),
                "B0": g.rng.standard_normal((n, n)).astype(np.float32)}
    if "races" in g.points:
        futures["racecheck"] = pool.submit(
            _tool_run, g, "races", "compute-sanitizer",
            lambda log: ("--tool", "racecheck", "--report-api-errors", "no", "--log-file", log), inputs(RACECHECK_N))
    if "bank_conflicts" in g.points:
        futures["ncu"] = pool.submit(
            _tool_run, g, "bank_conflicts", "ncu",
            lambda log: ("--clock-control", "none", "--metrics", ",".join(NCU_METRICS), "--csv",
                         "-k", f"regex:{g.stage.kernel}", "--log-file", log), inputs(NCU_N))
    return futures


def _tool_run(g, key, tool, args, inputs):
    """(child result, the tool's log text, why the tool is missing or ''). A tool run is the longest child of a
    stage, so it starts beside the correctness children instead of after them; its verdict counts only where they
    passed (StageGrader.gate_reason, asked by GpuStageGrader.tier_checks). It is not stopped when they fail: the grade waits for
    the other stages' tools anyway, and a tool killed while it runs a kernel can leave the GPU driver stuck."""
    path = find_tool(tool)
    if path is None:
        return None, None, f"{tool} is not installed on this machine (it comes with the CUDA toolkit)"
    n = inputs["A0"].shape[0]
    job, why = g.runner_job("run", [(n, n, n)], count=1)
    if why:
        return g.not_run(why), "", ""
    with tempfile.TemporaryDirectory(prefix="tool-") as d:
        log = os.path.join(d, "tool.log")
        result = g.run(job, inputs, wrapper=(path, *args(log)),
                       timeout=g.cfg["limits"]["tool_timeout_s"], what=f"the {tool} run", later=True)
        text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
    return result, text, ""
