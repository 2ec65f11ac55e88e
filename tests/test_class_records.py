"""What a class run keys, stores and notes per student (course/records.py): a bad timestamp.txt, the grader's own
version in the key, what the submission hash covers, files outside the assignment's folder. The engine is a stand-in
(test_course.FakeEngine): nothing is graded for real."""
import io
import json
import os

import nbformat

from autograder import engine as grading_engine
from course import ASSIGNMENT, grade_class, records
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
