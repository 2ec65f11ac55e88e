"""exercises/ is generated from solutions/ and holds no solution."""
import os

from autograder import generate
from autograder.stages import STAGES
from conftest import ROOT


def test_exercises_are_up_to_date():
    for name, text in generate.exercise_files().items():
        with open(os.path.join(ROOT, "exercises", name), encoding="utf-8") as f:
            assert f.read() == text, f"exercises/{name} is stale: run `make exercises`"


def test_exercises_hold_no_solution_lines():
    for stage in STAGES:
        with open(os.path.join(ROOT, "solutions", stage.filename), encoding="utf-8") as f:
            solution = f.read()
        hidden = []
        inside = False
        for line in solution.splitlines():
            if line.strip() == generate.BEGIN:
                inside = True
            elif line.strip() == generate.END:
                inside = False
            elif inside and line.strip() and not line.strip().startswith("#"):
                hidden.append(line.strip())
        with open(os.path.join(ROOT, "exercises", stage.filename), encoding="utf-8") as f:
            student = [ln.strip() for ln in f.read().splitlines()]
        leaked = [ln for ln in hidden if ln in student and len(ln) > 12]
        assert not leaked, f"{stage.filename} leaks solution lines: {leaked}"
        assert "### BEGIN SOLUTION" not in "\n".join(student)


def test_stub_shape():
    text = generate.strip_solutions("def f():\n    x = 1\n    ### BEGIN SOLUTION\n    y = 2\n\n    z = 3\n    ### END SOLUTION\n")
    assert text == ('def f():\n    x = 1\n    # TODO: implement this part (roughly 2 lines).\n'
                    '    raise NotImplementedError("not implemented yet")\n')


def test_readme_stage_table_is_current():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        assert generate.readme_table() in f.read(), "README stage table is stale: run `make exercises`"
