"""Fail fast: a kernel that never ends costs one derived time limit per stage, not minutes; a wrong or stopped
stage runs none of its later GPU checks; time limits follow the work."""
import os
import time
import types

import numpy as np
import pytest

from autograder import sandbox, stages
from autograder.engine.stage import StageGrader
from conftest import failed, mutate, planned, solution_text

NEVER_ENDS = ("    acc = float32(0.0)\n", "    acc = float32(0.0)\n    i = 0\n    while i >= 0:\n        i = (i + 1) % 7\n")


def test_simulator_hang_costs_at_most_60_s_per_stage(grade_text):
    """A stage 2 kernel that never ends: the first correctness child to reach its derived limit stops the others."""
    started = time.monotonic()
    r = grade_text("tiled", mutate("tiled", NEVER_ENDS), check_timeout_s=240)
    seconds = time.monotonic() - started
    out = failed(r, "correct")
    assert "did not finish within" in out, out
    assert seconds <= 60, f"a never-ending kernel cost {seconds:.0f} s"
    # every other check of the stage says why it did not run
    for key in ("races", "data_reuse"):
        assert "did not finish" in failed(r, key)


def _grader(cfg, stage_name, tile=16, device="sim"):
    g = StageGrader.__new__(StageGrader)
    g.cfg, g.stage, g.tile, g.device = cfg, stages.find(stage_name), tile, device
    return g


def test_time_limits_follow_the_work(cfg):
    g = _grader(cfg, "tiled_general")
    lim = cfg["limits"]
    small = g.sim_timeout([(1, 1, 1)])
    big = g.sim_timeout([(33, 9, 31), (17, 23, 23)])
    assert lim["sim_start_s"] < small < big <= lim["check_timeout_s"]
    assert big <= 50, "a never-ending kernel in the simulator must cost under a minute"
    assert g.sim_timeout([(4000, 4000, 4000)]) == lim["check_timeout_s"], "check_timeout_s is the outer bound"
    # GPU: start-up plus 20x the naive reference's time; 2048^3 is about 17 ms of it
    assert g.work_timeout(2.0 * 2048 ** 3) == pytest.approx(lim["gpu_start_s"] + lim["work_factor"] * 2 * 2048 ** 3 / 1e12)
    assert g.work_timeout(2.0 * 2048 ** 3) < 60


def _futures(results):
    """Done futures standing for the compile and correctness children."""
    from concurrent.futures import Future

    def done(value):
        f = Future()
        f.set_result(value)
        return f
    return {k: (done(v[0]), v[1]) if isinstance(v, tuple) else done(v) for k, v in results.items()}


def _gate_grader(cfg, futures, **speed):
    g = _grader(cfg, "tiled_general", device="gpu")
    c = {**cfg, "speed": {**cfg["speed"], **speed}}
    g.cfg, g.points, g.tol = c, c["stages"]["tiled_general"]["points"], c["grading"]["relative_error"]
    g.src, g.module_path = types.SimpleNamespace(source=solution_text("tiled_general")), "s3_tiled_general.py"
    import threading
    g.timed_out, g.timeout_at, g._gate, g.futures = "", None, None, futures
    g._gate_lock, g._timeout_lock = threading.Lock(), threading.Lock()
    return g


def _compiled():
    return sandbox.ChildResult(facts={"defines_kernel": True, "is_cuda_kernel": True, "defines_launcher": True,
                                      "constants": {"TILE": 16}, "shared_arrays": [1024, 1024], "barriers": 2})


def _run_result(A, B, C):
    return sandbox.ChildResult(facts={"shapes": [{"writes_past_end": 0, "launches": 1}]}, arrays={"C0": C})


