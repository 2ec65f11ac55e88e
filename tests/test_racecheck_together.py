"""One compute-sanitizer racecheck run for the stages of a grade (gpu/together.RacecheckTogether): a CUDA context
is made one at a time on a host, whatever its GPU, so a grade makes one racecheck context instead of one a stage.
The run speaks for the stages only where it found no hazard at all; any hazard, any trouble, and every stage is
race-checked again on its own, beside the others, as before. Tested on plain facts and fake runners (CI); the real
tool runs in the GPU tests."""
import threading
import time
import types

import numpy as np

from autograder.gpu import together, tools
from checkkit import child_result

CLEAN = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
RACY = ("========= Error: Potential WAR hazard detected at __shared__ 0x0 in block (0,0,0) :\n"
        "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
RAN = {"launches": 1, "writes_past_end": 0}


def test_a_clean_run_speaks_for_each_stage_on_its_own_shapes():
    ran = child_result({"shapes": [RAN, RAN, RAN], "cuda_init_s": 0.2})
    (first, first_log), (second, second_log) = together.split_racecheck(ran, CLEAN, [True, True], [1, 2])
    assert first.facts["shapes"] == [RAN] and second.facts["shapes"] == [RAN, RAN]
    for part, log in ((first, first_log), (second, second_log)):
        facts = tools.racecheck_facts(part, log)
        assert (facts["hazards"], facts["errors"], facts["warnings"]) == (0, 0, 0)


def test_any_hazard_or_trouble_speaks_for_no_stage():
    """A hazard may be any stage's (racecheck names the kernel only in words a kernel's name can imitate), so none is
    judged from it; nor from a run that was stopped, crashed, wrote no summary or did not run every shape."""
    ran = child_result({"shapes": [RAN, RAN]})
    assert together.split_racecheck(ran, RACY, [True, True], [1, 1]) == [None, None]
    warning = CLEAN.replace("0 hazards displayed (0 errors, 0 warnings)", "1 hazard displayed (0 errors, 1 warning)")
    assert together.split_racecheck(ran, warning, [True, True], [1, 1]) == [None, None]
    # a hazard line with a summary that claims none (a log cut short and rewritten, a kernel printing): still none
    assert together.split_racecheck(ran, RACY.splitlines()[0] + "\n" + CLEAN, [True, True], [1, 1]) == [None, None]
    stopped = child_result({"shapes": [RAN, RAN]})
    stopped.decided_early = True
    assert together.split_racecheck(stopped, CLEAN, [True, True], [1, 1]) == [None, None]
    assert together.split_racecheck(child_result({"shapes": [RAN, RAN]}, problem="killed"), CLEAN, [True, True],
                                    [1, 1]) == [None, None]
    assert together.split_racecheck(ran, "the program crashed", [True, True], [1, 1]) == [None, None]
    assert together.split_racecheck(child_result({"shapes": [RAN]}), CLEAN, [True, True], [1, 1]) == [None, None]


def test_a_stage_whose_plan_failed_runs_alone_and_the_others_keep_their_part():
    failed = {"error": {"kind": "launch", "message": "the launcher raised at this shape"}}
    ran = child_result({"shapes": [failed, RAN, {"launches": 0}]})
    first, second, third = together.split_racecheck(ran, CLEAN, [True, True, False], [1, 1, 1])
    assert first is None and second[0].facts["shapes"] == [RAN] and third is None


class Started:
    def __init__(self):
        self.inputs = None

    def __call__(self, seconds):
        return True

    def give_inputs(self, arrays):
        self.inputs = arrays


def grader(name, shapes, run, why=""):
    """A stand-in StageGrader: its build gives one plan per shape (or `why` it gave none)."""
    plan = {"launches": [{"kernel": 0, "args": ["A", "B", "C"], "grid": [1, 1, 1], "block": [1, 1, 1]}]}
    return types.SimpleNamespace(
        stage=types.SimpleNamespace(name=name, kernel="k"), racecheck_shapes=shapes,
        cfg={"limits": {"tool_timeout_s": 30, "gpu_start_s": 40}, "speed": {"n": 8}},
        not_run=lambda why: child_result({}, problem="not run: " + why),
        runner_job=lambda task, shapes, count: (None, why) if why else (
            {"task": task, "device": "gpu", "kernel": "k", "kernels": [{"name": name}], "plans": [plan] * count,
             "count": count}, ""),
        run=run)


def run_together(monkeypatch, log, members, alone_s=0.0):
    """Run a RacecheckTogether over `members` (name, shapes, why) whose one run writes `log`; returns (futures, what
    the runner was given, the stages checked again on their own with when each began and ended)."""
    seen, alone = {}, []
    monkeypatch.setattr(tools, "find_tool", lambda name: "/usr/bin/compute-sanitizer")

    def own(g, inputs):
        began = time.monotonic()
        time.sleep(alone_s)
        alone.append((g.stage.name, began, time.monotonic(), tools._shapes(inputs)))
        return "own", "log", ""
    monkeypatch.setattr(tools, "racecheck_run", own)

    def run(job, inputs, **kw):
        ready = Started()
        seen.update(job=job, given=kw["turn"](ready), inputs=ready.inputs, shared_with=kw["shared_with"],
                    wrapper=kw["wrapper"], watch=kw["watch"])
        with open(kw["wrapper"][-1], "w") as f:
            f.write(log)
        plans = seen["given"]["plans"] if isinstance(seen["given"], dict) else []
        return child_result({"shapes": [dict(RAN, launches=len(p["launches"])) for p in plans]})
    run_of = together.RacecheckTogether()
    futures = [run_of.join(grader(name, shapes, run, why), np.random.default_rng(i))
               for i, (name, shapes, why) in enumerate(members)]
    thread = threading.Thread(target=run_of._run)
    thread.start()
    assert run_of.ended.wait(20)
    thread.join(10)
    return futures, seen, alone


MEMBERS = [("tiled", [(288, 288, 288)], ""), ("tiled_general", [(300, 70, 290), (64, 224, 96)], ""),
           ("tiled_transposed", [(270, 50, 310), (96, 256, 64)], "")]


def test_one_runner_checks_every_stage_in_turn(monkeypatch):
    """One racecheck process: it gets every stage's shapes in stage order, each stage's kernels numbered after the
    earlier stages', and is stopped at its first hazard report; a clean log passes each stage on its own shapes."""
    futures, seen, alone = run_together(monkeypatch, CLEAN, MEMBERS)
    assert alone == [], "a clean run checks no stage again"
    assert seen["job"]["count"] == 5 and "warm_up" not in seen["job"]
    assert [tools._shapes(seen["inputs"])] == [[s for _, shapes, _ in MEMBERS for s in shapes]]
    assert [p["launches"][0]["kernel"] for p in seen["given"]["plans"]] == [0, 1, 1, 2, 2]
    assert [k["name"] for k in seen["given"]["kernels"]] == ["tiled", "tiled_general", "tiled_transposed"]
    assert [g.stage.name for g in seen["shared_with"]] == ["tiled_general", "tiled_transposed"]
    assert "racecheck" in seen["wrapper"] and seen["watch"].decided("========= Warning: Potential RAW hazard detected")
    results = [f.result() for f in futures]
    assert [len(r[0].facts["shapes"]) for r in results] == [1, 2, 2]
    assert all(tools.racecheck_facts(r[0], r[1])["errors"] == 0 for r in results)


def test_a_hazard_sends_every_stage_to_its_own_run_beside_the_others(monkeypatch):
    """The known-bad case: one stage races beside two that do not. No stage is judged from the shared log; each is
    race-checked on its own, at its own shapes, all at once (not one after another), and the run has `ended` only
    once they did (the grade times only after every racecheck process of its own ended)."""
    futures, seen, alone = run_together(monkeypatch, RACY, MEMBERS, alone_s=0.5)
    assert sorted(name for name, *_ in alone) == ["tiled", "tiled_general", "tiled_transposed"]
    assert {name: shapes for name, _, _, shapes in alone} == {name: shapes for name, shapes, _ in MEMBERS}
    assert max(b for _, b, _, _ in alone) < min(e for _, _, e, _ in alone), "checked again beside each other"
    assert [f.result()[0] for f in futures] == ["own"] * 3


def test_an_unbuilt_stage_is_not_run_and_a_lone_stage_runs_alone(monkeypatch):
    futures, seen, alone = run_together(monkeypatch, CLEAN, [("tiled", [(288, 288, 288)], ""),
                                                             ("tiled_general", [(300, 70, 290)], "it failed")])
    assert alone == [] and tools.racecheck_facts(*futures[0].result()[:2])["errors"] == 0
    assert "not run: it failed" in futures[1].result()[0].problem
    assert seen["given"]["plans"][1]["launches"] == []
    futures, seen, alone = run_together(monkeypatch, CLEAN, [("tiled", [(288, 288, 288)], "")])
    assert seen == {} and [name for name, *_ in alone] == ["tiled"]
