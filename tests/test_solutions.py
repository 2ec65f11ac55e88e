"""The reference solutions get full marks in the simulator tier, and the
student stubs fail politely."""
import os

import pytest

from autograder import engine
from autograder.engine import report as results
from autograder.stages import STAGES
from conftest import ROOT


@pytest.fixture(scope="module")
def solutions_report(cfg):
    return engine.grade(os.path.join(ROOT, "solutions"), device="sim", seed=7, cfg=cfg)


def test_solutions_full_marks_in_simulator(solutions_report):
    r = solutions_report
    assert r.stages == [s.name for s in STAGES]
    failures = [f"{c.stage}: {c.name}: {c.output}" for c in r.checks if c.status == "failed"]
    assert not failures, "\n".join(failures)
    assert r.score == r.max_score > 0


def test_every_solution_compiles_to_ptx(solutions_report):
    compiled = [c for c in solutions_report.checks if c.key == "compiles"]
    assert len(compiled) == len(STAGES)
    assert all(c.status == "passed" and "compiled" in c.output for c in compiled)


def test_speed_is_visible_but_not_run_in_simulator(solutions_report):
    speed = [c for c in solutions_report.checks if c.key == "speed"]
    assert len(speed) == len(STAGES)
    assert all(c.status == "skipped" and c.max_score == 0 and "NOT RUN" in c.output for c in speed)
    out = results.to_gradescope(solutions_report)
    assert "PROVISIONAL" in out["output"] and out["extra_data"]["provisional"]
    assert out["extra_data"]["sandbox"] in ("bwrap", "unshare", "none")


def test_results_json_is_gradescope_shaped(solutions_report):
    out = results.to_gradescope(solutions_report)
    assert set(out) >= {"score", "max_score", "tests", "execution_time"}
    for t in out["tests"]:
        assert set(t) >= {"name", "score", "max_score", "status", "output", "visibility"}
        assert t["status"] in ("passed", "failed")


def test_stubs_fail_with_not_implemented(cfg):
    r = engine.grade(os.path.join(ROOT, "exercises"), device="sim", seed=7, cfg=cfg)
    assert r.stages == [s.name for s in STAGES]
    assert r.score == 0
    graded = [c for c in r.checks if c.status != "skipped" and c.key != "shortcuts"]
    assert graded and all("not implemented yet" in c.output for c in graded)
    assert all(c.status == "passed" for c in r.checks if c.key == "shortcuts")  # a stub is a kernel module
