"""What grades on different GPUs of one host, and on one GPU, share: CUDA contexts, the GPU tools' start-up, ncu.

    python -m tools.host_probe [--gpus 4] [--n 2048]

A class run grades on every GPU of a host at once (course/schedule/); its efficiency says how much of a grade the
host shares. Each row starts a batch of fresh processes at the same moment, each pinned to one GPU with
CUDA_VISIBLE_DEVICES, and each reports when its CUDA context was made and how long that took:

- **contexts**: a plain Python process, then the same under compute-sanitizer racecheck and under ncu, making a
  context and launching one small kernel: alone, one per GPU, two per GPU;
- **ncu on one GPU**: two processes under ncu, each launching the stage 2, 3 and 4 solutions at N x N, started
  together, with their own temporary folders (ncu's own lock file cannot see the other: the grader's sandboxes) or
  a shared one (it can), and one whose context is made while the other profiles, its kernels launched once the
  other ended. Each says whether its counters came back (gpu/tools.ncu_facts) and when its kernels ran;
- **ncu on every GPU at once**: one such process on each GPU, each with its own folder (as the grader gives them):
  whether their kernels' profiling overlaps, or ncu profiles one GPU of the host at a time;
- **contexts in the grader's sandbox**: the process in the sandbox of a GPU child (sandbox/box.py), seeing every
  GPU's device file or only its own GPU's (sandbox/devices.py), and which GPUs CUDA then shows it;
- **beside nvidia-smi on another GPU**: a process under racecheck and one under ncu on the last GPU, alone and while
  nvidia-smi lists the first GPU's processes over and over (as the speed check's watch does while it times there):
  whether the watch of one GPU slows the tools of another.

- **CPU work at once**: the same pure-Python loop in 1, a quarter, half and all of the host's CPUs' worth of
  processes at once: whether a core is slower while the host is busier (the build children, the tools' host side).

`--rows` picks some of them (ncu, contexts, sandbox, smi, cpu).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

from autograder.checks.data_reuse import LOAD_METRICS
from autograder.gpu.tools import _ncu_args, find_tool, ncu_facts

LOADS = LOAD_METRICS[0]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = """
import json, sys, time
sys.path.insert(0, {solutions!r})
t0 = time.time()
import numpy as np
from numba import cuda
t_import = time.time()
cuda.current_context()
t_ctx = time.time()
mode, n, wait_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
launches = []
if mode == "small":
    import s1_naive
    a = cuda.to_device(np.ones((64, 64), np.float32))
    s1_naive.matmul_naive(a, a, a)
    cuda.synchronize()
    launches.append([t_ctx, time.time()])