def test_wrong_results_gate_the_later_checks_on_the_gpu(cfg):
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((40, 3)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    right = (A.astype(np.float64) @ B).astype(np.float32)
    wrong = right.copy()
    wrong[20:] = np.nan  # a grid sized from the wrong axis leaves rows unwritten
    inputs = {"A0": A, "B0": B}
    good = _gate_grader(cfg, _futures({"compile": _compiled(), "correct:rect": (_run_result(A, B, right), inputs)}))
    assert good.gate_reason("speed") == good.gate_reason("races") == ""
    bad = _gate_grader(cfg, _futures({"compile": _compiled(), "correct:rect": (_run_result(A, B, wrong), inputs)}))
    assert "correctness checks failed (rect)" in bad.gate_reason("speed")
    assert "speed counts only for a correct kernel" in bad.gate_reason("speed")
    assert "GPU tools run only" in bad.gate_reason("races")
    off = _gate_grader(cfg, _futures({"compile": _compiled(), "correct:rect": (_run_result(A, B, wrong), inputs)}),
                       needs_correct=False)
    assert off.gate_reason("speed") == "" and off.gate_reason("races") != ""
    stopped = _gate_grader(cfg, _futures({"compile": _compiled(), "correct:rect": (_run_result(A, B, right), inputs)}))
    stopped.timed_out = "the correctness check 'rect' of this stage did not finish within its 31 s limit"
    assert "did not finish" in stopped.gate_reason("speed") and "did not finish" in stopped.gate_reason("races")


def test_cancel_stops_a_running_child(cfg, tmp_path):
    """The sandbox stops a child once its stage's cut is set (a sibling ran out of time and the grace is over)."""
    import threading
    path = tmp_path / "s1_naive.py"
    path.write_text(mutate("naive", ("    if row < M and col < N:\n",
                                     "    i = 0\n    while i >= 0:\n        i = (i + 1) % 7\n    if row < M and col < N:\n")),
                    encoding="utf-8")
    cancel = threading.Event()
    threading.Timer(3.0, cancel.set).start()
    job = {"task": "run", "device": "sim", "module": "s1_naive", "module_path": str(path),
           "kernel": "matmul_naive_kernel", "launcher": "matmul_naive", "count": 1}
    job, _ = planned(job, [(4, 4, 4)], cfg)
    rng = np.random.default_rng(1)
    inputs = {"A0": rng.standard_normal((4, 4)).astype(np.float32), "B0": rng.standard_normal((4, 4)).astype(np.float32)}
    limits = {**cfg["limits"], "address_space_bytes": cfg["limits"]["sim_address_space_bytes"]}
    started = time.monotonic()
    r = sandbox.run_child(job, limits, inputs, timeout=120, cancel=cancel)
    assert time.monotonic() - started < 30
    assert r.cancelled and not r.timed_out, r.problem
    assert "another check of this stage ran past its time limit" in r.problem


def test_after_a_timeout_siblings_get_a_grace_and_later_checks_do_not_run(cfg):
    from autograder.engine.children import _Cut
    g = _grader(cfg, "tiled")
    g.timeout_at = None
    cut = _Cut(g, 0.2, 0.1)
    slow = _Cut(g, 0.2, 5.0)  # still starting (imports on a loaded machine): its grace has not begun
    assert not cut.is_set()
    g.timeout_at = time.monotonic()
    assert not cut.is_set()
    time.sleep(0.35)
    assert cut.is_set() and not slow.is_set()
    slow.begun()  # its first shape began: the grace counts from now
    assert not slow.is_set()
    time.sleep(0.25)
    assert slow.is_set()
    late = _Cut(g, 0.2, 0.1)  # a child that starts after the timeout gets its own grace
    assert not late.is_set()


def _run_job(tmp_path, cfg, text, work):
    """One correctness child of stage 2 at one 16 x 16 tile, through the real sandbox in the simulator."""
    stage = stages.find("tiled")
    path = tmp_path / stage.filename
    path.write_text(text, encoding="utf-8")
    rng = np.random.default_rng(0)
    inputs = {"A0": rng.standard_normal((16, 16)).astype(np.float32),
              "B0": rng.standard_normal((16, 16)).astype(np.float32)}
    job = {"task": "run", "device": "sim", "module": stage.module, "module_path": str(path),
           "kernel": stage.kernel, "launcher": stage.launcher, "count": 1}
    job, _ = planned(job, [(16, 16, 16)], cfg)
    limits = {**cfg["limits"], "address_space_bytes": cfg["limits"]["sim_address_space_bytes"]}
    started = time.monotonic()
    return sandbox.run_child(job, limits, inputs, (), 120, None, None, work), time.monotonic() - started


def test_a_child_has_only_its_work_time_once_its_kernels_start(tmp_path, cfg):
    """The child says when its start-up is over; a kernel that never ends is stopped `work` seconds later, not at
    the end of a limit sized for a slow start (120 s here)."""
    result, seconds = _run_job(tmp_path, cfg, mutate("tiled", NEVER_ENDS), work=3)
    assert result.timed_out, result.problem
    assert "within 3 s of its kernels' launch" in result.problem, result.problem
    assert seconds < 30, f"stopped after {seconds:.0f} s"
    # a correct kernel says the same and finishes well within its work time
    result, _ = _run_job(tmp_path, cfg, solution_text("tiled"), work=3)
    assert not result.problem and not result.timed_out, result.problem
    assert "C0" in result.arrays and result.facts["cpu_s"] > 0


HANGS_ON_K3 = ("        acc = float32(0.0)\n",
               "        acc = float32(0.0)\n        i = 0\n        while K == 3 and i >= 0:\n            i = (i + 1) % 7\n")


def test_a_group_that_hangs_costs_the_other_groups_nothing(grade_text):
    """Every group of the correctness check runs in one child; a kernel that never ends on one shape (K = 3, a
    tall rectangle) fails that group, and the groups it had finished run again in a fresh child and pass."""
    r = grade_text("naive", mutate("naive", HANGS_ON_K3))
    checks = {c.name: c for c in r.checks if c.key == "correct"}
    assert checks["correct results: tall and wide rectangles"].status == "failed"
    assert "did not finish" in checks["correct results: tall and wide rectangles"].output
    for name in ("correct results: 1x1 and K=1", "correct results: sizes that are not multiples of the tile"):
        assert checks[name].status == "passed", checks[name].output
    whats = [c["what"] for c in r.children]
    assert whats.count("the correctness check") == 1, whats  # the first try, then each group it had not kept alone
    again = [c for c in r.children if c["what"].startswith("the correctness check '")]
    assert len(again) == 2 and abs(again[0]["began"] - again[1]["began"]) < 2, again  # beside each other


def test_a_kernel_that_hangs_on_every_group_costs_one_limit_and_one_grace(grade_text):
    """After the first timeout each group left runs once more in a child of its own, all at once, within the stage's
    sibling grace; those children are stopped too and every group left says so (one limit and one round, not one
    limit per group: on the GPU three groups one after another cost 19 s). Shorter limits than the course's: nothing
    honest runs here, and the simulator spins on the kernel for each of them."""
    r = grade_text("naive", mutate("naive", ("        acc = float32(0.0)\n", "        acc = float32(0.0)\n"
                                             "        i = 0\n        while i >= 0:\n            i = (i + 1) % 7\n")),
                   sim_start_s=10.0, sibling_grace_s=3.0)
    checks = [c for c in r.checks if c.key == "correct"]
    assert len(checks) == 3 and checks[0].status == "failed" and "did not finish" in checks[0].output
    # the groups cut short for the first one's sake fail too: a kernel that runs past its limit is the student's,
    # not the grader's trouble (no re-grade, and the stage keeps its maximum)
    assert all(c.status == "failed" and not c.regrade and "another check of this stage ran past its time limit"
               in c.output for c in checks[1:]), [c.output for c in checks]
    assert r.max_score == 8 and not r.regrade  # speed is not timed in the simulator
    first = next(c for c in r.children if c["what"] == "the correctness check")
    again = [c for c in r.children if c["what"].startswith("the correctness check '")]
    assert len(again) == 2 and all(c["began"] >= first["began"] + first["wall_s"] - 1 for c in again), again
    assert abs(again[0]["began"] - again[1]["began"]) < 2, again  # beside each other, not one after another


def test_a_gpu_tool_starts_beside_the_correctness_check_and_counts_only_where_it_passed(cfg, tmp_path, monkeypatch):
    """racecheck and ncu are the longest children of a grade: they start without waiting for the correctness child
    (here it never ends), and their verdicts count only once it passed (gate_reason). The tool is stood in for by
    a shell that sleeps 1 s (no GPU needed)."""
    from concurrent.futures import Future
    from autograder.gpu import tools
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((40, 3)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    src = types.SimpleNamespace(stage=stages.find("tiled_general"), source=solution_text("tiled_general"))
    g = StageGrader(src, "gpu", cfg, rng, str(tmp_path))
    correctness = Future()  # still running
    g.futures = {"compile": _futures({"compile": _compiled()})["compile"], "correct:rect": (correctness, {"A0": A, "B0": B})}
    g.built = {"kernels": [], "plans": {(40, 3, 6): {"launches": []}}}  # the tool's runner never starts here
    monkeypatch.setattr(tools, "find_tool", lambda name: "/bin/sh")
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        tool = pool.submit(tools._tool_run, g, "races", "compute-sanitizer", lambda log: ("-c", "sleep 1"),
                           {"A0": A, "B0": B})
        try:
            child, _, why = tool.result(timeout=20)
        finally:
            correctness.done() or correctness.set_result(sandbox.ChildResult(problem="ended by the test"))
    assert why == "" and child.seconds >= 1 and not child.cancelled and not child.timed_out, child.problem
    g._gate = None  # judged afresh below: a wrong product
    g.futures["correct:rect"] = (_futures({"c": _run_result(A, B, np.full((40, 6), np.nan, np.float32))})["c"],
                                 {"A0": A, "B0": B})
    assert "GPU tools run only on a kernel that computes the right product" in g.gate_reason("races")


def test_a_gpu_tool_starts_before_the_build_ends_and_says_the_builds_reason(cfg, tmp_path, monkeypatch):
    """compute-sanitizer's start and a CUDA context under it take about a second: the tool's runner starts at once
    and gets the stage's plan with its "go" once the build is done. Where the build gave no plan, the tool's check
    says so (the build's verdict), as it did when it waited for the build. The tool is stood in for by a shell that
    notes when it started."""
    from concurrent.futures import Future, ThreadPoolExecutor
    from autograder.gpu import tools
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((40, 3)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    src = types.SimpleNamespace(stage=stages.find("tiled_general"), source=solution_text("tiled_general"))
    c = {**cfg, "limits": {**cfg["limits"], "sandbox": "none"}}  # the shell's marker lands where the test looks
    g = StageGrader(src, "gpu", c, rng, str(tmp_path))
    build = Future()  # still building
    g.futures = {"compile": build}
    marker = tmp_path / "started"
    monkeypatch.setattr(tools, "find_tool", lambda name: "/bin/sh")
    with ThreadPoolExecutor(1) as pool:
        tool = pool.submit(tools._tool_run, g, "races", "compute-sanitizer",
                           lambda log: ("-c", f"touch {marker}; sleep 5"), {"A0": A, "B0": B})
        try:
            deadline = time.monotonic() + 20
            while not marker.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            started = marker.exists() and not build.done()
        finally:
            build.set_result(sandbox.ChildResult(problem="SyntaxError: invalid syntax (line 3)"))
        assert started, "the tool started while the build ran"
        child, _, why = tool.result(timeout=30)
    assert why == "" and child.problem.startswith("not run: the kernels were not built"), child.problem


def test_honest_groups_are_not_cut_short_on_a_loaded_machine(cfg):
    """eve's stage 1 never ends when K = 1. Her other groups then run in a fresh child with the sibling grace;
    on a busy machine its start-up alone used the grace, and the correct groups scored 0 (2 points instead of
    6). The grace now counts from the child's first shape: with four CPU-bound processes on the machine the
    stage still scores 6."""
    import copy
    import subprocess
    import sys
    from autograder import engine, stages
    from conftest import ROOT
    c = copy.deepcopy(cfg)
    c["limits"]["check_timeout_s"] = 25  # as demo_course/autograder.toml
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    try:
        r = engine.grade(os.path.join(ROOT, "demo_course", "submitted", "eve", "matmul", "s1_naive.ipynb"),
                         stage=stages.find("naive"), device="sim", seed=3, cfg=c)
    finally:
        for b in busy:
            b.kill()
            b.wait()
    assert r.score == 6, [(x.name, x.status, x.output[:120]) for x in r.checks]


def test_a_stages_gpu_tool_stops_once_its_correctness_failed(cfg, tmp_path, monkeypatch):
    """racecheck on a racy kernel reports for half a minute, and its verdict is "not run" once the correctness check
    failed: a stage's own GPU tool child is stopped (its `cancel` is set) as soon as the correctness children ended
    with a wrong product, instead of holding the GPU, and the class's next student, for nothing. A run several
    stages share (the grade's one ncu run) and the correctness children themselves are not."""
    from concurrent.futures import Future
    from autograder.engine import children
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((40, 3)).astype(np.float32), rng.standard_normal((3, 6)).astype(np.float32)
    src = types.SimpleNamespace(stage=stages.find("tiled_general"), source=solution_text("tiled_general"))
    cuts = {}
    monkeypatch.setattr(children.sandbox, "run_child", lambda job, limits, inputs, wrapper, timeout, cut, *a:
                        cuts.setdefault(wrapper[0] if wrapper else "runner", cut) and sandbox.ChildResult())
    for verdict, stopped in (("wrong", True), ("right", False)):
        g = StageGrader(src, "gpu", cfg, rng, str(tmp_path))
        correctness = Future()
        g.futures = {"compile": _futures({"compile": _compiled()})["compile"],
                     "correct:rect": (correctness, {"A0": A, "B0": B})}
        cuts.clear()
        job = {"task": "run", "device": "gpu"}
        g.run(job, wrapper=("compute-sanitizer",), later=True)
        g.run(job, wrapper=("ncu",), later=True, shared_with=[StageGrader(src, "gpu", cfg, rng, str(tmp_path))])
        g.run(job)
        assert not any(c.is_set() for c in cuts.values())  # the correctness child still runs
        C = (A.astype(np.float64) @ B).astype(np.float32)
        correctness.set_result(_run_result(A, B, C if verdict == "right" else np.full((40, 6), np.nan, np.float32)))
        assert cuts["compute-sanitizer"].is_set() is stopped, verdict
        assert not cuts["ncu"].is_set() and not cuts["runner"].is_set()
