"""The stage notebooks: generated from the one source, run top to bottom in a real
Jupyter kernel (simulator mode), and released by nbgrader without a solution.

Source notebooks must pass every self-check; released notebooks must run to the
end too, their self-checks failing politely ("not implemented yet"): the
self-check prints its failures and never raises, so no cell errors.
"""
import os
import re
import subprocess
import sys

import nbformat
import pytest

from autograder.stages import STAGES
from autograder.submission import notebook_source
from course import notebooks
from course.release import release_findings, solution_lines
from course.mutants import KNOWN_BAD
from coursekit import ROOT, execute, outputs, released_course, text_of  # noqa: F401 (fixture)

STAGE_IDS = [s.module for s in STAGES]


def test_stored_notebooks_are_current():
    assert notebooks.stale_notebooks() == [], "run `make notebooks`"


def test_prose_cannot_hide_a_solution_marker(tmp_path):
    (tmp_path / "s1_naive.md").write_text("<!-- section: title -->\n# t\n<!-- section: intro -->\n"
                                          "Write ### BEGIN SOLUTION here\n<!-- section: check -->\nc\n")
    with pytest.raises(ValueError, match="solution marker"):
        notebooks.build_notebook(STAGES[0], prose_dir=str(tmp_path))


def _code_lines(text):
    """Non-blank lines, with the stub's TODO comment reduced to its common part."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("# Generated from solutions/"):
            continue
        out.append(re.sub(r"# TODO: implement this part.*", "# TODO: implement this part", line.rstrip()))
    return out


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_release_notebook_grades_the_exercise_code(released_course, stage):
    """The code the grader reads from a released notebook is exercises/<module>.py: one source."""
    released = notebook_source(str(released_course / "release" / "matmul" / f"{stage.module}.ipynb"))
    with open(os.path.join(ROOT, "exercises", stage.filename), encoding="utf-8") as f:
        assert _code_lines(released) == _code_lines(f.read())


def test_release_holds_no_solution(released_course, tmp_path):
    release_dir = released_course / "release" / "matmul"
    assert sorted(os.listdir(release_dir)) == sorted(f"{s.module}.ipynb" for s in STAGES)
    assert release_findings(str(release_dir)) == []
    # the check itself catches a solution line put back into a released notebook
    with open(os.path.join(ROOT, "solutions", "s2_tiled.py"), encoding="utf-8") as f:
        leak = solution_lines(f.read())[0]
    for name in os.listdir(release_dir):
        nb = nbformat.read(str(release_dir / name), as_version=4)
        if name == "s2_tiled.ipynb":
            cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
            cell.source += "\n    " + leak
        nbformat.write(nb, str(tmp_path / name))
    assert any("solution lines survived" in f for f in release_findings(str(tmp_path)))


def test_release_locks_the_cells_students_must_not_edit(released_course):
    for stage in STAGES:
        nb = nbformat.read(str(released_course / "release" / "matmul" / f"{stage.module}.ipynb"), as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("locked"):
                assert cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False
            if "not-graded" in cell.metadata.get("tags", []) or meta.get("grade") or meta.get("task"):
                assert meta.get("locked"), f"{stage.module}: {meta.get('grade_id')} is not locked"
        # the one cell with points is a task cell alone: nbgrader records a cell marked grade too twice
        score = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("points")]
        assert len(score) == 1 and score[0].metadata["nbgrader"]["task"] and not score[0].metadata["nbgrader"]["grade"]


def _check_clean_run(nb):
    """No cell raised and nothing reached stderr (nbgrader would score such a cell 0)."""
    errors = [text_of(o) for _, o in outputs(nb) if o.output_type == "error"]
    stderr = [text_of(o) for _, o in outputs(nb) if o.output_type == "stream" and o.name == "stderr"]
    assert not errors, errors
    assert not stderr, stderr


def _selfcheck_result(nb):
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-selfcheck"))
    result = [text_of(o) for o in cell.outputs if o.output_type == "execute_result"]
    printed = "".join(text_of(o) for o in cell.outputs if o.output_type == "stream")
    images = [o for o in cell.outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    m = re.search(r"(\d+) of (\d+) passed", result[0]) if result else None
    assert m, f"no self-check result: {printed}"
    return int(m.group(1)), int(m.group(2)), printed, images


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_source_notebook_passes_its_self_check(tmp_path, stage):
    path = tmp_path / f"{stage.module}.ipynb"
    nbformat.write(notebooks.read_ipynb(stage), str(path))
    nb = execute(path, tmp_path)
    _check_clean_run(nb)
    passed, total, printed, images = _selfcheck_result(nb)
    assert total >= 2 and passed == total, printed
    assert "FAIL" not in printed
    assert images, "the self-check drew no plot"


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_release_notebook_fails_politely(released_course, stage):
    folder = released_course / "release" / "matmul"
    nb = execute(folder / f"{stage.module}.ipynb", folder)
    _check_clean_run(nb)
    passed, total, printed, _ = _selfcheck_result(nb)
    assert passed == 0 and "not implemented yet" in printed and "Traceback" not in printed


def test_release_notebook_runs_without_the_grader(released_course, tmp_path):
    """In a student's copy without the autograder package (the Classroom template) the setup cell
    still runs and the self-check says why it cannot check."""
    path = tmp_path / "s1_naive.ipynb"
    path.write_bytes((released_course / "release" / "matmul" / "s1_naive.ipynb").read_bytes())
    nb = execute(path, tmp_path, with_grader=False)
    _check_clean_run(nb)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-selfcheck"))
    assert "needs the course's autograder package" in "".join(text_of(o) for o in cell.outputs)


def test_self_check_reports_a_missing_barrier(tmp_path):
    """The notebooks' harness runs the simulator's race detector on the student's own functions."""
    racy = str(tmp_path / "racy.py")
    with open(racy, "w", encoding="utf-8") as f:
        f.write(KNOWN_BAD["stage 2 without second barrier"].text)
    code = ("import runpy, matplotlib; matplotlib.use('Agg')\n"
            "from autograder.selfcheck import check\n"
            f"r = check('tiled', runpy.run_path({racy!r}), plot=False)\n"
            "print(r)\n")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "FAIL  no shared-memory races" in p.stdout and "write-after-read" in p.stdout, p.stdout
    # the grader's structure check, from a PTX compile of the cells' module in a child (the simulator cannot compile)
    assert "PASS  matmul_tiled_kernel is a CUDA kernel that compiles for the GPU" in p.stdout, p.stdout
    assert "FAIL  shared-memory tiles" in p.stdout and "found 1 barrier(s)" in p.stdout, p.stdout
    assert p.stderr == "", p.stderr


