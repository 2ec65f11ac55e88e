"""The speed check's judges on CPU: the product check of every timed run (Freivalds), the leaderboard's status,
the fills the parent rebuilds, and timing exploits fed to the judge as the facts a child would report."""
import copy
import os
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from autograder import sandbox, stages
from autograder.checks import speed
from autograder import protocol
from autograder.protocol import fill_uniform_host
from autograder.engine.report import Check, Report, to_gradescope
from conftest import ROOT

N = 128


def projection(C, X):
    return (C.astype(np.float64) @ X).astype(np.float32)


def product(seed_a, seed_b, n=N):
    return fill_uniform_host(n, n, seed_a) @ fill_uniform_host(n, n, seed_b)  # float32, as a kernel computes it


class Expected:
    def __init__(self, jobs):
        self.values = {k: speed.expected_projections(*args) for k, args in jobs.items()}

    def get(self, key):
        return self.values[key]


def grader(cfg, stage_name="fast", **speed_cfg):
    c = copy.deepcopy(cfg)
    c["speed"].update({"n": N, "leaderboard_n": N, **speed_cfg})
    stage = stages.find(stage_name)
    points = c["stages"][stage.name]["points"]
    return types.SimpleNamespace(cfg=c, stage=stage, points=points,
                                 check=lambda key, name, share=1.0: Check(stage.name, key, name, points.get(key, 0)))


def child_facts(seeds, X, student_C, ref_C=None, ms=(1.0, 10.0), past_end=None, board=None):
    """A speed child's result: student_C(r) / ref_C(r) give each run's C."""
    runs = len(seeds)
    ref_C = ref_C or (lambda r: product(*seeds[r]))
    timings = {"student": {"median_ms": ms[0], "cv": 0.01, "past_end": past_end or [0] * runs},
               "reference": {"median_ms": ms[1], "cv": 0.01, "past_end": [0] * runs}}
    arrays = {"P_student": np.stack([projection(student_C(r), X) for r in range(runs)]),
              "P_reference": np.stack([projection(ref_C(r), X) for r in range(runs)])}
    facts = {"n": N, "timings": timings}
    if board:
        facts["leaderboard"], board_arrays = board
        arrays.update(board_arrays)
    return sandbox.ChildResult(facts=facts, arrays=arrays)


def judge(cfg, student_C, runs=6, board=None, **kw):
    g = grader(cfg)
    rng = np.random.default_rng(42)
    seeds, X = speed.draw_secrets(rng, N, runs)
    jobs = {"speed": (N, seeds, X)}
    board_spec = None
    if board:
        board_seeds, X_board = speed.draw_secrets(rng, N, 4)
        jobs["board"] = (N, board_seeds, X_board)
        board_spec = {"n": N, "repeats": 4, "seeds": board_seeds}
        kw["board"] = board(board_seeds, X_board)
    result = child_facts(seeds, X, lambda r: student_C(r, seeds), **kw)
    rule = g.cfg["stages"]["fast"]["speed"]
    check = g.check("speed", "speed")
    return speed.judge_facts(g, check, rule, result, Expected(jobs), board_spec), g


def honest(r, seeds):
    return product(*seeds[r])


# -- the product check ----------------------------------------------------------------------

def test_fp32_product_passes_and_errors_are_tiny(cfg):
    check, g = judge(cfg, honest)
    assert check.status == "passed", check.output
    assert "all 6 runs computed the product" in check.output
    assert g.speed["worst_projection_error"] < cfg["speed"]["projection_error"] / 10


def test_skipped_work_in_timed_runs_fails(cfg):
    """Fast because it does nothing on inputs it does not recognise: C stays NaN in every timed run."""
    check, _ = judge(cfg, lambda r, seeds: np.full((N, N), np.nan, np.float32))
    assert check.status == "failed" and check.score == 0
    assert "6 of 6 timed runs produced a wrong C" in check.output
    assert "C held NaN" in check.output and "skips or shortens work" in check.output


def test_output_reused_from_the_first_run_fails(cfg):
    """Right on the first call, then returns at once: C would still hold run 1's product if it were not re-poisoned;
    here the child reports what such a C gives."""
    check, _ = judge(cfg, lambda r, seeds: product(*seeds[0]))
    assert check.status == "failed"
    assert "5 of 6 timed runs produced a wrong C (runs 2, 3, 4, 5, 6" in check.output
    assert "right at first, wrong in later calls" in check.output


