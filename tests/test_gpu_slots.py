"""A class at the speed of its GPUs, with fake GPUs (no GPU needed): a grade's GPU phase holds its GPU alone, across
grading processes, while the other worker of that GPU does its CPU work; GPUs never wait for each other; ncu runs
one at a time per GPU, not per host."""
import json
import multiprocessing
import os
import threading
import time

from autograder.gpu import slot, tools

CPU_S, GPU_S = 0.6, 0.6


def _worker(folder, gpu, name, grades, log):
    """A grading process of a class run, reduced to its two phases: the CPU phase (reading, grammar, builds) needs
    no GPU; the GPU phase (runners, tools, timing) holds the GPU as engine.grade does."""
    spans = []
    for i in range(grades):
        cpu = time.monotonic()
        time.sleep(CPU_S)  # the builds of the next student
        with slot.hold_gpu(key=gpu, folder=folder):
            start = time.monotonic()
            time.sleep(GPU_S)
            spans.append({"worker": name, "gpu": gpu, "cpu": [cpu, start], "held": [start, time.monotonic()]})
    with open(log, "w") as f:
        json.dump(spans, f)


def _run(tmp_path, workers):
    """Run [(gpu, name, grades)] as spawned processes; returns (every GPU phase, wall seconds)."""
    ctx = multiprocessing.get_context("spawn")
    procs, logs = [], []
    began = time.monotonic()
    for gpu, name, grades in workers:
        log = str(tmp_path / f"{name}.json")
        logs.append(log)
        procs.append(ctx.Process(target=_worker, args=(str(tmp_path), gpu, name, grades, log)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    wall = time.monotonic() - began
    return [s for log in logs for s in json.load(open(log))], wall


def _overlap(a, b):
    return min(a[1], b[1]) - max(a[0], b[0])


def test_two_workers_take_turns_at_one_gpu_and_overlap_their_cpu_work(tmp_path):
    spans, wall = _run(tmp_path, [("GPU-fake-0", "a", 3), ("GPU-fake-0", "b", 3)])
    held = sorted(s["held"] for s in spans)
    for x, y in zip(held, held[1:]):
        assert y[0] >= x[1] - 0.01, f"two GPU phases on one GPU at once: {x} and {y}"
    # a worker's CPU phase ran while the other held the GPU
    overlapped = [a for a in spans for b in spans if a["worker"] != b["worker"] and _overlap(a["cpu"], b["held"]) > 0.3]
    assert overlapped, spans
    # six grades on one GPU: the GPU phases back to back (3.6 s) plus one CPU phase, not six of each (7.2 s)
    assert wall < 6 * (CPU_S + GPU_S) * 0.85, wall


def test_gpus_never_wait_for_each_other(tmp_path):
    spans, _ = _run(tmp_path, [("GPU-fake-0", "a", 2), ("GPU-fake-1", "b", 2)])
    on = {g: [s["held"] for s in spans if s["gpu"] == g] for g in ("GPU-fake-0", "GPU-fake-1")}
    assert any(_overlap(x, y) > 0.3 for x in on["GPU-fake-0"] for y in on["GPU-fake-1"]), on


def test_a_process_holds_its_gpu_once_for_all_its_threads(tmp_path):
    """The grade and its grader-kernel compile (engine/kernels.py) are one process: the second hold does not wait
    for the first (it would wait for ever: the grade waits for the compile)."""
    with slot.hold_gpu(key="GPU-fake-0", folder=str(tmp_path)):
        waited = []
        t = threading.Thread(target=lambda: slot.hold_gpu(key="GPU-fake-0", folder=str(tmp_path),
                                                          waited=waited).__enter__())
        t.start()
        t.join(5)
        assert not t.is_alive() and waited and waited[0] < 1


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
    monkeypatch.setattr(slot, "gpu_state", lambda sel: {"uuid": "GPU-1234"} if sel in ("0", "GPU-1234") else {})
    assert slot.gpu_key({"CUDA_VISIBLE_DEVICES": "0"}) == slot.gpu_key({"CUDA_VISIBLE_DEVICES": "GPU-1234"}) == "GPU-1234"
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
