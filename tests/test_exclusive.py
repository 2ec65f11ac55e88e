"""GPU exclusivity around the speed check, with a fake nvidia-smi on PATH (no GPU needed)."""
import os
import subprocess
import sys
import textwrap
import threading
import time
import types

import numpy as np
import pytest

from autograder import sandbox
from autograder.gpu import exclusive

FAKE = r'''#!/bin/sh
# fake nvidia-smi: prints the files the test wrote; logs its arguments
echo "$@" >> "{d}/args.log"
case "$*" in
  *--query-gpu=*) cat "{d}/gpu.csv" ;;
  *--query-compute-apps=*) cat "{d}/apps.csv" 2>/dev/null ;;
  *) echo "GPU 0: Fake" ;;
esac
'''


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """A fake nvidia-smi; write apps.csv / gpu.csv in `smi.dir` to set what it reports."""
    d = tmp_path / "smi"
    d.mkdir()
    script = d / "nvidia-smi"
    script.write_text(FAKE.format(d=d))
    script.chmod(0o755)
    (d / "gpu.csv").write_text("NVIDIA H100 80GB HBM3, GPU-1234, 1980, 1980, 41, 0\n")
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    return types.SimpleNamespace(dir=d, apps=lambda text: (d / "apps.csv").write_text(text),
                                 args=lambda: (d / "args.log").read_text())


def test_device_selector_follows_cuda_visible_devices():
    assert exclusive.device_selector({}) == "0"
    assert exclusive.device_selector({"CUDA_VISIBLE_DEVICES": "3,1"}) == "3"
    assert exclusive.device_selector({"CUDA_VISIBLE_DEVICES": "GPU-abc-123"}) == "GPU-abc-123"


