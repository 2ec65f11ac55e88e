"""Where the seconds of one GPU grade go: the children's timeline and the start-up costs beneath them.

    python -m tools.profile_grade [SUBMISSION] [--runs 2] [--no-probes] [--trace] [--parent-cpu]

Prints, for each grade, every child in the order it started (stage, check, start and end
seconds from the grade's start, the child's own phases: grader imports, the student
module with numba, CUDA context, task) and then what a bare interpreter, numpy, numba,
a CUDA context, CuPy, the sandbox and nvidia-smi cost on this machine. Used to decide
what to cut from a grade's start-up (BENCHMARKS.md). `--parent-cpu` also says where the grading process's own CPU
goes (a class worker spends 13-14 CPU s a grade on a GPU host: BENCHMARKS.md), by the grader's function each of its
threads was in.
"""
import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import time

from autograder import config, engine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBES = [("python -I (nothing)", "pass"),
          ("import numpy", "import numpy"),
          ("import numba", "import numba"),
          ("from numba import cuda", "from numba import cuda"),
          ("cuda context", "from numba import cuda; cuda.current_context()"),
          ("context + compile a tiled kernel", "import sys; sys.path.insert(0, %r); from numba import cuda; "
           "from autograder.runner.references import naive_coalesced, fill_uniform; import numpy as np; "
           "a = cuda.device_array((64, 64), np.float32); naive_coalesced(a, a, a); cuda.synchronize()" % ROOT),
          ("import cupy + matmul", "import cupy; a = cupy.ones((64, 64), cupy.float32); (a @ a).sum().get()")]