def test_fewer_blocks_in_some_runs_fails(cfg):
    def fewer(r, seeds):
        C = product(*seeds[r])
        if r % 2:
            C[-16:, :] = np.nan  # the last row of blocks not launched
        return C
    check, _ = judge(cfg, fewer)
    assert check.status == "failed"
    assert "3 of 6 timed runs produced a wrong C (runs 2, 4, 6" in check.output
    assert "some timed runs only" in check.output


def test_one_tile_shortened_fails(cfg):
    """Skips the last tile of K: a small error, far above the tolerance."""
    def short(r, seeds):
        a, b = (fill_uniform_host(N, N, s) for s in seeds[r])
        return a[:, :-16] @ b[:-16]
    check, _ = judge(cfg, short)
    assert check.status == "failed" and "projection error" in check.output


def test_writes_past_the_end_of_c_fail(cfg):
    check, _ = judge(cfg, honest, past_end=[0, 3, 0, 0, 0, 0])
    assert check.status == "failed" and "runs 2 wrote 3 values past the end of C" in check.output


def test_broken_reference_runs_make_the_check_not_gradable(cfg):
    g = grader(cfg)
    seeds, X = speed.draw_secrets(np.random.default_rng(1), N, 3)
    result = child_facts(seeds, X, lambda r: product(*seeds[r]), ref_C=lambda r: np.zeros((N, N), np.float32))
    check = speed.judge_facts(g, g.check("speed", "speed"), g.cfg["stages"]["fast"]["speed"], result,
                               Expected({"speed": (N, seeds, X)}), None)
    # the grader's own trouble: counted neither way, flagged for a re-grade
    assert check.status == "skipped" and check.regrade and check.score == check.max_score == 0
    assert "not gradable: the reference kernel's own timed runs" in check.output


def reference_alone(cfg, reused):
    """The verdict on a timing child that timed the student's kernel alone (its facts hold no reference)."""
    g = grader(cfg)
    seeds, X = speed.draw_secrets(np.random.default_rng(3), N, 3)
    result = child_facts(seeds, X, lambda r: product(*seeds[r]), ms=(2.0, 10.0))
    del result.facts["timings"]["reference"], result.arrays["P_reference"]
    check = speed.judge_facts(g, g.check("speed", "speed"), g.cfg["stages"]["fast"]["speed"], result,
                              Expected({"speed": (N, seeds, X)}), None, reused)
    return check, g


def test_a_reference_timed_by_an_earlier_check_of_the_grade_is_used_once_given(cfg):
    """The reference kernel is timed once per size in a grade (engine/timing.SharedGpu): a later stage's child times
    the student's kernel alone and the speedup uses the earlier check's checked reference numbers, naming it."""
    check, g = reference_alone(cfg, {"median_ms": 16.0, "cv": 0.001, "stage": "naive"})
    assert check.status == "passed", check.output
    assert g.speed["speedup"] == pytest.approx(8.0) and g.speed["reference_from"] == "naive"
    assert "reference_checked" not in g.speed      # numbers reused are never shared on as this check's own
    assert "as timed by stage naive's speed check of this grade" in check.output


def test_a_child_that_left_the_reference_out_unasked_is_not_gradable(cfg):
    """No reference in the facts and none given by the grade: the grader's trouble, never the student's."""
    check, _ = reference_alone(cfg, None)
    assert check.status == "skipped" and check.regrade and check.score == check.max_score == 0
    assert "did not time the reference kernel" in check.output


def test_a_check_that_timed_the_reference_offers_it_to_later_checks(cfg):
    check, g = judge(cfg, honest)
    assert check.status == "passed" and g.speed["reference_checked"] is True


def test_a_speedup_far_beyond_the_solution_is_marked_for_review(cfg):
    check, g = judge(cfg, honest, ms=(0.05, 10.0))  # 200x the naive kernel
    assert check.status == "passed" and "REVIEW:" in check.output and "review" in g.speed


def test_projection_errors_of_missing_or_wrong_shapes_are_infinite():
    E = np.ones((2, 4, 2))
    assert speed.projection_errors(None, E) == [float("inf")] * 2
    assert speed.projection_errors(np.ones((1, 4, 2), np.float32), E) == [0.0, float("inf")]