def test_a_deleted_graded_cell_is_named_not_blamed_on_a_rename(tmp_path):
    """A notebook whose kernel cell was deleted: every check of the stage says which graded cell is missing and
    how to get it back (not "keep the names the exercise gives"), and no child runs for it."""
    import json as _json
    from autograder import engine, stages
    src = os.path.join(ROOT, "demo_course", "submitted", "ada", "matmul", "s2_tiled.ipynb")
    nb = _json.load(open(src, encoding="utf-8"))
    nb["cells"] = [c for c in nb["cells"]
                   if (c["metadata"].get("nbgrader") or {}).get("grade_id") != "s2_tiled-matmul_tiled_kernel"]
    path = tmp_path / "s2_tiled.ipynb"
    path.write_text(_json.dumps(nb), encoding="utf-8")
    r = engine.grade(str(path), stage=stages.find("tiled"), device="sim", seed=1)
    compile_row = next(c for c in r.checks if c.key == "compiles")
    assert "the graded cell `s2_tiled-matmul_tiled_kernel` is missing from s2_tiled.ipynb" in compile_row.output
    assert "keep the names" not in compile_row.output and r.score == 0 and not r.children


def test_the_notebooks_install_hint_installs_what_the_readme_does():
    """A student without the self-check package follows the notebook's own hint: it installs the wheel with the
    CUDA compiler ([ptx]) and the plots, as the README says, not the wheel alone (no compiler)."""
    import re
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    wanted = re.search(r'pip install "(matmul_gpu_course-[^"]+)"', readme).group(1)
    wanted = re.sub(r"matmul_gpu_course-[^-]+-py3", "matmul_gpu_course-<version>-py3", wanted)
    hint = re.search(r'pip install \\?"?(matmul_gpu_course-[^`"\\]+)', notebooks.SETUP_CODE).group(1)
    assert "[ptx" in wanted and hint == wanted, (hint, wanted)
