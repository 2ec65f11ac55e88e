"""Trusted parent side: speed against a reference kernel timed in the same child (autograder/child/timing.py)."""
from . import child_problem
from .correct import check_output


def judge(g):
    """Run the timing child of StageGrader `g` (no other child may use the GPU now) and judge its numbers."""
    from ..child.references import fill_uniform_host
    cfg = g.cfg["speed"]
    rule = g.cfg["stages"][g.stage.name]["speed"]
    check = g.check("speed", f"speed: at least {rule['min_speedup']}x {rule['reference']} at N={cfg['n']}")
    job = g.job("speed", "gpu", n=cfg["n"], warmup=cfg["warmup"], repeats=cfg["repeats"],
                reference=rule["reference"], leaderboard_n=cfg["leaderboard_n"] if g.stage.challenge else 0)
    result = g.run(job)
    problem = child_problem(result)
    if problem:
        return check.verdict(False, problem)
    n = cfg["n"]
    C = result.arrays.get("C")
    ok, message = (False, "no output came back") if C is None else check_output(
        C, fill_uniform_host(n, n, 7), fill_uniform_host(n, n, 8), g.tol, g.tile)
    t = result.facts["timings"]
    student, ref = t["student"]["median_ms"], t["reference"]["median_ms"]
    ratio = ref / student
    g.speed = {"n": n, "student_ms": student, "reference_ms": ref, "speedup": ratio,
               "cv_student": t["student"]["cv"], "cv_reference": t["reference"]["cv"]}
    if "leaderboard" in result.facts:
        g.leaderboard = result.facts["leaderboard"]
    text = (f"{student:.3f} ms vs {rule['reference']} {ref:.3f} ms: {ratio:.2f}x "
            f"(needs {rule['min_speedup']}x; median of {cfg['repeats']})")
    if not ok:
        return check.verdict(False, text + "\nbut the output at this size is wrong:\n" + message)
    return check.verdict(ratio >= rule["min_speedup"], text)


def not_timed(g):
    """The speed check of a simulator run: visible, worth nothing here, provisional."""
    rule = g.cfg["stages"][g.stage.name]["speed"]
    return g.check("speed", f"speed: at least {rule['min_speedup']}x {rule['reference']} at N="
                            f"{g.cfg['speed']['n']}").skip(
        f"no GPU: the simulator cannot time kernels. Worth {g.points['speed']} points in the GPU tier; "
        "this score is provisional.")
