"""Parts that measure the host: what two workers cost each other (scaling), what a CUDA context costs under driver
settings (contexts), and where the host's CPU seconds go during one grade (cpu)."""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from .common import ROOT, _spinning

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
