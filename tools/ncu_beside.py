"""Do ncu's counters hold while another process runs kernels on the same GPU? The class run lets the grades of one
GPU run their correctness runners, compute-sanitizer and ncu beside each other and keeps the GPU exclusive only for
timing (autograder/gpu/slot.py); this measures whether ncu may be one of the overlapped children.

    python -m tools.ncu_beside [--n 2048] [--runs 2]

Each row is one ncu run as the grader makes it (gpu/tools._ncu_args) of a fresh process that launches the stage 2,
3 and 4 solutions' kernels once each at N x N, either alone on the GPU or beside a neighbour: a process that
launches the stage 1 solution at 4096 x 4096 (about 0.1 s a kernel) over and over on the same GPU, or that loop
under compute-sanitizer racecheck. The counters (global load requests, shared-load wavefronts, bank
conflicts) must agree for ncu to run beside other grades: global load requests exactly, bank conflicts within
their spread between two runs alone (they vary from run to run by about 0.001% of the wavefronts).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import types

from autograder.checks import bank_conflicts, data_reuse
from autograder.gpu.tools import NCU_METRICS, _ncu_args, find_tool, ncu_facts

CONFLICTS, WAVEFRONTS = bank_conflicts.NCU_METRICS[:2]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILED = """
import sys
sys.path.insert(0, {solutions!r})
import numpy as np
from numba import cuda
import s2_tiled, s3_tiled_general, s4_tiled_transposed
n = int(sys.argv[1])
rng = np.random.default_rng(1)
A = cuda.to_device(rng.uniform(-1, 1, (n, n)).astype(np.float32))
B = cuda.to_device(rng.uniform(-1, 1, (n, n)).astype(np.float32))
C = cuda.device_array((n, n), np.float32)
for launch in (s2_tiled.matmul_tiled, s3_tiled_general.matmul_tiled_general,
               s4_tiled_transposed.matmul_tiled_transposed):
    launch(A, B, C)
cuda.synchronize()
"""
NEIGHBOUR = """
import sys, time
sys.path.insert(0, {solutions!r})
import numpy as np
from numba import cuda
import s1_naive
A = cuda.to_device(np.ones((4096, 4096), np.float32)); B = cuda.to_device(np.ones((4096, 4096), np.float32))
C = cuda.device_array((4096, 4096), np.float32)
print("busy", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    s1_naive.matmul_naive(A, B, C)
    cuda.synchronize()
"""


def profile(ncu, prog, n, folder):
    log = os.path.join(folder, "ncu.log")
    if os.path.exists(log):
        os.remove(log)
    started = time.perf_counter()
    done = subprocess.run([ncu, *_ncu_args(log), sys.executable, prog, str(n)], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": folder})
    seconds = time.perf_counter() - started
    text = open(log, encoding="utf-8", errors="replace").read() if os.path.exists(log) else ""
    result = types.SimpleNamespace(problem="" if done.returncode == 0 else f"exit {done.returncode}: "
                                   + (done.stdout + done.stderr)[-300:], facts={}, log="")
    return ncu_facts(result, text), seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--runs", type=int, default=2)
    args = p.parse_args(argv)
    ncu, sanitizer = find_tool("ncu"), find_tool("compute-sanitizer")
    if ncu is None:
        print("no ncu on this machine")
        return 1
    solutions = os.path.join(ROOT, "solutions")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        prog, busy = os.path.join(d, "prog.py"), os.path.join(d, "busy.py")
        with open(prog, "w") as f:
            f.write(PROFILED.format(solutions=solutions))
        with open(busy, "w") as f:
            f.write(NEIGHBOUR.format(solutions=solutions))
        neighbours = [("alone", None), ("beside a kernel loop", [sys.executable, busy, "60"])]
        if sanitizer:
            neighbours.append(("beside racecheck", [sanitizer, "--tool", "racecheck", sys.executable, busy, "20"]))
        for label, cmd in neighbours:
            for run in range(args.runs):
                folder = tempfile.mkdtemp(dir=d)
                other = None
                if cmd:
                    other = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                             env={**os.environ, "TMPDIR": tempfile.mkdtemp(dir=d)})
                    other.stdout.readline()  # its kernels run from now on
                facts, seconds = profile(ncu, prog, args.n, folder)
                alive = other is not None and other.poll() is None
                if other is not None:
                    other.kill()
                    other.wait()
                rows.append((label, run + 1, seconds, alive, facts))
    print(f"| ncu run (N = {args.n}) | s | neighbour still running | kernels | "
          + " | ".join(NCU_METRICS) + " |\n|---|---|---|---|" + "---|" * len(NCU_METRICS))
    for label, run, seconds, alive, facts in rows:
        cells = ([facts["problem"][:80]] + [""] * len(NCU_METRICS) if "problem" in facts else
                 [str(facts["kernels"])] + [f"{facts[m]:,.0f}" for m in NCU_METRICS])
        print(f"| {label} #{run} | {seconds:.1f} | {'yes' if alive else '-'} | " + " | ".join(cells) + " |")
    ok = [f for *_, f in rows if "problem" not in f]
    if len(ok) < len(rows) or not ok:
        print("A RUN FAILED: see its row")
        return 2
    # global load requests are exact; bank conflicts (and with them the wavefronts) vary from run to run alone
    exact = all(len({f[m] for f in ok}) == 1 for m in data_reuse.LOAD_METRICS)
    alone = [f[CONFLICTS] for (label, *_), f in zip(rows, ok) if label == "alone"]
    spread = max(abs(f[CONFLICTS] - a) / f[WAVEFRONTS] for f in ok for a in alone)
    alone_spread = (max(alone) - min(alone)) / ok[0][WAVEFRONTS]
    print(f"global load requests: {'identical' if exact else 'DIFFER'}; "
          f"bank conflicts: at most {100 * spread:.4f}% of the shared-load wavefronts from an alone run "
          f"(alone runs among themselves: {100 * alone_spread:.4f}%)")
    return 0 if exact else 2


if __name__ == "__main__":
    sys.exit(main())
