"""Untrusted side (grading child): GPU-tier tasks: speed against a reference
kernel timed in the same process, and the challenge leaderboard numbers."""
import statistics


def _time_contenders(cuda, contenders, A, B, warmup, repeats, flush):
    """Median milliseconds per contender: CUDA events, warm-up, interleaved order,
    fresh inputs and a flushed L2 before every timed run."""
    from autograder.child.references import fill_uniform, flush_l2
    for run in contenders.values():
        for _ in range(warmup):
            run()
    cuda.synchronize()
    times = {name: [] for name in contenders}
    start, end = cuda.event(), cuda.event()
    order = list(contenders)
    for r in range(repeats):
        for name in (order if r % 2 == 0 else order[::-1]):
            fill_uniform(A, 1000 + 2 * r)
            fill_uniform(B, 1001 + 2 * r)
            flush_l2(flush, float(r))
            start.record()
            contenders[name]()
            end.record()
            end.synchronize()
            times[name].append(cuda.event_elapsed_time(start, end))
    return {name: {"median_ms": statistics.median(t),
                   "cv": statistics.pstdev(t) / statistics.mean(t) if len(t) > 1 else 0.0} for name, t in times.items()}


def task_speed(job, module):
    import numpy as np
    from numba import cuda
    from autograder.child import launches as L
    from autograder.child.references import REFERENCES, fill_uniform
    n = job["n"]
    A, B = cuda.device_array((n, n), np.float32), cuda.device_array((n, n), np.float32)
    C = cuda.device_array((n, n), np.float32)
    recorded = L.record_launches(module, job["launcher"], A, B, C)
    L.validate(recorded, job["kernel"], A, B, C)
    reference = REFERENCES[job["reference"]]
    flush = cuda.device_array(64 * 1024 * 1024, np.float32)  # 256 MB, several times any L2
    contenders = {"student": lambda: L.replay(recorded), "reference": lambda: reference(A, B, C)}
    facts = {"n": n, "timings": _time_contenders(cuda, contenders, A, B, job["warmup"], job["repeats"], flush)}
    # The graded output: the student's kernels on known inputs the parent can rebuild.
    fill_uniform(A, 7)
    fill_uniform(B, 8)
    C.copy_to_device(np.full((n, n), np.nan, np.float32))
    L.replay(recorded)
    arrays = {"C": C.copy_to_host()}
    if job.get("leaderboard_n"):
        facts["leaderboard"] = _leaderboard(cuda, np, module, job, flush)
    return facts, arrays


def _leaderboard(cuda, np, module, job, flush):
    from autograder.child import launches as L
    n = job["leaderboard_n"]
    A, B = cuda.device_array((n, n), np.float32), cuda.device_array((n, n), np.float32)
    C = cuda.device_array((n, n), np.float32)
    recorded = L.record_launches(module, job["launcher"], A, B, C)
    L.validate(recorded, job["kernel"], A, B, C)
    contenders = {"student": lambda: L.replay(recorded)}
    try:
        import cupy
        cA, cB, cC = (cupy.asarray(x) for x in (A, B, C))
        contenders["cublas"] = lambda: cupy.matmul(cA, cB, out=cC)
    except Exception as exc:  # CuPy missing or unusable: the percentage is left out, visibly
        cublas_problem = f"{type(exc).__name__}: {exc}"
    else:
        cublas_problem = ""
    t = _time_contenders(cuda, contenders, A, B, 2, max(5, job["repeats"] // 2), flush)
    flops = 2.0 * n ** 3
    board = {"n": n, "tflops": flops / (t["student"]["median_ms"] * 1e-3) / 1e12}
    if "cublas" in t:
        board["cublas_tflops"] = flops / (t["cublas"]["median_ms"] * 1e-3) / 1e12
        board["percent_of_cublas"] = 100.0 * t["cublas"]["median_ms"] / t["student"]["median_ms"]
    else:
        board["cublas_problem"] = cublas_problem
    return board