def test_gpu_state_is_parsed_and_the_pinned_gpu_asked(smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    state = exclusive.gpu_state(exclusive.device_selector())
    assert state == {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1234", "sm_clock_mhz": 1980.0,
                     "max_sm_clock_mhz": 1980.0, "temperature_c": 41.0, "utilization_percent": 0.0}
    assert "-i 2" in smi.args()


def test_another_process_makes_the_gpu_shared(smi):
    smi.apps("4242, python3, 1024\n")
    facts = exclusive.Watch(interval=0.05, settle_s=0.3).start().stop()
    assert facts["shared"] and facts["others"] == [{"pid": 4242, "name": "python3", "used_memory_mib": 1024.0}]
    assert facts["before"]["name"] == "NVIDIA H100 80GB HBM3" and facts["after"]["temperature_c"] == 41.0
    assert exclusive.describe_others(facts["others"]) == "pid 4242 (python3)"


def test_our_own_processes_are_not_others(smi):
    """The timing child is a descendant of the grader: listed by nvidia-smi, but not another user of the GPU."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        smi.apps(f"{os.getpid()}, python3, 10\n{child.pid}, python3, 500\n")
        facts = exclusive.Watch(interval=0.05).start().stop()
        assert not facts["shared"] and facts["others"] == [] and facts["problem"] == ""
    finally:
        child.kill()
        child.wait()


def _stranger():
    """A process that is not a descendant of this one (its parent shell exits at once): another user's process."""
    out = subprocess.run(["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
    pid = int(out.stdout.strip())
    time.sleep(0.1)
    return pid


def test_a_process_seen_only_while_timing_counts(smi):
    stranger = _stranger()
    try:
        smi.apps("")
        watch = exclusive.Watch(interval=0.05).start()
        # while the child runs: a visible stranger, and a pid this process cannot see (a host pid in a container)
        smi.apps(f"{stranger}, cublas_load, 2000\n999999999, python3, 100\n")
        time.sleep(0.4)
        smi.apps("")
        facts = watch.stop()
    finally:
        os.kill(stranger, 9)
    assert facts["shared"] and [a["pid"] for a in facts["others"]] == [stranger] and facts["samples"] >= 3
    assert [a["pid"] for a in facts["unresolved"]] == [999999999]


def test_an_invisible_pid_before_timing_counts(smi):
    smi.apps("999999999, python3, 100\n")
    facts = exclusive.Watch(interval=0.05, settle_s=0.3).start().stop()
    assert facts["shared"] and facts["others"][0]["pid"] == 999999999


def test_our_child_listed_after_it_ended_is_not_another(smi):
    """The driver lists a process until its CUDA context is torn down, after it left /proc: the timing child that
    just ended is still ours at the edge after it (a grade once retried every speed check for this)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    smi.apps(f"{child.pid}, python3, 500\n")
    watch = exclusive.Watch(interval=0.05, settle_s=0.3).start()  # listed while alive: ours
    child.kill()
    child.wait()
    facts = watch.stop()  # still listed, gone from /proc
    assert not facts["shared"] and facts["others"] == []


def test_a_process_that_just_ended_is_not_another_once_it_leaves_the_listing(smi):
    """A pid gone from /proc that leaves the listing within settle_s (one of our earlier children tearing down its
    context) is not another's; one still listed then is (test_an_invisible_pid_before_timing_counts)."""
    smi.apps("999999998, python3, 100\n")
    clear = threading.Timer(0.3, lambda: smi.apps(""))
    clear.start()
    started = time.monotonic()
    facts = exclusive.Watch(interval=0.05, settle_s=2.0).start().stop()
    clear.join()
    assert not facts["shared"] and 0.25 < time.monotonic() - started < 2.0


def test_a_pid_of_ours_reused_by_another_process_counts(smi, monkeypatch):
    """Remembering our ended children must not hide another process that got one of their pids."""
    stranger = _stranger()
    monkeypatch.setattr(exclusive, "_OURS", {stranger})
    try:
        smi.apps(f"{stranger}, cublas_load, 2000\n")
        facts = exclusive.Watch(interval=0.05, settle_s=0.3).start().stop()
    finally:
        os.kill(stranger, 9)
    assert facts["shared"] and [a["pid"] for a in facts["others"]] == [stranger]


def test_missing_nvidia_smi_is_recorded_not_a_verdict(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = exclusive.Watch(interval=0.05).start().stop()
    assert not facts["shared"] and "nvidia-smi is not on PATH" in facts["problem"]


def take_turns(turn):
    """What a timing child's turns answer when it is ready at once: the first refusal, else the last answer (the
    first part, once the stage's correctness passed, goes on with no fields)."""
    *first, last = turn
    for step in first:
        answer = step(lambda seconds: True)
        if answer:
            return answer
    return last(lambda seconds: True)


def test_shared_gpu_speed_check_is_not_gradable_after_one_retry(smi, cfg, monkeypatch, tmp_path):
    """The speed check never passes or fails on numbers taken under contention: it retries once, then says who
    shared the GPU, and results.json records it."""
    from autograder.engine import timing
    from autograder.engine.report import Check, Report, to_gradescope
    smi.apps("31337, other_training_job, 40000\n")
    c = {**cfg, "speed": {**cfg["speed"], "n": 64, "shared_retry_s": 0.1, "exclusive_poll_s": 0.05,
                                 "exclusive_settle_s": 0.2}}
    runs = []

    def run(job, inputs, timeout=None, what="", turn=None):
        runs.append(job)
        assert take_turns(turn) == {"time_reference": True}, "goes at once and times the reference"
        return sandbox.ChildResult(facts={"timings": {}})
    stage = types.SimpleNamespace(name="tiled", challenge=False)
    g = types.SimpleNamespace(cfg=c, stage=stage, rng=np.random.default_rng(0), run=run,
                              gate_reason=lambda key: "", work_timeout=lambda flops: 30,
                              runner_job=lambda task, shapes, **kw: ({"task": task, "device": "gpu", **kw}, ""),
                              check=lambda key, name, share=1.0: Check("tiled", key, name, 2))
    check = timing.judge(g)
    assert len(runs) == 2, "one retry"
    assert check.status == "skipped" and check.score == 0 and check.max_score == 0
    assert "not gradable: the GPU was shared with another process (pid 31337 (other_training_job))" in check.output
    report = Report("s", "gpu", 1, checks=[check], gpu={"tiled": g.gpu})
    gpu = to_gradescope(report)["extra_data"]["gpu"]
    assert gpu["name"] == "NVIDIA H100 80GB HBM3" and gpu["shared"] is True
    assert gpu["stages"]["tiled"]["others"][0]["pid"] == 31337
    assert gpu["stages"]["tiled"]["before_sm_clock_mhz"] == 1980.0 and gpu["stages"]["tiled"]["attempts"] == 2


def test_a_timing_right_after_another_starts_from_its_after_edge(smi):
    """Two stages timed one after the other: the second watch starts from the first one's after edge (two nvidia-smi
    calls fewer), keeps what that edge saw, and still takes its own stop edge; a stale edge is not reused."""
    smi.apps("")
    first = exclusive.Watch(interval=10).start()
    first.stop()
    calls = smi.args().count("\n")
    second = exclusive.Watch(interval=10).start(after=first)
    assert smi.args().count("\n") == calls, "no nvidia-smi call at the start"
    smi.apps("4242, python3, 1024\n")
    facts = second.stop()
    assert facts["shared"] and facts["before"]["name"] == "NVIDIA H100 80GB HBM3" and facts["samples"] == 2
    third = exclusive.Watch(interval=10).start(after=second)  # the process is still listed: shared from the start
    assert third.others and smi.args().count("\n") > calls
    smi.apps("")
    assert third.stop()["shared"]
    stale = exclusive.Watch(interval=10).start(after=third, fresh_s=0.0)
    assert not stale.others and not stale.stop()["shared"]


def test_a_grade_finds_its_gpu_shared_once_not_once_per_stage(smi, cfg):
    """Stage tiled's speed check finds the GPU shared twice; stage fast's, later in the same grade, says so at once:
    it starts no timing child, does not wait shared_retry_s again, and counts neither way (a shared GPU's verdict for
    a five-stage grade took 82.7 s: one retry per stage)."""
    from autograder.engine import timing
    from autograder.engine.report import Check
    smi.apps("31337, other_training_job, 40000\n")
    c = {**cfg, "speed": {**cfg["speed"], "n": 64, "shared_retry_s": 0.5, "exclusive_poll_s": 0.05,
                          "exclusive_settle_s": 0.2}}
    shared = timing.SharedGpu()
    runs = []

    def grader(name):
        def run(job, inputs, timeout=None, what="", turn=None):
            runs.append(name)
            why = take_turns(turn)
            return sandbox.ChildResult(facts={"timings": {}}, problem=why)
        return types.SimpleNamespace(cfg=c, stage=types.SimpleNamespace(name=name, challenge=False),
                                     rng=np.random.default_rng(0), run=run, gate_reason=lambda key: "",
                                     work_timeout=lambda flops: 30, shared_gpu=shared,
                                     runner_job=lambda task, shapes, **kw: ({"task": task, "device": "gpu", **kw}, ""),
                                     check=lambda key, title, share=1.0: Check(name, key, title, 2))
    first = timing.judge(grader("tiled"))
    started = time.monotonic()
    second = timing.judge(grader("fast"))
    assert first.status == "skipped" and "pid 31337" in first.output
    assert second.status == "skipped" and second.max_score == 0
    assert "when stage tiled's speed check timed, twice" in second.output, second.output
    assert runs == ["tiled", "tiled"] and time.monotonic() - started < 0.5, "one retry in the grade"


def test_a_wrong_kernel_fails_speed_also_on_a_gpu_found_shared(smi, cfg):
    """An earlier stage of the grade found the GPU shared; a stage whose correctness failed starts no timing child,
    and its speed check fails for its own kernel: it is not skipped as the GPU's."""
    from autograder.engine import timing
    from autograder.engine.report import Check
    shared = timing.SharedGpu()
    shared.why = "not gradable: the GPU was shared with another process when stage naive's speed check timed"
    asked = []

    def run(job, inputs, timeout=None, what="", turn=None):
        asked.append(len(turn))
        why = take_turns(turn)
        return sandbox.ChildResult(problem=why, cancelled=True)
    g = types.SimpleNamespace(cfg={**cfg, "speed": {**cfg["speed"], "n": 64}},
                              stage=types.SimpleNamespace(name="tiled", challenge=False), rng=np.random.default_rng(0),
                              run=run, gate_reason=lambda key: "not run: the correctness check failed",
                              work_timeout=lambda flops: 30, shared_gpu=shared,
                              runner_job=lambda task, shapes, **kw: ({"task": task, "device": "gpu", **kw}, ""),
                              check=lambda key, title, share=1.0: Check("tiled", key, title, 2))
    check = timing.judge(g)
    assert check.status == "failed" and check.max_score == 2, (check.status, check.output)
    assert "correctness check failed" in check.output and asked == []


def test_a_grade_times_each_reference_once_per_size(smi, cfg):
    """The naive reference takes 12.6 ms a run at N = 2048 and four stages compare with it: the first speed check of
    a grade times it (its runs product-checked, the GPU the grader's alone); the later checks with that reference
    time the student's kernel alone and use those numbers. A stage with another reference times its own."""
    from autograder.engine import timing
    from autograder.engine.report import Check
    from autograder import protocol
    from autograder.protocol import fill_uniform_host
    smi.apps("")
    c = {**cfg, "speed": {**cfg["speed"], "n": 64, "repeats": 3, "exclusive_poll_s": 0.05,
                          "exclusive_settle_s": 0.2}}
    shared, told = timing.SharedGpu(), {}

    def grader(name, student_ms):
        def run(job, inputs, timeout=None, what="", turn=None):
            given = told[name] = take_turns(turn)
            n, X = job["n"], inputs["X"]
            P = np.stack([(fill_uniform_host(n, n, a).astype(np.float64) @ fill_uniform_host(n, n, b) @ X)
                          .astype(np.float32) for a, b in job["seeds"]])
            runs = len(job["seeds"])
            timings = {"student": {"median_ms": student_ms, "cv": 0.0, "times_ms": [student_ms] * runs,
                                   "past_end": [0] * runs}}
            arrays = {"P_student": P}
            if given["time_reference"]:
                timings["reference"] = {"median_ms": 12.0, "cv": 0.0, "times_ms": [12.0] * runs,
                                        "past_end": [0] * runs}
                arrays["P_reference"] = P
            facts = {"nonce": "n", "seconds": 0.1, "n": n, "timings": timings}
            assert protocol.check({**job, **given}, inputs, facts, arrays) == "", "the parent takes this report"
            return sandbox.ChildResult(facts=facts, arrays=arrays)
        return types.SimpleNamespace(cfg=c, stage=types.SimpleNamespace(name=name, challenge=False),
                                     rng=np.random.default_rng(0), run=run, gate_reason=lambda key: "",
                                     work_timeout=lambda flops: 30, shared_gpu=shared, speed=None,
                                     runner_job=lambda task, shapes, **kw: ({"task": task, "device": "gpu", **kw}, ""),
                                     check=lambda key, title, share=1.0: Check(name, key, title, 2))
    graders = [grader("tiled", 2.0), grader("tiled_general", 3.0), grader("tiled_transposed", 2.0)]
    checks = [timing.judge(g) for g in graders]
    assert [ch.status for ch in checks] == ["passed"] * 3, [ch.output for ch in checks]
    assert told == {"tiled": {"time_reference": True}, "tiled_general": {"time_reference": False},
                    "tiled_transposed": {"time_reference": True}}
    assert graders[1].speed["speedup"] == pytest.approx(4.0) and graders[1].speed["reference_from"] == "tiled"
    assert "as timed by stage tiled's speed check of this grade" in checks[1].output
    assert set(shared.references) == {("naive_coalesced", 64), ("transposed_unpadded", 64)}


def test_an_nvidia_smi_that_never_answers_does_not_stop_the_grade(smi):
    """The driver can stop answering; the watch records why it could not check instead of waiting for ever."""
    (smi.dir / "nvidia-smi").write_text("#!/bin/sh\nsleep 30\n")
    started = time.monotonic()
    out, why = exclusive._smi(["--query-compute-apps=pid"], timeout=1)
    assert out is None and why == "nvidia-smi did not answer within 1 s" and time.monotonic() - started < 10


def test_a_child_that_does_not_die_when_killed_does_not_stop_the_grade():
    """A process stuck in a driver call outlives SIGKILL; the sandbox gives up on it after a bounded wait."""
    from autograder.sandbox import run

    class Stuck:
        pid = 2 ** 22 + 12345  # no such process group

        def wait(self, timeout=None):
            assert timeout is not None, "waited without a bound"
            raise subprocess.TimeoutExpired("child", timeout)
    assert run._kill_group(Stuck(), wait=0.1) is False
