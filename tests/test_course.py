"""The course workflow: the demo course, `make grade` through the grading engine into
nbgrader's gradebook, re-runs and interruptions."""
import contextlib
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from autograder import config
from autograder import engine as grading_engine
from autograder.engine.report import PASSED
from autograder.stages import STAGES
from course import ASSIGNMENT, DEMO_COURSE, demo, grade_class, use_venv_tools
from coursekit import ROOT, graded_demo_course, released_course  # noqa: F401 (fixtures)


def test_demo_submissions_are_current(released_course, tmp_path):
    demo.write_demo(str(released_course / "release" / ASSIGNMENT), str(tmp_path))
    stored = os.path.join(DEMO_COURSE, "submitted")
    made = tmp_path / "submitted"
    assert sorted(os.listdir(stored)) == sorted(os.listdir(made)) == sorted(s.name for s in demo.STUDENTS)
    for student in os.listdir(made):
        names = sorted(os.listdir(made / student / ASSIGNMENT))
        assert sorted(os.listdir(os.path.join(stored, student, ASSIGNMENT))) == names
        for name in names:
            with open(os.path.join(stored, student, ASSIGNMENT, name), encoding="utf-8") as f:
                assert f.read() == (made / student / ASSIGNMENT / name).read_text(encoding="utf-8"), \
                    f"demo_course/submitted/{student}/{ASSIGNMENT}/{name} is stale: run `make notebooks`"


