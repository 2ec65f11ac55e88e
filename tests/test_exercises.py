"""exercises/ is generated from solutions/ and holds no solution."""
import os
import re

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


def test_the_tile_line_names_the_courses_sizes(cfg):
    """Where TILE is set, the stub (and so the notebook) names the sizes config [structure] tiles allows: another
    TILE fails the shared-tile check, and the grader judges the tiling by the course's own."""
    tiles = cfg["structure"]["tiles"]
    want = "  # the course allows " + " or ".join(map(str, tiles))
    for stage in STAGES:
        if not stage.tiled:
            continue
        for folder in ("solutions", "exercises", "notebooks"):
            with open(os.path.join(ROOT, folder, stage.filename), encoding="utf-8") as f:
                line = next(ln for ln in f.read().splitlines() if re.match(r"TILE = \d+($|  #)", ln))
            assert line.endswith(want), f"{folder}/{stage.filename}: {line!r} should end with {want!r}"
    with open(os.path.join(ROOT, "notebooks", "prose", "s2_tiled.md"), encoding="utf-8") as f:
        assert f"`TILE` is {' or '.join(map(str, tiles))}, the sizes the course allows" in f.read()
