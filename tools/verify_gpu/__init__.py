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
from importlib import metadata
import json
import os
import platform
import subprocess
import sys
import time

from autograder import config, engine
from autograder.gpu.tools import find_tool

from .beside import part_contention, part_interference
from .common import ROOT
from .grades import part_profile, part_regrade
from .host import part_contexts, part_cpu, part_scaling
from .slurm import part_slurm
from .suites import part_exploits, part_hang, part_ladder, part_tests
from .verdicts import part_agreement, part_slowed, part_stability

# Default parts: the speed check's own verification first (each writes its section as soon as it ends).
DEFAULT_PARTS = ["profile", "hang", "contention", "exploits", "regrade"]
ALL_PARTS = ["scaling", "contexts", "cpu", "slurm", "interference", "profile", "hang", "contention", "exploits", "regrade", "tests", "ladder", "stability", "slowed",
             "agreement"]


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


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tools.verify_gpu", description=__doc__.splitlines()[0])
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
