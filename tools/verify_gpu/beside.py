"""Parts that grade while something else runs: idle CUDA contexts or busy cores beside the timing child
(interference), and another process loading the same GPU (contention)."""
import json
import os
import subprocess
import sys
import tempfile
import time

from autograder import engine
from autograder import stages

from .common import ROOT, _speed_once, _spinning

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
