"""checks/bank_conflicts.py: the simulator's bank counter facts (ncu's counts: tests/test_gpu_structure.py)."""
import pytest

from autograder.checks import bank_conflicts
from checkkit import assert_known_bad
from course.mutants import by_check


def test_bank_facts_judged():
    row = {"array": "sBT", "line": 40, "source": "sBT[tx, k]", "access": "load", "warp_accesses": 64,
           "max_degree": 32, "mean_degree": 32.0, "extra_wavefronts": 1984}
    ok, msg = bank_conflicts.judge_sim({"bank_conflicts": [row]})
    assert not ok and "32-way" in msg
    assert bank_conflicts.judge_sim({"bank_conflicts": [{**row, "max_degree": 1, "mean_degree": 1.0}]})[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("bank_conflicts")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)