def timeline(report):
    children = sorted(report.children, key=lambda c: c["began"])
    origin = min(c["began"] for c in children) if children else 0.0
    lines = ["| stage | child | start s | end s | wall s | CPU s | imports | module | CUDA ctx | task | inside the task |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in children:
        prof = c.get("profile", {})
        ph = prof.get("phases", {})
        inner = ", ".join(f"{k} {v:.2f}" for k, v in prof.get("clock_s", {}).items())
        if "kernels_loaded" in prof:
            inner += f"; kernels loaded {prof['kernels_loaded']}, compiled {prof.get('kernels_compiled')}"
        fmt = lambda v: f"{v:.2f}" if isinstance(v, (int, float)) else "-"
        lines.append(f"| {c['stage']} | {c['what']} | {c['began'] - origin:.1f} | {c['began'] - origin + c['wall_s']:.1f}"
                     f" | {c['wall_s']:.2f} | {fmt(c.get('cpu_s'))} | {fmt(ph.get('imports_s'))} | {fmt(ph.get('module_s'))} | "
                     f"{fmt(prof.get('cuda_init_s'))} | {fmt(ph.get('task_s'))} | {inner} |")
    return "\n".join(lines)


def probe(code, env, runs=3):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        p = subprocess.run([sys.executable, "-I", "-c", code], env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if p.returncode:
            return f"failed: {p.stderr.strip().splitlines()[-1][:120] if p.stderr.strip() else p.returncode}"
    return f"{statistics.median(times):.2f} s"


def startup_costs():
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "NVIDIA_", "LD_LIBRARY_PATH"))})
    lines = ["| what | seconds (median of 3, fresh interpreter) |", "|---|---|"]
    for label, code in PROBES:
        lines.append(f"| {label} | {probe(code, env)} |")
    import numpy
    cached = os.path.isdir(os.path.join(os.path.dirname(numpy.__file__), "__pycache__"))
    lines.append(f"| numpy has compiled bytecode (__pycache__) | {cached} |")
    bwrap = shutil.which("bwrap")
    if bwrap:
        started = time.perf_counter()
        for _ in range(3):
            subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"])
        lines.append(f"| bwrap start (true) | {(time.perf_counter() - started) / 3:.3f} s |")
    smi = shutil.which("nvidia-smi")
    if smi:
        started = time.perf_counter()
        for _ in range(3):
            subprocess.run([smi, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                           capture_output=True)
        lines.append(f"| nvidia-smi --query-compute-apps | {(time.perf_counter() - started) / 3:.3f} s |")
    return "\n".join(lines)


class Trace:
    """Parent-side events of a grade (`--trace`), on the clock the children's start times use (time.monotonic):
    each GPU child's "go", the ncu run's end, the quiet GPU, each speed check's turn and the GPU watch's
    nvidia-smi edges. It wraps the engine's functions from outside; the grader itself is unchanged."""

    def __init__(self):
        from autograder.engine import timing as T
        from autograder.engine import children as C
        from autograder.gpu import exclusive as X
        from autograder.gpu import ncu_together as G
        import autograder.engine as E
        self.events = []
        mark = self.mark

        def wrap(owner, name, label, after=None):
            original = getattr(owner, name)

            def wrapped(*a, **k):
                mark(f"{label(*a, **k)} begins")
                try:
                    return original(*a, **k)
                finally:
                    mark(f"{label(*a, **k)} ends")
            setattr(owner, name, wrapped)
        wrap(X.Watch, "_edge", lambda self: "nvidia-smi edge")
        wrap(T, "judge", lambda g: f"speed check of {g.stage.name}")
        wrap(G.NcuTogether, "_together", lambda self: "ncu run (parent side)")
        judge_all = E._judge_all

        def judge_all_traced(planned, report, progress, quiet=None):
            def quiet_traced():
                quiet()
                mark("quiet: every other child ended, every timing child prepared")
            return judge_all(planned, report, progress, quiet_traced if quiet else None)
        E._judge_all = judge_all_traced
        run_child = C.sandbox.run_child

        def run_child_traced(job, limits, inputs=None, wrapper=(), timeout=None, cancel=None, turn=None, *a, **k):
            what = f"{job.get('task')} child of {job.get('kernel', '?')}" + (" under " + os.path.basename(wrapper[0]) if wrapper else "")
            def traced(step, i):
                def given(ready):
                    answer = step(ready)
                    mark(f"go {i} to a {what}" + ("" if not isinstance(answer, str) or not answer else " refused"))
                    return answer
                return given
            if turn is not None:
                steps = turn if isinstance(turn, (list, tuple)) else [turn]
                turn = [traced(step, i) for i, step in enumerate(steps)]
            try:
                return run_child(job, limits, inputs, wrapper, timeout, cancel, turn, *a, **k)
            finally:
                mark(f"a {what} ended")
        C.sandbox.run_child = run_child_traced

    def mark(self, what):
        self.events.append((time.monotonic(), what))

    def table(self, origin):
        lines = ["| s | event |", "|---|---|"]
        for t, what in sorted(self.events):
            lines.append(f"| {t - origin:.2f} | {what} |")
        self.events = []
        return "\n".join(lines)


class ParentCpu:
    """A sampler of this process's threads: every `every` s it reads each thread's CPU seconds from
    /proc/self/task/TID/stat and charges what a thread used since the last sample to the function it is in now, the
    innermost of the grader's own (autograder/) and the innermost of all. Linux only; counts in clock ticks (10 ms),
    so a grade's seconds, not its milliseconds."""

    def __init__(self, every=0.02):
        import threading
        self.every, self.spent, self.last = every, {}, {}
        self.stop, self.thread = threading.Event(), threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def _cpu(self, tid):
        from autograder import procstat
        stat = procstat.read(f"/proc/self/task/{tid}/stat")
        return procstat.cpu_seconds(stat[1]) if stat else None

    def _run(self):
        import threading
        me = threading.get_native_id()
        while not self.stop.wait(self.every):
            frames = sys._current_frames()
            for t in threading.enumerate():
                tid = t.native_id
                cpu = self._cpu(tid) if tid is not None and tid != me else None
                if cpu is None:
                    continue
                used, self.last[tid] = cpu - self.last.get(tid, cpu), cpu
                if used > 0 and t.ident in frames:
                    self.spent[self.where(frames[t.ident])] = self.spent.get(self.where(frames[t.ident]), 0.0) + used

    @staticmethod
    def where(frame):
        """'autograder/checks/speed.py:expected_projection <- numpy/...:astype': the grader's innermost function
        and the innermost of all."""
        inner, ours = frame, None
        while frame is not None:
            path = frame.f_code.co_filename
            if ours is None and os.path.join(ROOT, "autograder") in path:
                ours = f"{os.path.relpath(path, ROOT)}:{frame.f_code.co_name}"
            frame = frame.f_back
        leaf = f"{os.path.basename(inner.f_code.co_filename)}:{inner.f_code.co_name}"
        return f"{ours or '(not the grader)'} <- {leaf}"

    def table(self, top=15):
        rows = sorted(self.spent.items(), key=lambda kv: -kv[1])
        lines = [f"grading process CPU seen by the sampler: {sum(self.spent.values()):.2f} s", "",
                 "| CPU s | the grader's function <- where the thread was |", "|---|---|"]
        return "\n".join(lines + [f"| {s:.2f} | {w} |" for w, s in rows[:top]])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("submission", nargs="?", default=os.path.join(ROOT, "solutions"))
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--device", default="gpu")
    p.add_argument("--no-probes", action="store_true", help="leave out the start-up costs")
    p.add_argument("--trace", action="store_true", help="also list the parent's events (turns, edges, ends)")
    p.add_argument("--seed", type=int, default=500, help="the first grade's seed (then one more each grade)")
    p.add_argument("--parent-cpu", action="store_true", help="also say where the grading process's own CPU goes")
    args = p.parse_args(argv)
    cfg = config.load()
    trace = Trace() if args.trace else None
    out = []
    for r in range(args.runs):
        sampler = ParentCpu() if args.parent_cpu else None
        with sampler or contextlib.nullcontext():
            report = engine.grade(args.submission, device=args.device, seed=args.seed + r, cfg=cfg)
        origin = min((c["began"] for c in report.children), default=0.0)
        out.append(f"### Grade {r + 1}: {report.score:g}/{report.max_score:g} in {report.seconds:.1f} s\n\n"
                   f"breakdown: {report.timing}\n\n" + timeline(report)
                   + ("\n\n" + trace.table(origin) if trace else "")
                   + ("\n\n" + sampler.table() if sampler else ""))
        print(out[-1], flush=True)
    if not args.no_probes:
        out.append("### Start-up costs\n\n" + startup_costs())
        print(out[-1], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
