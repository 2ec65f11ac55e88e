"""checks/bank_conflicts.py: the simulator's bank counter facts and ncu's conflict counts."""
import pytest

from autograder.checks import bank_conflicts
from checkkit import FakeGrader, assert_known_bad, child_result
from tools.mutants import by_check


def ncu_log(conflicts, wavefronts):
    return ('"ID","Kernel Name","Metric Name","Metric Value"\n'
            f'"0","matmul","{bank_conflicts.NCU_METRICS[0]}","{conflicts:,}"\n'
            f'"0","matmul","{bank_conflicts.NCU_METRICS[1]}","{wavefronts:,}"\n')


def test_ncu_counts_judged():
    g = FakeGrader("tiled_transposed")
    assert bank_conflicts.judge_ncu(g, child_result({}), ncu_log(0, 4456448), "").status == "passed"
    c = bank_conflicts.judge_ncu(g, child_result({}), ncu_log(3670016, 4456448), "")
    assert c.status == "failed" and "3,670,016 bank conflicts" in c.output and "TILE_PAD" in c.output


def test_ncu_without_the_kernel_fails():
    assert bank_conflicts.judge_ncu(FakeGrader("tiled_transposed"), child_result({}), "==PROF== no kernels", "").status == "failed"


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