def test_secrets_differ_per_grade_and_fit_the_fill():
    a = speed.draw_secrets(np.random.default_rng(1), 8, 3)
    b = speed.draw_secrets(np.random.default_rng(2), 8, 3)
    assert a[0] != b[0] and not np.allclose(a[1], b[1])
    assert all(0 <= s < 2 ** 32 for pair in a[0] for s in pair)
    assert len({s for pair in a[0] for s in pair}) == 6


# -- the leaderboard --------------------------------------------------------------------------

def board_result(student_C, tflops=30.0, cublas_tflops=50.0):
    def make(seeds, X):
        ms = lambda rate: 2.0 * N ** 3 / (rate * 1e12) * 1e3  # noqa: E731 (the parent computes the rates)
        facts = {"n": N, "timings": {"student": {"median_ms": ms(tflops), "past_end": [0] * len(seeds)},
                                     "cublas": {"median_ms": ms(cublas_tflops)}}}
        arrays = {"P_board_student": np.stack([projection(student_C(r, seeds), X) for r in range(len(seeds))]),
                  "P_board_cublas": np.stack([projection(product(*seeds[r]), X) for r in range(len(seeds))])}
        return facts, arrays
    return make


def test_honest_leaderboard_entry_is_ranked(cfg):
    check, g = judge(cfg, honest, board=board_result(honest))
    assert check.status == "passed", check.output
    assert g.leaderboard["status"] == "ranked"


def test_work_skipped_at_the_leaderboard_size_loses_entry_and_speed(cfg):
    check, g = judge(cfg, honest, board=board_result(lambda r, seeds: np.full((N, N), np.nan, np.float32),
                                                     tflops=31814.0))
    assert check.status == "failed" and "leaderboard runs at N=128 are wrong" in check.output
    assert g.leaderboard["status"].startswith("review: the leaderboard runs produced a wrong C")
    report = Report("s", "gpu", 1, checks=[check], leaderboard=[g.leaderboard])
    out = to_gradescope(report)
    assert "leaderboard" not in out, "an entry marked for review is not ranked"
    assert out["extra_data"]["leaderboard"]["status"].startswith("review:")


def test_entry_faster_than_cublas_beside_it_is_marked_for_review(cfg):
    check, g = judge(cfg, honest, board=board_result(honest, tflops=80.0, cublas_tflops=50.0))
    assert check.status == "passed"
    assert g.leaderboard["status"].startswith("review: 80.0 TFLOP/s is more than 1.2x the cuBLAS run")


# -- the fills the parent rebuilds ---------------------------------------------------------

def test_device_fill_equals_host_fill_in_the_simulator_for_large_seeds():
    code = """
import numpy as np
from numba import cuda
from autograder.runner.references import fill_uniform, fill_uniform_host
for seed in (0, 7, 97531, 2**31 + 5, 2**32 - 1):
    X = cuda.device_array((19, 37), np.float32)
    fill_uniform(X, seed)
    assert np.array_equal(X.copy_to_host(), fill_uniform_host(19, 37, seed)), seed
assert not np.array_equal(fill_uniform_host(19, 37, 2**32 - 1), fill_uniform_host(19, 37, 2**32 - 2))
print("same")
"""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert p.stdout.strip() == "same", p.stderr[-2000:]


def test_guarded_inputs_have_nan_guards_before_and_after():
    code = """
import numpy as np
from numba import cuda
from autograder.runner.run import GUARD_NAN_BITS, guarded_input
A = np.arange(35, dtype=np.float32).reshape(5, 7)
buf, view, guard = guarded_input(cuda, np, A)
host = buf.copy_to_host()
assert guard % 64 == 0 and guard >= 64 * 7
assert np.array_equal(view.copy_to_host(), A) and view.shape == (5, 7)
bits = host.view(np.uint32)
assert (bits[:guard] == GUARD_NAN_BITS).all() and (bits[guard + 35:] == GUARD_NAN_BITS).all()
assert len(host) == 2 * guard + 35
print("guarded")
"""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert p.stdout.strip() == "guarded", p.stderr[-2000:]


