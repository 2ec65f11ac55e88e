"""GPU runner (never imports student code): speed against a reference kernel
timed in the same process, and the challenge leaderboard numbers.

The student's kernels come as the build child's PTX with the parent's checked
launch plan (runner/plan_launch.py); the grader's own kernels come from the
grader's read-only kernel folder. The child works in two parts. It first
prepares: imports, the CUDA context, every kernel the timing runs loaded, the
operands allocated. No kernel runs then, so a child may prepare
while other checks use the GPU. It then tells the parent it is ready and waits;
only when the parent has the GPU to itself does it say "go", and the child
warms up and times.

Every timed run is checkable. The parent draws secret seeds per grade: run r
fills A and B from its own pair of seeds (a hash the parent rebuilds with
``fill_uniform_host``), C (with a guard tail) is re-poisoned with NaN before every
run, and after every run, outside the timed region, the child returns the
projection ``C @ X`` for a secret float64 X read only after the launchers ran.
X is read only once the parent says go, is on the device only while the
grader's projection kernel runs and is zeroed before any other kernel runs. The parent compares each projection with
``A @ (B @ X)`` (a randomised product check, checks/speed.py).
"""
import statistics
import time

from autograder.numba_objects import compile_for  # the grader's own kernels


class _Operands:
    """A and B inside NaN guards, as every other runner's operands are (runner/run.guarded_input: a kernel that
    reads past an edge finds the same there in a timed launch as in a profiled or race-checked one), C (a view at
    the start of a NaN-guarded buffer) at size n, and the projection's buffers."""

    def __init__(self, cuda, np, n, columns):
        from autograder.runner.run import device_output, guarded_input
        empty = np.zeros((n, n), np.float32)  # filled on the GPU before each run (fill_uniform_kernel)
        (self.Abuf, self.A, _), (self.Bbuf, self.B, _) = guarded_input(cuda, np, empty), guarded_input(cuda, np, empty)
        self.Cbuf, self.C, _ = device_output(cuda, np, n, n)
        self.X = cuda.device_array((n, columns), np.float64)
        self.P = cuda.device_array((n, columns), np.float64)
        self.rows = n * n


def _grader_kernels(ops, flush, references):
    """(kernel, arguments) of every grader kernel the timing runs use."""
    from autograder.runner import references as R
    return ([(R.fill_uniform_kernel, (ops.A, 0)), (R.scrub_kernel, (flush, 0.0)),
             (R.project_kernel, (ops.C, ops.X, ops.P)), (R.zero_kernel, (ops.X,))]
            + [(ref.kernel, (ops.A, ops.B, ops.C)) for ref in references])


def _prepare_kernels(kernels, folder=None, writable=False):
    """Compile every kernel the timing runs use, so nothing compiles once the parent says go. The grader's own
    kernels load from the grader's kernel folder when it has them (kernel_cache). Returns (loaded, compiled)."""
    from autograder.runner import kernel_cache
    from autograder.numba_objects import is_cuda_kernel
    from autograder.runner.references import GRADER_KERNELS
    kernel_cache.attach([k for k in GRADER_KERNELS if is_cuda_kernel(k)], folder, writable)
    for kernel, args in kernels:
        compile_for(kernel, *args)
    return kernel_cache.hits(dict.fromkeys(k for k, _ in kernels))


def task_warm(job):
    """Compile the grader's kernels into the grader's kernel folder (a child that runs no student code; every
    other child sees that folder read-only)."""
    import numpy as np
    from numba import cuda
    from autograder.runner.references import REFERENCES
    cuda.current_context()
    ops = _Operands(cuda, np, 64, job.get("projection_columns", 2))
    flush = cuda.device_array(1024, np.float32)
    loaded, compiled = _prepare_kernels(_grader_kernels(ops, flush, REFERENCES.values()),
                                        job["kernel_dirs"]["grader"], True)
    return {"kernels_loaded": loaded, "kernels_compiled": compiled}, {}


