"""One correctness runner for a GPU grade (engine/together.py): every stage's shapes in one process, one CUDA
context instead of one a stage, and no stage loses its verdict for another's sake. The runner is stood in for by
a fake sandbox.run_child that multiplies (no GPU needed)."""
import types
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from autograder import sandbox, stages
from autograder.engine import children
from autograder.engine.stage import StageGrader
from autograder.engine.together import CorrectTogether
from autograder.outcome import time_limit
from conftest import solution_text
from turnkit import take_turns

STAGES = ("naive", "tiled", "tiled_general")


def _done(value):
    f = Future()
    f.set_result(value)
    return f


def _grader(cfg, tmp_path, name, rng, built=True):
    src = types.SimpleNamespace(stage=stages.find(name), source=solution_text(name))
    (tmp_path / name).mkdir(parents=True, exist_ok=True)
    g = StageGrader(src, "gpu", cfg, rng, str(tmp_path / name))
    shapes = [tuple(s) for group in g.shape_groups().values() for s in group]
    facts = {"defines_kernel": True, "is_cuda_kernel": True, "defines_launcher": True}
    g.futures = {"compile": _done(sandbox.ChildResult(facts=facts if built else {},
                                                      problem="" if built else "SyntaxError: invalid syntax"))}
    if built:  # one kernel of the stage's own (its registers tell it apart), launched once at every shape
        g.built = {"kernels": [{"name": name, "registers": 20 + STAGES.index(name)}],
                   "plans": {s: {"launches": [{"kernel": 0}]} for s in shapes}}
    return g


class FakeRunner:
    """sandbox.run_child for GPU runners: gives the turn, then 'runs' each shape (C = A @ B) and says which kernel
    each stage's first is; `stop_at` (a shape of the grade's one runner) stands for a kernel that never ends there."""

    def __init__(self, stop_at=None, nothing=None):
        self.stop_at, self.nothing, self.jobs = stop_at, nothing, []

    def __call__(self, job, limits, inputs, wrapper, timeout, cancel, turn, work, *rest):
        job, inputs, refused = take_turns(job, inputs, turn)
        if refused:
            return sandbox.ChildResult(problem=refused, cancelled=True)
        self.jobs.append(job)
        one = "stage_kernels" in job  # the grade's one runner
        if one and self.nothing:
            return sandbox.ChildResult(problem="not gradable: the check was killed by signal SIGSEGV (a crash)",
                                       started=0, cancelled=self.nothing == "cancelled")
        shapes, arrays = [], {}
        for i in range(job["count"]):
            if one and self.stop_at == i:
                return sandbox.ChildResult(problem=time_limit("not gradable: the check did not finish within 5 s of "
                                                              "its kernels' launch and was stopped"),
                                           timed_out=True, started=i + 1)
            A, B = inputs[f"A{i}"], inputs[f"B{i}"]
            arrays[f"C{i}"] = (A.astype(np.float64) @ B).astype(np.float32)
            shapes.append({"writes_past_end": 0, "launches": 1})
        facts = {"shapes": shapes, "kernel": {"registers": job["kernels"][0]["registers"]}}
        if one:
            facts["stage_kernels"] = [{"registers": job["kernels"][k]["registers"]} for k in job["stage_kernels"]]
        return sandbox.ChildResult(facts=facts, arrays=arrays, started=job["count"])


def _grade(cfg, tmp_path, monkeypatch, runner, unbuilt=()):
    monkeypatch.setattr(children.sandbox, "run_child", runner)
    rng = np.random.default_rng(7)
    graders = [_grader(cfg, tmp_path, name, rng, built=name not in unbuilt) for name in STAGES]
    together = CorrectTogether()
    planned = []
    for g in graders:
        groups = g.shape_groups()
        drawn = {group: g.draw(shapes) for group, shapes in groups.items()}
        g.together_round = together.join(g, groups, drawn)
        planned.append((g, groups, drawn))
    with ThreadPoolExecutor(4) as pool:
        together.start(pool)
        outcomes = list(pool.map(lambda p: p[0].run_correctness(p[1], p[2]), planned))
    return graders, planned, outcomes