def results_of(course, student):
    with open(os.path.join(course, "feedback", student, ASSIGNMENT, "results.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.slow
def test_make_grade_gives_each_demo_student_the_expected_score(graded_demo_course, tmp_path):
    graded, first, seconds = graded_demo_course
    course = str(tmp_path / "course")  # a copy: this test runs nbgrader export and grades again
    shutil.copytree(graded, course)
    cmd = [sys.executable, "-m", "course.grade_class", course, "--device", "sim"]
    print(f"make grade on the demo course took {seconds:.0f} s")
    assert first.returncode == 0, first.stdout + first.stderr
    totals = {}
    for student in demo.STUDENTS:
        data = results_of(course, student.name)
        got = data["extra_data"]["course"]["stage_scores"]
        assert {k: round(v, 4) for k, v in got.items()} == student.expected, (student.name, student.story)
        assert data["score"] == student.expected_total
        totals[student.name] = student.expected_total
        page = open(os.path.join(course, "feedback", student.name, ASSIGNMENT, "index.html"), encoding="utf-8").read()
        assert "data:image/png;base64," in page and "PASS" in page
        assert os.path.isfile(os.path.join(course, "autograded", student.name, ASSIGNMENT, "s1_naive.ipynb"))
    pages = {s.name: open(os.path.join(course, "feedback", s.name, ASSIGNMENT, "index.html"), encoding="utf-8").read()
             for s in demo.STUDENTS}
    assert "copy_to_host" in pages["dee"] and "race" in pages["cy"] and "did not finish within" in pages["eve"]
    # stage headers in the tier's own points: full marks in the simulator read as such, with the GPU's total beside
    naive = next(s for s in STAGES if s.name == "naive")
    assert f"Stage 1: {naive.title} (8 / 8 in the simulator; 10 with a GPU)" in pages["ada"]
    # the student contract, open where the kernel-module grammar zeroed a stage
    assert "<details open><summary>What a kernel module may contain" in pages["dee"]
    assert "<details><summary>What a kernel module may contain" in pages["ada"]
    with open(os.path.join(course, "grades.csv"), encoding="utf-8") as f:
        assert {r["student"]: float(r["score"]) for r in csv.DictReader(f)} == totals
    assert os.path.getsize(os.path.join(course, "grades-histogram.png")) > 1000
    assert "student" in first.stdout and "Histogram" in first.stdout
    assert "5 of 5 graded in the simulator tier: provisional" in first.stdout
    # a log that is not a terminal gets one progress line per student, not a bar of carriage returns
    assert "graded 5/5" in first.stderr and "\r" not in first.stderr, first.stderr[-1500:]
    # the class table's note: what needs a look, per student (not "provisional" for everyone)
    notes = {r["student"]: r["note"] for r in grade_class.ClassGrader(course, device="sim",
                                                                      out=open(os.devnull, "w")).rows()}
    assert notes["dee"].startswith("naive zeroed (") and "naive: time limit" in notes["eve"], notes
    assert "tiled_general: syntax error" in notes["eve"] and notes["ada"] == "", notes

    # nbgrader's own export reads the same scores from the gradebook
    use_venv_tools()
    export = subprocess.run([sys.executable, "-m", "nbgrader", "export"], cwd=course,
                            capture_output=True, text=True, timeout=300)
    assert export.returncode == 0, export.stdout + export.stderr
    with open(os.path.join(course, "gradebook-export.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["student_id"]: float(r["score"]) for r in rows} == totals
    gpu_total = sum(sum(s["points"].values()) for s in config.load()["stages"].values())
    assert {float(r["max_score"]) for r in rows} == {gpu_total}
    # ... with the tier each grade came from: a simulator-tier grade is provisional, out of the tier's maximum
    sim_total = results_of(course, demo.STUDENTS[0].name)["max_score"]
    assert sim_total < gpu_total
    assert {(r["tier"], float(r["tier_max_score"]), r["provisional"]) for r in rows} == {("sim", sim_total, "True")}

    # formgrader's view of the course (nbgrader's own API behind its pages) shows the same
    from nbgrader.apps.api import NbGraderAPI
    from course.gradebook import course_directory
    coursedir = course_directory(course)
    api = NbGraderAPI(coursedir, config=coursedir.config)
    assert api.get_assignment(ASSIGNMENT)["num_submissions"] == len(totals)
    assert {s["student"]: s["score"] for s in api.get_submissions(ASSIGNMENT)} == totals
    assert not any(s["needs_manual_grade"] for s in api.get_submissions(ASSIGNMENT))

    # a second run grades nothing: every submission is unchanged
    stamps = {s.name: results_of(course, s.name)["extra_data"]["course"]["graded_at"] for s in demo.STUDENTS}
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "grading 0 on" in again.stdout, again.stdout + again.stderr
    assert {s: results_of(course, s)["extra_data"]["course"]["graded_at"] for s in stamps} == stamps


class FakeEngine:
    """Stands in for engine.grade: one point per stage, or an interrupt while grading one student."""

    def __init__(self, interrupt_at=None, crash_at=None):
        self.calls, self.interrupt_at, self.crash_at = [], interrupt_at, crash_at

    def __call__(self, folder, device="auto", seed=None, cfg=None, progress=None, stage=None):
        student = folder.split(os.sep)[-2]
        self.calls.append(student)
        if student == self.interrupt_at:
            raise KeyboardInterrupt
        if student == self.crash_at:
            raise ValueError("negative dimensions are not allowed")
        report = grading_engine.Report(folder, device, seed or 0)
        for s in STAGES:
            report.stages.append(s.name)
            report.checks.append(grading_engine.Check(s.name, "correct", "correct results", 6, 1.0, PASSED, "ok"))
        return report


def small_course(root, students):
    for student in students:
        folder = os.path.join(root, "submitted", student, ASSIGNMENT)
        os.makedirs(folder)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"# {student}'s work")])
        nbformat.write(nb, os.path.join(folder, "s1_naive.ipynb"))
    return root


def gradebook_scores(course):
    from nbgrader.api import Gradebook
    use_venv_tools()
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        return {s.student.id: s.score for s in gb.find_assignment(ASSIGNMENT).submissions}


def test_interrupted_run_keeps_finished_grades_and_reruns_only_what_changed(tmp_path, monkeypatch):
    course = small_course(str(tmp_path), ["a", "b", "c"])
    engine = FakeEngine(interrupt_at="b")
    monkeypatch.setattr(grading_engine, "grade", engine)
    out = open(os.devnull, "w")
    with pytest.raises(KeyboardInterrupt):
        grade_class.ClassGrader(course, device="sim", out=out).run()
    assert engine.calls == ["a", "b"]
    assert gradebook_scores(course) == {"a": 5.0}  # a's grade was committed before b was interrupted
    assert os.path.exists(os.path.join(course, "feedback", "a", ASSIGNMENT, "results.json"))
    assert not os.path.exists(os.path.join(course, "feedback", "b", ASSIGNMENT, "results.json"))

    engine.interrupt_at, engine.calls = None, []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 2
    assert engine.calls == ["b", "c"]
    assert gradebook_scores(course) == {"a": 5.0, "b": 5.0, "c": 5.0}

    engine.calls = []
    with open(os.path.join(course, "submitted", "c", ASSIGNMENT, "s1_naive.ipynb"), "a", encoding="utf-8") as f:
        f.write("\n")  # a changed submission
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 1 and engine.calls == ["c"]
    engine.calls = []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 0 and engine.calls == []
    assert grade_class.ClassGrader(course, device="sim", force=True, out=out).run() == 3


def test_a_grader_crash_on_one_student_neither_stops_the_class_nor_sticks(tmp_path, monkeypatch):
    """One worker: the grader failing on b's submission gives b a row and feedback that say so; a and c are graded;
    the next run grades b again (its result is marked for a retry), not a and c."""
    course = small_course(str(tmp_path), ["a", "b", "c"])
    engine = FakeEngine(crash_at="b")
    monkeypatch.setattr(grading_engine, "grade", engine)
    out = open(os.devnull, "w")
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 3
    assert engine.calls == ["a", "b", "c"]
    assert gradebook_scores(course) == {"a": 5.0, "b": 0.0, "c": 5.0}
    problems = results_of(course, "b")["extra_data"]["course"]["problems"]
    assert problems and problems[0].startswith(grade_class.GRADER_FAILED) and "ValueError" in problems[0]
    page = open(os.path.join(course, "feedback", "b", ASSIGNMENT, "index.html"), encoding="utf-8").read()
    assert "the grader itself failed" in page
    notes = {r["student"]: r["note"] for r in grade_class.ClassGrader(course, device="sim", out=out).rows()}
    assert notes["b"].startswith("RE-GRADE") and not notes["a"].startswith("RE-GRADE")
    engine.crash_at, engine.calls = None, []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 1 and engine.calls == ["b"]
    assert gradebook_scores(course) == {"a": 5.0, "b": 5.0, "c": 5.0}


def test_submission_without_notebooks_is_recorded_as_not_gradable(tmp_path):
    course = str(tmp_path)
    os.makedirs(os.path.join(course, "submitted", "zed", ASSIGNMENT))
    assert grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w")).run() == 1
    data = results_of(course, "zed")
    assert data["score"] == 0 and "found no file defining" in data["extra_data"]["course"]["problems"][0]
    assert gradebook_scores(course) == {"zed": 0.0}


def test_course_overrides_are_limited_to_known_limits(tmp_path):
    (tmp_path / "autograder.toml").write_text("[limits]\ncheck_timeout_s = 12\n")
    assert grade_class.load_config(str(tmp_path))["limits"]["check_timeout_s"] == 12
    (tmp_path / "autograder.toml").write_text("[stages.naive]\npoints = { correct = 100 }\n")
    with pytest.raises(grade_class.CourseError, match=r"not a section a course may set; those are \[limits\], "
                                                      r"\[class\], \[slurm\]"):
        grade_class.load_config(str(tmp_path))
    (tmp_path / "autograder.toml").write_text("[limits]\ncheck_timeout = 12\n")
    with pytest.raises(grade_class.CourseError, match="no key 'check_timeout' \\(did you mean 'check_timeout_s'"):
        grade_class.load_config(str(tmp_path))
    # one type rule with config.toml: an int where a float is declared is a number of seconds too
    (tmp_path / "autograder.toml").write_text("[limits]\nsibling_grace_s = 5\n")
    assert grade_class.load_config(str(tmp_path))["limits"]["sibling_grace_s"] == 5
    for line, says in [("jobs = -1", "must be 0 or more"), ('sandbox = "bwarp"', "did you mean 'bwrap'"),
                       ("cpu_s = 1.5", "must be an int")]:
        (tmp_path / "autograder.toml").write_text(f"[limits]\n{line}\n")
        with pytest.raises(grade_class.CourseError, match=says):
            grade_class.load_config(str(tmp_path))


KILLED_RUN = """
import sys, time
sys.path[:0] = [{root!r}, {tests!r}]
from autograder import engine
from test_course import FakeEngine


class SlowEngine(FakeEngine):
    def __call__(self, folder, **kw):
        report = super().__call__(folder, **kw)
        time.sleep(3)  # the first student finishes; the second is being graded when the kill comes
        return report


engine.grade = SlowEngine()
from course import grade_class
grade_class.main([{course!r}, "--device", "sim"])
"""


def test_kill_9_mid_class_keeps_finished_grades_without_duplicates(tmp_path, monkeypatch):
    course = small_course(str(tmp_path), ["a", "b", "c"])
    done_a = os.path.join(course, "feedback", "a", ASSIGNMENT, "results.json")
    driver = KILLED_RUN.format(root=ROOT, tests=os.path.join(ROOT, "tests"), course=course)
    proc = subprocess.Popen([sys.executable, "-c", driver], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not os.path.exists(done_a) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert os.path.exists(done_a), "the first student was never finished"
    os.killpg(proc.pid, 9)  # kill -9 of the whole run, in the middle of the class
    proc.wait()
    assert gradebook_scores(course) == {"a": 5.0}

    engine = FakeEngine()
    monkeypatch.setattr(grading_engine, "grade", engine)
    assert grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w")).run() == 2
    assert engine.calls == ["b", "c"]  # a is kept, the rest are graded
    assert gradebook_scores(course) == {"a": 5.0, "b": 5.0, "c": 5.0}
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gb:
        ids = [s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions]
    assert sorted(ids) == ["a", "b", "c"]  # one submission row per student
    with open(os.path.join(course, "grades.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["student"] for r in rows) == ["a", "b", "c"]  # no duplicate or torn rows
    assert all(float(r["score"]) == 5.0 for r in rows)


def test_staged_results_are_collected_not_graded_again_and_stale_ones_are_dropped(tmp_path, monkeypatch):
    """A worker (or Slurm task) that finished before the run died leaves a staged result: the next run stores it."""
    course = small_course(str(tmp_path), ["a", "b", "c"])
    engine = FakeEngine()
    monkeypatch.setattr(grading_engine, "grade", engine)
    out = open(os.devnull, "w")
    worker = grade_class.ClassGrader(course, device="sim", out=out)
    for student in ("a", "b"):
        assert worker.grade_and_stage(student, os.path.join(course, "submitted", student, ASSIGNMENT))[0] == "graded"
    with open(os.path.join(course, "submitted", "b", ASSIGNMENT, "s1_naive.ipynb"), "a", encoding="utf-8") as f:
        f.write("\n")  # b changed after its staged grading: that result is stale
    engine.calls = []
    assert grade_class.ClassGrader(course, device="sim", out=out).run() == 3
    assert engine.calls == ["b", "c"]  # a was collected, b graded again, c graded
    assert gradebook_scores(course) == {"a": 5.0, "b": 5.0, "c": 5.0}
    assert os.listdir(grade_class.staging_dir(course, ASSIGNMENT)) == []
    assert results_of(course, "b")["extra_data"]["course"]["submission_sha256"] == grade_class.submission_hash(
        os.path.join(course, "submitted", "b", ASSIGNMENT))


def test_parallel_workers_grade_every_student_once_in_spawned_processes(tmp_path):
    """Two spawned workers (the engine for real; these submissions are not gradable, so it is quick)."""
    course = str(tmp_path)
    for student in ("p", "q", "r", "s"):
        os.makedirs(os.path.join(course, "submitted", student, ASSIGNMENT))
    buf = open(tmp_path / "out.txt", "w+")
    grader = grade_class.ClassGrader(course, device="sim", out=buf, workers=2)
    assert grader.run() == 4
    buf.seek(0)
    text = buf.read()
    assert "2 workers (worker 1, worker 2)" in text, text
    assert re.search(r"This run took [\d.]+ s: [\d.]+ s before the first student .* [\d.]+ s grading", text), text
    pids = {results_of(course, s)["extra_data"]["course"]["worker"]["pid"] for s in "pqrs"}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert gradebook_scores(course) == {s: 0.0 for s in "pqrs"}
    with open(os.path.join(course, "grades.csv"), encoding="utf-8") as f:
        assert sorted(r["student"] for r in csv.DictReader(f)) == list("pqrs")
    assert grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"), workers=2).run() == 0


def test_workers_start_before_the_gradebook_opens_and_gpu_workers_warm_up(tmp_path, monkeypatch):
    """Opening the gradebook (nbgrader, its database migration) and a worker's start-up (imports, compiling the
    grader's kernels) overlap: neither waits for the other."""
    course = small_course(str(tmp_path), ["a", "b"])
    order = []
    grader = grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"), workers=2)
    start, collecting = grader.start_workers, grader.collecting
    monkeypatch.setattr(grader, "start_workers", lambda *a: order.append("workers") or start(*a))
    monkeypatch.setattr(grader, "collecting", lambda: order.append("gradebook") or collecting())
    assert grader.run() == 2
    assert order == ["workers", "gradebook"]
    from autograder.engine import kernels
    from course.schedule import pool
    warmed = []
    monkeypatch.setattr(kernels, "grader_folder", warmed.append)
    monkeypatch.setattr(os, "environ", dict(os.environ))
    pool._init_worker({"CUDA_VISIBLE_DEVICES": "1"}, {"limits": {}})
    assert warmed == [{"limits": {}}] and os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    pool._init_worker({}, None)  # the simulator tier compiles nothing ahead
    assert len(warmed) == 1
    made = []

    class Grader:  # what a worker makes before its first student, once; a failure leaves it to the first student
        def __init__(self, *args, out=None, coursedir=None):
            made.append(args)
            if args[0] == "broken":
                raise OSError("no course")

        def set_jobs(self, jobs):
            self.jobs = jobs
    pool._init_worker({}, None, (Grader, "c", "matmul", "gpu", None, 2))
    assert made == [("c", "matmul", "gpu", None)]
    assert pool._worker_grader(Grader, "c", "matmul", "gpu", None, 2).jobs == 2
    assert len(made) == 1, "kept for the worker's students"
    pool._init_worker({}, None, (Grader, "broken", "matmul", "gpu", None, 2))
    assert pool._WORKER == {}


def test_a_class_runs_worker_grades_without_importing_nbgrader(tmp_path):
    """A worker is handed the course's folders as plain data (nbgrader's import costs seconds a process): it finds,
    grades and stages a submission without nbgrader, where it lands where the parent reads it."""
    import pickle
    from course import gradebook
    course = small_course(str(tmp_path), ["a"])
    parent = grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"))
    plain = pickle.dumps(gradebook.plain_course_directory(parent.coursedir))
    code = ("import pickle, sys\nfrom course import grade_class\n"
            f"g = grade_class.ClassGrader({course!r}, device='sim', coursedir=pickle.loads({plain!r}))\n"
            f"state, staged = g.grade_and_stage('a', {os.path.join(course, 'submitted', 'a', ASSIGNMENT)!r})\n"
            "print(state, staged, g.results_path('a'), g.autograded_path('a'), 'nbgrader' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["graded", parent.staged_path("a"), parent.results_path("a"),
                                  parent.autograded_path("a"), "False"]


def test_gpu_workers_one_per_gpu(tmp_path, monkeypatch):
    from course.schedule import slots as slots_mod
    course = small_course(str(tmp_path), ["a"])
    monkeypatch.setattr(slots_mod, "visible_gpus", lambda: ["0", "1", "2"])
    grader = lambda **kw: grade_class.ClassGrader(course, device="gpu", out=open(os.devnull, "w"), **kw)
    slots, _ = grader(gpu_workers=1).plan(10)
    assert [env for _, env in slots] == [{"CUDA_VISIBLE_DEVICES": g} for g in "012"]
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in grader(gpus="2").plan(10)[0]] == ["0", "1", "0", "1"]
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in grader(gpus="2,0", gpu_workers=1).plan(10)[0]] == ["2", "0"]
    assert len(grader().plan(1)[0]) == 1  # no idle workers for a class of one
    with pytest.raises(grade_class.CourseError, match="--gpu-workers"):
        grader(workers=4).plan(10)  # the simulator tier's option
    with pytest.raises(grade_class.CourseError, match="4 GPUs asked for; this machine shows 3"):
        grader(gpus="4").plan(10)
    with pytest.raises(grade_class.CourseError, match="number of GPUs"):
        grader(gpus="0,x")
    monkeypatch.setattr(slots_mod, "visible_gpus", lambda: [])
    with pytest.raises(grade_class.CourseError, match="no GPU to grade on"):
        grader().plan(10)
    monkeypatch.setattr(slots_mod, "visible_gpus", lambda: ["0", "1", "2"])
    (tmp_path / "autograder.toml").write_text("[class]\ngpus = 2\ngpu_workers = 1\n")  # the course's settings
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in grader().plan(10)[0]] == ["0", "1"]


def test_class_settings_are_checked(tmp_path):
    (tmp_path / "autograder.toml").write_text("[class]\nworkers = 3\n[slurm]\npartition = \"gpu\"\n"
                                              "[limits]\ncheck_timeout_s = 12\n")
    assert grade_class.course_settings(str(tmp_path), "class", grade_class.CLASS_SCHEMA)["workers"] == 3
    assert grade_class.load_config(str(tmp_path))["limits"]["check_timeout_s"] == 12
    assert "class" not in grade_class.load_config(str(tmp_path))  # not part of the grading key
    (tmp_path / "autograder.toml").write_text("[class]\nworker = 3\n")
    with pytest.raises(grade_class.CourseError, match="no key 'worker'"):
        grade_class.course_settings(str(tmp_path), "class", grade_class.CLASS_SCHEMA)
    (tmp_path / "autograder.toml").write_text("[class]\nworkers = \"3\"\n")
    with pytest.raises(grade_class.CourseError, match="workers must be an int, not str"):
        grade_class.course_settings(str(tmp_path), "class", grade_class.CLASS_SCHEMA)
    from course import slurm
    (tmp_path / "autograder.toml").write_text("[slurm]\nsbatch_options = \"--qos=x\"\n")
    with pytest.raises(grade_class.CourseError, match="list of strings"):
        grade_class.course_settings(str(tmp_path), "slurm", slurm.SCHEMA)


def test_summary_shows_the_median_time_breakdown_of_the_keys_present():
    from course import feedback
    rows = [{"timing": {"total_s": 27.0, "startup_s": 6.0, "checks_s": 20.0, "n_children": 40}},
            {"timing": {"total_s": 29.0, "startup_s": 4.0}}, {"timing": {}}, {}]
    text = feedback.timing_summary(rows)
    assert text == "A submission took 28.0 s to grade (median of 2 submissions): 20.0 s running the checks."
    assert feedback.timing_summary(rows[1:2]).startswith("A submission took 29.0 s to grade (median of 1 submission)")
    assert feedback.timing_summary([{"timing": {}}, {}]) == ""


def test_class_benchmark_generates_every_kind_of_submission(tmp_path):
    from course import class_benchmark
    roster = class_benchmark.make_class(str(tmp_path / "class"), 7, check_timeout=30)
    assert list(roster.values()) == list(class_benchmark.KINDS) + ["correct"]
    assert "check_timeout_s = 30" in (tmp_path / "class" / "autograder.toml").read_text()
    files = lambda student: {p.name: p.read_text() for p in (tmp_path / "class" / "submitted" / student / ASSIGNMENT).iterdir()}
    correct, racy, cheating = files("s001-correct"), files("s003-racy"), files("s004-cheating")
    assert sorted(correct) == [s.filename for s in STAGES]
    assert correct["s2_tiled.py"].count("cuda.syncthreads()") == racy["s2_tiled.py"].count("cuda.syncthreads()") + 1
    assert "copy_to_host() @" in cheating["s1_naive.py"] and "while acc == acc" in files("s005-hanging")["s1_naive.py"]
    partial = files("s002-partial")
    assert partial["s1_naive.py"] == correct["s1_naive.py"].replace("s001-correct", "s002-partial")
    assert partial["s5_fast.py"] != correct["s5_fast.py"].replace("s001-correct", "s002-partial")
    assert grade_class.submission_hash(str(tmp_path / "class" / "submitted" / "s001-correct" / ASSIGNMENT)) != \
        grade_class.submission_hash(str(tmp_path / "class" / "submitted" / "s007-correct" / ASSIGNMENT))


def test_slurm_without_slurm_commands_says_so(tmp_path, monkeypatch, capsys):
    course = small_course(str(tmp_path), ["a"])
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # no sbatch here
    assert grade_class.main([course, "--slurm", "--device", "sim"]) == 2
    assert "sbatch not found: run this on a machine of the Slurm cluster" in capsys.readouterr().err
    (tmp_path / "autograder.toml").write_text("[slurm]\nbatch = 0\n")
    assert grade_class.main([course, "--slurm", "--device", "sim"]) == 2
    assert "[slurm] batch must be 1 or more, not 0" in capsys.readouterr().err


def test_class_benchmark_merges_runs_graded_apart(tmp_path, capsys):
    """One GPU count per run (a run may not fit one session's command limit): --merge compares them as one."""
    import json
    from course import class_benchmark

    def run(count, wall, score):
        return {"count": count, "wall_s": wall, "median_per_submission": {"total_s": 1.0},
                "students": {"s001": {"score": score, "checks": [["speed", "passed", score]], "execution_time": 26,
                                      "timing": {}, "worker": {"pid": 7}}}}
    paths = []
    for count, wall, score in ((1, 100.0, 5), (2, 52.0, 5)):
        path = tmp_path / f"b{count}.json"
        path.write_text(json.dumps({"device": "gpu", "students": 1, "kinds": {"s001": "correct"}, "seed": 1,
                                    "check_timeout_s": 60, "runs": [run(count, wall, score)]}))
        paths.append(str(path))
    assert class_benchmark.main([str(tmp_path / "m"), "--merge", *paths]) == 0
    out = capsys.readouterr().out
    assert "1: speed checks timed again because the GPU was shared: none" in out
    assert "2: the submissions' own seconds sum to 26.0 s (26.0 s a submission); its workers (1) were busy 50% " in out
    merged = json.loads((tmp_path / "m" / "benchmark.json").read_text())
    assert merged["efficiency"] == {"1": 1.0, "2": round(100 / 104, 3)} and merged["verdicts_identical"]
    bad = json.loads(open(paths[1]).read())
    bad["runs"][0]["students"]["s001"]["score"] = 3
    bad["runs"][0]["students"]["s001"]["retries"] = class_benchmark.retries({"extra_data": {"gpu": {"stages": {
        "naive": {"attempts": 1}, "tiled": {"attempts": 2, "others": [{"pid": 77, "name": "python3"}]}}}}})
    (tmp_path / "b2.json").write_text(json.dumps(bad))
    assert class_benchmark.main([str(tmp_path / "m"), "--merge", *paths]) == 3, "a changed verdict is reported"
    assert "2: speed checks timed again because the GPU was shared: s001 ['tiled'] (seen: ['77 (python3)'])" \
        in capsys.readouterr().out


def test_a_grading_process_prints_its_stacks_on_usr1():
    """`kill -USR1 PID` shows where a class run waits, and does not end it."""
    code = ("import os, signal, time\nfrom course import grade_class\ngrade_class._stacks_on_usr1()\n"
            "os.kill(os.getpid(), signal.SIGUSR1)\ntime.sleep(0.2)\nprint('still running')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "still running" in out.stdout
    assert "Current thread" in out.stderr and 'File "<string>"' in out.stderr, out.stderr


def test_class_benchmark_counts_the_cpu_of_every_program_on_the_host(tmp_path):
    """The benchmark's CPU seconds per program see processes the children's own accounting does not (here one that
    starts and ends while the sampler runs), and the host's busy time covers them."""
    import subprocess
    import sys
    from course import class_benchmark
    burner = tmp_path / "cpuburner"
    burner.symlink_to(sys.executable)
    before = class_benchmark.host_cpu()
    with class_benchmark.CpuByProgram(0.05) as sampled:
        subprocess.run([str(burner), "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
                        "time.sleep(0.3)"], check=True)
    rows = {name: (n, cpu) for name, n, cpu in sampled.programs(50)}
    assert rows["cpuburner"][0] == 1 and 0.4 <= rows["cpuburner"][1] <= 1.5, rows
    assert class_benchmark.host_cpu()["busy"] - before["busy"] >= 0.4


def test_class_benchmark_names_a_python_process_by_its_part_in_grading(tmp_path):
    """A class's Python CPU splits into the workers, the grading children and the children the GPU tools started."""
    import subprocess
    import sys
    from course import class_benchmark
    role = class_benchmark.python_role
    assert role("python3", ["python3", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"], "python3") \
        == "python3 (worker)"
    child = ["/usr/bin/python3", "-I", "/grader/autograder/child/entry.py", "/scratch"]
    assert role("python3", child, "bwrap") == "python3 (child)"
    assert role("python3", child, "ncu") == "python3 (child under ncu)"
    assert role("python3", child, "compute-sanitiz") == "python3 (child under compute-sanitiz)"
    assert role("python3", [], "ncu") == "python3 (child under ncu)"  # its command line unreadable
    assert role("python3", child, "TreeLauncherSub") == "python3 (child under TreeLauncherSub)"  # Nsight's launcher
    assert role("python3", ["python3", "-m", "course.class_benchmark"], "bash") == "python3 (under bash)"
    entry = tmp_path / "child" / "entry.py"
    entry.parent.mkdir()
    entry.write_text("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n")
    with class_benchmark.CpuByProgram(0.05) as sampled:
        subprocess.run([sys.executable, "-I", str(entry), str(tmp_path)], check=True)
    assert any(name.endswith(" (child)") and n == 1 and cpu >= 0.2 for name, n, cpu in sampled.programs(50)), \
        sampled.programs(50)


def test_an_empty_folder_is_not_taken_for_a_course(tmp_path):
    """`make grade COURSE=<empty folder>` wrote gradebook.db, grades.csv and source/ into it."""
    with pytest.raises(grade_class.CourseError, match="not a course folder: .*submissions are looked for in"):
        grade_class.ClassGrader(str(tmp_path), device="sim", out=open(os.devnull, "w"))
    assert os.listdir(tmp_path) == []


def test_a_class_with_trouble_in_it_gives_everyone_a_row_and_the_right_verdict(tmp_path):
    """One worker, then two: a TILE of -16 (it crashed the grader and, with one worker, the whole class), a
    Jupyter copy beside a notebook (it zeroed every stage), a kernel that never ends for K = 1, a correct
    student. Everyone gets a row and feedback, each with the verdict their own code earns."""
    demo = os.path.join(ROOT, "demo_course", "submitted")
    course = tmp_path / "course"
    for student, files in {"ada": {"s1_naive.ipynb": ("ada", "s1_naive.ipynb")},
                           "cop": {"s1_naive.ipynb": ("ada", "s1_naive.ipynb"),
                                   "s1_naive-Copy1.ipynb": ("ada", "s1_naive.ipynb")},
                           "eve": {"s1_naive.ipynb": ("eve", "s1_naive.ipynb")},
                           "tia": {"s2_tiled.ipynb": ("ada", "s2_tiled.ipynb")}}.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for name, (who, src) in files.items():
            text = open(os.path.join(demo, who, ASSIGNMENT, src), encoding="utf-8").read()
            (folder / name).write_text(text.replace("TILE = 16", "TILE = -16"), encoding="utf-8")
    # eve's K = 1 child runs until this limit, in both runs; the honest children here (stages 1 and 2 at small
    # shapes) take 1-3 s each, so 12 s keeps a margin on a busy machine without waiting out the demo's 25 s twice.
    # Her groups run again after it need under a second each: 3 s of grace, not 10
    (course / "autograder.toml").write_text("[limits]\ncheck_timeout_s = 12\nsibling_grace_s = 3\n")
    for workers, force in ((1, False), (2, True)):
        grader = grade_class.ClassGrader(str(course), device="sim", out=open(os.devnull, "w"), workers=workers,
                                         force=force)
        assert grader.run() == 4
        scores = {s: results_of(str(course), s)["extra_data"]["course"]["stage_scores"] for s in
                  ("ada", "cop", "eve", "tia")}
        zero = {s.name: 0.0 for s in STAGES}  # the stages none of them handed in count 0
        assert scores["ada"] == {**zero, "naive": 8.0} and scores["cop"] == {**zero, "naive": 8.0}, scores
        # TILE = -16 keeps what its code earns: it compiles (1 point); no product runs (negative dimensions)
        assert scores["eve"] == {**zero, "naive": 6.0} and scores["tia"] == {**zero, "tiled": 1.0}, scores
        pages = {s: open(course / "feedback" / s / ASSIGNMENT / "index.html", encoding="utf-8").read()
                 for s in scores}
        assert "s1_naive-Copy1.ipynb also defines stage naive: not graded" in pages["cop"]
        assert "TILE = -16: the course&#x27;s tile sizes are 16 and 32" in pages["tia"]
        assert "did not finish within" in pages["eve"]


@contextlib.contextmanager
def formgrader(course):
    """A real Jupyter server with nbgrader's formgrader in `course`; yields call(method, path) -> JSON, the requests
    formgrader's pages send (token-authenticated)."""
    import secrets
    import socket
    import urllib.error
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    use_venv_tools()
    log = open(os.path.join(course, "jupyter-server.log"), "w")
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "server", "--no-browser", f"--port={port}",
                               "--ip=127.0.0.1", "--allow-root", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}"],
                              cwd=course, stdout=log, stderr=subprocess.STDOUT)

    def call(method, path, raw=False):
        """The JSON answer, or with raw=True (status, the page's text) of a page, an error page included."""
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=b"" if method == "POST" else None,
                                     headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                body, status = r.read(), r.status
        except urllib.error.HTTPError as exc:
            if not raw:
                raise
            body, status = exc.read(), exc.code
        return (status, body.decode("utf-8", "replace")) if raw else json.loads(body or b"null")
    try:
        for _ in range(120):
            try:
                call("GET", "/formgrader/api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None:
                    break
                time.sleep(0.5)
        else:
            raise AssertionError("the jupyter server did not answer: " + open(log.name).read()[-2000:])
        yield call
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


@pytest.mark.slow
def test_formgrader_shows_why_and_its_autograde_button_refuses(graded_demo_course, tmp_path):
    """Through a real formgrader: each score cell's comment says why points were lost (the failed checks' reasons),
    and the Autograde button's own request refuses with the command to run, deleting nothing. Where the graded copy
    is gone anyway, `make grade` grades the student again without FORCE."""
    course = str(tmp_path / "course")
    shutil.copytree(graded_demo_course[0], course)
    student = demo.STUDENTS[0].name
    autograded = os.path.join(course, "autograded", student, ASSIGNMENT)
    before = sorted(os.listdir(autograded))
    with formgrader(course) as call:
        comments = {}
        for stage in STAGES:
            for nb in call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{stage.module}"):
                found = call("GET", f"/formgrader/api/comments?submission_id={nb['id']}")
                comments[nb["student"], stage.name] = [c["auto_comment"] for c in found if c["auto_comment"]]
        answer = call("POST", f"/formgrader/api/submission/{ASSIGNMENT}/{student}/autograde")
    # dee's stage 1 is zeroed for a host-side copy; bob's stage 3 skips tiles; a stub says so; ada: all passed
    assert "copy_to_device of C" in comments["dee", "naive"][0] and "0 / 8" in comments["dee", "naive"][0]
    assert "elements wrong" in comments["bob", "tiled_general"][0]
    assert "not implemented yet" in comments["bob", "tiled"][0]
    assert "Every check passed" in comments["ada", "tiled"][0] and "provisional" in comments["ada", "tiled"][0]
    assert "did not finish within" in comments["eve", "naive"][0]
    assert answer["success"] is False
    assert f"make grade STUDENT={student} FORCE=1 \\\n    COURSE={os.path.abspath(course)}\n" in answer["error"], \
        answer["error"][-600:]
    assert sorted(os.listdir(autograded)) == before  # nothing deleted
    grader = grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"))
    assert grader.todo(grader.select()) == []
    shutil.rmtree(autograded)
    assert [s for s, _ in grader.todo(grader.select())] == [student]


def test_every_course_folder_has_the_same_nbgrader_hooks():
    """The refusal of nbgrader's autograde and the tiered export are one block, copied into each course folder by
    `make release`; the demo course's copy is the same."""
    from course.release import CONFIG_TEMPLATE
    marker = "# ---- course hooks"
    template = open(CONFIG_TEMPLATE, encoding="utf-8").read()
    demo_config = open(os.path.join(DEMO_COURSE, "nbgrader_config.py"), encoding="utf-8").read()
    assert marker in template and template[template.index(marker):] == demo_config[demo_config.index(marker):]


def test_the_class_histogram_counts_whole_students(tmp_path):
    from course import feedback
    ticks = feedback.histogram_png(str(tmp_path / "h.png"), [10.0, 54.0], 54.0)
    assert ticks and all(t.is_integer() for t in ticks), ticks
    assert os.path.getsize(tmp_path / "h.png") > 1000


def test_the_demo_course_ignores_the_class_runs_working_folder():
    lines = open(os.path.join(DEMO_COURSE, ".gitignore"), encoding="utf-8").read().split()
    assert "/.grading/" in lines


def _released_class(released_course, course):
    """A copy of a course made by `make release` (course.release), with two submissions of the released notebooks:
    ann solved stage 1 (the rest as released: stubs), ben handed in the stubs."""
    shutil.copytree(released_course, course)
    release = os.path.join(course, "release", ASSIGNMENT)
    for student, solved in (("ann", ("s1_naive",)), ("ben", ())):
        folder = os.path.join(course, "submitted", student, ASSIGNMENT)
        os.makedirs(folder)
        for stage in STAGES:
            nb = nbformat.read(os.path.join(release, f"{stage.module}.ipynb"), as_version=4)
            demo.apply_edits(nb, stage.module, [demo.SOLVE] if stage.module in solved else [])
            nbformat.write(nb, os.path.join(folder, f"{stage.module}.ipynb"))
    return course


@pytest.mark.slow
def test_formgrader_and_export_of_a_released_course_count_each_stage_once(released_course, tmp_path):
    """A course made by `make release` and graded by `make grade`: formgrader (its HTTP API, as its pages read it)
    shows every submission graded, out of the GPU tier's 67 points, with one scored cell per notebook; `nbgrader
    export` agrees. formgrader's Generate Feedback keeps `make grade`'s feedback page and results and its own pages
    say why points were lost; its Autograde refusal fits formgrader's modal, the command on a line of its own."""
    course = _released_class(released_course, str(tmp_path / "course"))
    grader = grade_class.ClassGrader(course, device="sim", out=open(os.devnull, "w"))
    assert grader.run() == 2
    gpu_total = sum(sum(s["points"].values()) for s in config.load()["stages"].values())
    expected = {"ann": float(demo.FULL["naive"]), "ben": 0.0}
    kept = {(s, name): open(os.path.join(course, "feedback", s, ASSIGNMENT, name), "rb").read()
            for s in expected for name in ("index.html", "results.json")}
    with formgrader(course) as call:
        assert call("GET", f"/formgrader/api/assignment/{ASSIGNMENT}")["max_score"] == gpu_total
        submissions = call("GET", f"/formgrader/api/submissions/{ASSIGNMENT}")
        assert {s["student"]: (s["score"], s["max_score"]) for s in submissions} == \
            {s: (score, gpu_total) for s, score in expected.items()}
        assert not any(s["needs_manual_grade"] for s in submissions) and all(s["autograded"] for s in submissions)
        for stage in STAGES:
            for nb in call("GET", f"/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{stage.module}"):
                grades = call("GET", f"/formgrader/api/grades?submission_id={nb['id']}")
                assert [(g["name"], g["max_score"]) for g in grades] == \
                    [(f"{stage.module}-score", config.stage_max(config.load())[stage.name])], grades
                assert grades[0]["auto_score"] is not None and not grades[0]["needs_manual_grade"], grades
                assert not nb["needs_manual_grade"]
        refusal = call("POST", f"/formgrader/api/submission/{ASSIGNMENT}/ben/autograde")
        made = call("POST", f"/formgrader/api/assignment/{ASSIGNMENT}/ann/generate_feedback")
        assert made["success"], made
        made_all = call("POST", f"/formgrader/api/assignment/{ASSIGNMENT}/generate_feedback")
        assert made_all["success"], made_all
    # the refusal: the command alone on a short line, every line of the message short (formgrader's modal shows it
    # in a <pre> about 66 characters wide and does not wrap it)
    assert refusal["success"] is False
    message = refusal["error"].split("RuntimeError:", 1)[1]
    lines = message.strip("\n").splitlines()
    assert "make grade STUDENT=ben FORCE=1 \\" in [line.strip() for line in lines], message
    assert f"COURSE={os.path.abspath(course)}" in [line.strip() for line in lines], message   # the real folder
    assert max(len(line) for line in lines if "COURSE=" not in line) <= 64, message
    assert "make grade STUDENT=ben FORCE=1" in refusal.get("log", ""), refusal
    # Generate Feedback: make grade's files are where they were, nbgrader's pages beside them say why
    for (student, name), data in kept.items():
        assert open(os.path.join(course, "feedback", student, ASSIGNMENT, name), "rb").read() == data, (student, name)
    page = open(os.path.join(course, "feedback", "ann", ASSIGNMENT, "s2_tiled.html"), encoding="utf-8").read()
    assert "not implemented yet" in page and "make grade: 0 / 13 in the simulator" in page
    assert grader.todo(grader.select()) == []  # nothing to grade again
    # nbgrader export: the same totals, out of 67
    use_venv_tools()
    export = subprocess.run([sys.executable, "-m", "nbgrader", "export"], cwd=course, capture_output=True, text=True,
                            timeout=300)
    assert export.returncode == 0, export.stdout + export.stderr
    with open(os.path.join(course, "gradebook-export.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["student_id"]: (float(r["score"]), float(r["max_score"])) for r in rows} == \
        {s: (score, gpu_total) for s, score in expected.items()}


@pytest.mark.filterwarnings("ignore::Warning")  # nbgrader 0.9 trips SQLAlchemy 2's autoflush warnings
def test_a_gradebook_with_each_score_cell_recorded_twice_is_repaired_and_keeps_its_scores(tmp_path):
    """A course released while the score cells were marked grade and task: generate_assignment recorded each twice
    (134 points) and `make grade` wrote the scores against the grade-cell copy. The next `make grade` (its gradebook
    sync) or `make release` removes the copies and keeps the scores, on the task cells formgrader shows."""
    from nbgrader.api import Gradebook
    from course import gradebook
    from course.notebooks import score_cell_id
    cfg = config.load()
    maxima = config.stage_max(cfg)
    scores = {"naive": 8.0, "tiled": 6.0}
    use_venv_tools()
    with Gradebook(f"sqlite:///{tmp_path}/gradebook.db") as gb:
        gradebook.sync_assignment(gb, cfg)
        for stage in STAGES:  # what generate_assignment recorded from a score cell marked grade and task
            gb.update_or_create_grade_cell(score_cell_id(stage), stage.module, ASSIGNMENT, max_score=maxima[stage.name],
                                           cell_type="markdown")
        gb.add_student("ann")
        gb.add_submission(ASSIGNMENT, "ann")
        for stage in STAGES:  # where the scores went: the grade cell's row (find_grade looks there first)
            grade = gb.find_grade(score_cell_id(stage), stage.module, ASSIGNMENT, "ann")
            grade.auto_score, grade.needs_manual_grade = scores.get(stage.name, 0.0), False
        gb.db.commit()
        assert gb.find_assignment(ASSIGNMENT).max_score == 2 * sum(maxima.values())
        assert gb.find_submission(ASSIGNMENT, "ann").needs_manual_grade

        gradebook.sync_assignment(gb, cfg)
        submission = gb.find_submission(ASSIGNMENT, "ann")
        assert gb.find_assignment(ASSIGNMENT).max_score == sum(maxima.values())
        assert (submission.score, submission.max_score) == (sum(scores.values()), sum(maxima.values()))
        assert not submission.needs_manual_grade
        for stage in STAGES:
            nb = gb.find_submission_notebook(stage.module, ASSIGNMENT, "ann")
            assert [(g.name, g.auto_score) for g in nb.grades] == [(score_cell_id(stage), scores.get(stage.name, 0.0))]
        assert gradebook.drop_duplicate_score_cells(gb) == 0


def test_release_brings_a_course_folders_hooks_up_to_date(tmp_path):
    """`make release` into a course folder made by an older version: the instructor's settings stay, the course hooks
    (the autograde refusal, Generate Feedback keeping make grade's files, the tiered export) become this version's."""
    from course.release import CONFIG_TEMPLATE, HOOKS, update_hooks
    template = open(CONFIG_TEMPLATE, encoding="utf-8").read()
    path = tmp_path / "nbgrader_config.py"
    mine = 'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "gpu-2027"\n\n'
    path.write_text(mine + HOOKS + " ----\n# an older version's hooks\n", encoding="utf-8")
    assert update_hooks(str(path))
    text = path.read_text(encoding="utf-8")
    assert text == mine + template[template.index(HOOKS):]
    assert not update_hooks(str(path))
    (tmp_path / "own.py").write_text(mine, encoding="utf-8")
    assert not update_hooks(str(tmp_path / "own.py")) and (tmp_path / "own.py").read_text(encoding="utf-8") == mine


def test_a_new_gradebook_is_stamped_with_the_revision_nbgrader_stamps(released_course, tmp_path):
    """`make grade` reads the newest revision of nbgrader's migrations in its own process (nbgrader runs the
    `alembic heads` command for it): a gradebook it creates carries the revision of one made by nbgrader itself
    (the released course's, made by `nbgrader generate_assignment`)."""
    import sqlite3
    from course import gradebook

    def stamp(path):
        with contextlib.closing(sqlite3.connect(path)) as db:
            return db.execute("SELECT version_num FROM alembic_version").fetchall()
    (tmp_path / "submitted").mkdir()
    with gradebook.open_gradebook(gradebook.course_directory(str(tmp_path))):
        pass
    assert stamp(str(tmp_path / "gradebook.db")) == stamp(str(released_course / "gradebook.db")) != []
