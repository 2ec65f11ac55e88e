"""Parts that run a suite in a process of their own: the GPU-tier tests, the timing exploits, a kernel that never
ends, and the optimisation ladder."""
import json
import os
import subprocess
import sys
import tempfile
import time

from .. import ladder
from .common import ROOT

# Test files with GPU-marked tests (the GPU image has no Jupyter stack, so the rest are not collected there).
GPU_TEST_FILES = ["tests/test_gpu_plan.py", "tests/test_gpu_tier.py", "tests/test_adversarial.py", "tests/test_speed_exploits.py",
                  "tests/test_grammar.py", "tests/test_compile_launched.py", "tests/test_warp.py", "tests/test_unearned_points.py",
                  "tests/test_gpu_structure.py"]


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


def part_exploits():
    """Every known-bad timing exploit loses its speed points or its leaderboard entry (tests/test_speed_exploits.py)."""
    return _pytest(["tests/test_speed_exploits.py", "-k", "not never_ending"], "Timing exploits")


def part_hang():
    """A never-ending stage 2 kernel is graded in at most 15 s."""
    return _pytest(["tests/test_speed_exploits.py", "-k", "never_ending"], "A kernel that never ends")
