"""Trusted parent side: the speed check's timing child, run when the GPU is the grader's alone. The engine starts it
once the stage's correctness children passed, waits for the GPU to be idle (gpu/exclusive.py watches it while the
child times) and hands the timed facts to the pure judge (checks/speed.py), which checks every timed run's product.
"""
import concurrent.futures
import threading
import time

import numpy as np

from ..checks import child_problem, speed
from ..checks.speed import draw_secrets, expected_projection
from ..checks.titles import title
from ..outcome import grader


class _Expected:
    """The expected projections of the timed runs, computed by a few threads while the timing child prepares
    (NumPy releases the GIL in the fills and products). They are done before it times: the parent keeps the host
    quiet while the child times (its end event no longer waits for the host, but its launches still do)."""
    THREADS = 2

    def __init__(self, jobs):
        self._pool = concurrent.futures.ThreadPoolExecutor(self.THREADS)
        self._futures = {k: [self._pool.submit(expected_projection, n, a, b, X) for a, b in seeds]
                         for k, (n, seeds, X) in jobs.items()}

    def wait(self):
        concurrent.futures.wait([f for fs in self._futures.values() for f in fs])

    def get(self, key):
        return np.stack([f.result() for f in self._futures[key]])

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)


def _child_timeout(g, n, runs, board):
    flops = runs * 2 * 2.0 * n ** 3
    if board:
        flops += (2 + board["repeats"]) * 2 * 2.0 * board["n"] ** 3
    return g.work_timeout(flops)


class SharedGpu:
    """What one grade learnt of its GPU (and the watch of its last timing, exclusive.Watch.start): once a stage's speed check found it shared with another process twice
    (shared_retry_s apart), the grade's later speed checks say so at once instead of waiting to find it again:
    every one of them counts neither way and the grade is flagged for a re-grade, so a shared GPU's verdict comes
    in one retry, not one per stage."""

    def __init__(self, alone=True):
        self.why = ""
        # the grade's one timing child found the GPU shared (engine/timing_together.py): that was the first look for
        # every stage in it, so the first stage timed again on its own waits shared_retry_s and looks once more
        self.shared_together = False
        self.last_watch = None  # the watch of the last timing: the next one starts from its after edge
        # (reference, N) -> the reference kernel's timed runs in an earlier speed check of this grade, on the GPU
        # alone, every run's product checked: a later check at that size times its student kernel alone against
        # them (12.6 ms x 18 runs of the naive reference at N = 2048 each time otherwise)
        self.references = {}
        # set once the grade holds its GPU alone (gpu/slot.hold_alone, engine.grade): no timing child makes its
        # CUDA context before, so none is alive while another grade on this GPU times
        self.alone = threading.Event()
        if alone:
            self.alone.set()


class Turn:
    """The GPU handed to one stage's timing child at a time. `prepared` is set once the child is ready to time (or
    ended, or never started); the engine sets `go` once every other child of the grade has finished and the
    stages before this one have timed."""

    def __init__(self):
        self.prepared, self.go = threading.Event(), threading.Event()
        self.refused = ""   # set with `go` when the grade stops before this stage's turn

    def refuse(self, why):
        if not self.go.is_set():
            self.refused = why
            self.go.set()


def start(g, executor):
    """Start the timing child of StageGrader `g` once its stage's correctness children passed, beside the other
    checks: it prepares (imports, CUDA context, compiles, allocates; no kernel runs) and times when the engine
    gives it its turn (`judge`)."""
    g.speed_turn = Turn()
    g.speed_future = executor.submit(_run, g, _plan(g), g.speed_turn)  # secrets drawn here, in the planning thread


def judge(g):
    """The speed check of `g`: give its prepared timing child the GPU and judge its numbers (a child `start` did
    not start runs here and now; no other child may use the GPU meanwhile)."""
    if getattr(g, "timing_round", None) is not None:  # the grade's one timing child (engine/timing_together.py)
        g.speed_turn.go.set()
        verdict = g.timing_round.result()
        return verdict if verdict is not None else _run(g, g.timing_plan, None)  # else timed on its own, now
    if getattr(g, "speed_future", None) is None:
        return _run(g, _plan(g), None)
    g.speed_turn.go.set()
    return g.speed_future.result()


