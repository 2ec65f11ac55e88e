"""Trusted parent side: speed against a reference kernel timed in the same child (autograder/child/timing.py).

Every timed run is checked. The parent draws secret seeds for the inputs of
every run and a secret float64 matrix X (N x 2); the child returns C @ X after
each run. The parent rebuilds A and B from the seeds (while the child runs)
and compares each projection with A @ (B @ X) in float64: a randomised
product check (Freivalds) that costs O(N^2) per run and catches any timed
run whose C is not the product of that run's inputs (work skipped, shortened,
cached or left over from an earlier run). The same holds for the challenge's
leaderboard runs at their own size.

The GPU must be the grader's alone while it times (autograder/gpu/exclusive.py):
numbers taken while another process used it are neither passed nor failed.
"""
import concurrent.futures
import threading
import time

import numpy as np

from ..outcome import grader
from .titles import title
from . import child_problem

SEED_LIMIT = 2 ** 32


def draw_secrets(rng, n, runs):
    """(seeds, X): a pair of input seeds per timed run and the projection matrix, from the grade's secret generator."""
    seeds = [[int(s) for s in rng.integers(0, SEED_LIMIT, 2)] for _ in range(runs)]
    return seeds, rng.standard_normal((n, 2))


def expected_projection(n, seed_a, seed_b, X):
    """A @ (B @ X) in float64 for one run's inputs, rebuilt from its seeds."""
    from ..child.references import fill_uniform_host
    BX = fill_uniform_host(n, n, seed_b).astype(np.float64) @ X
    return fill_uniform_host(n, n, seed_a).astype(np.float64) @ BX


def expected_projections(n, seeds, X):
    """expected_projection for every run."""
    return np.stack([expected_projection(n, a, b, X) for a, b in seeds])


def projection_errors(P, E):
    """Relative Frobenius error of each run's projection P[r] (float32 of C @ X) against E[r]; inf when P holds a
    non-finite value or is missing."""
    errors = []
    for r in range(len(E)):
        if P is None or r >= len(P) or P[r].shape != E[r].shape or not np.all(np.isfinite(P[r])):
            errors.append(float("inf"))
            continue
        norm = np.linalg.norm(E[r])
        errors.append(float(np.linalg.norm(P[r].astype(np.float64) - E[r]) / (norm or 1.0)))
    return errors


