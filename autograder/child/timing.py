"""Untrusted side (grading child): GPU-tier tasks: speed against a reference
kernel timed in the same process, and the challenge leaderboard numbers.

Every timed run is checkable. The parent draws secret seeds per grade: run r
fills A and B from its own pair of seeds (a hash the parent rebuilds with
``fill_uniform_host``), C (with a guard tail) is re-poisoned with NaN before every
run, and after every run, outside the timed region, the child returns the
projection ``C @ X`` for a secret float64 X that it reads only after the
launcher has run and that never goes to the device. The parent compares each
projection with ``A @ (B @ X)`` (a randomised product check, checks/speed.py).
"""
import statistics


def _time_contenders(cuda, np, contenders, A, B, Cbuf, C, X, seeds, warmup, flush):
    """Per contender: the milliseconds of every timed run, the projection C @ X after each run and the number of
    values written past the end of C.

    CUDA events around each run, warm-up, interleaved order, fresh inputs from the run's seeds, C re-poisoned and
    persisting L2 lines reset before an L2 flush ahead of every timed run. The whole device is synchronised
    before the end event is recorded, so work a kernel left running on another stream counts in its time."""
    from autograder.child.references import fill_uniform, flush_l2, poison, reset_persisting_l2
    fill_uniform(A, seeds[0][0])  # warm up on real numbers, not on uninitialised memory
    fill_uniform(B, seeds[0][1])
    for run in contenders.values():
        for _ in range(warmup):
            run()
    cuda.synchronize()
    names = list(contenders)
    n_runs = len(seeds)
    times = {name: [] for name in names}
    projections = {name: np.zeros((n_runs,) + (C.shape[0], X.shape[1]), np.float32) for name in names}
    past_end = {name: [] for name in names}
    l2_reset = ""
    start, end = cuda.event(), cuda.event()
    rows = C.shape[0] * C.shape[1]
    for r, (seed_a, seed_b) in enumerate(seeds):
        for name in (names if r % 2 == 0 else names[::-1]):
            fill_uniform(A, seed_a)
            fill_uniform(B, seed_b)
            poison(Cbuf)
            cuda.synchronize()
            l2_reset = reset_persisting_l2() or l2_reset
            flush_l2(flush, float(r))
            start.record()
            contenders[name]()
            cuda.synchronize()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
            out = Cbuf.copy_to_host()
            past_end[name].append(int(np.count_nonzero(~np.isnan(out[rows:]))))
            projections[name][r] = out[:rows].reshape(C.shape).astype(np.float64) @ X
    stats = {name: {"median_ms": statistics.median(t), "times_ms": t, "past_end": past_end[name],
                    "cv": statistics.pstdev(t) / statistics.mean(t) if len(t) > 1 else 0.0}
             for name, t in times.items()}
    return stats, projections, l2_reset


def _operands(cuda, np, n):
    from autograder.child.tasks import device_output
    A, B = cuda.device_array((n, n), np.float32), cuda.device_array((n, n), np.float32)
    Cbuf, C, _ = device_output(cuda, np, n, n)
    return A, B, Cbuf, C


def task_speed(job, module):
    import numpy as np
    from numba import cuda
    from autograder.child import launches as L
    from autograder.child.references import REFERENCES
    n = job["n"]
    A, B, Cbuf, C = _operands(cuda, np, n)
    recorded = L.record_launches(module, job["launcher"], A, B, C)
    L.validate(recorded, job["kernel"], A, B, C)
    board_recorded = None
    if job.get("leaderboard"):
        lb = job["leaderboard"]
        lA, lB, lCbuf, lC = _operands(cuda, np, lb["n"])
        board_recorded = L.record_launches(module, job["launcher"], lA, lB, lC)
        L.validate(board_recorded, job["kernel"], lA, lB, lC)
    # The secret projection vectors are read only now: no student host code runs after the launchers.
    with np.load(job["inputs_path"], allow_pickle=False) as data:
        X, X_board = data["X"], (data["X_board"] if "X_board" in data.files else None)
    reference = REFERENCES[job["reference"]]
    # 256 MB, several times any L2 (a test of this task in the simulator passes a small one)
    flush = cuda.device_array(job.get("flush_floats", 64 * 1024 * 1024), np.float32)
    contenders = {"student": lambda: L.replay(recorded), "reference": lambda: reference(A, B, C)}
    stats, proj, l2 = _time_contenders(cuda, np, contenders, A, B, Cbuf, C, X, job["seeds"], job["warmup"], flush)
    facts = {"n": n, "timings": stats, "l2_reset": l2 or "done"}
    arrays = {f"P_{name}": p for name, p in proj.items()}
    if board_recorded is not None:
        board, board_proj = _leaderboard(cuda, np, lb, board_recorded, (lA, lB, lCbuf, lC), X_board, flush)
        facts["leaderboard"] = board
        arrays.update({f"P_board_{name}": p for name, p in board_proj.items()})
    return facts, arrays


def _leaderboard(cuda, np, lb, recorded, operands, X, flush):
    from autograder.child import launches as L
    A, B, Cbuf, C = operands
    n = lb["n"]
    contenders = {"student": lambda: L.replay(recorded)}
    try:
        import cupy
        cA, cB, cC = (cupy.asarray(x) for x in (A, B, C))
        contenders["cublas"] = lambda: cupy.matmul(cA, cB, out=cC)
    except Exception as exc:  # CuPy missing or unusable: the percentage is left out, visibly
        cublas_problem = f"{type(exc).__name__}: {exc}"
    else:
        cublas_problem = ""
    t, proj, _ = _time_contenders(cuda, np, contenders, A, B, Cbuf, C, X, lb["seeds"], 2, flush)
    flops = 2.0 * n ** 3
    board = {"n": n, "tflops": flops / (t["student"]["median_ms"] * 1e-3) / 1e12, "timings": t}
    if "cublas" in t:
        board["cublas_tflops"] = flops / (t["cublas"]["median_ms"] * 1e-3) / 1e12
        board["percent_of_cublas"] = 100.0 * t["cublas"]["median_ms"] / t["student"]["median_ms"]
    else:
        board["cublas_problem"] = cublas_problem
    return board, proj
