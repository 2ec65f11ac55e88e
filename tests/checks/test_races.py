"""checks/races.py: the simulator's race detector facts and compute-sanitizer racecheck logs."""
import pytest

from autograder.checks import races
from checkkit import FakeGrader, assert_known_bad, child_result
from tools.mutants import by_check

RACECHECK_CLEAN = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
RACECHECK_RACY = ("========= Error: Potential WAR hazard detected at __shared__ 0x0 in block (0,0,0) :\n"
                  "========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n")


def test_racecheck_log_judged():
    g = FakeGrader("tiled")
    assert races.judge_racecheck(g, child_result({}), RACECHECK_CLEAN, "").status == "passed"
    c = races.judge_racecheck(g, child_result({}), RACECHECK_RACY, "")
    assert c.status == "failed" and "2 hazards" in c.output and "syncthreads" in c.output


def test_racecheck_without_a_summary_fails_and_a_missing_tool_is_a_visible_skip():
    g = FakeGrader("tiled")
    assert races.judge_racecheck(g, child_result({}), "the program crashed", "").status == "failed"
    c = races.judge_racecheck(g, None, None, "compute-sanitizer is not installed on this machine")
    assert c.status == "skipped" and "not installed" in c.output


def test_race_facts_judged():
    clean = {"races": {"count": 0}, "shared_arrays": [{}], "shared_accesses": 10}
    assert races.judge_sim(clean)[0]
    ok, msg = races.judge_sim({})
    assert not ok and "no facts" in msg


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("races")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)