def judge_runs(errors, tol, past_end=(), what="run"):
    """(ok, message) for one contender's timed runs: every run's projection within `tol`, nothing past C's end."""
    n = len(errors)
    bad = [r for r, e in enumerate(errors) if not e <= tol]
    spill = [r for r, c in enumerate(past_end) if c]
    if not bad and not spill:
        worst = max(errors) if errors else 0.0
        return True, f"all {n} {what}s computed the product (largest projection error {worst:.1e}, limit {tol:.0e})"
    lines = []
    if bad:
        runs = ", ".join(str(r + 1) for r in bad[:12]) + (" ..." if len(bad) > 12 else "")
        first = bad[0]
        err = errors[first]
        lines.append(f"{len(bad)} of {n} timed {what}s produced a wrong C ({what}s {runs}; {what} {first + 1}: "
                     + ("C held NaN: elements never written" if err == float("inf") else
                        f"projection error {err:.1e}, limit {tol:.0e}") + ").")
        if len(bad) == n:
            lines.append("Likely cause: the kernel skips or shortens work at this size or on these inputs; every "
                         "timed run has fresh inputs from secret seeds and must compute the whole product.")
        elif bad == list(range(bad[0], n)):
            lines.append("Likely cause: right at first, wrong in later calls: the kernel keeps state between calls "
                         "or reuses an earlier C (C is refilled with NaN before every timed run).")
        else:
            lines.append("Likely cause: work skipped, shortened or output reused in some timed runs only (a race "
                         "between blocks can do this too): the kernel must compute the whole product on every call.")
    if spill:
        lines.append(f"{what}s {', '.join(str(r + 1) for r in spill[:12])} wrote {max(past_end)} values past the end "
                     "of C (a kernel that keeps state beyond C, or stores from threads outside it).")
    return False, "\n".join(lines)


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
    gate = g.gate_reason("speed")  # waits for the stage's correctness children: a wrong kernel is never timed
    job = None
    if not gate:  # a runner: the build child's kernels and the checked launches at the speed (and leaderboard) size
        sizes = [(fields["n"],) * 3] + ([(board["n"],) * 3] if board else [])
        job, why = g.runner_job("speed", sizes, **fields)
        gate = g.not_run(why).problem if why else ""
    if gate:
        if turn is not None:
            turn.prepared.set()
        return check.verdict(False, gate)
    prepare_s = g.cfg["limits"]["gpu_start_s"]
    watch = {}

    def on_turn(attempt):
        def wait(ready):
            ok = ready(prepare_s)
            if turn is not None and attempt == 1:
                turn.prepared.set()
                turn.go.wait()
                if turn.refused:
                    return turn.refused
            gate = g.gate_reason("speed")
            if gate:
                return gate
            if not ok:
                return (f"the timing child did not get ready within {prepare_s:.0f} s: the launcher, or compiling "
                        "the kernel for the speed size, does not finish")
            expected.wait()  # the parent's own work is done before the child times: it would steal the child's CPU
            watch[attempt] = exclusive.Watch(interval=cfg["exclusive_poll_s"],
                                            settle_s=cfg["exclusive_settle_s"]).start()
            return ""
        return wait

    expected = _Expected(expected_jobs)  # computed while the child prepares and waits
    try:
        for attempt in (1, 2):
            result = g.run(job, inputs, timeout=_child_timeout(g, cfg["n"], cfg["warmup"] + cfg["repeats"], board),
                           what="the speed check", turn=on_turn(attempt))
            if attempt not in watch:  # refused its turn: not run, or not prepared in time
                return check.verdict(False, result.problem)
            g.gpu = watch[attempt].stop()
            g.gpu["attempts"] = attempt
            if not g.gpu["shared"] or attempt == 2:
                break
            time.sleep(cfg["shared_retry_s"])
        if g.gpu["shared"]:
            return check.skip(
                f"not gradable: the GPU was shared with another process ({exclusive.describe_others(g.gpu['others'])})"
                f" while the speed check timed, also when retried {cfg['shared_retry_s']:g} s later. Timings on a "
                "shared GPU are not comparable (short kernels are favoured), so this check counts neither way; "
                "grade again when the GPU is idle.")
        if not g.gpu.get("samples"):
            return check.verdict(False, grader(
                "not gradable: the GPU could not be watched while it timed (nvidia-smi gave no sample: "
                f"{g.gpu.get('problem') or 'no reason given'}), so nobody can say it was the grader's alone"))
        problem = child_problem(result)
        if problem:
            return check.verdict(False, problem)
        return _judge_facts(g, check, g.cfg["stages"][g.stage.name]["speed"], result, expected, board)
    finally:
        expected.close()
        if turn is not None:
            turn.prepared.set()


