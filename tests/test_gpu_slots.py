"""A class at the speed of its GPUs, with fake GPUs (no GPU needed): the grades of one GPU share it for their runners
and GPU tools, across grading processes, and each timing has it alone; the workers' CPU work overlaps it all; GPUs
never wait for each other; ncu runs one at a time per GPU, not per host."""
import json
import multiprocessing
import os
import threading
import time

import pytest

from autograder.gpu import slot, tools

CPU_S, SHARED_S, ALONE_S = 0.5, 0.6, 0.2


def _worker(folder, gpu, name, grades, log, delay=0.0, shared_s=SHARED_S):
    """A grading process of a class run, reduced to its phases: the CPU phase (reading, grammar, builds) holds
    nothing; the GPU phase holds the GPU shared (runners, GPU tools), then alone (timing), as engine.grade does."""
    spans = []
    time.sleep(delay)
    for i in range(grades):
        cpu = time.monotonic()
        time.sleep(CPU_S)  # the builds of the next student
        with slot.hold_gpu(key=gpu, folder=folder):
            start = time.monotonic()
            time.sleep(shared_s)
            asked = time.monotonic()
            slot.hold_alone(key=gpu, folder=folder)
            alone = time.monotonic()
            time.sleep(ALONE_S)
            spans.append({"worker": name, "gpu": gpu, "cpu": [cpu, start], "shared": [start, asked],
                          "asked": asked, "alone": [alone, time.monotonic()]})
    with open(log, "w") as f:
        json.dump(spans, f)


