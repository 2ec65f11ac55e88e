"""engine/report.py: the time breakdown a grade records in results.json (extra_data.timing), and checks not run
for the grader's own trouble."""
import os

from conftest import ROOT
from autograder.engine.report import time_breakdown


def test_time_breakdown_splits_children_into_startup_and_work():
    children = [{"task": "compile", "wall_s": 3.0, "work_s": 1.0, "cpu_s": 2.0,
                 "profile": {"phases": {"imports_s": 0.5, "module_s": 0.25, "task_s": 0.75}}},
                {"task": "run", "wall_s": 4.0, "work_s": 2.5, "cpu_s": 3.25,
                 "profile": {"phases": {"imports_s": 1.0, "module_s": 0.5, "task_s": 2.0}, "cuda_init_s": 0.75}},
                {"task": "speed", "wall_s": 6.0, "work_s": 5.0, "cpu_s": 4.0},
                {"task": "run", "wall_s": 30.0, "work_s": None, "cpu_s": None}]  # killed: no facts
    t = time_breakdown(children, 20.0)
    assert t == {"total_s": 20.0, "children": 4, "children_s": 43.0, "startup_s": 4.5, "checks_s": 8.5,
                 "compile_s": 3.0, "speed_s": 6.0, "ncu_s": 0, "racecheck_s": 0, "cpu_s": 9.25, "imports_s": 1.5,
                 "module_s": 0.75, "cuda_ctx_s": 0.75, "outside_s": 3.0}


def test_time_breakdown_counts_the_grades_one_timing_child_and_each_gpu_tool():
    """On a GPU a grade times every stage in one child (task speed_parts) and runs ncu and racecheck under the
    tool: an instructor's "timing on the GPU" and a class benchmark's tool times come from these."""
    children = [{"task": "speed_parts", "wall_s": 2.5, "work_s": 2.0, "cpu_s": 1.0},
                {"task": "gpu tool", "tool": "ncu", "wall_s": 8.0, "work_s": None, "cpu_s": None},
                {"task": "gpu tool", "tool": "compute-sanitizer", "wall_s": 3.5, "work_s": None, "cpu_s": None},
                {"task": "gpu tool", "tool": "compute-sanitizer", "wall_s": 4.0, "work_s": None, "cpu_s": None}]
    t = time_breakdown(children, 12.0)
    assert (t["speed_s"], t["ncu_s"], t["racecheck_s"]) == (2.5, 8.0, 7.5)


def test_the_graders_own_trouble_counts_neither_way_and_flags_a_regrade(grade_text, monkeypatch):
    """With no sandbox to run in, every check that needs a child is not run: it used to score 0 as the
    student's failure; now it counts neither way and the report asks for a re-grade."""
    from autograder.engine.report import summary, to_gradescope
    from autograder.sandbox import run
    monkeypatch.setattr(run, "backend", lambda name: ("unavailable", "bubblewrap is not installed"))
    with open(os.path.join(ROOT, "solutions", "s1_naive.py"), encoding="utf-8") as f:
        r = grade_text("naive", f.read())
    children = [c for c in r.checks if c.key not in ("shortcuts", "speed")]  # speed: not timed in the simulator
    assert children and all(c.status == "skipped" and c.regrade and c.max_score == 0 for c in children), \
        [(c.key, c.status, c.output[:80]) for c in children]
    assert "the grading sandbox is not available" in children[0].output
    assert r.regrade and "RE-GRADE" in summary(r)
    assert to_gradescope(r)["extra_data"]["regrade"] == r.regrade


def test_a_students_own_failure_is_not_taken_for_the_graders():
    from autograder.engine.report import Check
    c = Check("naive", "correct", "correct results", 6).verdict(False, "not gradable: the check did not finish "
                                                                       "within 30 s and was stopped")
    assert c.status == "failed" and not c.regrade


def test_a_stub_and_a_graded_stage_name_their_checks_alike(grade_text):
    """Gradescope and Classroom 50 match tests by name across submissions: a stub's report had other titles
    ("compiles for the GPU") and one correctness row instead of three."""
    with open(os.path.join(ROOT, "exercises", "s2_tiled.py"), encoding="utf-8") as f:
        stub = grade_text("tiled", f.read())
    with open(os.path.join(ROOT, "solutions", "s2_tiled.py"), encoding="utf-8") as f:
        graded = grade_text("tiled", f.read())
    assert [(c.key, c.name) for c in stub.checks] == [(c.key, c.name) for c in graded.checks]
    assert stub.max_score == graded.max_score and graded.score == graded.max_score > 0


def test_a_student_cannot_print_their_way_to_a_regrade():
    """A child's output (which student code writes) follows its problem in a check's output: a launcher that
    prints a grader-side reason and then never ends still fails."""
    from autograder.engine.report import Check
    output = ("not gradable: the check did not finish within 30 s and was stopped\nOutput:\n"
              "not gradable: the grading sandbox is not available")
    c = Check("naive", "correct", "correct results", 6).verdict(False, output)
    assert c.status == "failed" and not c.regrade
