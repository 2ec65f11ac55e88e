"""One program in every tier: the launcher runs once, in the build child; every other child runs the plan it
recorded (the simulator looking the kernels up by name), so a build that produces no plan leaves nothing to grade."""
import copy
import os

from autograder import engine, stages
from conftest import SOLUTIONS, by_key, failed

NAIVE = stages.find("naive")


def test_a_build_past_its_time_limit_leaves_nothing_to_run(cfg):
    """A build that runs past its limit (never-launched ballast for the compiler, here a limit too short for any build)
    is the student's time limit: no plan, so correctness fails too, instead of the simulator running the launcher."""
    c = copy.deepcopy(cfg)
    c["limits"].update({"jobs": 1, "sim_start_s": 0.5})
    r = engine.grade(os.path.join(SOLUTIONS, NAIVE.filename), stage=NAIVE, device="sim", seed=3, cfg=c)
    assert "did not finish" in failed(r, "compiles") or "limit" in failed(r, "compiles")
    assert "not built" in failed(r, "correct") or "limit" in failed(r, "correct")
    assert r.score == 0 and not any(ch.regrade for ch in r.checks)


def test_the_simulator_never_calls_the_launcher(grade_text, tmp_path):
    """The launcher's side effects happen in the build child alone: one that raises on anything but the build's
    stand-in arrays still gets every point, since nothing else ever calls it."""
    text = open(os.path.join(SOLUTIONS, NAIVE.filename), encoding="utf-8").read().replace(
        "    M, N = C.shape\n", "    M, N = C.shape\n    if A.shape is not A.shape:\n"
        "        raise ValueError(\"called outside the build\")\n", 1)
    assert "called outside the build" in text
    r = grade_text("naive", text)
    assert all(c.status == "passed" for c in by_key(r, "correct")), [c.output[:200] for c in r.checks]