else:
    import s2_tiled, s3_tiled_general, s4_tiled_transposed
    rng = np.random.default_rng(1)
    A = cuda.to_device(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    B = cuda.to_device(rng.uniform(-1, 1, (n, n)).astype(np.float32))
    C = cuda.device_array((n, n), np.float32)
    s2_tiled.matmul_tiled(A, B, C)  # compiled before the wait, launched (and profiled) after it
    cuda.synchronize()
    time.sleep(wait_s)
    for launch in (s2_tiled.matmul_tiled, s3_tiled_general.matmul_tiled_general,
                   s4_tiled_transposed.matmul_tiled_transposed):
        began = time.time()
        launch(A, B, C)
        cuda.synchronize()
        launches.append([began, time.time()])
print("PROBE " + json.dumps({{"start": t0, "imports": t_import - t0, "ctx": t_ctx - t_import, "ctx_at": t_ctx,
                             "launches": launches, "end": time.time()}}), flush=True)
"""


SANDBOX_PROG = """
import json, time
t0 = time.time()
from numba import cuda
t_import = time.time()
ctx = cuda.current_context()
t_ctx = time.time()
print("PROBE " + json.dumps({"start": t0, "imports": t_import - t0, "ctx": t_ctx - t_import, "ctx_at": t_ctx,
                             "gpus": len(cuda.gpus), "uuid": str(ctx.device.uuid), "end": time.time()}), flush=True)
"""


def batch(prog, gpus, wrapper=(), mode="small", n=64, waits=None, tmpdirs=None, logs=None, extra_env=None):
    """Start one process per entry of `gpus` at once; [(its probe dict or None, exit status, log text)]."""
    procs, started = [], time.time()
    for i, gpu in enumerate(gpus):
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "TMPDIR": tmpdirs[i] if tmpdirs else tempfile.mkdtemp(),
               **(extra_env or {})}
        argv = [*(wrapper(logs[i]) if callable(wrapper) else wrapper), sys.executable, prog, mode, str(n),
                str((waits or [0] * len(gpus))[i])]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    out = []
    for i, p in enumerate(procs):
        text, _ = p.communicate()
        line = next((ln for ln in text.splitlines() if ln.startswith("PROBE ")), None)
        probe = json.loads(line[6:]) if line else None
        if probe:
            probe["origin"] = started
        log = open(logs[i], encoding="utf-8", errors="replace").read() if logs and os.path.exists(logs[i]) else ""
        out.append((probe, p.returncode, log or text[-400:]))
    return out, time.time() - started


def contexts(prog, gpus, sanitizer, ncu, folder, extra_env=None):
    """Rows of the contexts table: per wrapper and layout, the context times and the batch's wall time (each
    batch twice: the first may find a GPU that has been idle)."""
    layouts = [("1 process, GPU 0", [0]), (f"{len(gpus)} at once, one a GPU", gpus),
               (f"{2 * len(gpus)} at once, two a GPU", [g for g in gpus for _ in range(2)]),
               (f"{len(gpus)} at once, all on GPU 0", [0] * len(gpus))]
    wrappers = [("python", ())]
    if sanitizer:
        wrappers.append(("racecheck", (sanitizer, "--tool", "racecheck")))
    if ncu:
        wrappers.append(("ncu", None))
    rows = []
    for wname, wrapper in wrappers:
        for lname, layout in layouts:
            if wname == "ncu" and len(set(layout)) < len(layout):
                continue  # two ncu runs on one GPU: the second table
            logs = [os.path.join(folder, f"ctx-{wname}-{i}.log") for i in range(len(layout))]
            wrap = (lambda log: (ncu, *_ncu_args(log))) if wname == "ncu" else wrapper
            for _ in range(2):
                results, wall = batch(prog, layout, wrap, logs=logs if wname == "ncu" else None, extra_env=extra_env)
            ok = [r for r, status, _ in results if r and status == 0]
            ctx = [r["ctx"] for r in ok]
            spans = [r["end"] - r["origin"] for r in ok]
            rows.append((wname, lname, len(ok), len(results), statistics.median(ctx) if ctx else None,
                         max(ctx) if ctx else None, max(spans) if spans else None, wall,
                         [status for _, status, _ in results if status]))
    return rows


def ncu_pairs(prog, ncu, n, folder):
    """Two ncu runs on GPU 0: (label, [ncu_run of each], the pair's wall time)."""
    cases = [("own temporary folders, together", False, [0, 0]),
             ("one shared temporary folder, together", True, [0, 0]),
             ("own folders, the second's kernels after the first ended", False, [0, 12])]
    rows = []
    for label, shared, waits in cases:
        tmp = [tempfile.mkdtemp(dir=folder)] * 2 if shared else [tempfile.mkdtemp(dir=folder) for _ in range(2)]
        logs = [os.path.join(folder, f"pair-{len(rows)}-{i}.log") for i in range(2)]
        results, wall = batch(prog, [0, 0], lambda log: (ncu, *_ncu_args(log)), mode="tiles", n=n, waits=waits,
                              tmpdirs=tmp, logs=logs)
        rows.append((label, [ncu_run(probe, status, log) for probe, status, log in results], wall))
    return rows


def ncu_run(probe, status, log):
    """(facts, exit status, context made at s, kernels' [start, end]) of one process under ncu, the times from its
    batch's start."""
    result = types.SimpleNamespace(problem="" if status == 0 else f"exit {status}", facts={}, log="")
    spans = [[round(b - probe["origin"], 2), round(e - probe["origin"], 2)] for b, e in probe["launches"]] \
        if probe else []
    return ncu_facts(result, log), status, round(probe["ctx_at"] - probe["origin"], 2) if probe else None, spans


def counters(facts):
    """A run's counters for a table cell: its kernels and global loads, or why it has none."""
    return facts["problem"][:60] if "problem" in facts else (
        f"{facts['kernels']} kernels, {facts[LOADS]:,.0f} global loads")


def ncu_across(prog, ncu, n, folder, gpus):
    """One ncu run on each GPU, started together, each with its own temporary folder (the grader gives each GPU its
    own): [(gpu, facts, status, context made at s, kernels' [start, end] from the batch's start)], the batch's wall
    time, and how many GPUs profiled at the busiest moment (1: ncu profiles one GPU of the host at a time)."""
    logs = [os.path.join(folder, f"across-{gpu}.log") for gpu in gpus]
    results, wall = batch(prog, gpus, lambda log: (ncu, *_ncu_args(log)), mode="tiles", n=n,
                          tmpdirs=[tempfile.mkdtemp(dir=folder) for _ in gpus], logs=logs)
    runs = [(gpu, *ncu_run(*result)) for gpu, result in zip(gpus, results)]
    spans = [(mine[0][0], mine[-1][1]) for *_, mine in runs if mine]
    busiest = max((sum(b <= t < e for b, e in spans) for t, _ in spans), default=0)
    return runs, wall, busiest


def beside_smi(prog, gpus, sanitizer, ncu, n, folder, runs=3):
    """[(tool, "alone" | "beside nvidia-smi", [wall s of each run], [context s], nvidia-smi calls made)]: one
    process under each tool on the last GPU, `runs` times alone and `runs` times while another thread runs
    `nvidia-smi --query-compute-apps -i <first GPU>` back to back. racecheck runs the tiles at 320 at most, the
    grader's size for it (at 2048 it ran for minutes)."""
    import threading
    from autograder.gpu.exclusive import compute_apps
    rows, gpu = [], gpus[-1]
    tools = [("racecheck", (sanitizer, "--tool", "racecheck"))] if sanitizer else []
    tools += [("ncu", lambda log: (ncu, *_ncu_args(log)))] if ncu else []
    for name, wrapper in tools:
        for beside in (False, True):
            stop, calls = threading.Event(), [0]

            def loop():
                while not stop.is_set():
                    compute_apps(str(gpus[0]))
                    calls[0] += 1
            thread = threading.Thread(target=loop, daemon=True)
            if beside:
                thread.start()
            walls, ctxs = [], []
            for i in range(runs):
                logs = [os.path.join(folder, f"smi-{name}-{beside}-{i}.log")]
                # racecheck at the grader's size for it (M and N 257-319: config.toml), ncu at the timed size
                size = min(n, 320) if name == "racecheck" else n
                results, wall = batch(prog, [gpu], wrapper, mode="tiles", n=size, logs=logs if name == "ncu" else None)
                walls.append(round(wall, 2))
                ctxs += [round(r["ctx"], 2) for r, status, _ in results if r and status == 0]
            stop.set()
            if beside:
                thread.join()
            rows.append((name, "beside nvidia-smi" if beside else "alone", walls, ctxs, calls[0]))
    return rows


CPU_PROG = "import time; t = time.perf_counter(); sum(i * i for i in range(20_000_000)); print(time.perf_counter() - t)"


def cpu_rows(runs=2):
    """[(processes at once, [s each took], batch wall s)]: a fixed pure-Python loop in 1, n/4, n/2 and n processes
    at once (n: this host's CPUs), each batch `runs` times."""
    n, rows = os.cpu_count() or 1, []
    for k in dict.fromkeys((1, max(1, n // 4), max(1, n // 2), n)):
        for _ in range(runs):
            began = time.time()
            procs = [subprocess.Popen([sys.executable, "-c", CPU_PROG], stdout=subprocess.PIPE, text=True)
                     for _ in range(k)]
            took = sorted(float(p.communicate()[0] or "nan") for p in procs)
            rows.append((k, took, time.time() - began))
    return rows


def sandboxed(gpus, own):
    """Processes made at once, one for each entry of `gpus`, each in a GPU child's sandbox that shows it its own
    GPU's device file (`own`) or every GPU's: [(probe dict or None, exit status, output tail, the GPU's UUID)]."""
    from autograder.sandbox.backends import backend
    from autograder.sandbox.box import Box, child_env
    from autograder.sandbox.devices import child_gpu
    name, _ = backend("auto")
    boxes, procs, started = [], [], time.time()
    for gpu in gpus:
        box = Box(name, {}, "gpu", {})
        found = child_gpu({"CUDA_VISIBLE_DEVICES": str(gpu)})
        box.gpu = found if own else None
        box.__enter__()
        os.makedirs(box.path("tmp"))
        script = box.path("probe-src.py")
        with open(script, "w") as f:
            f.write(SANDBOX_PROG)
        inside = box.place("probe.py", source=script)
        env = box.env({**child_env("gpu", "/tmp"), "CUDA_VISIBLE_DEVICES": str(gpu)})
        procs.append(subprocess.Popen(box.command([sys.executable, "-I", inside]), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, env=env, cwd=box.path("tmp")))
        boxes.append((box, found.uuid if found else None))
    out = []
    for (box, uuid), p in zip(boxes, procs):
        text, _ = p.communicate()
        box.__exit__(None, None, None)
        line = next((ln for ln in text.splitlines() if ln.startswith("PROBE ")), None)
        probe = json.loads(line[6:]) if line else None
        if probe:
            probe["origin"] = started
        out.append((probe, p.returncode, text[-300:], uuid))
    return out, time.time() - started


def sandbox_rows(gpus):
    """Rows of the sandbox table: per view and layout, the context times, the GPUs CUDA showed, whether device 0
    was the GPU the process was given (each batch twice: the first may find a GPU that has been idle)."""
    layouts = [("1 process, GPU 0", [0]), (f"{len(gpus)} at once, one a GPU", gpus),
               (f"{2 * len(gpus)} at once, two a GPU", [g for g in gpus for _ in range(2)])]
    rows = []
    for own in (False, True):
        for lname, layout in layouts:
            for _ in range(2):
                results, wall = sandboxed(layout, own)
            ok = [r for r, status, _, _ in results if r and status == 0]
            ctx = [r["ctx"] for r in ok]
            right = sum(r["uuid"] == uuid for r, status, _, uuid in results if r and status == 0)
            tails = [tail for r, status, tail, _ in results if not (r and status == 0)]
            rows.append(("its own GPU's" if own else "every GPU's", lname, len(ok), len(results),
                         statistics.median(ctx) if ctx else None, max(ctx) if ctx else None,
                         sorted({r["gpus"] for r in ok}), right, wall, tails[:1]))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpus", type=int, default=4)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--rows", default="ncu,contexts,sandbox,smi,cpu",
                   help="which tables: ncu, contexts, sandbox, smi, cpu")
    args = p.parse_args(argv)
    rows = set(args.rows.split(","))
    ncu, sanitizer = find_tool("ncu"), find_tool("compute-sanitizer")
    gpus = list(range(args.gpus))
    with tempfile.TemporaryDirectory() as folder:
        prog = os.path.join(folder, "prog.py")
        with open(prog, "w") as f:
            f.write(PROG.format(solutions=os.path.join(ROOT, "solutions")))
        if "cpu" in rows:
            print("| processes at once | s each (min, median, max) | batch wall s |\n|---|---|---|")
            for k, took, wall in cpu_rows():
                print(f"| {k} | {_fmt(took[0])}, {_fmt(statistics.median(took))}, {_fmt(took[-1])} | {wall:.2f} |",
                      flush=True)
        if "sandbox" in rows:
            print("| device files seen | processes | ran | context median s | context max s | GPUs CUDA showed | "
                  "device 0 is its GPU | batch wall s | a failure |\n|---|---|---|---|---|---|---|---|---|")
            for seen, lname, ok, total, med, mx, shown, right, wall, tail in sandbox_rows(gpus):
                print(f"| {seen} | {lname} | {ok}/{total} | {_fmt(med)} | {_fmt(mx)} | {shown} | {right}/{ok} | "
                      f"{wall:.2f} | {tail[0][-120:] if tail else ''} |", flush=True)
        if "smi" in rows and len(gpus) > 1:
            print(f"\n| on GPU {gpus[-1]} | | wall s of each run | context s | nvidia-smi calls on GPU {gpus[0]} |\n"
                  "|---|---|---|---|---|")
            for name, how, walls, ctxs, calls in beside_smi(prog, gpus, sanitizer, ncu, args.n, folder):
                print(f"| {name} | {how} | {walls} | {ctxs} | {calls} |", flush=True)
        if ncu and "ncu" in rows:
            print("| two ncu runs on GPU 0 | run | status | counters | context made at s | kernels ran s | "
                  "pair wall s |\n|---|---|---|---|---|---|---|")
            for label, runs, wall in ncu_pairs(prog, ncu, args.n, folder):
                for i, (facts, status, ctx_at, spans) in enumerate(runs):
                    print(f"| {label} | {i + 1} | {status} | {counters(facts)} | {ctx_at} | {spans} | {wall:.1f} |",
                          flush=True)
            runs, wall, busiest = ncu_across(prog, ncu, args.n, folder, gpus)
            print(f"\n| ncu on every GPU at once | status | counters | context made at s | kernels ran s |\n"
                  "|---|---|---|---|---|")
            for gpu, facts, status, ctx_at, spans in runs:
                print(f"| GPU {gpu} | {status} | {counters(facts)} | {ctx_at} | {spans} |", flush=True)
            print(f"\nBatch wall {wall:.1f} s; GPUs profiling at the busiest moment: {busiest} of {len(gpus)}.")
        if "contexts" not in rows:
            return 0
        print("\n| under | processes | ran | context median s | context max s | last ended s | batch wall s | "
              "failed |\n|---|---|---|---|---|---|---|---|")
        for env in ({}, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}):
            named = " ".join(f"{k}={v}" for k, v in env.items())
            for w, lname, ok, total, med, mx, span, wall, bad in contexts(prog, gpus, sanitizer, ncu, folder, env):
                print(f"| {w} {named} | {lname} | {ok}/{total} | {_fmt(med)} | {_fmt(mx)} | {_fmt(span)} | "
                      f"{wall:.2f} | {bad or ''} |", flush=True)
    return 0


def _fmt(value):
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(main())
