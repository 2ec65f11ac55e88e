"""What a class run keys, stores and notes per student (course/records.py): a bad timestamp.txt, the grader's own
version in the key, what the submission hash covers, files outside the assignment's folder. The engine is a stand-in
(test_course.FakeEngine): nothing is graded for real."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder import config
from autograder import engine as grading_engine
from autograder.stages import STAGES
from course import ASSIGNMENT, grade_class, records, use_venv_tools
from coursekit import released_course  # noqa: F401 (fixture)
from test_course import FakeEngine, gradebook_scores, results_of, small_course


def notes_of(course, student):
    return results_of(course, student)["extra_data"]["notes"]


def test_a_bad_timestamp_is_a_note_not_a_crash(tmp_path, monkeypatch):
    """Garbage, empty and binary timestamp.txt files: each student is graded and stored with the time unknown and a
    note quoting the file (shortened); the class run, and every later one, goes on. A result staged with such a
    timestamp (by a worker of an earlier version) is stored too."""
    course = small_course(str(tmp_path), ["good", "garbage", "empty", "binary", "staged"])
    folder = lambda s: os.path.join(course, "submitted", s, ASSIGNMENT)  # noqa: E731
    stamps = {"good": b"2024-03-01 12:00:00.000000 UTC\n", "garbage": b"submitted late, sorry!" * 5, "empty": b"",
              "binary": bytes(range(256)), "staged": b"2024-03-01 12:00:00.000000 UTC\n"}
    for student, data in stamps.items():
        with open(os.path.join(folder(student), "timestamp.txt"), "wb") as f:
            f.write(data)
    monkeypatch.setattr(grading_engine, "grade", FakeEngine())
    out = open(os.devnull, "w")
    worker = grade_class.ClassGrader(course, device="sim", out=out)
    staged = worker.grade_and_stage("staged", folder("staged"))[1]
    with open(staged, encoding="utf-8") as f:
        data = json.load(f)
    data["extra_data"]["course"]["timestamp"] = "not a time"
    with open(staged, "w", encoding="utf-8") as f:
        json.dump(data, f)
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 5
    assert gradebook_scores(course) == {s: 5.0 for s in stamps}
    assert notes_of(course, "good") == []
    assert results_of(course, "good")["extra_data"]["course"]["timestamp"] == "2024-03-01 12:00:00.000000 UTC"
    assert notes_of(course, "garbage") == ["timestamp.txt holds 'submitted late, sorry!submitted late, so...', not "
                                           "a time: the submission's time is unknown"]
    assert notes_of(course, "empty") == ["timestamp.txt holds nothing, not a time: the submission's time is unknown"]
    assert "not a time: the submission's time is unknown" in notes_of(course, "binary")[0]
    for student in ("garbage", "empty", "binary"):
        assert results_of(course, student)["extra_data"]["course"]["timestamp"] is None
    rows = {r["student"]: r["note"] for r in grade_class.ClassGrader(course, device="sim", out=out).rows()}
    assert rows["garbage"].startswith("timestamp.txt holds") and rows["good"] == ""
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 0  # the next run: nothing to do, no crash


def test_the_grading_key_holds_the_graders_version(tmp_path, monkeypatch):
    """A change to any code or config file of autograder/ is a new grader version, so a new key: the next run grades
    every student again without --force."""
    package = tmp_path / "autograder"
    (package / "checks").mkdir(parents=True)
    (package / "config.toml").write_text("[limits]\n")
    (package / "checks" / "correct.py").write_text("TOLERANCE = 1e-3\n")
    (package / "checks" / "__pycache__").mkdir()
    first = records.grader_version(str(package))
    (package / "checks" / "__pycache__" / "correct.cpython-312.pyc").write_bytes(b"cache")
    assert records.grader_version.__wrapped__(str(package)) == first  # caches are not the grader's code
    (package / "checks" / "correct.py").write_text("TOLERANCE = 1e-4\n")
    assert records.grader_version.__wrapped__(str(package)) != first
    assert records.grader_version() == records.grader_version()  # computed once per process
    assert "grader_version" in records.grading_key.__doc__

    course = small_course(str(tmp_path / "course"), ["a", "b"])
    engine = FakeEngine()
    monkeypatch.setattr(grading_engine, "grade", engine)
    out = open(os.devnull, "w")
    cfg = grade_class.ClassGrader(course, device="sim", out=out).cfg
    key = records.grading_key("hash", cfg, "sim")
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 2
    monkeypatch.setattr(records, "grader_version", lambda: "a fixed grader")
    assert records.grading_key("hash", cfg, "sim") != key
    engine.calls = []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 2 and engine.calls == ["a", "b"]
    engine.calls = []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 0 and engine.calls == []


def test_the_submission_hash_covers_entries_it_could_not_read(tmp_path):
    """A folder named backup.py is read (and skipped) by the grader: removing it is a new submission, graded again,
    not 'unchanged' behind a stored grade."""
    folder = tmp_path / "sub"
    folder.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), str(folder / "s1_naive.ipynb"))
    (folder / "backup.py").mkdir()
    with_folder = records.submission_hash(str(folder))
    (folder / "backup.py").rmdir()
    assert records.submission_hash(str(folder)) != with_folder


def test_files_outside_the_assignment_folder_are_named_in_the_class_run(tmp_path, monkeypatch):
    """A notebook beside matmul/, one in matmul/sub/, and a student whose folder is Matmul/: the class run names
    each (its output, and the notes of a graded student), none is skipped without a word."""
    course = small_course(str(tmp_path), ["ann"])
    student = os.path.join(course, "submitted", "ann")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, os.path.join(student, "s2_tiled.ipynb"))
    os.makedirs(os.path.join(student, ASSIGNMENT, "sub"))
    nbformat.write(nb, os.path.join(student, ASSIGNMENT, "sub", "s3_tiled_general.ipynb"))
    os.makedirs(os.path.join(course, "submitted", "bob", "Matmul"))
    nbformat.write(nb, os.path.join(course, "submitted", "bob", "Matmul", "s1_naive.ipynb"))
    monkeypatch.setattr(grading_engine, "grade", FakeEngine())
    out = io.StringIO()
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 2  # bob too: a row of 0, not none
    text = out.getvalue()
    assert "2 students have files outside submitted/<student>/matmul/" in text, text
    assert "bob: not graded at all: submitted/bob/ has no matmul/ folder, but holds Matmul/s1_naive.ipynb" in text
    assert "ann: not graded: s2_tiled.ipynb, matmul/sub/s3_tiled_general.ipynb in submitted/ann/, outside matmul/" \
        in text, text
    assert notes_of(course, "ann") == [records.misplaced_note("ann", ASSIGNMENT, [
        "s2_tiled.ipynb", os.path.join(ASSIGNMENT, "sub", "s3_tiled_general.ipynb")])]
    assert [s for s, _ in grade_class.ClassGrader(course, device="sim", out=out).select(["bob"])] == ["bob"]
    assert gradebook_scores(course)["bob"] == 0.0
    assert "not graded at all" in results_of(course, "bob")["extra_data"]["course"]["problems"][0]


# ----------------------------------------------------------------------------
# The grades an instructor uploads, on a course made by `make release` (course.release), graded for real in the
# simulator: released stubs grade without a child, so the class is quick.

def _hand_in(course, student, modules, solved=(), folder=ASSIGNMENT):
    """submitted/<student>/<folder>/ with the released notebooks `modules` (those in `solved` solved)."""
    from course import demo
    release = os.path.join(course, "release", ASSIGNMENT)
    dest = os.path.join(course, "submitted", student, folder)
    os.makedirs(dest, exist_ok=True)
    for module in modules:
        nb = nbformat.read(os.path.join(release, f"{module}.ipynb"), as_version=4)
        demo.apply_edits(nb, module, [demo.SOLVE] if module in solved else [])
        nbformat.write(nb, os.path.join(dest, f"{module}.ipynb"))


@pytest.fixture(scope="module")
def graded_release_class(released_course, tmp_path_factory):
    """A released course graded by `make grade` (ClassGrader.run, simulator): ann left out s5_fast.ipynb, ben handed
    in every stage, cal's notebooks sit in submitted/cal/Matmul/. Returns (course, the run's output)."""
    course = str(tmp_path_factory.mktemp("release-class") / "course")
    shutil.copytree(released_course, course)
    modules = [s.module for s in STAGES]
    _hand_in(course, "ann", [m for m in modules if m != "s5_fast"])
    _hand_in(course, "ben", modules)
    _hand_in(course, "cal", ["s1_naive", "s2_tiled"], folder="Matmul")
    out = io.StringIO()
    grade_class.ClassGrader(course, device="sim", out=out).run()  # 3 students graded (the tests below say so)
    return course, out.getvalue()


def _csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return {r.get("student") or r["student_id"]: r for r in csv.DictReader(f)}


def _export(course):
    """`nbgrader export` of the course: {student_id: row}."""
    use_venv_tools()
    run = subprocess.run([sys.executable, "-m", "nbgrader", "export"], cwd=course, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return _csv(os.path.join(course, "gradebook-export.csv"))


def test_a_missing_stage_counts_zero_of_its_points_in_every_output(graded_release_class):
    """ann left out s5_fast.ipynb: every output counts stage 5 as 0 of its points, out of the same maximum as ben's
    (who handed in every stage), and a note names the missing notebook."""
    course, text = graded_release_class
    ann, ben = results_of(course, "ann"), results_of(course, "ben")
    sim_max = ben["max_score"]
    assert ann["max_score"] == sim_max and ann["extra_data"]["stages"] == [s.name for s in STAGES]
    assert ann["extra_data"]["course"]["stage_scores"]["fast"] == 0.0
    fast = [t for t in ann["tests"] if t["tags"][0] == "fast"]
    assert fast and all("s5_fast.ipynb was not submitted" in t["output"] for t in fast if t["tags"][2] == "failed")
    note = next(n for n in ann["extra_data"]["notes"] if n.startswith("not submitted"))
    assert "s5_fast.ipynb" in note and "0 of 7 points" in note, note
    grades = _csv(os.path.join(course, "grades.csv"))
    assert float(grades["ann"]["max_score"]) == sim_max and "s5_fast.ipynb" in grades["ann"]["note"]
    assert "s5_fast.ipynb" not in grades["ben"]["note"]
    page = open(os.path.join(course, "feedback", "ann", ASSIGNMENT, "index.html"), encoding="utf-8").read()
    assert f"of {sim_max:g} graded in this run" in page and "s5_fast.ipynb was not submitted" in page
    assert "s5_fast.ipynb" in text  # the class table's note
    export = _export(course)
    assert float(export["ann"]["tier_max_score"]) == sim_max == float(export["ben"]["tier_max_score"])
    gpu_total = sum(sum(s["points"].values()) for s in config.load()["stages"].values())
    assert float(export["ann"]["max_score"]) == gpu_total


def test_a_student_whose_notebooks_sit_outside_matmul_has_a_row_of_zero(graded_release_class):
    """cal handed in Matmul/ instead of matmul/: named in the log as before, and now a row of 0 with the note in the
    table, grades.csv, results.json, the LMS upload and the gradebook (nbgrader export)."""
    course, text = graded_release_class
    assert "cal: not graded at all: submitted/cal/ has no matmul/ folder, but holds Matmul/s1_naive.ipynb" in text
    cal = results_of(course, "cal")
    assert cal["score"] == 0 and cal["max_score"] == results_of(course, "ben")["max_score"]
    assert "Matmul/s1_naive.ipynb" in cal["extra_data"]["course"]["problems"][0]
    grades = _csv(os.path.join(course, "grades.csv"))
    assert grades["cal"]["score"] == "0" and "Matmul/s1_naive.ipynb" in grades["cal"]["note"]
    assert _csv(os.path.join(course, "lms_upload.csv"))["cal"]["percent"] == "0.00"
    assert gradebook_scores(course)["cal"] == 0.0 and float(_export(course)["cal"]["score"]) == 0.0
    assert "\ncal " in text  # a row of the class table


def test_grades_csv_keeps_whole_notes_and_every_written_file_is_readable(graded_release_class):
    """grades.csv holds each note whole (the table on screen shortens it); the feedback pages, results.json and the
    CSV files are 0644, so the web server and a TA can read them."""
    course, text = graded_release_class
    grades = _csv(os.path.join(course, "grades.csv"))
    long_note = grades["cal"]["note"]
    assert len(long_note) > 72 and long_note.endswith("every stage counts 0"), long_note
    row = next(line for line in text.splitlines() if line.startswith("cal "))  # the class table's row
    assert row.endswith("...") and long_note[:60] in row and long_note not in row  # the table shortens it
    for path in [os.path.join(course, "feedback", s, ASSIGNMENT, n) for s in ("ann", "cal")
                 for n in ("index.html", "results.json")] + [os.path.join(course, "grades.csv"),
                                                              os.path.join(course, "lms_upload.csv")]:
        assert os.stat(path).st_mode & 0o777 == 0o644, (path, oct(os.stat(path).st_mode))


def test_the_lms_upload_holds_the_percent_of_the_grade_of_record_and_its_tier(graded_release_class):
    """lms_upload.csv: one row per student (cal too), the percent of the tier's points beside the tier and whether it
    is provisional, the same score as grades.csv."""
    course, _ = graded_release_class
    upload, grades = _csv(os.path.join(course, "lms_upload.csv")), _csv(os.path.join(course, "grades.csv"))
    with open(os.path.join(course, "lms_upload.csv"), encoding="utf-8") as f:
        assert f.readline().strip() == "student_id,percent,tier,provisional,score,max_score"
    assert set(upload) == set(grades) == {"ann", "ben", "cal"}
    for student, row in upload.items():
        g = grades[student]
        assert (row["tier"], row["provisional"], row["score"], row["max_score"]) == \
            ("sim", "True", g["score"], g["max_score"])
        assert float(row["percent"]) == round(100 * float(g["score"]) / float(g["max_score"]), 2)


def _set_by_hand(course, student, module, score):
    """What formgrader does when a TA types a score: the score cell's grade gets a manual_score (nbgrader's API)."""
    from nbgrader.api import Gradebook
    use_venv_tools()
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        grade = gb.find_grade(f"{module}-score", module, ASSIGNMENT, student)
        grade.manual_score = score
        gb.db.commit()


@pytest.mark.filterwarnings("ignore::Warning")  # nbgrader 0.9 trips SQLAlchemy 2's autoflush warnings
def test_a_tas_score_set_by_hand_is_reported_shown_and_outlives_a_regrade_with_both_scores(graded_release_class,
                                                                                          tmp_path):
    """A TA gives ben 5 points for stage 1 in formgrader (make grade gave 0). The next `make grade` grades nobody,
    but reports the override; the table, grades.csv, the LMS upload and the feedback page count 5 and show make
    grade's 0 beside it, as the gradebook and export do. ben then solves stage 1: the re-grade keeps the TA's 5
    (nbgrader's rule) and says make grade's score went from 0 to 8 under it; clearing it in formgrader brings make
    grade's back."""
    course = str(tmp_path / "course")
    shutil.copytree(graded_release_class[0], course)
    _set_by_hand(course, "ben", "s1_naive", 5.0)
    out = io.StringIO()
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 0
    text = out.getvalue()
    assert "1 scores set by hand in formgrader" in text and "ben: naive 5 by hand; make grade's score 0" in text, text
    grades = _csv(os.path.join(course, "grades.csv"))
    assert (grades["ben"]["score"], grades["ben"]["auto_score"], grades["ben"]["naive"]) == ("5", "0", "5")
    assert "TA override: naive 5 set by hand (make grade: 0)" in grades["ben"]["note"]
    assert float(_csv(os.path.join(course, "lms_upload.csv"))["ben"]["score"]) == 5.0
    page = open(os.path.join(course, "feedback", "ben", ASSIGNMENT, "index.html"), encoding="utf-8").read()
    assert "Your grade is 5 points" in page and "5 points set by hand (make grade&#x27;s score: 0)" in page
    assert gradebook_scores(course)["ben"] == 5.0 and float(_export(course)["ben"]["score"]) == 5.0
    ben = results_of(course, "ben")                  # results.json says the grade of record too, make grade's beside
    assert ben["score"] == 5.0 and ben["extra_data"]["course"]["auto_score"] == 0.0

    _hand_in(course, "ben", ["s1_naive"], solved=["s1_naive"])  # a changed submission: graded again
    out = io.StringIO()
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 1
    text = out.getvalue()
    assert "make grade's score went from 0 to 8, and the hand score 5 still stands" in text, text
    assert results_of(course, "ben")["extra_data"]["course"]["stage_scores"]["naive"] == 8.0
    assert gradebook_scores(course)["ben"] == 5.0 and float(_export(course)["ben"]["score"]) == 5.0
    grades = _csv(os.path.join(course, "grades.csv"))
    assert (grades["ben"]["score"], grades["ben"]["auto_score"]) == ("5", "8")
    assert "re-graded 0 -> 8 under it" in grades["ben"]["note"]
    page = open(os.path.join(course, "feedback", "ben", ASSIGNMENT, "index.html"), encoding="utf-8").read()
    assert "make grade&#x27;s score 0, now 8" in page

    _set_by_hand(course, "ben", "s1_naive", None)  # the TA empties the score box
    out = io.StringIO()
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 0
    assert "set by hand" not in out.getvalue()
    grades = _csv(os.path.join(course, "grades.csv"))
    assert (grades["ben"]["score"], grades["ben"]["auto_score"]) == ("8", "8")
    assert "override" not in grades["ben"]["note"]
    assert gradebook_scores(course)["ben"] == 8.0


@pytest.mark.filterwarnings("ignore::Warning")
def test_a_hand_score_over_the_tiers_stage_points_is_capped_and_flagged(graded_release_class, tmp_path):
    """formgrader offers each stage out of its GPU-tier points: a TA's full marks on a simulator-tier stage gave more
    than the tier's total (56 of 54, 103.70 % in lms_upload.csv). Every output now counts the stage's points in
    this tier and says the hand score was over."""
    course = str(tmp_path / "course")
    shutil.copytree(graded_release_class[0], course)
    _set_by_hand(course, "ben", "s1_naive", 10.0)                      # stage 1: 10 on the GPU, 8 in the simulator
    assert grade_class.ClassGrader(course, device="sim", out=io.StringIO()).run() == 0
    grades = _csv(os.path.join(course, "grades.csv"))
    assert grades["ben"]["naive"] == "8" and "OVER: 10 was set" in grades["ben"]["note"]
    upload = _csv(os.path.join(course, "lms_upload.csv"))["ben"]
    assert float(upload["score"]) <= float(upload["max_score"]) and float(upload["percent"]) <= 100.0
    ben = results_of(course, "ben")
    assert ben["score"] == float(grades["ben"]["score"]) <= ben["max_score"]


def test_the_key_covers_the_timestamp_the_course_code_and_a_regrade_flag(tmp_path, monkeypatch):
    """A new timestamp.txt (lateness), a changed class-run code, or a stored result with checks the grader could not
    run: each is graded again. Before, the key held the notebooks, the config, the tier and autograder/ alone."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "timestamp.txt").write_text("2026-11-20 10:00:00")
    first = records.submission_hash(str(folder))
    (folder / "timestamp.txt").write_text("2026-11-28 10:00:00")
    assert records.submission_hash(str(folder)) != first
    cfg = {"grading": {}}
    key = records.grading_key("hash", cfg, "sim")
    monkeypatch.setattr(records, "course_version", lambda: "another class run")
    assert records.grading_key("hash", cfg, "sim") != key
    monkeypatch.undo()

    course = small_course(str(tmp_path / "course"), ["a"])
    engine = FakeEngine()
    monkeypatch.setattr(grading_engine, "grade", engine)
    out = open(os.devnull, "w")
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 1
    path = grade_class.ClassGrader(course, device="sim", out=out).results_path("a")
    data = json.load(open(path))
    data["extra_data"]["regrade"] = ["naive: correct results"]
    open(path, "w").write(json.dumps(data))
    engine.calls = []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 1 and engine.calls == ["a"]
