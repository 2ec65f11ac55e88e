"""A student's notebook never carries script to staff: formgrader's copy (course/autograded.py), the pages formgrader
and Generate Feedback render from it, and the class's feedback page hold no active content of the student's.

The hostile notebook is the demo's correct stage 1 with, added by hand: an application/javascript output, a
text/html output with <img onerror>, an SVG output with a <script>, a markdown cell with <img onerror> and a
`javascript:` link, a markdown cell that tries to close the fence it is shown in, and a raw cell holding a link
styled as a button (nbconvert prints a raw cell as HTML).
"""
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from conftest import ROOT
from test_course import formgrader

ASSIGNMENT = "matmul"
MARKERS = ("MD1", "MD2", "MD3", "JS1", "HTML1", "SVG1", "RAW1")
RAW_LINK = "https://evil.example/RAW1"


def hostile_notebook():
    with open(os.path.join(ROOT, "demo_course", "submitted", "ada", ASSIGNMENT, "s1_naive.ipynb"), encoding="utf-8") as f:
        nb = json.load(f)
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [
        {"output_type": "display_data", "metadata": {}, "data": {
            "application/javascript": "alert('JS1')", "text/html": "<img src=x onerror=\"alert('HTML1')\">",
            "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'><script>alert('SVG1')</script></svg>",
            "text/plain": "plain output kept"}},
        {"output_type": "stream", "name": "stdout", "text": "<script>alert('JS1')</script> printed\n"}]
    nb["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source":
                           "My notes <img src=x onerror=\"alert('MD1')\"> and [a link](javascript:alert('MD2'))"})
    nb["cells"].insert(2, {"cell_type": "markdown", "metadata": {}, "source":
                           "~~~~~~\n``````\n<img src=x onerror=\"alert('MD3')\">"})
    nb["cells"].insert(3, {"cell_type": "raw", "metadata": {}, "source":
                           f'<a href="{RAW_LINK}" class="btn btn-success">stage 1 verified 8/8</a>'})
    return nb


class Live(HTMLParser):
    """What of a page would run in a browser: script bodies, event handler attributes, javascript: addresses,
    inline SVG."""

    def __init__(self):
        super().__init__()
        self.found, self._script = [], False

    def handle_starttag(self, tag, attrs):
        self._script = tag == "script"
        if tag == "svg":
            self.found.append("inline <svg>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or value.strip().lower().startswith("javascript:") or value == RAW_LINK:
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag):
        self._script = False

    def handle_data(self, data):
        if self._script:
            self.found.append(f"<script>{data[:80]}")


def live_markers(page):
    parser = Live()
    parser.feed(page)
    return [x for x in parser.found if any(m in x for m in MARKERS)]


def test_formgraders_copy_holds_no_active_content_and_says_what_it_left_out():
    from autograder.stages import STAGES
    from course import autograded
    import nbformat
    folder = os.path.join(ROOT, "build", "staff-pages-unit")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "s1_naive.ipynb"), "w", encoding="utf-8") as f:
        json.dump(hostile_notebook(), f)
    nb, _ = autograded.stage_notebook(STAGES[0], folder, "s1_naive.ipynb", (), 8, "mal", ASSIGNMENT)
    shutil.rmtree(folder)
    text = nbformat.writes(nb)
    mimes = {m for c in nb.cells if c.cell_type == "code" for o in c.outputs for m in o.get("data", {})}
    assert mimes == {"text/plain"}
    assert "plain output kept" in text
    first = nb.cells[0].source
    assert "outputs not shown: 3 outputs" in first and "application/javascript" in first and "text/html" in first
    assert "2 markdown cells written by the student shown as text" in first and "1 raw cell shown as text" in first
    assert not [c for c in nb.cells if c.cell_type == "raw"]
    assert [c.source for c in nb.cells if RAW_LINK in c.source][0].startswith("~~~ text\n")  # text, not HTML
    student_md = [c.source for c in nb.cells if c.cell_type == "markdown" and "MD" in c.source]
    assert len(student_md) == 2 and all(s.startswith("~~~") for s in student_md)
    assert student_md[1].startswith("~~~~~~~ text\n")                      # longer than the student's fences
    prose = autograded.course_prose("s1_naive")
    kept = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source in prose]
    assert kept, "the course's own prose is shown as released"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::Warning")
def test_formgraders_page_and_the_feedback_pages_run_nothing_of_the_students(tmp_path):
    course = tmp_path / "course"
    folder = course / "submitted" / "mal" / ASSIGNMENT
    folder.mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "demo_course", "nbgrader_config.py"), course)
    shutil.copy(os.path.join(ROOT, "demo_course", "autograder.toml"), course)
    with open(folder / "s1_naive.ipynb", "w", encoding="utf-8") as f:
        json.dump(hostile_notebook(), f)
    p = subprocess.run(["make", "--no-print-directory", "grade", f"COURSE={course}", "ARGS=--device sim"], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    index = (course / "feedback" / "mal" / ASSIGNMENT / "index.html").read_text(encoding="utf-8")
    assert live_markers(index) == []
    with formgrader(str(course)) as call:
        nb = next(n for n in call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/s1_naive")
                  if n["student"] == "mal")
        assert nb["score"] == 8                                            # the points, as before
        status, page = call("GET", f"/formgrader/submissions/{nb['id']}/?index=0", raw=True)
        assert status == 200
        assert live_markers(page) == [], live_markers(page)
        assert "cuda.grid" in page                                          # the graded code, as before
        assert "plain output kept" in page and "outputs not shown" in page
        call("POST", f"/formgrader/api/assignment/{ASSIGNMENT}/mal/generate_feedback")
    made = course / "feedback" / "mal" / ASSIGNMENT / "s1_naive.html"
    assert made.is_file()
    assert live_markers(made.read_text(encoding="utf-8")) == []


def test_the_ci_summaries_show_a_students_file_names_as_text():
    """The job summary (GitHub Actions, GitLab) and Classroom 50's Release text name the file graded for each stage:
    a file name is the student's to choose. Rendered by a markdown renderer that lets raw HTML through, nothing of
    it runs."""
    import mistune
    from classroom import report
    name = "notebooks/x<img src=x onerror=\"alert('MD1')\">[y](javascript:alert('MD2')).ipynb"
    results = {"score": 8, "max_score": 8, "execution_time": 1, "tests": [
        {"name": "stage naive: compiles", "score": 2, "max_score": 2, "status": "failed",
         "output": "<script>alert('JS1')</script>", "tags": ["naive", "compiles", "failed"]}], "extra_data": {"device": "sim", "provisional": True}}
    text = report.job_summary(results, {"naive": name})
    page = mistune.create_markdown(escape=False, plugins=["table"])(text)
    assert "onerror" in page and live_markers(page) == []                  # shown, as text
