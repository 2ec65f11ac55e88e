"""One timing child for a GPU grade (engine/timing_together.py): every stage's speed check in one process, and only
numbers that cannot be another stage's doing count. The child is stood in for by a fake sandbox.run_child that
'times' each part (no GPU needed) and the GPU's watch by a fake that sees nobody else, or somebody."""
import copy
import types
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from autograder import sandbox, stages
from autograder.checks.speed import expected_projection
from autograder.engine import children, timing
from autograder.engine.stage import StageGrader
from autograder.engine.timing_together import TimingTogether
from autograder.gpu import exclusive
from conftest import solution_text
from turnkit import take_turns

STAGES = ("naive", "tiled", "tiled_transposed")
N = 32


def _done(value):
    f = Future()
    f.set_result(value)
    return f


@pytest.fixture
def small(cfg):
    c = copy.deepcopy(cfg)
    c["speed"].update(n=N, repeats=3, warmup=1, leaderboard_n=0, shared_retry_s=0.0)
    return c


def _grader(cfg, tmp_path, name, rng, correct=True):
    src = types.SimpleNamespace(stage=stages.find(name), source=solution_text(name))
    (tmp_path / name).mkdir(parents=True, exist_ok=True)
    g = StageGrader(src, "gpu", cfg, rng, str(tmp_path / name))
    A = rng.standard_normal((8, 3)).astype(np.float32)
    B = rng.standard_normal((3, 5)).astype(np.float32)
    C = (A.astype(np.float64) @ B).astype(np.float32) if correct else np.full((8, 5), np.nan, np.float32)
    compiled = sandbox.ChildResult(facts={"defines_kernel": True, "is_cuda_kernel": True, "defines_launcher": True,
                                          "constants": {"TILE": 16}, "shared_arrays": [1024, 1024], "barriers": 2})
    ran = sandbox.ChildResult(facts={"shapes": [{"writes_past_end": 0, "launches": 1}]}, arrays={"C0": C})
    g.futures = {"compile": _done(compiled), "correct:rect": (_done(ran), {"A0": A, "B0": B})}
    g.built = {"kernels": [{"name": name}], "plans": {(N, N, N): {"launches": [{"kernel": 0}]}}}
    return g


class FakeTimer:
    """The timing children: each part (or a stage's own child) takes `ms[stage]` against a reference of 10 ms and
    returns the right projections, except the stages in `wrong` while they are timed together."""

    def __init__(self, ms, wrong=(), bad_reference=False):
        self.ms, self.wrong, self.bad_reference, self.jobs = ms, set(wrong), bad_reference, []

    def _timed(self, part, inputs, X, together, kernel):
        stage = next(s for s in STAGES if stages.find(s).kernel == kernel)
        runs = len(part["seeds"])
        P = np.stack([expected_projection(part["n"], a, b, X) for a, b in part["seeds"]]).astype(np.float32)
        if together and stage in self.wrong:
            P = P + 1.0  # another stage's kernel wrote over this stage's C
        stats = {"student": {"median_ms": self.ms[stage], "times_ms": [self.ms[stage]] * runs,
                             "past_end": [0] * runs, "cv": 0.0}}
        proj = {"student": P}
        if part["time_reference"]:
            stats["reference"] = {"median_ms": 10.0, "times_ms": [10.0] * runs, "past_end": [0] * runs, "cv": 0.0}
            proj["reference"] = np.stack([expected_projection(part["n"], a, b, X)
                                          for a, b in part["seeds"]]).astype(np.float32)
            if together and self.bad_reference:
                proj["reference"] = proj["reference"] + 1.0
        return {"n": part["n"], "timings": stats, "l2_reset": "done"}, proj

    def __call__(self, job, limits, inputs, wrapper, timeout, cancel, turn, *rest):
        job, inputs, refused = take_turns(job, inputs, turn)
        if refused:
            self.jobs.append({**job, "refused": refused})
            return sandbox.ChildResult(problem=refused, cancelled=True)
        self.jobs.append(job)
        if job["task"] == "speed_parts":
            facts, arrays = {"parts": [], "kernels_loaded": 4, "kernels_compiled": 0}, {}
            for k, part in enumerate(job["parts"]):
                mine, proj = self._timed({**part, "time_reference": job["time_reference"][k]}, inputs,
                                         inputs[f"X{k}"], True, part["kernel"])
                facts["parts"].append(mine)
                arrays.update({f"P{k}_{name}": p for name, p in proj.items()})
            return sandbox.ChildResult(facts=facts, arrays=arrays)
        mine, proj = self._timed({**job, "time_reference": job.get("time_reference", True)}, inputs,
                                 inputs["X"], False, job["kernel"])
        return sandbox.ChildResult(facts={**mine, "kernels_loaded": 4, "kernels_compiled": 0},
                                   arrays={f"P_{name}": p for name, p in proj.items()})


class FakeWatch:
    shared = False

    def __init__(self, *a, **k):
        pass

    def start(self, after=None):
        return self

    def stop(self):
        self.stopped_at, self.after, self.selector, self.problem = 0.0, {}, "0", ""
        others = [{"pid": 4242, "name": "cuda_hog"}] if FakeWatch.shared else []
        return {"gpu": "0", "before": {}, "after": {}, "samples": 3, "others": others, "shared": FakeWatch.shared,
                "unresolved": [], "problem": ""}


def _joined(cfg, tmp_path, monkeypatch, timer, incorrect=(), shared=False, seen=None):
    monkeypatch.setattr(children.sandbox, "run_child", timer)
    monkeypatch.setattr(exclusive, "Watch", FakeWatch)
    FakeWatch.shared = shared
    rng = np.random.default_rng(5)
    seen = seen or timing.SharedGpu()
    together = TimingTogether(seen)
    graders = []
    for name in STAGES:
        g = _grader(cfg, tmp_path, name, rng, correct=name not in incorrect)
        g.shared_gpu = seen
        g.grader_kernels = None
        together.join(g)
        graders.append(g)
    return together, graders


