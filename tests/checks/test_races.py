"""checks/races.py: the simulator's race detector facts (racecheck's logs: tests/test_gpu_structure.py)."""
import pytest

from autograder.checks import races
from checkkit import assert_known_bad
from course.mutants import by_check


def test_race_facts_judged():
    clean = {"races": {"count": 0}, "shared_arrays": [{}], "shared_accesses": 10}
    assert races.judge_sim(clean)[0]
    ok, msg = races.judge_sim({})
    assert not ok and "no facts" in msg


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("races")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)
