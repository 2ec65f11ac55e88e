"""A check the grader could not run for its own trouble counts neither way and flags a re-grade; so does every check
that depends on it. A kernel that runs past its time limit is the student's: the checks it stopped fail."""
import numpy as np

from autograder import sandbox
from autograder.outcome import grader
from autograder.engine import stage as stage_module, tiers
from autograder.engine.report import SKIPPED
from conftest import by_key, failed, mutate, solution_text
from test_fail_fast import _compiled, _futures, _gate_grader, _run_result

FAULT = grader("not gradable: the grader could not start the check (no room left on the grader's disk)")


def test_a_compile_child_the_grader_could_not_start_costs_the_solution_nothing(grade_text, monkeypatch):
    """The stage 2 solution whose build child hit the grader's own trouble: the compile and shared-memory checks
    (which reads the compiled kernel) and every simulator run (each runs the build's plan) are skipped and flagged
    for a re-grade; nothing fails."""
    run_child = sandbox.run_child

    def faulty(job, *args, **kwargs):
        return sandbox.ChildResult(problem=FAULT) if job["task"] == "build" else run_child(job, *args, **kwargs)
    monkeypatch.setattr(stage_module.sandbox, "run_child", faulty)
    r = grade_text("tiled", solution_text("tiled"))
    assert not [c for c in r.checks if c.status == "failed"], [(c.name, c.output[:200]) for c in r.checks]
    for key in ("compiles", "shared_memory"):
        (c,) = by_key(r, key)
        assert c.status == SKIPPED and c.regrade and "no room left" in c.output, c.output
    assert "a check it depends on was not gradable (the compile check)" in by_key(r, "shared_memory")[0].output
    for key in ("correct", "races", "data_reuse"):  # no plan to run: skipped for the grader's trouble, not failed
        assert all(c.status == SKIPPED and c.regrade and "no room left" in c.output for c in by_key(r, key)), key
    assert r.score == r.max_score == 0


def test_gpu_checks_that_depend_on_a_faulty_child_are_skipped_not_failed(cfg):
    """GPU tier: the build child (or a correctness runner) failed for the grader's own trouble. The runners that need
    the built kernels, the GPU tools and speed are not run and count neither way; before, they failed (0 / 6)."""
    from autograder.engine.report import Check
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((40, 3)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    right = (A.astype(np.float64) @ B).astype(np.float32)
    inputs = {"A0": A, "B0": B}
    g = _gate_grader(cfg, _futures({"compile": sandbox.ChildResult(problem=FAULT),
                                    "correct:rect": (_run_result(A, B, right), inputs)}))
    g.__class__, g.built = tiers.GpuStageGrader, None
    for key in ("races", "speed"):
        check = Check("tiled_general", key, key, 2).verdict(False, g.gate_reason(key))
        assert check.status == SKIPPED and check.regrade and "the compile check" in check.output, check.output
    _, why = g.runner_job("run", [(40, 40, 40)], count=1)
    assert Check("tiled_general", "correct", "c", 6).verdict(False, g.not_run(why).problem).status == SKIPPED
    g = _gate_grader(cfg, _futures({"compile": _compiled(), "correct:rect": (sandbox.ChildResult(problem=FAULT),
                                                                             inputs)}))
    check = Check("tiled_general", "races", "races", 2).verdict(False, g.gate_reason("races"))
    assert check.status == SKIPPED and "the correctness check 'rect'" in check.output, check.output
    # a wrong product is the student's: the later checks fail as before
    wrong = _gate_grader(cfg, _futures({"compile": _compiled(), "correct:rect": (_run_result(A, B, right * 2), inputs)}))
    assert Check("tiled_general", "races", "races", 2).verdict(False, wrong.gate_reason("races")).status == "failed"


# A tile loop that never ends: its index never moves on.
TILE_LOOP_NEVER_ENDS = ("    for t in range(A.shape[1] // TILE):\n", "    t = 0\n    while t < A.shape[1] // TILE:\n")


def test_a_never_ending_tile_loop_is_the_students_not_the_graders(grade_text):
    """Every check the never-ending loop stopped fails, whichever child reached its limit first; the stage keeps
    its maximum of 13 in the simulator and no re-grade is flagged."""
    text = mutate("tiled", TILE_LOOP_NEVER_ENDS)
    # the derived limit stops it (sim_start_s plus the shapes' work, under check_timeout_s): 10 s of start-up (the
    # build child needs 2 s idle) and 3 s of grace for the group run again after it keep this test short
    r = grade_text("tiled", text, check_timeout_s=240, sim_start_s=10, sibling_grace_s=3)
    assert r.max_score == 13 and not r.regrade, [(c.name, c.status, c.output[:120]) for c in r.checks]
    for key in ("correct", "races", "data_reuse"):
        assert "did not finish" in failed(r, key) or "never ends" in failed(r, key)