def test_computed_nan_is_named_as_a_read_outside_a_or_b():
    """What the GPU returns for a kernel that reads past the end of A into the guard: the last row is NaN that the
    kernel computed (not the never-written poison)."""
    from autograder.checks.correct import check_output
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((17, 23)).astype(np.float32), rng.standard_normal((23, 23)).astype(np.float32)
    C = (A.astype(np.float64) @ B).astype(np.float32)
    C[-1] = np.array([0x7FFFFFFF], np.uint32).view(np.float32)[0]  # the GPU's canonical computed NaN
    ok, msg = check_output(C, A, B, 1e-5, 16)
    assert not ok and "NaN (computed by the kernel)" in msg and "it read outside A or B" in msg
    C[-1] = np.nan  # never written: the poison's own bits
    ok, msg = check_output(C, A, B, 1e-5, 16)
    assert not ok and "never written" in msg and "read outside" not in msg


@pytest.mark.parametrize("line", ["from numba.cuda.cudadrv.driver import driver",
                                  "import numba.cuda.cudadrv.driver as drv",
                                  "from numba.cuda import cudadrv",
                                  "from numba import cuda\nx = cuda.cudadrv.driver"])
def test_the_driver_api_is_out_of_reach(line):
    """Persisting-L2 windows and streams of its own need the driver API: the kernel-module grammar forbids it (the
    timing child also resets persisting L2 lines before every flush)."""
    from autograder.grammar import violations
    findings = "\n".join(violations(line + "\n"))
    assert "CUDA driver API" in findings, findings


# -- the timing child end to end, in the simulator ----------------------------------------

SPEED_CHILD = """
import json, os, sys, tempfile
import numpy as np
from autograder.runner import timing
from autograder.child.entry import load_student_module
from autograder.checks import speed
d = tempfile.mkdtemp()
path = os.path.join(d, "s2_tiled.py")
with open(path, "w") as f:
    f.write(sys.stdin.read())
module = load_student_module(path, "s2_tiled")
n = 16
seeds, X = speed.draw_secrets(np.random.default_rng(0), n, 3)
np.savez(os.path.join(d, "in.npz"), X=X)
job = {"n": n, "launcher": "matmul_tiled", "kernel": "matmul_tiled_kernel", "inputs_path": os.path.join(d, "in.npz"),
       "reference": "naive_coalesced", "seeds": seeds, "warmup": 1, "flush_floats": 256, "leaderboard": None,
       "plan": [{"kernel": 0, "grid": [1, 1, 1], "block": [16, 16, 1], "shared": 0, "args": ["A", "B", "C"]}],
       "kernel_names": ["matmul_tiled_kernel"], "time_reference": os.environ.get("TIME_REFERENCE") != "0"}
from autograder.sim.plans import speed_launches
facts, arrays = timing.task_speed(job, None, speed_launches(job, module))
E = speed.expected_projections(n, seeds, X)
print(json.dumps({name: speed.judge_runs(speed.projection_errors(arrays["P_" + name], E), 1e-5,
                                         facts["timings"][name]["past_end"]) for name in facts["timings"]}))
"""


