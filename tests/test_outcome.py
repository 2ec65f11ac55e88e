"""Whose fault an outcome is, as a type the parent sets from what it knows itself (autograder/outcome.py), never
read from text: a sandbox that never started the child, a process stuck in the driver, a GPU tool without a report
are the grader's (skipped, re-grade); words a student's code prints are not."""
import os

import pytest

from autograder import engine, sandbox, stages
from autograder.checks import races
from autograder.engine.report import SKIPPED, Check
from autograder.gpu.tools import ncu_facts, racecheck_facts
from autograder.outcome import Fault, fault_of, grader, time_limit
from autograder.sandbox import box
from conftest import SOLUTIONS, by_key

NAIVE = stages.find("naive")


def test_a_grader_reason_skips_and_plain_words_fail():
    """The old prefix test: a check whose output began "not gradable: the grading sandbox is not available" was
    the grader's. Text is the student's now, whatever it says; only the type makes a fault the grader's."""
    words = "not gradable: the grading sandbox is not available (printed by a kernel module)"
    assert Check("naive", "correct", "c", 2).verdict(False, words).status == "failed"
    skipped = Check("naive", "correct", "c", 2).verdict(False, grader(words))
    assert skipped.status == SKIPPED and skipped.regrade and skipped.fault is Fault.GRADER
    timed = Check("naive", "correct", "c", 2).verdict(False, time_limit("ran past its limit"))
    assert timed.status == "failed" and timed.fault is Fault.TIME_LIMIT and not timed.regrade
    assert fault_of("x" + grader("y")) is None  # words put before a reason must pass its kind on themselves


def test_a_sandbox_that_does_not_start_costs_the_solution_nothing(cfg, monkeypatch):
    """bubblewrap failing before the child starts ("No space left on device"): the stage 1 solution got 0/8 with no
    re-grade flag. The child never said hello, so it is the grader's: every check skipped, flagged."""
    monkeypatch.setattr(box.Box, "command", lambda self, argv: [
        "sh", "-c", "echo 'bwrap: No space left on device' >&2; exit 1"])
    r = engine.grade(os.path.join(SOLUTIONS, NAIVE.filename), stage=NAIVE, device="sim", seed=2,
                     cfg={**cfg, "limits": {**cfg["limits"], "jobs": 1}})
    ran = [c for c in r.checks if c.key != "shortcuts"]
    assert ran and all(c.status == SKIPPED for c in ran), [(c.key, c.status, c.output[:120]) for c in ran]
    assert all(c.regrade for c in ran if c.key != "speed") and "No space left on device" in by_key(r, "compiles")[0].output
    assert r.score == r.max_score == 0


def test_a_child_that_prints_the_sandboxs_words_is_the_students(cfg, tmp_path):
    """A module that prints a sandbox's error and exits said hello first: its exit is its code's, not a grader
    fault that would make the check count neither way."""
    path = tmp_path / NAIVE.filename
    path.write_text("import os, sys\nprint('bwrap: No space left on device', flush=True)\nos._exit(1)\n",
                    encoding="utf-8")
    job = {"task": "build", "device": "ptx", "module": NAIVE.module, "module_path": str(path), "kernel": NAIVE.kernel,
           "launcher": NAIVE.launcher, "cc": [9, 0], "shapes": [[4, 4, 4]]}
    result = sandbox.run_child(job, cfg["limits"])
    assert fault_of(result.problem) is Fault.CODE, result.problem
    assert Check("naive", "compiles", "c", 2).verdict(False, result.problem).status == "failed"


def test_a_child_stuck_in_the_driver_is_not_the_stages_time_limit(cfg, monkeypatch, tmp_path):
    """A child that did not end after its kill is the grader's: the stage is not marked as run out of time, so its
    later checks are not failed for it."""
    from autograder.engine import stage as stage_module
    from autograder.submission import StageSource
    stuck = grader("not gradable: the check's process did not end within 10 s of being killed")
    monkeypatch.setattr(stage_module.sandbox, "run_child",
                        lambda *a, **k: sandbox.ChildResult(problem=stuck, timed_out=True))
    src = StageSource(NAIVE, NAIVE.filename, open(os.path.join(SOLUTIONS, NAIVE.filename)).read())
    g = engine.StageGrader(src, "sim", cfg, None, str(tmp_path))
    result = g.run({"task": "run", "device": "sim"}, what="the correctness check")
    assert result.timed_out and not g.timed_out and g.timeout_at is None


@pytest.mark.parametrize("facts_of, text", [(racecheck_facts, "== ERROR: the tool crashed"), (ncu_facts, "")])
def test_a_gpu_tool_without_a_report_is_the_graders(facts_of, text):
    """racecheck or ncu trouble counted against the student: the judge put its own words before the tool's. The
    kind travels with the facts now."""
    facts = facts_of(sandbox.ChildResult(), text)
    assert fault_of(facts["problem"]) is Fault.GRADER
    passed, message = races.judge_racecheck({**facts, "shape": (300, 40, 290)})
    check = Check("tiled", "races", "r", 2).verdict(passed, message, fault_of(facts["problem"]))
    assert check.status == SKIPPED and check.regrade
    # the runner's own trouble under the tool stays the student's
    crashed = sandbox.ChildResult(problem=grader("x").__class__("killed by SIGSEGV", Fault.CODE))
    assert fault_of(facts_of(crashed, text)["problem"]) is Fault.CODE
