"""Student files never crash, hang or mislead the trusted parent (autograder/reading): a notebook of deeply nested
JSON, a notebook of thousands of empty cells, a list as an nbgrader grade_id, a FIFO, a link out of the folder and U+2028 in a cell, each through the real
command line and through a class run (python -m course.grade_class) on a course with one student per example (one
run for all of them: each run costs seconds of start-up and gradebook). The run completes, each student gets a row,
nothing is booked as the grader's failure or flagged for a re-grade, and a note names the file. No grading child
runs: the stages here are stubs, lose a deleted cell, or break the kernel-module grammar."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from coursekit import once_per_session

DEMO = os.path.join(ROOT, "demo_course", "submitted", "ada", "matmul")
ASSIGNMENT = "matmul"


def stub(folder):
    """Stage 1 as released (its TODOs not filled in): graded without a child."""
    shutil.copy(os.path.join(ROOT, "exercises", "s1_naive.py"), os.path.join(folder, "s1_naive.py"))


def demo_notebook(name):
    with open(os.path.join(DEMO, name), encoding="utf-8") as f:
        return json.load(f)


def code_cell(nb, starts):
    return next(c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).startswith(starts))


def deep_json(folder):
    """An extra Untitled.ipynb of 10 KB: brackets nested 5,000 deep (json.loads raised RecursionError)."""
    stub(folder)
    with open(os.path.join(folder, "Untitled.ipynb"), "w", encoding="utf-8") as f:
        f.write("[" * 5000 + "]" * 5000)
    return "Untitled.ipynb", "nests more than 64 levels deep"


def list_grade_id(folder):
    """s2's kernel cell carries a list as its nbgrader grade_id, and its launcher cell was deleted: the search for
    deleted graded cells put the list in a set (TypeError)."""
    nb = demo_notebook("s2_tiled.ipynb")
    code_cell(nb, "@cuda.jit")["metadata"]["nbgrader"]["grade_id"] = ["s2_tiled-matmul_tiled_kernel"]
    nb["cells"].remove(code_cell(nb, "def matmul_tiled("))
    with open(os.path.join(folder, "s2_tiled.ipynb"), "w", encoding="utf-8") as f:
        json.dump(nb, f)
    return "s2_tiled.ipynb", "its nbgrader grade_id is a list, not text: read as absent"


def fifo(folder):
    """A FIFO named like a notebook, and nbgrader's timestamp.txt a FIFO too: opening one for reading waits for a
    writer that never comes (the command line and the class run hung)."""
    stub(folder)
    os.mkfifo(os.path.join(folder, "Untitled.ipynb"))
    os.mkfifo(os.path.join(folder, "timestamp.txt"))
    return "Untitled.ipynb", "a FIFO (named pipe), not a file"


def link_out(folder):
    """s2_tiled.py is a symbolic link to a file outside the submission folder (a solution): it was followed and
    graded (and a class run copied it for formgrader)."""
    stub(folder)
    outside = os.path.join(os.path.dirname(os.path.dirname(folder)), "elsewhere.py")
    shutil.copy(os.path.join(ROOT, "solutions", "s2_tiled.py"), outside)
    os.symlink(outside, os.path.join(folder, "s2_tiled.py"))
    return "s2_tiled.py", "a symbolic link (to "


PRINT = "print('checked')"


def line_separator(folder):
    """The kernel's cell starts with a comment holding U+2028 and ends with a statement no kernel module may hold:
    str.splitlines split the comment (its tail became a second finding, on honest code) and numbered the real
    finding one line too far."""
    nb = demo_notebook("s1_naive.ipynb")
    cell = code_cell(nb, "@cuda.jit")
    cell["source"] = "# tiles: see the notes\u2028(16 x 16)\n" + "".join(cell["source"]) + "\n" + PRINT + "\n"
    with open(os.path.join(folder, "s1_naive.ipynb"), "w", encoding="utf-8") as f:
        json.dump(nb, f)
    return "s1_naive.ipynb", "U+2028 (LINE SEPARATOR), which Python does not end a line at"


def lone_surrogate(folder):
    """JSON may hold "\\ud800", which is no character and no UTF-8 file can hold: writing the graded script failed
    in the parent (UnicodeEncodeError). The cell also breaks the grammar, so no child runs."""
    nb = demo_notebook("s1_naive.ipynb")
    cell = code_cell(nb, "@cuda.jit")
    cell["source"] = "# odd \ud800 here\n" + "".join(cell["source"]) + "\n" + PRINT + "\n"
    with open(os.path.join(folder, "s1_naive.ipynb"), "w", encoding="utf-8") as f:
        json.dump(nb, f)  # ensure_ascii: the file is ASCII, its JSON escapes the surrogate
    return "s1_naive.ipynb", "1 lone surrogate (\\ud800: not a character) read as U+FFFD"


def many_cells(folder):
    """s1_naive.ipynb is the demo's with 2,000 empty cells after its own: 720,000 of them (33 MB, under the size cap)
    held the class run's parent for 3 minutes, checking and copying each for formgrader."""
    nb = demo_notebook("s1_naive.ipynb")
    nb["cells"] += [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [], "execution_count": None}] * 2000
    with open(os.path.join(folder, "s1_naive.ipynb"), "w", encoding="utf-8") as f:
        json.dump(nb, f)
    return "s1_naive.ipynb", "cells, more than the 2,000 a notebook may have"


