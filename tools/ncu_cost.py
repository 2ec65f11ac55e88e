"""What one ncu run costs on this GPU, and which part of it is ncu's: the grader's ncu options against a plain run,
with one and three profiled kernels, and the options that could make it cheaper.

    python -m tools.ncu_cost [--n 2048] [--runs 2]

Each row is the wall time of a fresh process that imports numba, compiles the stage 2 solution's kernel and launches
it K times at N x N (median of `--runs`), or launches the stage 2, 3 and 4 solutions' kernels once each (three
modules, as the grade's one ncu run does). The difference between K = 1 and K = 3 is ncu's cost per profiled kernel,
the rest its start-up. Used to decide how the grade's one ncu run is made (BENCHMARKS.md).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from autograder.checks import bank_conflicts, data_reuse
from autograder.gpu.tools import find_tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = """
import sys
sys.path.insert(0, {solutions!r})
import numpy as np
from numba import cuda
import s2_tiled, s3_tiled_general, s4_tiled_transposed
n, k = int(sys.argv[1]), int(sys.argv[2])
A = cuda.to_device(np.ones((n, n), np.float32)); B = cuda.to_device(np.ones((n, n), np.float32))
C = cuda.device_array((n, n), np.float32)
launchers = [s2_tiled.matmul_tiled, s3_tiled_general.matmul_tiled_general, s4_tiled_transposed.matmul_tiled_transposed]
for i in range(k):
    (launchers[i % 3] if sys.argv[3] == "stages" else launchers[0])(A, B, C)
cuda.synchronize()
"""


def wall(cmd, runs):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode:
            return f"failed ({done.returncode}): {(done.stdout + done.stderr).strip()[-200:]}"
    return f"{statistics.median(times):.2f}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--runs", type=int, default=2)
    args = p.parse_args(argv)
    ncu = find_tool("ncu")
    metrics = bank_conflicts.NCU_METRICS + data_reuse.LOAD_METRICS
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "prog.py")
        with open(prog, "w") as f:
            f.write(PROGRAM.format(solutions=os.path.join(ROOT, "solutions")))
        log = os.path.join(d, "ncu.log")
        grader = ["--clock-control", "none", "--metrics", ",".join(metrics), "--csv", "--log-file", log]
        variants = [("plain run (no ncu)", None),
                    ("ncu as the grader runs it", grader),
                    ("+ --cache-control none", grader + ["--cache-control", "none"]),
                    ("+ --replay-mode application", grader + ["--replay-mode", "application"]),
                    ("load metrics only", ["--clock-control", "none", "--metrics", ",".join(data_reuse.LOAD_METRICS),
                                           "--csv", "--log-file", log]),
                    ("bank metrics only", ["--clock-control", "none", "--metrics",
                                           ",".join(bank_conflicts.NCU_METRICS), "--csv", "--log-file", log])]
        print(f"| what (N = {args.n}) | 1 kernel, s | 3 kernels, s | 3 kernels of stages 2-4 (3 modules), s |\n"
              "|---|---|---|---|")
        for label, opts in variants:
            cells = []
            for k, which in ((1, "same"), (3, "same"), (3, "stages")):
                cmd = [sys.executable, prog, str(args.n), str(k), which]
                cells.append(wall(cmd if opts is None else [ncu, *opts, *cmd], args.runs) if (opts is None or ncu)
                             else "no ncu")
            print(f"| {label} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
