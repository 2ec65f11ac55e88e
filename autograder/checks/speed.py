"""Trusted parent side: speed against a reference kernel timed in the same child (autograder/runner/timing.py).

Every timed run is checked. The parent draws secret seeds for the inputs of
every run and a secret float64 matrix X (N x 2); the child returns C @ X after
each run. The parent rebuilds A and B from the seeds (while the child runs)
and compares each projection with A @ (B @ X) in float64: a randomised
product check (Freivalds) that costs O(N^2) per run and catches any timed
run whose C is not the product of that run's inputs (work skipped, shortened,
cached or left over from an earlier run). The same holds for the challenge's
leaderboard runs at their own size.

A pure judge: the timing child is started and the GPU watched by the engine (engine/timing.py), which must have the
GPU as the grader's alone while it times; numbers taken while another process used it are neither passed nor
failed.
"""
import numpy as np

from ..outcome import grader
from .titles import title

SEED_LIMIT = 2 ** 32


def draw_secrets(rng, n, runs):
    """(seeds, X): a pair of input seeds per timed run and the projection matrix, from the grade's secret generator."""
    seeds = [[int(s) for s in rng.integers(0, SEED_LIMIT, 2)] for _ in range(runs)]
    return seeds, rng.standard_normal((n, 2))


def expected_projection(n, seed_a, seed_b, X, block=128):
    """A @ (B @ X) in float64 for one run's inputs, rebuilt from its seeds a block of rows at a time
    (protocol.uniform_times: a grade checks about a hundred runs, at N = 2048 and 4096, on the grading host's CPU)."""
    from ..protocol import uniform_times
    return uniform_times(n, seed_a, uniform_times(n, seed_b, X, block), block)


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


def judge_facts(g, check, rule, result, expected, board, reused=None):
    """The verdict on a timing child's facts. `reused`: the reference's numbers from an earlier speed check of this
    grade at this size (engine/timing.SharedGpu; this child timed the student's kernel alone), else None."""
    cfg = g.cfg["speed"]
    tol = cfg["projection_error"]
    t = result.facts["timings"]
    if reused is None and "reference" not in t:
        return check.verdict(False, grader("not gradable: the timing child did not time the reference kernel"))
    own = reused is None
    reference = t["reference"] if own else reused
    student, ref = t["student"]["median_ms"], reference["median_ms"]
    if student <= 0 or ref <= 0:
        return check.verdict(False, grader(f"not gradable: the timed runs took {student:g} ms and {ref:g} ms: "
                                           "CUDA events give no time here"))
    ratio = ref / student
    g.speed = {"n": cfg["n"], "student_ms": student, "reference_ms": ref, "speedup": ratio,
               "cv_student": t["student"]["cv"], "cv_reference": reference["cv"],
               "l2_reset": result.facts.get("l2_reset", "")}
    text = (f"{student:.3f} ms vs {rule['reference']} {ref:.3f} ms: {ratio:.2f}x "
            f"(needs {rule['min_speedup']}x; median of {cfg['repeats']}"
            + ("" if own else f"; the reference as timed by stage {reused['stage']}'s speed check of this grade") + ")")
    E = expected.get("speed")
    if own:
        ref_ok, ref_msg = judge_runs(projection_errors(result.arrays.get("P_reference"), E), tol)
        if not ref_ok:
            return check.verdict(False, grader("not gradable: the reference kernel's own timed runs failed the "
                                               "product check, so the check itself is broken (tell the "
                                               "instructor):\n" + ref_msg))
        g.speed["reference_checked"] = True
    else:
        g.speed["reference_from"] = reused["stage"]
    errors = projection_errors(result.arrays.get("P_student"), E)
    ok, runs_msg = judge_runs(errors, tol, t["student"].get("past_end", ()))
    g.speed["worst_projection_error"] = max(errors)
    if not ok:
        return check.verdict(False, text + "\nbut the timed runs are not all right, so the time does not count:\n"
                             + runs_msg)
    if board is not None:  # the report's schema makes the leaderboard's part required (protocol.py)
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