EXAMPLES = {"many_cells": many_cells, "deep_json": deep_json, "list_grade_id": list_grade_id, "fifo": fifo, "link_out": link_out,
            "line_separator": line_separator, "lone_surrogate": lone_surrogate}


def expected_line():
    """The line of PRINT in the kernel's cell as Python (and Jupyter) count it: only \\n ends a line there."""
    nb = demo_notebook("s1_naive.ipynb")
    text = "# tiles: see the notes\u2028(16 x 16)\n" + "".join(code_cell(nb, "@cuda.jit")["source"]) + "\n" + PRINT
    return text.split("\n").index(PRINT) + 1


def check_outcome(example, results, file, why):
    """What every example must give: the student's file named in a note, and no stage the grader's fault."""
    notes = results["extra_data"]["notes"]
    assert any(n.startswith(file) and why in n for n in notes), notes
    assert not results["extra_data"]["regrade"]
    if example == "link_out":  # the link's target (a solution) was not graded: the stage it names fails, saying why
        tiled = [t for t in results["tests"] if "stage tiled:" in t["name"]]
        assert tiled and all(t["score"] == 0 for t in tiled)
        assert all("s2_tiled.py could not be read" in t["output"] and "symbolic link" in t["output"]
                   for t in tiled if t["status"] == "failed")
    if example == "line_separator":
        grammar = next(t for t in results["tests"] if "Kernel module grammar" in t["name"])
        findings = [ln.strip() for ln in grammar["output"].splitlines() if ln.strip().startswith("line ")]
        assert len(findings) == 1 and findings[0].startswith(
            f"line {expected_line()} of the cell defining matmul_naive_kernel (cell 7): a call at module level "
            f"({PRINT})"), findings


@pytest.mark.parametrize("example", EXAMPLES)
def test_student_files_through_the_command_line(tmp_path, example):
    folder = tmp_path / "submission"
    folder.mkdir()
    file, why = EXAMPLES[example](str(folder))
    out = tmp_path / "results.json"
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--device", "sim", "--seed", "1",
                          "--results", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert f"Note: {file}" in run.stdout
    check_outcome(example, json.loads(out.read_text()), file, why)


def student_of(example):
    """The student whose submission holds this example in the shared class run."""
    return "zed" + example.replace("_", "")