def _right(result, inputs):
    C = (inputs["A0"].astype(np.float64) @ inputs["B0"]).astype(np.float32)
    return not result.problem and np.array_equal(result.arrays["C0"], C)


def test_one_runner_brings_every_stages_results(cfg, tmp_path, monkeypatch):
    runner = FakeRunner()
    graders, planned, outcomes = _grade(cfg, tmp_path, monkeypatch, runner)
    assert len(runner.jobs) == 1, "one correctness runner for the grade, not one a stage"
    assert runner.jobs[0]["stage_kernels"] == [0, 1, 2]
    for (g, groups, drawn), results in zip(planned, outcomes):
        assert set(results) == set(groups)
        for group, result in results.items():
            assert _right(result, drawn[group]) or len(groups[group]) > 1, (g.stage.name, group)
            # each stage's own kernel as the driver loaded it (the compile check's registers), not the first's
            assert result.facts["kernel"]["registers"] == 20 + STAGES.index(g.stage.name)
            assert len(result.facts["shapes"]) == len(groups[group])


def test_a_kernel_that_never_ends_costs_the_other_stages_nothing(cfg, tmp_path, monkeypatch):
    """Stage tiled's first shape never ends in the grade's runner: that group keeps its time-out (the stage's, whose
    other children then get their grace), its other groups and every other stage run again on their own and keep
    their results."""
    rng_graders = [_grader(cfg, tmp_path / "probe", n, np.random.default_rng(7)) for n in STAGES]
    first_tiled = sum(len(s) for s in rng_graders[0].shape_groups().values())
    runner = FakeRunner(stop_at=first_tiled)
    graders, planned, outcomes = _grade(cfg, tmp_path, monkeypatch, runner)
    by = {g.stage.name: (g, groups, drawn, results) for (g, groups, drawn), results in zip(planned, outcomes)}
    g, groups, drawn, results = by["tiled"]
    stopped = next(iter(groups))
    assert "did not finish" in results[stopped].problem and results[stopped].timed_out
    assert g.timed_out and g.timeout_at is not None
    for name in ("naive", "tiled_general"):
        other, groups2, drawn2, results2 = by[name]
        assert not other.timed_out, name
        assert all(_right(results2[group], drawn2[group]) for group in groups2 if len(groups2[group]) == 1), name
        assert all(not r.problem for r in results2.values()), name
    assert len(runner.jobs) > 1 and all("stage_kernels" not in j for j in runner.jobs[1:])


def test_a_stage_that_was_not_built_says_so_and_the_others_share_the_runner(cfg, tmp_path, monkeypatch):
    runner = FakeRunner()
    graders, planned, outcomes = _grade(cfg, tmp_path, monkeypatch, runner, unbuilt=("tiled",))
    assert len(runner.jobs) == 1 and runner.jobs[0]["stage_kernels"] == [0, 1]
    for (g, groups, drawn), results in zip(planned, outcomes):
        if g.stage.name == "tiled":
            assert all(r.problem.startswith("not run: the kernels were not built") for r in results.values())
        else:
            assert all(not r.problem for r in results.values()), g.stage.name


@pytest.mark.parametrize("why", ["crashed", "cancelled"])
def test_a_runner_that_brought_nothing_leaves_each_stage_its_own(cfg, tmp_path, monkeypatch, why):
    """A runner that stopped before its first shape (or was stopped for a stage's sake): nothing tells the stages
    apart, so each runs its own runner, as without the grade's one."""
    runner = FakeRunner(nothing=why)
    graders, planned, outcomes = _grade(cfg, tmp_path, monkeypatch, runner)
    assert len(runner.jobs) == 1 + len(STAGES)
    for (g, groups, drawn), results in zip(planned, outcomes):
        assert all(not r.problem for r in results.values()), g.stage.name