def speed_child_in_simulator(text, time_reference=True):
    import json
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT, "PYTHONWARNINGS": "ignore",
           "TIME_REFERENCE": "1" if time_reference else "0"}
    p = subprocess.run([sys.executable, "-c", SPEED_CHILD], input=text, capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_speed_child_refills_c_before_every_timed_run():
    """A kernel that keeps whatever C already holds (skips when its element is not NaN): without the NaN refill
    before every timed run it would return the warm-up's C in every run. With it, every run computes the product;
    the reference's runs pass the same check (the method's own sanity check)."""
    from course.mutants import mutate
    text = mutate("tiled", ("    acc = float32(0.0)\n", "    if C[row, col] == C[row, col]:\n        return\n"
                                                        "    acc = float32(0.0)\n"))
    out = speed_child_in_simulator(text)
    assert out["student"][0] and out["reference"][0], out
    assert "all 3 runs computed the product" in out["student"][1]


# -- the timing child's two parts, through the real sandbox (simulator) ---------------------

def _timing_job(tmp_path, cfg):
    from autograder import stages
    stage = stages.find("tiled")
    seeds, X = speed.draw_secrets(np.random.default_rng(3), 16, 2)
    job = {"task": "speed", "device": "sim", "module": stage.module,
           "module_path": os.path.join(ROOT, "solutions", stage.filename), "kernel": stage.kernel,
           "launcher": stage.launcher, "n": 16, "seeds": seeds, "warmup": 1, "reference": "naive_coalesced",
           "leaderboard": None, "flush_floats": 256, "projection_columns": 2,
           # the build's plan at n = 16 (the simulator runs the plan; the launcher runs in the build alone)
           "plan": [{"kernel": 0, "grid": [1, 1, 1], "block": [16, 16, 1], "shared": 0, "args": ["A", "B", "C"]}],
           "kernel_names": [stage.kernel]}
    limits = {**cfg["limits"], "address_space_bytes": cfg["limits"]["sim_address_space_bytes"]}
    return job, limits, {"X": X}, seeds, X


def test_timing_child_prepares_then_waits_for_its_turn(tmp_path, cfg):
    """The child says it started, and prepares only once the parent says go (the stage's correctness passed); it
    then says it is prepared and does nothing until the parent's second go. The parent held it a second at each
    wait, and the child's own clock shows both waits before it timed; its runs are right. Its inputs (the secret
    X) are given only with the second go, into the file the sandbox bound at the start."""
    from autograder import sandbox
    job, limits, inputs, seeds, X = _timing_job(tmp_path, cfg)
    said = []

    def turn(ready):
        said.append(ready(120))
        time.sleep(1.0)
        if len(said) == 2:
            ready.give_inputs(inputs)
        return ""
    result = sandbox.run_child(job, limits, None, timeout=120, turn=[turn, turn])
    assert not result.problem, result.problem + result.log
    assert said == [True, True]
    clock = result.facts["clock_s"]
    assert clock["waited for correctness"] >= 0.9 and clock["waited"] >= 0.9, clock
    assert list(clock) == ["waited for correctness", "context", "prepared", "waited", "timed"], clock
    E = speed.expected_projections(16, seeds, X)
    ok, msg = speed.judge_runs(speed.projection_errors(result.arrays["P_student"], E), 1e-5)
    assert ok, msg


@pytest.mark.parametrize("refused_at", [0, 1])
def test_timing_child_refused_its_turn_is_stopped_untimed(tmp_path, cfg, refused_at):
    """When the parent refuses a turn (the stage's correctness failed: the first; the grade stopped or its GPU is
    shared: the second), the child is stopped without timing and the refusal is the result's problem."""
    from autograder import sandbox
    job, limits, inputs, _, _ = _timing_job(tmp_path, cfg)
    asked = []

    def step(i):
        def turn(ready):
            asked.append(i)
            return ready(120) and ("not run: refused" if i == refused_at else "")
        return turn
    result = sandbox.run_child(job, limits, inputs, timeout=120, turn=[step(0), step(1)])
    assert result.problem == "not run: refused" and result.cancelled
    assert "timings" not in result.facts and asked == list(range(refused_at + 1))


def test_speed_child_told_the_reference_is_timed_already_times_the_student_alone():
    """The parent's "go" may say the grade timed the reference at this size already (engine/timing.py): the child
    then times and checks only the student's kernel."""
    from course.mutants import mutate
    out = speed_child_in_simulator(mutate("tiled"), time_reference=False)
    assert list(out) == ["student"] and out["student"][0], out


def test_the_expected_projection_by_blocks_of_rows_is_the_whole_matrices_product():
    """The parent rebuilds each timed run's A and B a block of rows at a time (checks/speed.expected_projection): the
    blocks are the whole matrix's rows (fill_uniform_host's first_row), and the product is the whole one's, also
    where N is not a multiple of the block."""
    n, X = 300, np.random.default_rng(3).standard_normal((300, 2))
    whole_a = fill_uniform_host(n, n, 11)
    assert np.array_equal(fill_uniform_host(7, n, 11, first_row=250), whole_a[250:257])
    expected = whole_a.astype(np.float64) @ (fill_uniform_host(n, n, 12).astype(np.float64) @ X)
    got = speed.expected_projection(n, 11, 12, X, block=128)
    assert got.shape == (n, 2) and np.allclose(got, expected, rtol=1e-12, atol=1e-9)
    for seed in (0, 2**32 - 1, 2**63 - 1):      # the bits and their affine map, whole seeds' range, a block of 1
        assert np.allclose(protocol.uniform_times(n, seed, X, block=1),
                           fill_uniform_host(n, n, seed).astype(np.float64) @ X, rtol=1e-12, atol=1e-9)
    assert not np.allclose(speed.expected_projection(n, 11, 13, X, block=128), expected)  # another run's seed
