"""Helpers for the per-check tests: a stand-in StageGrader for judging plain facts, and the known-bad runner."""
import types

from autograder import config, stages
from autograder.engine.report import Check
from autograder.sandbox import ChildResult
from conftest import failed
from course.mutants import KNOWN_BAD

CFG = config.load()


class FakeGrader:
    """What a check reads of a StageGrader, without files or children: judges run on plain facts."""

    def __init__(self, stage_name, tile=16, source=""):
        self.stage = stages.find(stage_name)
        self.cfg = CFG
        self.points = CFG["stages"][self.stage.name]["points"]
        self.tol = CFG["grading"]["relative_error"]
        self.tile = tile
        self.device = "gpu"  # the GPU tools' judges; the simulator's judge plain facts without a grader
        self.src = types.SimpleNamespace(source=source)  # the module as the parent reads it
        self.module_path = self.stage.filename

    def check(self, key, name, share=1.0):
        return Check(self.stage.name, key, name, self.points.get(key, 0) * share)


def child_result(facts, arrays=None, problem=""):
    return ChildResult(facts=facts, arrays=arrays or {}, problem=problem)


def assert_known_bad(grade_text, name):
    """Grade the known-bad variant `name` (course/mutants.py): its check fails, saying what it must say."""
    case = KNOWN_BAD[name]
    report = grade_text(case.stage, case.text, **dict(case.limits))
    out = failed(report, case.check)
    assert case.says in out, out
    return report
