"""tools/host_probe.py's ncu-on-every-GPU row says how many GPUs ncu profiled at once, from each run's kernel times
(the probe itself runs on a GPU machine)."""

from tools import host_probe


def fake_batch(spans):
    def batch(prog, gpus, wrapper=(), mode="small", n=64, waits=None, tmpdirs=None, logs=None, extra_env=None):
        out = [({"origin": 100.0, "ctx_at": 101.0, "launches": [[100.0 + b, 100.0 + e]]}, 0, "") for b, e in spans]
        return out, 9.0
    return batch


def test_ncu_across_counts_the_gpus_profiling_at_once(monkeypatch, tmp_path):
    monkeypatch.setattr(host_probe, "ncu_facts", lambda result, log: {"problem": "no log"})
    monkeypatch.setattr(host_probe, "batch", fake_batch([(2, 4), (4, 6), (6, 8)]))
    runs, wall, busiest = host_probe.ncu_across("prog", "ncu", 64, str(tmp_path), [0, 1, 2])
    assert busiest == 1 and wall == 9.0 and [r[4] for r in runs] == [[[2.0, 4.0]], [[4.0, 6.0]], [[6.0, 8.0]]]
    monkeypatch.setattr(host_probe, "batch", fake_batch([(2, 5), (3, 6), (7, 8)]))
    assert host_probe.ncu_across("prog", "ncu", 64, str(tmp_path), [0, 1, 2])[2] == 2


def test_beside_smi_lists_the_first_gpu_only_while_the_tool_runs_beside(monkeypatch, tmp_path):
    import time
    from autograder.gpu import exclusive
    asked = []
    monkeypatch.setattr(exclusive, "compute_apps", lambda selector: asked.append(selector) or time.sleep(0.01))

    sizes = []

    def batch(prog, gpus, wrapper=(), mode="small", n=64, waits=None, tmpdirs=None, logs=None, extra_env=None):
        sizes.append(n)
        time.sleep(0.05)
        return [({"origin": 0.0, "ctx": 0.5, "ctx_at": 0.5, "launches": []}, 0, "")], 0.05
    monkeypatch.setattr(host_probe, "batch", batch)
    rows = host_probe.beside_smi("prog", [0, 3], "sanitizer", None, 2048, str(tmp_path), runs=2)
    assert set(sizes) == {320}  # racecheck at the grader's size for it: at 2048 it ran for minutes
    assert [(r[0], r[1]) for r in rows] == [("racecheck", "alone"), ("racecheck", "beside nvidia-smi")]
    assert rows[0][4] == 0 < rows[1][4] == len(asked) and set(asked) == {"0"}
    assert rows[1][3] == [0.5, 0.5]


def test_cpu_rows_run_the_loop_in_ever_more_processes_at_once(monkeypatch):
    monkeypatch.setattr(host_probe.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(host_probe, "CPU_PROG", "print(0.25)")
    rows = host_probe.cpu_rows(runs=1)
    assert [k for k, _, _ in rows] == [1, 2, 4, 8] and all(took == [0.25] * k for k, took, _ in rows)
