"""engine/report.py: the time breakdown a grade records in results.json (extra_data.timing)."""
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
                 "compile_s": 3.0, "speed_s": 6.0, "cpu_s": 9.25, "imports_s": 1.5, "module_s": 0.75,
                 "cuda_ctx_s": 0.75, "outside_s": 3.0}