def _time_contenders(cuda, np, contenders, ops, X, seeds, warmup, flush):
    """Per contender: the milliseconds of every timed run, the projection C @ X after each run and the number of
    values written past the end of C.

    CUDA events around each run, warm-up, interleaved order, fresh inputs from the run's seeds, C re-poisoned and
    persisting L2 lines reset before an L2 flush ahead of every timed run. Every launch is on the default stream
    (a plan names no stream: runner/plan_launch.py), so the end event, recorded right after the launches, follows all their work; recording
    it only after a host-side synchronisation would add the host's delays to the time (on a busy machine they
    read as kernels 2.7x slower)."""
    from autograder.runner.references import fill_uniform, flush_l2, poison, project, reset_persisting_l2
    fill_uniform(ops.A, seeds[0][0])  # warm up on real numbers, not on uninitialised memory
    fill_uniform(ops.B, seeds[0][1])
    for run in contenders.values():
        for _ in range(warmup):
            run()
    cuda.synchronize()
    names = list(contenders)
    n_runs = len(seeds)
    times = {name: [] for name in names}
    projections = {name: np.zeros((n_runs,) + (ops.C.shape[0], X.shape[1]), np.float32) for name in names}
    past_end = {name: [] for name in names}
    l2_reset = ""
    start, end = cuda.event(), cuda.event()
    for r, (seed_a, seed_b) in enumerate(seeds):
        for name in (names if r % 2 == 0 else names[::-1]):
            fill_uniform(ops.A, seed_a)
            fill_uniform(ops.B, seed_b)
            poison(ops.Cbuf)
            cuda.synchronize()
            l2_reset = reset_persisting_l2() or l2_reset
            flush_l2(flush, float(r))
            start.record()
            contenders[name]()
            end.record()  # at once: a late host (a busy machine) must not stretch the time
            end.synchronize()
            cuda.synchronize()
            times[name].append(start.elapsed_time(end))
            projections[name][r] = project(ops, X)
            tail = ops.Cbuf[ops.rows:].copy_to_host()
            past_end[name].append(int(np.count_nonzero(~np.isnan(tail))))
    stats = {name: {"median_ms": statistics.median(t), "times_ms": t, "past_end": past_end[name],
                    "cv": statistics.pstdev(t) / statistics.mean(t) if len(t) > 1 else 0.0}
             for name, t in times.items()}
    return stats, projections, l2_reset


def _student(launches, loaded, plan, ops):
    """The student's launches on `ops` as one callable: a GPU runner's checked plan from PTX, or, in the simulator
    (where the timing logic is tested without a GPU), `launches(plan, ops)`, which the simulator child passes
    (sim/plans.speed_launches: the same plan with the module's kernels looked up by name)."""
    if launches is None:
        from autograder.runner.plan_launch import launcher
        return launcher(loaded, plan, ops.A, ops.B, ops.C)
    return launches(plan, ops)


def task_speed(job, turn=None, launches=None):
    """Wait for `turn()` (the parent's first go: the stage's correctness passed), prepare, wait for `turn()` again
    (the second: the GPU is the grader's alone), then time; None: at once. The child starts beside the stage's
    correctness checks and imports meanwhile, but makes no CUDA context before the first go. Returns (facts,
    arrays)."""
    import numpy as np
    from numba import cuda
    from autograder.runner.plan_launch import Loaded
    from autograder.runner.references import REFERENCES
    clock = [("began", time.perf_counter())]
    if turn is not None:
        turn()
        clock.append(("waited for correctness", time.perf_counter()))
    cuda.current_context()
    clock.append(("context", time.perf_counter()))
    n = job["n"]
    columns = job.get("projection_columns", 2)
    ops = _Operands(cuda, np, n, columns)
    loaded = Loaded(job["kernels"]) if launches is None else None  # linked and loaded before the parent's go
    student = _student(launches, loaded, job.get("plan"), ops)
    reference = REFERENCES[job["reference"]]
    # 256 MB, several times any L2 (a test of this task in the simulator passes a small one)
    flush = cuda.device_array(job.get("flush_floats", 64 * 1024 * 1024), np.float32)
    kernels = _grader_kernels(ops, flush, [reference])
    board = _Board(cuda, np, job, columns, lambda ops: _student(launches, loaded, job["leaderboard"].get("plan"), ops)) \
        if job.get("leaderboard") else None
    loaded, compiled = _prepare_kernels(kernels, job.get("kernel_dirs", {}).get("grader"))
    clock.append(("prepared", time.perf_counter()))
    if turn is not None:
        turn()
    clock.append(("waited", time.perf_counter()))
    # The secret projection vectors are read only now: no student host code runs after the launchers.
    with np.load(job["inputs_path"], allow_pickle=False) as data:
        X, X_board = data["X"], (data["X_board"] if "X_board" in data.files else None)
    contenders = {"student": student}
    if job.get("time_reference", True):  # False: this grade timed the reference at this size already (the parent's)
        contenders["reference"] = lambda: reference(ops.A, ops.B, ops.C)
    stats, proj, l2 = _time_contenders(cuda, np, contenders, ops, X, job["seeds"], job["warmup"], flush)
    clock.append(("timed", time.perf_counter()))
    facts = {"n": n, "timings": stats, "l2_reset": l2 or "done", "kernels_loaded": loaded,
             "kernels_compiled": compiled}
    arrays = {f"P_{name}": p for name, p in proj.items()}
    if board is not None:
        facts["leaderboard"], board_proj = board.time(X_board, flush)
        arrays.update({f"P_board_{name}": p for name, p in board_proj.items()})
        clock.append(("board", time.perf_counter()))
    facts["clock_s"] = {b: t1 - t0 for (_, t0), (b, t1) in zip(clock, clock[1:])}
    return facts, arrays