@pytest.fixture(scope="session")
def class_run(tmp_path_factory):
    """One class run (python -m course.grade_class) of a course with one student per example, built once per test
    session and shared by xdist workers: (course folder, {example: (file, why)}, the run's CompletedProcess)."""
    def build(folder):
        course = folder / "course"
        examples = {}
        for example, make in EXAMPLES.items():
            student = course / "submitted" / student_of(example) / ASSIGNMENT
            student.mkdir(parents=True)
            examples[example] = make(str(student))
        run = subprocess.run([sys.executable, "-m", "course.grade_class", str(course), "--device", "sim"], cwd=ROOT,
                             capture_output=True, text=True, timeout=400)
        (folder / "run.json").write_text(json.dumps({"returncode": run.returncode, "stdout": run.stdout,
                                                     "stderr": run.stderr, "examples": examples}))
    folder = once_per_session(tmp_path_factory, "reading-class-run", build)
    data = json.loads((folder / "run.json").read_text())
    run = subprocess.CompletedProcess([], data["returncode"], data["stdout"], data["stderr"])
    return folder / "course", {k: tuple(v) for k, v in data["examples"].items()}, run


@pytest.mark.parametrize("example", EXAMPLES)
def test_student_files_through_a_class_run(class_run, example):
    course, examples, run = class_run
    student = student_of(example)
    folder = course / "submitted" / student / ASSIGNMENT
    file, why = examples[example]
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "could not be graded" not in run.stdout
    results = json.loads((course / "feedback" / student / ASSIGNMENT / "results.json").read_text())
    record = results["extra_data"]["course"]
    assert not record["grading_key"].startswith("retry:")
    assert not any(p.startswith("not gradable: the grader itself failed") for p in record["problems"]), record
    rows = list(open(course / "grades.csv", encoding="utf-8"))
    row = next(r for r in rows if r.startswith(f"{student},"))
    assert "RE-GRADE" not in row and file in row
    check_outcome(example, results, file, why)
    autograded = course / "autograded" / student / ASSIGNMENT
    for name in os.listdir(folder):  # formgrader's copy: regular files only, never a link's target or a FIFO
        copied = autograded / name
        assert not copied.exists() or (os.path.isfile(folder / name) and not os.path.islink(folder / name))
    if example == "fifo":
        assert "timestamp.txt was not read (a FIFO (named pipe)" in " ".join(results["extra_data"]["notes"])


def test_the_self_check_reads_a_cell_holding_u2028_as_python_numbers_its_lines():
    """IPython caches a cell's lines as str.splitlines gives them: after a U+2028 in a comment, inspect.getsource
    read a function from the wrong lines, and the module the self-check compiles held the comment's tail as code."""
    import ast
    from IPython.core.compilerop import CachingCompiler
    from autograder import selfcheck
    cell = "TILE = 16\n# tiles: see the notes\u2028(16 x 16)\ndef matmul_helper(a):\n    return a + TILE\n"
    name = CachingCompiler().cache(cell, 7)  # as the notebook's kernel does when the cell runs
    namespace = {"__name__": "__main__", "_ih": ["", "import numpy", cell]}
    exec(compile(cell, name, "exec"), namespace)
    module = selfcheck.module_text(namespace)
    assert "def matmul_helper(a):\n    return a + TILE\n" in module and "(16 x 16)" not in module, module
    ast.parse(module)


def test_a_classroom_repository_link_is_never_followed(tmp_path):
    """A student's repository where exercises/s1_naive.py is a link to a file elsewhere on the runner: the classroom
    grader copied the link's target into the folder it grades. Now the released stub is graded, and the note says
    why."""
    from autograder.stages import STAGES
    from autograder.repository import pick_files
    outside = tmp_path / "elsewhere.py"
    shutil.copy(os.path.join(ROOT, "solutions", "s1_naive.py"), outside)
    (tmp_path / "repo" / "exercises").mkdir(parents=True)
    os.symlink(outside, tmp_path / "repo" / "exercises" / "s1_naive.py")
    (stage, path, rel, note), = pick_files(str(tmp_path / "repo"), STAGES[:1])
    assert path == os.path.join(ROOT, "exercises", "s1_naive.py") and rel == ""
    assert "exercises/s1_naive.py: a symbolic link or a path through one, never followed" in note
