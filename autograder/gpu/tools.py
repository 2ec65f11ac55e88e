"""Trusted parent side: run a grading child under compute-sanitizer or ncu.

The tool's report goes to a log file in a folder the parent chose, so nothing
the student prints can pass for a tool's verdict. A missing tool is a visible
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
    passed (StageGrader.gate_reason, asked by judge_on_gpu). It is not stopped when they fail: the grade waits for
    the other stages' tools anyway, and a tool killed while it runs a kernel can leave the GPU driver stuck."""
    path = find_tool(tool)
    if path is None:
        return None, None, f"{tool} is not installed on this machine (it comes with the CUDA toolkit)"
    with tempfile.TemporaryDirectory(prefix="tool-") as d:
        log = os.path.join(d, "tool.log")
        result = g.run(g.job("run", "gpu", count=1), inputs, wrapper=(path, *args(log)),
                       timeout=g.cfg["limits"]["tool_timeout_s"], what=f"the {tool} run", later=True)
        text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
    return result, text, ""
