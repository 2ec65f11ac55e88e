"""formgrader and nbgrader's Generate Feedback on a class whose notebooks are not all as released: a Jupyter copy
("s1_naive-Copy1.ipynb"), a notebook cut short, and the demo course graded without a release."""
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder.stages import STAGES
from course import ASSIGNMENT, demo, grade_class, shown_path, summary, use_venv_tools
from coursekit import ROOT, graded_demo_course, released_course  # noqa: F401 (fixtures)
from test_course import formgrader

MARK = "# marker of the code graded 7f3a"


def nbgrader(course, *args):
    use_venv_tools()
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True,
                          timeout=600)


def _class(released_course, course):
    """ann solved stage 1 in a Jupyter copy (s1_naive-Copy1.ipynb, the released s1_naive.ipynb gone); tru solved it
    and the notebook breaks off in its last cell; ben handed in the stubs."""
    shutil.copytree(released_course, course)
    release = os.path.join(course, "release", ASSIGNMENT)
    for student in ("ann", "ben", "tru"):
        folder = os.path.join(course, "submitted", student, ASSIGNMENT)
        os.makedirs(folder)
        for stage in STAGES:
            nb = nbformat.read(os.path.join(release, f"{stage.module}.ipynb"), as_version=4)
            name = f"{stage.module}.ipynb"
            if stage.module == "s1_naive" and student != "ben":
                demo.apply_edits(nb, stage.module, [demo.SOLVE])
                kernel = next(c for c in nb.cells if c.cell_type == "code" and "@cuda.jit" in c.source)
                kernel.source = MARK + "\n" + kernel.source
                name = "s1_naive-Copy1.ipynb" if student == "ann" else name
            nbformat.write(nb, os.path.join(folder, name))
    path = os.path.join(course, "submitted", "tru", ASSIGNMENT, "s1_naive.ipynb")
    text = open(path, encoding="utf-8").read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[: text.index('"s1_naive-score"')])  # an upload cut short in the score cell
    return course