def _plan(g):
    """(check, job, inputs, expected jobs, board) of one speed check, from the grade's secret generator."""
    cfg = g.cfg["speed"]
    rule = g.cfg["stages"][g.stage.name]["speed"]
    n = cfg["n"]
    check = g.check("speed", title(g, "speed"))
    seeds, X = draw_secrets(g.rng, n, cfg["repeats"])
    inputs = {"X": X}
    board = None
    expected_jobs = {"speed": (n, seeds, X)}
    if g.stage.challenge and cfg["leaderboard_n"]:
        lb_n = cfg["leaderboard_n"]
        lb_repeats = max(5, cfg["repeats"] // 2)
        board_seeds, X_board = draw_secrets(g.rng, lb_n, lb_repeats)
        board = {"n": lb_n, "repeats": lb_repeats, "seeds": board_seeds}
        inputs["X_board"] = X_board
        expected_jobs["board"] = (lb_n, board_seeds, X_board)
    job = {"n": n, "warmup": cfg["warmup"], "seeds": seeds, "reference": rule["reference"], "leaderboard": board,
           "projection_columns": X.shape[1]}
    return check, job, inputs, expected_jobs, board


def _run(g, plan, turn):
    """Run the timing child (prepared beside the other checks when `turn` is given) and judge its numbers."""
    from ..gpu import exclusive
    cfg = g.cfg["speed"]
    check, fields, inputs, expected_jobs, board = plan
    # a runner: the build child's kernels and the checked launches at the speed (and leaderboard) size
    sizes = [(fields["n"],) * 3] + ([(board["n"],) * 3] if board else [])
    job, why = g.runner_job("speed", sizes, **fields)  # waits for the build
    if why:
        if turn is not None:
            turn.prepared.set()
        return check.verdict(False, g.gate_reason("speed") or g.not_run(why).problem)
    seen = getattr(g, "shared_gpu", None)
    if turn is None and seen is not None and seen.why:  # an earlier stage found the GPU shared, twice: no child
        gate = g.gate_reason("speed")  # a wrong kernel fails speed, also on a GPU found shared
        return check.verdict(False, gate) if gate else check.skip(seen.why)
    prepare_s = g.cfg["limits"]["gpu_start_s"]
    watch, reused = {}, {}
    key = (fields["reference"], fields["n"])

    def gated(ready):
        """The child starts beside the correctness checks (its imports take about a second) and makes its CUDA
        context only once they passed: a wrong kernel is never timed."""
        gate = g.gate_reason("speed")  # waits for the stage's correctness children
        if gate:
            return gate
        if getattr(g, "grader_kernels", None):
            g.grader_kernels.wait()  # the grader's kernels are compiled into the folder the child loads them from
        if seen is not None:
            seen.alone.wait()
        if turn is not None and turn.refused:  # the grade stopped before its timing
            return turn.refused
        if not ready(prepare_s):
            return grader(f"not gradable: the timing child did not start within {prepare_s:.0f} s (it had "
                          "imported only the grader's own modules)")
        return ""

    def on_turn(attempt):
        def wait(ready):
            ok = ready(prepare_s)
            if turn is not None and attempt == 1:
                turn.prepared.set()
                turn.go.wait()
                if turn.refused:
                    return turn.refused
            if seen is not None and seen.why:  # an earlier stage of this grade found the GPU shared
                return seen.why
            gate = g.gate_reason("speed")
            if gate:
                return gate
            if not ok:
                return (f"the timing child did not get ready within {prepare_s:.0f} s: the launcher, or compiling "
                        "the kernel for the speed size, does not finish")
            expected.wait()  # the parent's own work is done before the child times: it would steal the child's CPU
            reused[attempt] = seen.references.get(key) if seen is not None else None
            watch[attempt] = exclusive.Watch(interval=cfg["exclusive_poll_s"], settle_s=cfg["exclusive_settle_s"]).start(
                after=seen.last_watch if seen is not None else None)
            return {"time_reference": reused[attempt] is None}
        return wait

    expected = _Expected(expected_jobs)  # computed while the child prepares and waits
    first = 1
    if seen is not None and seen.shared_together:
        seen.shared_together, first = False, 2
        time.sleep(cfg["shared_retry_s"])
    try:
        for attempt in range(first, 3):
            result = g.run(job, inputs, timeout=_child_timeout(g, cfg["n"], cfg["warmup"] + cfg["repeats"], board),
                           what="the speed check", turn=[gated, on_turn(attempt)])
            if attempt not in watch:  # refused its turn: not run, or not prepared in time, or the GPU is shared
                gate = g.gate_reason("speed")
                if gate:  # a wrong kernel fails speed, also on a GPU found shared
                    return check.verdict(False, gate)
                if seen is not None and seen.why:
                    return check.skip(seen.why)
                return check.verdict(False, result.problem)
            g.gpu = watch[attempt].stop()
            if seen is not None:
                seen.last_watch = watch[attempt]
            g.gpu["attempts"] = attempt
            if not g.gpu["shared"] or attempt == 2:
                break
            time.sleep(cfg["shared_retry_s"])
        if g.gpu["shared"]:
            why = (f"not gradable: the GPU was shared with another process "
                   f"({exclusive.describe_others(g.gpu['others'])}) while the speed check timed, also when retried "
                   f"{cfg['shared_retry_s']:g} s later. Timings on a shared GPU are not comparable (short kernels are "
                   "favoured), so this check counts neither way; grade again when the GPU is idle.")
            if seen is not None:
                seen.why = (f"not gradable: the GPU was shared with another process when stage {g.stage.name}'s "
                            "speed check timed, twice; the grade's later speed checks are not timed on it. This check "
                            "counts neither way; grade again when the GPU is idle.")
            return check.skip(why)
        if not g.gpu.get("samples"):
            return check.verdict(False, grader(
                "not gradable: the GPU could not be watched while it timed (nvidia-smi gave no sample: "
                f"{g.gpu.get('problem') or 'no reason given'}), so nobody can say it was the grader's alone"))
        problem = child_problem(result)
        if problem:
            return check.verdict(False, problem)
        verdict = speed.judge_facts(g, check, g.cfg["stages"][g.stage.name]["speed"], result, expected, board,
                                    reused[attempt])
        if seen is not None and g.speed and g.speed.get("reference_checked"):
            seen.references.setdefault(key, {"median_ms": g.speed["reference_ms"], "cv": g.speed["cv_reference"],
                                             "stage": g.stage.name})
        return verdict
    finally:
        expected.close()
        if turn is not None:
            turn.prepared.set()