def _run(tmp_path, workers):
    """Run [(gpu, name, grades[, delay, shared_s])] as spawned processes; returns (every grade's spans, wall)."""
    ctx = multiprocessing.get_context("spawn")
    procs, logs = [], []
    began = time.monotonic()
    for gpu, name, grades, *more in workers:
        log = str(tmp_path / f"{name}.json")
        logs.append(log)
        procs.append(ctx.Process(target=_worker, args=(str(tmp_path), gpu, name, grades, log, *more)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    wall = time.monotonic() - began
    return [s for log in logs for s in json.load(open(log))], wall


def _overlap(a, b):
    return min(a[1], b[1]) - max(a[0], b[0])


def test_three_workers_share_one_gpu_and_each_timing_has_it_alone(tmp_path):
    spans, _ = _run(tmp_path, [("GPU-fake-0", w, 3) for w in "abc"])
    for a in spans:
        for b in spans:
            if a is not b:
                for phase in ("shared", "alone"):
                    assert _overlap(a["alone"], b[phase]) <= 0.01, f"a timing beside another grade's {phase}: {a}, {b}"
    # the runners and tools of two grades ran on the GPU at once, and a worker's builds beside another's GPU phase
    assert any(_overlap(a["shared"], b["shared"]) > 0.3 for a in spans for b in spans if a["worker"] != b["worker"])
    assert any(_overlap(a["cpu"], b["shared"]) > 0.2 for a in spans for b in spans if a["worker"] != b["worker"])
    # nine grades: their GPU phases one at a time would take 9 x 0.8 s = 7.2 s (about 5 s here)
    busy = max(s["alone"][1] for s in spans) - min(s["cpu"][0] for s in spans)
    assert busy < 9 * (SHARED_S + ALONE_S) * 0.85, busy


def test_a_timing_waits_for_the_phases_in_flight_not_for_later_ones(tmp_path):
    """b asks for the GPU alone while a's long GPU phase runs; c's grade comes later and waits behind b's timing
    (the gate), so a stream of shared phases never keeps a timing waiting."""
    spans, _ = _run(tmp_path, [("GPU-fake-0", "a", 1, 0.0, 3.0), ("GPU-fake-0", "b", 1, 0.0, 0.3),
                               ("GPU-fake-0", "c", 1, 1.5, 0.3)])
    of = {s["worker"]: s for s in spans}
    assert of["b"]["asked"] < of["c"]["shared"][0]  # b asked before c came
    assert of["b"]["alone"][0] >= of["a"]["shared"][1] - 0.01  # b waited for a's phase in flight
    assert of["c"]["shared"][0] >= of["b"]["alone"][1] - 0.01  # c waited for b's timing, though a was shared


def test_a_process_holds_its_gpu_once_for_all_its_threads(tmp_path):
    """The grade and its grader-kernel compile (engine/kernels.py) are one process: the second hold does not wait
    for the first (it would wait for ever: the grade waits for the compile), and the grade holds the GPU alone
    only once the compile's hold ended."""
    folder = str(tmp_path)
    with slot.hold_gpu(key="GPU-fake-0", folder=folder):
        waited, compiled = [], threading.Event()

        def compile_():
            with slot.hold_gpu(key="GPU-fake-0", folder=folder, waited=waited):
                time.sleep(0.3)
                compiled.set()
        t = threading.Thread(target=compile_)
        t.start()
        time.sleep(0.1)
        slot.hold_alone(key="GPU-fake-0", folder=folder)
        assert compiled.is_set()
        t.join(5)
        assert not t.is_alive() and waited and waited[0] < 1
    with pytest.raises(RuntimeError):
        slot.hold_alone(key="GPU-fake-0", folder=folder)


def test_gpus_never_wait_for_each_other(tmp_path):
    """One worker on each of two GPUs: nobody else is on either GPU, so neither ever waits for its lock, shared or
    alone (a lock per host would make one timing wait for the other's)."""
    spans, _ = _run(tmp_path, [("GPU-fake-0", "a", 3), ("GPU-fake-1", "b", 3)])
    assert all(s["alone"][0] - s["asked"] < 0.1 for s in spans), spans


def test_ncu_runs_one_at_a_time_per_gpu(tmp_path, monkeypatch):
    """Two ncu runs on one GPU at once left the later one without counters; on two GPUs both keep theirs
    (BENCHMARKS.md), so the lock is named by the GPU."""
    monkeypatch.setattr(tools.tempfile, "gettempdir", lambda: str(tmp_path))
    inside, overlap = {}, []

    def run(gpu):
        monkeypatch_key = slot._UUIDS
        with slot.GpuLock("ncu", key=gpu, folder=str(tmp_path)):
            if inside.get(gpu):
                overlap.append(gpu)
            inside[gpu] = inside.get(gpu, 0) + 1
            time.sleep(0.3)
            inside[gpu] -= 1
        return monkeypatch_key
    began = time.monotonic()
    threads = [threading.Thread(target=run, args=(g,)) for g in ("GPU-a", "GPU-a", "GPU-b", "GPU-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == []
    assert time.monotonic() - began < 0.9  # GPU-a's two and GPU-b's two side by side: 0.6 s, not 1.2 s


def test_the_lock_is_the_gpus_by_uuid(monkeypatch):
    """An index and a UUID that name one GPU share its lock (nvidia-smi says the UUID)."""
    monkeypatch.setattr(slot, "_UUIDS", {})
    monkeypatch.setattr(slot, "listed_uuid", lambda sel: "GPU-1234" if sel in ("0", "GPU-12") else None)
    assert slot.gpu_key({"CUDA_VISIBLE_DEVICES": "0"}) == slot.gpu_key({"CUDA_VISIBLE_DEVICES": "GPU-12"}) == "GPU-1234"
    assert slot.gpu_key({"CUDA_VISIBLE_DEVICES": "1"}) == "1"  # nvidia-smi could not say: the entry itself


def test_a_grade_builds_before_it_takes_the_gpu(monkeypatch):
    """engine.grade starts every build (no CUDA context) before it waits for the GPU, and every other child
    after: the builds of the next student run while another grade holds the GPU."""
    from autograder import engine
    from autograder.engine import tiers
    events = []

    def start_compile(self, pool):
        events.append(("build", self.stage.name))
        self.futures = {}
        return {}

    def start_checks(self, pool, waiting=None):
        events.append(("checks", self.stage.name))
        return {}

    class Held:
        def __init__(self, waited=None):
            pass

        def __enter__(self):
            events.append(("gpu", ""))

        def __exit__(self, *exc):
            events.append(("released", ""))
    monkeypatch.setattr(tiers.GpuStageGrader, "start_compile", start_compile)
    monkeypatch.setattr(tiers.GpuStageGrader, "start_checks", start_checks)
    monkeypatch.setattr(engine, "hold_gpu", Held)
    monkeypatch.setattr(engine, "grader_folder", lambda cfg: None)
    monkeypatch.setattr(engine, "_judge_all", lambda *a, **k: events.append(("judged", "")))
    engine.grade(os.path.join(os.path.dirname(__file__), "..", "solutions"), device="gpu", seed=1)
    kinds = [k for k, _ in events]
    assert kinds == ["build"] * 5 + ["gpu"] + ["checks"] * 5 + ["judged", "released"], events


def test_a_grade_holds_its_gpu_alone_only_once_its_other_children_ended(monkeypatch):
    """engine.grade's quiet: the grade's runners and tools end first (a context still alive would be another
    grade's "other process" while this one times), then it holds the GPU alone, then its timing child may make
    its context (shared_gpu.alone)."""
    from concurrent.futures import Future
    from autograder import engine
    from autograder.engine import tiers, timing
    events, tools_of = [], []

    def start_compile(self, pool):
        self.futures = {}
        return {}

    def start_checks(self, pool, waiting=None):
        f = Future()
        threading.Timer(0.3, lambda: (events.append("tool ended"), f.set_result(None))).start()
        tools_of.append(f)
        return {"races": f}

    class Held:
        def __init__(self, waited=None):
            pass

        def __enter__(self):
            events.append("shared")

        def __exit__(self, *exc):
            events.append("released")
    real, made = timing.SharedGpu, []
    monkeypatch.setattr(timing, "SharedGpu", lambda alone: made.append(real(alone=alone)) or made[-1])
    monkeypatch.setattr(tiers.GpuStageGrader, "start_compile", start_compile)
    monkeypatch.setattr(tiers.GpuStageGrader, "start_checks", start_checks)
    monkeypatch.setattr(engine, "hold_gpu", Held)
    monkeypatch.setattr(engine, "hold_alone", lambda waited=None: events.append(
        "alone" if all(f.done() for f in tools_of) else "alone while a child ran"))
    monkeypatch.setattr(engine, "grader_folder", lambda cfg: None)
    monkeypatch.setattr(engine, "_judge_all", lambda planned, report, progress, quiet: (
        quiet(), events.append("timing may start" if made[0].alone.is_set() else "no timing")))
    engine.grade(os.path.join(os.path.dirname(__file__), "..", "solutions"), device="gpu", seed=1)
    assert events == ["shared"] + ["tool ended"] * 5 + ["alone", "timing may start", "released"], events

