"""Shared helpers: grade a file in the simulator tier, make known-bad variants of solutions."""
import copy
import os

import pytest

from autograder import config, grading, stages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(ROOT, "solutions")
BAD = os.path.join(ROOT, "tests", "bad")


def solution_text(stage_name):
    with open(os.path.join(SOLUTIONS, stages.find(stage_name).filename), encoding="utf-8") as f:
        return f.read()


def mutate(stage_name, *replacements):
    """The solution of a stage with (old, new) text replacements; each old must occur."""
    text = solution_text(stage_name)
    for old, new in replacements:
        assert old in text, f"mutation target not found in {stage_name}: {old!r}"
        text = text.replace(old, new)
    return text


@pytest.fixture(scope="session")
def cfg():
    return config.load()


@pytest.fixture
def grade_text(tmp_path, cfg):
    """grade_text(stage_name, text, **limits) -> Report, graded in the simulator with a fixed seed."""
    def run(stage_name, text, **limits):
        stage = stages.find(stage_name)
        path = tmp_path / stage.filename
        path.write_text(text, encoding="utf-8")
        c = copy.deepcopy(cfg)
        c["limits"].update(limits)
        c["limits"]["jobs"] = 1
        return grading.grade(str(path), stage=stage, device="sim", seed=1234, cfg=c)
    return run


def by_key(report, key):
    """The checks of a report with this config key."""
    return [c for c in report.checks if c.key == key]
