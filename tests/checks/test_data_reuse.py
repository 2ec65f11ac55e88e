"""checks/data_reuse.py: global loads of A and B per output element, from the simulator's counter."""
import pytest

from autograder.checks import data_reuse
from checkkit import assert_known_bad
from course.mutants import by_check


def facts(loads_per_output):
    K, outputs = 64, 1024
    n = int(loads_per_output * outputs / 2)
    return {"shape": {"M": 32, "K": K, "N": 32},
            "global_loads": {"A": n, "B": n, "outputs": outputs, "loads_per_output": loads_per_output,
                             "naive_loads_per_output": 2 * K, "reuse": 2 * K / loads_per_output,
                             "reuse_A": K * outputs / n, "reuse_B": K * outputs / n, "per_line": []}}


def test_reuse_threshold():
    assert data_reuse.judge_sim(facts(16.0), 16, 0.5)[0]          # reuse 8 = 16 * 0.5
    ok, msg = data_reuse.judge_sim(facts(32.0), 16, 0.5)          # reuse 4
    assert not ok and "used only" in msg
    assert not data_reuse.judge_sim({}, 16, 0.5)[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(by_check("data_reuse")))
def test_known_bad(grade_text, name):
    assert_known_bad(grade_text, name)


def test_more_reuse_than_the_tile_allows_means_skipped_loads():
    """range(K // TILE - 1) drops the last tile: fewer loads than a complete tiled product, which read as reuse
    above TILE ("every loaded element is used 32 times" at TILE 16) and passed."""
    assert data_reuse.judge_sim(facts(8.0), 16, 0.5)[0]                       # reuse 16: a tiled kernel exactly
    ok, msg = data_reuse.judge_sim(facts(4.0), 16, 0.5)                       # reuse 32 at TILE 16
    assert not ok and "loads were skipped" in msg and "range(K // TILE - 1)" in msg, msg


def test_a_kernel_that_reads_nothing_gets_no_reuse_credit():
    empty = facts(8.0)
    empty["global_loads"].update(A=0, B=0)
    ok, msg = data_reuse.judge_sim(empty, 16, 0.5)
    assert not ok and "no element of A or B was read" in msg


def test_the_bar_follows_the_shape():
    """Partial tiles at the edges load fewer elements: at M = N = 17 a kernel tiled by 16 uses each load 8.5 times,
    not 16. The bar was TILE / 2 whatever the shape (measured at 32 x 32 x 32 only)."""
    def at(M, N, reuse, K=20):
        loads = 2 * K * M * N / reuse
        return {"shape": {"M": M, "K": K, "N": N},
                "global_loads": {"A": loads / 2, "B": loads / 2, "outputs": M * N, "loads_per_output": 2 * K / reuse,
                                 "naive_loads_per_output": 2 * K, "reuse": reuse, "reuse_A": reuse, "reuse_B": reuse,
                                 "per_line": []}}
    assert data_reuse.tiled_reuse(17, 17, 16)[0] == 8.5 and data_reuse.tiled_reuse(32, 48, 16)[0] == 16
    ok, msg = data_reuse.judge_sim(at(17, 17, 8.5), 16, 0.5)                  # a tiled kernel exactly
    assert ok and "at least 4.25 needed" in msg and "partial tiles at the edges" in msg, msg
    assert not data_reuse.judge_sim(at(17, 17, 4.0), 16, 0.5)[0]
    ok, msg = data_reuse.judge_sim(at(17, 17, 17.0), 16, 0.5)                 # more than TILE 16 can reach here
    assert not ok and "loads were skipped" in msg
    # ... unless the module's TILE is not one the grader can read (TILE = round(32.0)): it may be a larger tile
    assert data_reuse.judge_sim(at(17, 17, 17.0), 16, 0.5, tile_known=False)[0]