@pytest.mark.slow
def test_a_copy_and_a_truncated_notebook_in_formgrader_and_generate_feedback(released_course, tmp_path):
    """formgrader shows the code that was graded and its comment names the file; Generate Feedback, plain and with
    --force, on the command line and by formgrader's button, makes every student's pages; the truncated notebook's
    pages show its whole cells and say where it breaks off. formgrader's exchange is the README's."""
    course = _class(released_course, str(tmp_path / "course"))
    grader = grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"))
    assert grader.run() == 3
    for student in ("ann", "tru"):
        assert grader.rows() and next(r for r in grader.rows() if r["student"] == student)["stages"]["naive"] > 0
    for student in ("ann", "ben", "tru"):  # each stage under its released name, nothing else
        assert sorted(n for n in os.listdir(os.path.join(course, "autograded", student, ASSIGNMENT))
                      if n.endswith(".ipynb")) == sorted(f"{s.module}.ipynb" for s in STAGES)
    index = {s: open(os.path.join(course, "feedback", s, ASSIGNMENT, "index.html"), "rb").read()
             for s in ("ann", "ben", "tru")}
    plain = nbgrader(course, "generate_feedback", ASSIGNMENT)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    for student in ("ann", "ben", "tru"):
        for stage in STAGES:
            assert os.path.isfile(os.path.join(course, "feedback", student, ASSIGNMENT, f"{stage.module}.html")), \
                (student, stage.module, plain.stderr[-3000:])
    forced = nbgrader(course, "generate_feedback", ASSIGNMENT, "--force")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    pages = {s: open(os.path.join(course, "feedback", s, ASSIGNMENT, "s1_naive.html"), encoding="utf-8").read()
             for s in ("ann", "tru")}
    assert MARK in pages["ann"] and "s1_naive-Copy1.ipynb" in pages["ann"]
    assert MARK in pages["tru"] and "breaks off" in pages["tru"]
    for student, data in index.items():  # make grade's page kept
        assert open(os.path.join(course, "feedback", student, ASSIGNMENT, "index.html"), "rb").read() == data
    with formgrader(course) as call:
        notebooks = {nb["student"]: nb for nb in call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/s1_naive")}
        comment = [c["auto_comment"] for c in call("GET", f"/formgrader/api/comments?submission_id={notebooks['ann']['id']}")
                   if c["auto_comment"]]
        shown = {s: call("GET", f"/formgrader/submissions/{notebooks[s]['id']}/", raw=True) for s in ("ann", "tru")}
        made = call("POST", f"/formgrader/api/assignment/{ASSIGNMENT}/generate_feedback")
        status, banner = call("GET", "/formgrader/manage_assignments", raw=True)
    assert "s1_naive-Copy1.ipynb" in comment[0], comment
    assert shown["ann"][0] == 200 and MARK in shown["ann"][1], shown["ann"][1][-2000:]
    assert shown["tru"][0] == 200 and MARK in shown["tru"][1] and "breaks off" in shown["tru"][1]
    assert made["success"], made
    exchange = "/usr/local/share/nbgrader/exchange"
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert status == 200 and exchange in banner and exchange in readme and "/srv/nbgrader" not in readme


@pytest.mark.slow
def test_generate_feedback_on_the_graded_demo_course(graded_demo_course, tmp_path):
    """The demo course is graded without a release (no solution cells in its gradebook): Generate Feedback makes
    every student's pages. The nbgrader commands the class summary prints run as printed, from the clone, in a shell
    whose PATH has no venv."""
    course = str(tmp_path / "course")
    shutil.copytree(graded_demo_course[0], course)
    assert "Run from here:" in graded_demo_course[1].stdout, graded_demo_course[1].stdout[-2000:]
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        grader = grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"))
        commands = summary.nbgrader_commands(grader.course, grader.assignment)
        shown = shown_path(course)   # absolute: a relative path from the clone would climb out of it
    finally:
        os.chdir(here)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"
    for command in commands:
        assert command.startswith(f"cd {shown} && ") and shown == os.path.abspath(course)
        ran = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert ran.returncode == 0, (command, ran.stdout[-2000:], ran.stderr[-3000:])
    assert os.path.isfile(os.path.join(course, "gradebook-export.csv"))
    made = nbgrader(course, "generate_feedback", ASSIGNMENT, "--force")
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    for student in demo.STUDENTS:
        for stage in STAGES:
            assert os.path.isfile(os.path.join(course, "feedback", student.name, ASSIGNMENT, f"{stage.module}.html"))


def test_a_score_comment_gives_the_likely_cause_and_names_the_feedback_page():
    """nbgrader's feedback prints the score cell's comment alone: a message that says "the likely cause is below"
    brings that cause along, and "the feedback page" is named by its path."""
    import numpy as np
    from autograder.checks import correct
    from course import feedback
    ones = np.ones((16, 16), np.float32)
    output = correct.instrumented_product(np.zeros((16, 16), np.float32), ones, ones, 1e-5, tile=16)
    assert "(the likely cause is below)" in output  # the check's own message, read on the feedback page
    results = {"score": 4, "max_score": 13, "execution_time": 1.0,
               "tests": [{"name": "stage tiled: data reuse", "score": 0, "max_score": 2, "status": "failed",
                          "output": output, "tags": ["tiled", "data_reuse", "failed"]}],
               "extra_data": {"device": "sim", "files": {"tiled": "s2_tiled-Copy1.ipynb"},
                              "course": {"student": "ann", "assignment": ASSIGNMENT, "stage_scores": {"tiled": 4.0},
                                         "gradebook_max": {"tiled": 15.0}}}}
    comment = feedback.stage_comments(results)["tiled"]
    assert "is below" not in comment and "Likely cause:" in comment and "stops 1 tile short" in comment, comment
    assert f"feedback/ann/{ASSIGNMENT}/index.html" in comment, comment
    assert f"File graded: ` submitted/ann/{ASSIGNMENT}/s2_tiled-Copy1.ipynb `" in comment, comment


def test_a_score_comment_shows_a_students_markup_as_text_on_nbgraders_feedback_page():
    """nbgrader's feedback page renders the score cell's comment with markdown2html, which lets HTML and
    javascript: links through: a file name or an exception message of the student's reaches it only as a code span."""
    from nbconvert.filters.markdown import markdown2html
    from course import feedback
    name = "s1_naive<img src=x onerror=alert(document.domain)>``[x](javascript:alert(1)).ipynb"
    results = {"score": 0, "max_score": 8, "execution_time": 1.0,
               "tests": [{"name": "stage naive: correct results: 1x1 and K=1", "score": 0, "max_score": 2,
                          "status": "failed", "output": "ValueError: <script>alert(42)</script>\x1b[2K",
                          "tags": ["naive", "correct", "failed"]}],
               "extra_data": {"device": "sim", "files": {"naive": name},
                              "course": {"student": "<b>ann</b>", "assignment": ASSIGNMENT,
                                         "stage_scores": {"naive": 0.0}, "gradebook_max": {"naive": 8.0}}}}
    comment = feedback.stage_comments(results)["naive"]
    page = markdown2html(comment)
    assert "<img" not in page and "<script" not in page and "<b>" not in page and "<a " not in page, page
    assert "&lt;img src=x onerror=alert(document.domain)&gt;" in page and "&lt;script&gt;" in page, page
    assert "\x1b" not in comment and "\\x1b" in comment  # the escape sequence shown, not sent to a terminal
