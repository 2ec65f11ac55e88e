"""Known-bad variants of the solutions as text mutations (tests and the GPU verification use them)."""
import os

from autograder import stages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(ROOT, "solutions")


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
