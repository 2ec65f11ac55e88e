"""Shared helpers: grade a file in the simulator tier, make known-bad variants of solutions."""
import copy
import os

import pytest

from autograder import config, engine, stages
from course.mutants import mutate, solution_text  # noqa: F401 (used by the test files)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(ROOT, "solutions")


def pytest_configure(config):
    for s in stages.STAGES:  # `pytest -m tiled_general` runs one stage's tests
        config.addinivalue_line("markers", f"{s.name}: tests of stage {s.number} ({s.title})")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items):
    """Mark each test with the stage it exercises; group the tests that share an expensive fixture; start the long
    tests first."""
    mark_stages(items)
    group_shared_fixtures(items)
    items[:] = long_tests_first(items)


def mark_stages(items):
    """Mark each test with the stage it exercises: a known-bad case's stage, or a stage named by a parameter."""
    from course.mutants import KNOWN_BAD
    names = {s.name for s in stages.STAGES}
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for value in params.values():
            if isinstance(value, stages.Stage):
                item.add_marker(value.name)
            elif isinstance(value, str) and value in KNOWN_BAD:
                item.add_marker(KNOWN_BAD[value].stage)
            elif isinstance(value, str) and value in names:
                item.add_marker(value)


# Session fixtures that grade a whole class once per test session (tests/coursekit.py, tests/test_reading.py). They
# are built once for all xdist workers, and a worker that needs one while the other builds it waits for it: the tests
# that use one run on one worker, like the tests of a module-scoped fixture.
SHARED_CLASS_RUNS = ("graded_demo_course", "class_run")


def group_shared_fixtures(items):
    """`make test` hands tests out with `--dist loadgroup` (pyproject.toml): the tests of one xdist_group run on one
    worker, one after another. A module-scoped fixture is built once per worker that runs a test of its module (the
    self-check's verdicts took a minute on each), and a shared class run holds up a second worker that needs it while
    it is built: each test that uses one joins a group, and groups that share a test are one group."""
    parent = {}

    def find(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key
    keys_of = {}
    for item in items:
        keys = []
        info = getattr(item, "_fixtureinfo", None)
        for name in getattr(item, "fixturenames", ()):
            defs = info.name2fixturedefs.get(name) if info else None
            if defs and defs[-1].scope in ("module", "class"):
                keys.append(os.path.splitext(os.path.relpath(item.module.__file__, os.path.join(ROOT, "tests")))[0])
            if name in SHARED_CLASS_RUNS:
                keys.append(name)
        for key in keys[1:]:
            parent[find(key)] = find(keys[0])
        keys_of[item] = keys
    for item, keys in keys_of.items():
        if keys:
            item.add_marker(pytest.mark.xdist_group(find(keys[0])))


# Started first, in this order (a test or group left to run alone at the end sets the suite's wall time): the tests
# and groups of a minute or more, by a node id's start or a group's name (group_shared_fixtures). The rest follow in
# collection order.
LONG_FIRST = (
    "graded_demo_course",   # the demo class graded locally, then through Slurm, formgrader and nbgrader's feedback
    "tests/test_sampled_run.py::test_split_k_over_128_slices",
    "test_selfcheck",       # every instrumented known-bad kernel through the notebook's self-check
    "tests/test_course.py::test_a_class_with_trouble_in_it",
    "tests/test_ladder.py::test_every_ladder_contender",
    "test_solutions",
    "tests/test_fail_fast.py",
    "tests/test_grade_repos.py::test_make_grade_repos_grades_the_commit_of_record",
    "tests/test_staff_pages.py",
    "tests/test_feedback_names.py::test_a_copy_and_a_truncated_notebook",
    "tests/test_student_path.py",
    "tests/test_grader_faults.py::test_a_never_ending_tile_loop",
    "tests/test_course.py::test_workers_start_before_the_gradebook_opens",
    "tests/test_adversarial.py::test_fork_bomb_is_contained",
    "test_instruments",
    "class_run",
    "test_class_records",
    "test_plan",
)


def long_tests_first(items):
    """The items in LONG_FIRST's order, then the others in collection order (a stable sort: the tests of a group or
    module keep their order, so a module-scoped fixture is built once)."""
    def rank(item):
        groups = [str(m.args[0]) for m in item.iter_markers("xdist_group") if m.args]
        for i, start in enumerate(LONG_FIRST):
            if start in groups or item.nodeid.startswith(start):
                return i
        return len(LONG_FIRST)
    return sorted(items, key=rank)


@pytest.fixture(scope="session")
def cfg():
    return config.load()


@pytest.fixture
def grade_text(tmp_path, cfg):
    """grade_text(stage_name, text, device="sim", **limits) -> Report, graded with a fixed seed."""
    def run(stage_name, text, device="sim", **limits):
        stage = stages.find(stage_name)
        path = tmp_path / stage.filename
        path.write_text(text, encoding="utf-8")
        c = copy.deepcopy(cfg)
        c["limits"].update({"jobs": 1, **limits})
        return engine.grade(str(path), stage=stage, device=device, seed=1234, cfg=c)
    return run


def failed(report, key):
    """The joined output of the failed checks with this key; fails the test if none failed."""
    checks = by_key(report, key)
    assert checks, f"no {key} check in the report"
    bad = [c for c in checks if c.status == "failed"]
    assert bad, f"{key} passed: " + " | ".join(c.output for c in checks)
    assert all(c.score == 0 for c in bad)
    return "\n".join(c.output for c in bad)


def passed(report, key):
    checks = by_key(report, key)
    assert checks and all(c.status == "passed" for c in checks), " | ".join(c.output for c in checks)
    return "\n".join(c.output for c in checks)


def by_key(report, key):
    """The checks of a report with this config key."""
    return [c for c in report.checks if c.key == key]


def planned(job, shapes, cfg, limits=None, timeout=None):
    """`job` (a simulator "run" job) with the build's checked plans of `shapes`, as the grader gives them: the build
    child records the module's launcher there (the simulator never calls it). Returns (job, None), or (None, the
    build's result) where the build produced no plan (the module failed to import, say)."""
    from autograder import sandbox
    from autograder.sandbox.plan import check_build
    shapes = [list(s) for s in shapes]
    build = {**job, "task": "build", "device": "ptx", "cc": cfg["grading"]["compute_capability"], "shapes": shapes}
    build.pop("count", None)
    result = sandbox.run_child(build, limits or cfg["limits"], timeout=timeout)
    if result.problem or "kernels" not in result.facts:
        return None, result
    plans, problem = check_build(result.facts, shapes, job["kernel"], "compiler_missing" not in result.facts)
    assert not problem, problem
    return {**job, "plans": plans, "kernels": [k["name"] for k in result.facts["kernels"]]}, None