def _grade(cfg, tmp_path, monkeypatch, timer, incorrect=(), shared=False):
    together, graders = _joined(cfg, tmp_path, monkeypatch, timer, incorrect, shared)
    with ThreadPoolExecutor(4) as pool:
        together.start(pool)
        verdicts = [timing.judge(g) for g in graders]  # in report order, as engine._judge_all
    return graders, verdicts


def test_one_timing_child_times_every_stage(small, tmp_path, monkeypatch):
    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 8.0})
    graders, verdicts = _grade(small, tmp_path, monkeypatch, timer)
    assert [j["task"] for j in timer.jobs] == ["speed_parts"], "one timing child for the grade"
    # naive_coalesced is timed once (by naive's part), transposed_unpadded by its own stage
    assert timer.jobs[0]["time_reference"] == [True, False, True]
    naive, tiled, transposed = verdicts
    assert naive.status == "passed" and "1.11x" in naive.output
    assert tiled.status == "passed" and "5.00x" in tiled.output
    assert "the reference as timed by stage naive's speed check" in tiled.output
    assert transposed.status == "failed" and "1.25x (needs 2.5x" in transposed.output  # slow, and right: it counts
    assert all(g.gpu and not g.gpu["shared"] for g in graders)


def test_a_wrong_product_timed_together_is_timed_again_on_its_own(small, tmp_path, monkeypatch):
    """In one process a kernel could write over another stage's operands: a part whose products are wrong is not
    judged from the shared child, but timed again in a child of its own (here right, and fast)."""
    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 3.0}, wrong={"tiled"})
    graders, verdicts = _grade(small, tmp_path, monkeypatch, timer)
    assert [j["task"] for j in timer.jobs] == ["speed_parts", "speed"]
    assert timer.jobs[1]["kernel"] == stages.find("tiled").kernel
    assert all(v.status == "passed" for v in verdicts), [v.output for v in verdicts]


def test_a_stage_whose_correctness_failed_is_not_timed(small, tmp_path, monkeypatch):
    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 3.0})
    graders, verdicts = _grade(small, tmp_path, monkeypatch, timer, incorrect=("tiled",))
    assert [j["task"] for j in timer.jobs] == ["speed_parts"]
    assert [p["kernel"] for p in timer.jobs[0]["parts"]] == [stages.find(s).kernel for s in ("naive", "tiled_transposed")]
    assert verdicts[1].status == "failed" and "speed counts only for a correct kernel" in verdicts[1].output
    assert verdicts[0].status == verdicts[2].status == "passed"


def test_a_gpu_found_shared_times_each_stage_on_its_own(small, tmp_path, monkeypatch):
    """Another process on the GPU: the shared child's numbers count for nobody. That was every stage's first look:
    the first stage's own check looks once more (shared_retry_s later) and, the GPU still shared, the grade's
    later checks say so at once (no stage is graded on it, none loses a point)."""
    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 3.0})
    graders, verdicts = _grade(small, tmp_path, monkeypatch, timer, shared=True)
    assert [j["task"] for j in timer.jobs] == ["speed_parts", "speed"]
    assert graders[0].gpu["attempts"] == 2
    assert all(v.status == "skipped" and "shared" in v.output for v in verdicts), [v.output for v in verdicts]


def test_a_reference_that_failed_its_check_together_leaves_no_trace(small, tmp_path, monkeypatch):
    """The reference's own runs failing their product check is the grader's trouble (a re-grade): in the shared child
    it could be another stage's doing, so those stages are timed again on their own, and a right verdict there
    carries no re-grade flag from the first judging."""
    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 3.0}, bad_reference=True)
    graders, verdicts = _grade(small, tmp_path, monkeypatch, timer)
    assert [j["task"] for j in timer.jobs] == ["speed_parts", "speed", "speed", "speed"]
    assert all(v.status == "passed" and not v.regrade and v.fault is None for v in verdicts), \
        [(v.status, v.regrade, v.output[:80]) for v in verdicts]


def test_the_timing_child_makes_its_context_only_once_the_grade_holds_the_gpu_alone(small, tmp_path, monkeypatch):
    """A context alive while another grade on the GPU times would be that grade's "other process" (gpu/slot.py):
    the child gets its first go (and makes its context) only once engine.grade set `alone`; a grade that stops
    before then refuses it."""
    import time
    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 8.0})
    seen = timing.SharedGpu(alone=False)
    together, graders = _joined(small, tmp_path, monkeypatch, timer, seen=seen)
    with ThreadPoolExecutor(4) as pool:
        together.start(pool)
        time.sleep(0.5)
        assert timer.jobs == [] and not together.turn.prepared.is_set()  # no go yet: the GPU is shared
        seen.alone.set()
        verdicts = [timing.judge(g) for g in graders]
    assert [j["task"] for j in timer.jobs] == ["speed_parts"]
    assert verdicts[0].status == "passed" and "1.11x" in verdicts[0].output

    timer = FakeTimer({"naive": 9.0, "tiled": 2.0, "tiled_transposed": 8.0})
    seen = timing.SharedGpu(alone=False)
    together, graders = _joined(small, tmp_path, monkeypatch, timer, seen=seen)
    with ThreadPoolExecutor(4) as pool:
        together.start(pool)
        together.turn.refuse("not run: the grade stopped before this stage's speed check")
        seen.alone.set()  # as engine.grade's finally does
    assert timer.jobs and timer.jobs[0]["refused"].startswith("not run: the grade stopped")