class _Board:
    """The challenge's leaderboard runs at their own size, against cuBLAS (CuPy) where it is installed."""

    def __init__(self, cuda, np, job, columns, student):
        self.cuda, self.np, self.lb = cuda, np, job["leaderboard"]
        self.ops = ops = _Operands(cuda, np, self.lb["n"], columns)
        self.contenders = {"student": student(ops)}
        try:
            import cupy
            cA, cB, cC = (cupy.asarray(x) for x in (ops.A, ops.B, ops.C))
            try:
                cupy.cuda.device.get_cublas_handle()  # cuBLAS is loaded now, not while timing
            except Exception:
                pass
            self.contenders["cublas"] = lambda: cupy.matmul(cA, cB, out=cC)
            self.cublas_problem = ""
        except Exception as exc:  # CuPy missing or unusable: the percentage is left out, visibly
            self.cublas_problem = f"{type(exc).__name__}: {exc}"

    def time(self, X, flush):
        n = self.lb["n"]
        t, proj, _ = _time_contenders(self.cuda, self.np, self.contenders, self.ops, X, self.lb["seeds"], 2, flush)
        flops = 2.0 * n ** 3
        board = {"n": n, "tflops": flops / (t["student"]["median_ms"] * 1e-3) / 1e12, "timings": t}
        if "cublas" in t:
            board["cublas_tflops"] = flops / (t["cublas"]["median_ms"] * 1e-3) / 1e12
            board["percent_of_cublas"] = 100.0 * t["cublas"]["median_ms"] / t["student"]["median_ms"]
        else:
            board["cublas_problem"] = self.cublas_problem
        return board, proj


def task_speed_parts(job, turn):
    """The grade's one timing child (engine/timing_together.py): every stage's speed check in one process, one CUDA
    context instead of one a stage. The first go gives the parts (the stages whose correctness passed), which are
    all prepared before the second go (no kernel runs then); after it each part is timed as task_speed times one,
    one after another, on operands of its own. Returns (facts, arrays): facts["parts"][k] and arrays P{k}_... are
    what task_speed returns for part k."""
    import numpy as np
    from numba import cuda
    from autograder.runner.plan_launch import Loaded
    from autograder.runner.references import REFERENCES
    clock = [("began", time.perf_counter())]
    turn()
    clock.append(("waited for correctness", time.perf_counter()))
    cuda.current_context()
    clock.append(("context", time.perf_counter()))
    flush = cuda.device_array(job.get("flush_floats", 64 * 1024 * 1024), np.float32)
    prepared, kernels = [], []
    for part in job["parts"]:
        ops = _Operands(cuda, np, part["n"], part.get("projection_columns", 2))
        loaded = Loaded(part["kernels"])
        student = _student(None, loaded, part["plan"], ops)
        reference = REFERENCES[part["reference"]]
        kernels += _grader_kernels(ops, flush, [reference])
        board = (_Board(cuda, np, part, part.get("projection_columns", 2),
                        lambda ops, loaded=loaded, part=part: _student(None, loaded, part["leaderboard"].get("plan"), ops))
                 if part.get("leaderboard") else None)
        prepared.append((part, ops, student, reference, board))
    loaded_n, compiled = _prepare_kernels(kernels, job.get("kernel_dirs", {}).get("grader"))
    clock.append(("prepared", time.perf_counter()))
    turn()
    clock.append(("waited", time.perf_counter()))
    with np.load(job["inputs_path"], allow_pickle=False) as data:  # the secret projections, read only now
        secrets = {k: data[k] for k in data.files}
    facts, arrays = {"parts": [], "kernels_loaded": loaded_n, "kernels_compiled": compiled}, {}
    for k, (part, ops, student, reference, board) in enumerate(prepared):
        contenders = {"student": student}
        if job["time_reference"][k]:
            contenders["reference"] = lambda reference=reference, ops=ops: reference(ops.A, ops.B, ops.C)
        key = part["key"]
        stats, proj, l2 = _time_contenders(cuda, np, contenders, ops, secrets[f"X{key}"], part["seeds"],
                                           part["warmup"], flush)
        mine = {"n": part["n"], "timings": stats, "l2_reset": l2 or "done"}
        arrays.update({f"P{k}_{name}": p for name, p in proj.items()})
        if board is not None:
            mine["leaderboard"], board_proj = board.time(secrets[f"X_board{key}"], flush)
            arrays.update({f"P{k}_board_{name}": p for name, p in board_proj.items()})
        facts["parts"].append(mine)
        clock.append((f"part {k}", time.perf_counter()))
    facts["clock_s"] = {b: t1 - t0 for (_, t0), (b, t1) in zip(clock, clock[1:])}
    return facts, arrays
