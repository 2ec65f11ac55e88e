"""Shared helpers: grade a file in the simulator tier, make known-bad variants of solutions."""
import copy
import os

import pytest

from autograder import config, engine, stages
from course.mutants import mutate, solution_text  # noqa: F401 (used by the test files)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(ROOT, "solutions")


def pytest_configure(config):
    for s in stages.STAGES:  # `pytest -m tiled_general` runs one stage's tests
        config.addinivalue_line("markers", f"{s.name}: tests of stage {s.number} ({s.title})")


def pytest_collection_modifyitems(items):
    """Mark each test with the stage it exercises: a known-bad case's stage, or a stage named by a parameter."""
    from course.mutants import KNOWN_BAD
    names = {s.name for s in stages.STAGES}
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in params.values():
            if isinstance(value, stages.Stage):
                item.add_marker(value.name)
            elif isinstance(value, str) and value in KNOWN_BAD:
                item.add_marker(KNOWN_BAD[value].stage)
            elif isinstance(value, str) and value in names:
                item.add_marker(value)


@pytest.fixture(scope="session")
def cfg():
    return config.load()


@pytest.fixture
def grade_text(tmp_path, cfg):
    """grade_text(stage_name, text, device="sim", **limits) -> Report, graded with a fixed seed."""
    def run(stage_name, text, device="sim", **limits):
        stage = stages.find(stage_name)
        path = tmp_path / stage.filename
        path.write_text(text, encoding="utf-8")
        c = copy.deepcopy(cfg)
        c["limits"].update({"jobs": 1, **limits})
        return engine.grade(str(path), stage=stage, device=device, seed=1234, cfg=c)
    return run


def failed(report, key):
    """The joined output of the failed checks with this key; fails the test if none failed."""
    checks = by_key(report, key)
    assert checks, f"no {key} check in the report"
    bad = [c for c in checks if c.status == "failed"]
    assert bad, f"{key} passed: " + " | ".join(c.output for c in checks)
    assert all(c.score == 0 for c in bad)
    return "\n".join(c.output for c in bad)


def passed(report, key):
    checks = by_key(report, key)
    assert checks and all(c.status == "passed" for c in checks), " | ".join(c.output for c in checks)
    return "\n".join(c.output for c in checks)


def by_key(report, key):
    """The checks of a report with this config key."""
    return [c for c in report.checks if c.key == key]


def planned(job, shapes, cfg, limits=None, timeout=None):
    """`job` (a simulator "run" job) with the build's checked plans of `shapes`, as the grader gives them: the build
    child records the module's launcher there (the simulator never calls it). Returns (job, None), or (None, the
    build's result) where the build produced no plan (the module failed to import, say)."""
    from autograder import sandbox
    from autograder.sandbox.plan import check_build
    shapes = [list(s) for s in shapes]
    build = {**job, "task": "build", "device": "ptx", "cc": cfg["grading"]["compute_capability"], "shapes": shapes}
    build.pop("count", None)
    result = sandbox.run_child(build, limits or cfg["limits"], timeout=timeout)
    if result.problem or "kernels" not in result.facts:
        return None, result
    plans, problem = check_build(result.facts, shapes, job["kernel"], "compiler_missing" not in result.facts)
    assert not problem, problem
    return {**job, "plans": plans, "kernels": [k["name"] for k in result.facts["kernels"]]}, None
