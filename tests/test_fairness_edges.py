"""A student's file never stops the class nor zeroes an honest student: a notebook nested deep behind a stray
quote, a scratch file that defines two stages. Each through the real path: the class run or the CLI."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

DEMO = os.path.join(ROOT, "demo_course")


def course_with(tmp_path, files):
    course = tmp_path / "course"
    for student, named in files.items():
        folder = course / "submitted" / student / "matmul"
        folder.mkdir(parents=True)
        for name, text in named.items():
            (folder / name).write_text(text, encoding="utf-8")
    for name in ("nbgrader_config.py", "autograder.toml"):
        shutil.copy(os.path.join(DEMO, name), course)
    return course


@pytest.mark.filterwarnings("ignore::Warning")
def test_a_deep_notebook_behind_a_stray_quote_is_one_students_note_in_every_run(tmp_path):
    """The depth check paired quotes from the top of the text; the decoder of a broken notebook starts where its
    cells start. A stray quote before "cells" made the check pass and the decoder raise RecursionError: the
    student had no row, and every later run died reading the notebook for formgrader's copy."""
    from course import grade_class
    deep = '{"metadata": {} " "cells": [' + "[" * 50000 + "]" * 50000 + "]}"
    course = course_with(tmp_path, {"deb": {"s1_naive.ipynb": deep}})
    for workers, force in ((1, False), (2, True)):
        grader = grade_class.ClassGrader(str(course), device="sim", out=open(os.devnull, "w"), workers=workers,
                                         force=force)
        grader.run()
        results = json.loads((course / "feedback" / "deb" / "matmul" / "results.json").read_text())
        assert results["score"] == 0
        assert "nests more than 64 levels deep" in json.dumps(results)
        with open(course / "lms_upload.csv", encoding="utf-8") as f:
            assert [r["student_id"] for r in csv.DictReader(f)] == ["deb"]


def solution(module):
    with open(os.path.join(ROOT, "solutions", module + ".py"), encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow
def test_a_scratch_file_of_two_stages_zeroes_nothing(tmp_path):
    """An extra file that defines stages 1 and 2 (a copy kept to compare) made the CLI exit 2 and the class run give
    0 for correct stages 1 and 2. It is now named in a note and graded for no stage."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "s1_naive.py").write_text(solution("s1_naive"), encoding="utf-8")
    scratch = solution("s1_naive") + "\n\n" + solution("s2_tiled").replace("from numba import cuda", "")
    (folder / "scratch.py").write_text(scratch, encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--device", "sim", "--results",
                        str(tmp_path / "results.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    naive = sum(t["score"] for t in results["tests"] if (t.get("tags") or [""])[0] == "naive")
    assert naive == 8, results["output"]
    text = json.dumps(results)
    assert "scratch.py: not graded, it defines several stages (naive, tiled)" in text
    assert str(tmp_path) not in text                                  # no absolute path of the grader's machine
