"""One program in every tier: the launcher runs once, in the build child; every other child runs the plan it
recorded (the simulator looking the kernels up by name), so a build that produces no plan leaves nothing to grade."""
import copy
import os

from autograder import engine, stages
from conftest import SOLUTIONS, by_key, failed

NAIVE = stages.find("naive")


def test_a_build_past_its_time_limit_leaves_nothing_to_run(cfg):
    """A build that runs past its limit (never-launched ballast for the compiler, here a limit too short for any build)
    is the student's time limit: no plan, so correctness fails too, instead of the simulator running the launcher."""
    c = copy.deepcopy(cfg)
    c["limits"].update({"jobs": 1, "sim_start_s": 0.5})
    r = engine.grade(os.path.join(SOLUTIONS, NAIVE.filename), stage=NAIVE, device="sim", seed=3, cfg=c)
    assert "did not finish" in failed(r, "compiles") or "limit" in failed(r, "compiles")
    assert "not built" in failed(r, "correct") or "limit" in failed(r, "correct")
    assert r.score == 0 and not any(ch.regrade for ch in r.checks)


def test_the_simulator_never_calls_the_launcher(grade_text, tmp_path):
    """The launcher's side effects happen in the build child alone: one that raises on anything but the build's
    stand-in arrays still gets every point, since nothing else ever calls it."""
    text = open(os.path.join(SOLUTIONS, NAIVE.filename), encoding="utf-8").read().replace(
        "    M, N = C.shape\n", "    M, N = C.shape\n    if A.shape is not A.shape:\n"
        "        raise ValueError(\"called outside the build\")\n", 1)
    assert "called outside the build" in text
    r = grade_text("naive", text)
    assert all(c.status == "passed" for c in by_key(r, "correct")), [c.output[:200] for c in r.checks]


TYPED = r"""
import json, sys
from autograder.builder.task import plan_shape, stand_in
from autograder.child.entry import load_student_module
stand_in([9, 0])
module = load_student_module(sys.argv[1], "s3_tiled_general")
specs, kernels_of = [], {}
job = {"launcher": "matmul_tiled_general", "kernel": "matmul_tiled_general_kernel"}
print(json.dumps({"plan": plan_shape(module, job, (17, 23, 23), specs, kernels_of, compile=False), "specs": specs}))
"""


def test_a_machine_without_the_compiler_still_records_a_typed_plan(cfg):
    """Where NVVM is missing, the build types each launch as numba's dispatcher would, with no PTX: the simulator
    still runs the plan (the compile check is the grader's fault, skipped)."""
    import json
    import subprocess
    import sys
    from autograder.sandbox.plan import check_build
    from conftest import ROOT
    stage = stages.find("tiled_general")
    p = subprocess.run([sys.executable, "-c", TYPED, os.path.join(SOLUTIONS, stage.filename)], capture_output=True,
                       text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    (launch,) = out["plan"]
    assert launch["grid"] == [2, 2, 1] and launch["block"] == [16, 16, 1] and launch["args"] == ["A", "B", "C"]
    assert out["specs"][0]["ptx"] == [] and out["specs"][0]["argtypes"] == ["array(float32, 2d, C)"] * 3
    plans, problem = check_build({"kernels": out["specs"], "plans": [{"launches": out["plan"]}]}, [(17, 23, 23)],
                                 stage.kernel, compiled=False)
    assert not problem and plans == [{"launches": out["plan"]}]
    assert check_build({"kernels": out["specs"], "plans": [{"launches": out["plan"]}]}, [(17, 23, 23)],
                       stage.kernel)[1].startswith("the compiled kernels were refused")  # a GPU runner needs PTX