def _judge_facts(g, check, rule, result, expected, board):
    cfg = g.cfg["speed"]
    tol = cfg["projection_error"]
    t = result.facts["timings"]
    student, ref = t["student"]["median_ms"], t["reference"]["median_ms"]
    if student <= 0 or ref <= 0:
        return check.verdict(False, grader(f"not gradable: the timed runs took {student:g} ms and {ref:g} ms: "
                                           "CUDA events give no time here"))
    ratio = ref / student
    g.speed = {"n": cfg["n"], "student_ms": student, "reference_ms": ref, "speedup": ratio,
               "cv_student": t["student"]["cv"], "cv_reference": t["reference"]["cv"],
               "l2_reset": result.facts.get("l2_reset", "")}
    text = (f"{student:.3f} ms vs {rule['reference']} {ref:.3f} ms: {ratio:.2f}x "
            f"(needs {rule['min_speedup']}x; median of {cfg['repeats']})")
    E = expected.get("speed")
    ref_ok, ref_msg = judge_runs(projection_errors(result.arrays.get("P_reference"), E), tol)
    if not ref_ok:
        return check.verdict(False, grader("not gradable: the reference kernel's own timed runs failed the product "
                                           "check, so the check itself is broken (tell the instructor):\n" + ref_msg))
    errors = projection_errors(result.arrays.get("P_student"), E)
    ok, runs_msg = judge_runs(errors, tol, t["student"].get("past_end", ()))
    g.speed["worst_projection_error"] = max(errors)
    if not ok:
        return check.verdict(False, text + "\nbut the timed runs are not all right, so the time does not count:\n"
                             + runs_msg)
    if board is not None:  # the report's schema makes the leaderboard's part required (sandbox/schema.py)
        board_ok, board_msg = _judge_board(g, result, expected, board, tol)
        if not board_ok:
            return check.verdict(False, text + f"\nbut the leaderboard runs at N={board['n']} are wrong, so neither "
                                 "the time nor the entry counts:\n" + board_msg)
    review = rule["review_speedup"]
    if ratio > review:
        g.speed["review"] = (f"{ratio:.1f}x is beyond the {review:g}x an instructor should look at "
                             f"(the course's solution measures far less)")
        text += f"\nREVIEW: {g.speed['review']}; the runs passed the product check."
    return check.verdict(ratio >= rule["min_speedup"], text + "\n" + runs_msg)


def _judge_board(g, result, expected, board, tol):
    facts = result.facts["leaderboard"]
    timings = facts["timings"]
    E = expected.get("board")
    errors = projection_errors(result.arrays.get("P_board_student"), E)
    ok, msg = judge_runs(errors, tol, timings.get("student", {}).get("past_end", ()), what="leaderboard run")
    # The entry's figures are the parent's own, from the medians and the size it chose (not the child's sums).
    flops = 2.0 * board["n"] ** 3
    if min(t["median_ms"] for t in timings.values()) <= 0:
        return False, "the leaderboard's timed runs took no time: CUDA events give no time here"
    entry = {"n": board["n"], "tflops": flops / (timings["student"]["median_ms"] * 1e-3) / 1e12}
    if "cublas" in timings:
        entry["cublas_tflops"] = flops / (timings["cublas"]["median_ms"] * 1e-3) / 1e12
        entry["percent_of_cublas"] = 100.0 * timings["cublas"]["median_ms"] / timings["student"]["median_ms"]
    elif "cublas_problem" in facts:
        entry["cublas_problem"] = facts["cublas_problem"]
    if not ok:
        entry["status"] = "review: the leaderboard runs produced a wrong C (" + msg.splitlines()[0] + ")"
    elif "cublas_tflops" in entry and entry["tflops"] > g.cfg["speed"]["board_review_vs_cublas"] * entry["cublas_tflops"]:
        entry["status"] = (f"review: {entry['tflops']:.1f} TFLOP/s is more than "
                           f"{g.cfg['speed']['board_review_vs_cublas']:g}x the cuBLAS run beside it "
                           f"({entry['cublas_tflops']:.1f} TFLOP/s)")
    else:
        entry["status"] = "ranked"
    if "cublas" in timings:
        cublas_ok, cublas_msg = judge_runs(projection_errors(result.arrays.get("P_board_cublas"), E), tol)
        if not cublas_ok:
            entry["status"] = "review: the cuBLAS runs beside it failed the product check (" + \
                              cublas_msg.splitlines()[0] + ")"
    g.leaderboard = entry
    return ok, msg


def not_timed(g):
    """The speed check of a simulator run: visible, worth nothing here, provisional."""
    return g.check("speed", title(g, "speed")).skip(
        f"no GPU: the simulator cannot time kernels. Worth {g.points['speed']} points in the GPU tier; "
        "this score is provisional.")
