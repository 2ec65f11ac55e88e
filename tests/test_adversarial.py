"""Hostile submissions: each attack gets the verdict it must get, and a
good submission graded right after it still gets full marks.

Two levels, see tests/adversarial/README.md:
- graded: the whole grader, static scan included (`grade_text`);
- sandbox only: `sandbox.run_child` on the file with the scan bypassed, once per
  sandbox backend (bwrap, and the unshare fallback); a backend this machine
  cannot run is skipped with the reason. The good submission after these runs
  in the same backend as one child over every simulator shape of a grade
  (`good_child_after`: a whole grade after each would double the suite's time).
GPU-only cases are at the end, skipped with the reason where there is no GPU.
"""
import copy
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest

from autograder import engine, sandbox, stages
from autograder.checks import correct as verdicts
from autograder.sandbox import backends, box, view
from conftest import ROOT, SOLUTIONS, by_key, mutate, planned
from course.mutants import KNOWN_BAD

ADV = os.path.join(ROOT, "tests", "adversarial")
NAIVE = stages.find("naive")
BACKENDS = ("bwrap", "unshare")
NO_GPU = "no NVIDIA GPU on this machine: GPU-tier adversarial case, run by `make gpu-check` on the GPU machine"


def read(name, **fill):
    with open(os.path.join(ADV, name), encoding="utf-8") as f:
        text = f.read()
    for key, value in fill.items():
        text = text.replace(f"@@{key}@@", str(value))
    assert "@@" not in text, f"{name}: placeholder left unfilled"
    return text


def require_backend(name):
    got, why = sandbox.backend(name)
    if got != name:
        hint = " (install the Debian package bubblewrap: apt-get install -y bubblewrap)" if name == "bwrap" else ""
        pytest.skip(f"the {name} sandbox cannot run here: {why}{hint}")


def require_sandbox():
    """Graded cases that attack the machine run only where the default setting gives a sandbox."""
    got, why = sandbox.backend("auto")
    if got == "none":
        pytest.skip(f"no sandbox on this machine ({why}): this attack would reach the machine itself")


@pytest.fixture(params=BACKENDS)
def backend(request):
    require_backend(request.param)
    return request.param


def sim_limits(cfg, **extra):
    limits = dict(cfg["limits"])
    return {**limits, "address_space_bytes": limits["sim_address_space_bytes"], **extra}


def run_module(tmp_path, cfg, text, backend, timeout=None, dirs=(), **limits):
    """Run `text` as a stage-1 module as the grader does, with no static scan: the build child (the one child that
    calls the launcher) records its plan, then one simulator child runs it; (result, A, B), where result is the
    simulator child's, or the build's where that produced no plan (the module's attack stopped it there)."""
    folder = tmp_path / "module"
    folder.mkdir(exist_ok=True)
    path = folder / NAIVE.filename
    path.write_text(text, encoding="utf-8")
    rng = np.random.default_rng(7)
    A = rng.standard_normal((5, 3)).astype(np.float32)
    B = rng.standard_normal((3, 4)).astype(np.float32)
    job = {"task": "run", "device": "sim", "module": NAIVE.module, "module_path": str(path),
           "kernel": NAIVE.kernel, "launcher": NAIVE.launcher, "count": 1}
    job, built = planned(job, [(5, 3, 4)], cfg, {**cfg["limits"], "sandbox": backend, **limits}, timeout)
    if built is not None:
        assert built.sandbox == backend
        return built, A, B
    result = sandbox.run_child(job, sim_limits(cfg, sandbox=backend, **limits), {"A0": A, "B0": B}, timeout=timeout,
                               dirs=dirs)
    assert result.sandbox == backend
    return result, A, B


def good_after(cfg, backend=None):
    """Grade solutions/s1_naive.py now: it must get full marks."""
    c = copy.deepcopy(cfg)
    c["limits"]["jobs"] = 2
    if backend:
        c["limits"]["sandbox"] = backend
    report = engine.grade(os.path.join(SOLUTIONS, NAIVE.filename), stage=NAIVE, device="sim", seed=99, cfg=c)
    assert report.max_score > 0 and report.score == report.max_score, "\n".join(
        f"{c.status} {c.name}: {c.output}" for c in report.checks)


def good_child_after(cfg, backend):
    """The naive solution right after, in the same sandbox: every simulator shape correct (one child, all
    the shapes a grade runs: the cheap form of good_after for the sandbox-only cases)."""
    rng = np.random.default_rng(11)
    inputs = {}
    shapes = [s for group in NAIVE.sim_shape_groups(16).values() for s in group]
    for i, (M, K, N) in enumerate(shapes):
        inputs[f"A{i}"] = rng.standard_normal((M, K)).astype(np.float32)
        inputs[f"B{i}"] = rng.standard_normal((K, N)).astype(np.float32)
    job = {"task": "run", "device": "sim", "module": NAIVE.module, "module_path": os.path.join(SOLUTIONS, NAIVE.filename),
           "kernel": NAIVE.kernel, "launcher": NAIVE.launcher, "count": len(shapes)}
    job, _ = planned(job, shapes, cfg, {**cfg["limits"], "sandbox": backend})
    result = sandbox.run_child(job, sim_limits(cfg, sandbox=backend), inputs)
    assert not result.problem and result.sandbox == backend, result.problem
    for i, facts in enumerate(result.facts["shapes"]):
        assert "error" not in facts and not facts["writes_past_end"], facts
        ok, message = verdicts.check_output(result.arrays[f"C{i}"], inputs[f"A{i}"], inputs[f"B{i}"],
                                            cfg["grading"]["relative_error"], None)
        assert ok, message
    assert len(result.facts["shapes"]) == len(shapes)


def assert_clean(result, *, held=0):
    """Nothing the module tried got through, and it said so `held` times at least."""
    assert "BROKEN" not in result.log, result.log
    assert result.log.count("HELD") >= held, result.log


def correct(result, A, B):
    return (not result.problem and "error" not in result.facts["shapes"][0]
            and np.allclose(result.arrays["C0"], A.astype(np.float64) @ B, atol=1e-5))


def shortcut(report):
    return [c for c in report.checks if c.key == "shortcuts"][0]


def failed(report, key):
    checks = by_key(report, key)
    assert checks and all(c.status == "failed" and c.score == 0 for c in checks), \
        " | ".join(f"{c.status}: {c.output}" for c in checks)
    return "\n".join(c.output for c in checks)


# -- output forgery --------------------------------------------------------------------

def test_printed_fake_results_are_ignored(grade_text, tmp_path, cfg):
    """Graded: the grammar zeroes a module that runs code at import. Past the grammar, the printed report is
    only log text: the kernel's own output is judged, and it computed nothing."""
    r = grade_text("naive", read("forge_print.py"))
    assert "a call at module level (print(" in shortcut(r).output and r.score == 0
    assert all("8 / 8" not in c.output for c in r.checks)
    result, A, B = run_module(tmp_path, cfg, read("forge_print.py"), sandbox.backend("auto")[0])
    assert "8 / 8 points" in result.log and not correct(result, A, B)
    good_after(cfg)


def test_fake_results_json_is_not_written(grade_text, cfg, tmp_path):
    require_sandbox()
    target = tmp_path / "results.json"
    r = grade_text("naive", read("forge_results_json.py", RESULTS=target))
    assert "try: a function body holds" in shortcut(r).output and r.score == 0
    failed(r, "correct")
    assert not target.exists()
    good_after(cfg)


@pytest.mark.parametrize("name, why", [
    ("forge_result_file.py", "not written by the grader (forged or tampered output)"),
    ("forge_result_pickle.py", "could not be read"),
])
def test_forged_result_file_is_not_gradable(tmp_path, cfg, backend, name, why):
    result, _, _ = run_module(tmp_path, cfg, read(name), backend)
    assert result.problem.startswith("not gradable: ") and why in result.problem, result.problem
    assert not result.facts and not result.arrays
    good_child_after(cfg, backend)


def test_oversized_result_is_not_gradable(tmp_path, cfg, backend):
    result, _, _ = run_module(tmp_path, cfg, read("forge_result_huge.py"), backend, result_bytes=2**20)
    assert result.problem == "not gradable: the check's result was larger than any real result"
    good_child_after(cfg, backend)


# -- exits and kills ---------------------------------------------------------------------

NAIVE_LAUNCH = "    matmul_naive_kernel[blocks, (BLOCK, BLOCK)](A, B, C)"


@pytest.mark.parametrize("replacement, status", [
    ((NAIVE_LAUNCH, "    import sys\n    sys.exit(3)"), 3),
    (("BLOCK = 16", "import os\nos._exit(0)\nBLOCK = 16"), 0),
    ((NAIVE_LAUNCH, "    import os\n    os._exit(0)"), 0),
], ids=["sys.exit in the launcher", "os._exit at import", "os._exit in the launcher"])
def test_exits_fail_the_check_not_the_grader(tmp_path, cfg, backend, replacement, status):
    """The scan zeroes these (they import sys or os); past the scan, the child's exit is reported, never trusted."""
    result, A, B = run_module(tmp_path, cfg, mutate("naive", replacement), backend)
    assert result.problem.startswith(f"not gradable: the code exited (status {status}) before the check finished")
    good_child_after(cfg, backend)


def test_killing_the_grader_fails(tmp_path, cfg, backend):
    canary = subprocess.Popen(["sleep", "120"])  # a process of the grader's user, outside the sandbox
    try:
        result, A, B = run_module(tmp_path, cfg, read("kill_parent.py"), backend)
        assert canary.poll() is None, "the child killed a process outside its sandbox"
        assert "ALIVE after the kills" in result.log and "HELD: setuid root" in result.log, result.log
        assert correct(result, A, B), result.problem or result.log  # the check itself ran normally
    finally:
        canary.kill()
        canary.wait()
    good_child_after(cfg, backend)


def test_crash_is_reported_by_signal(tmp_path, cfg, backend):
    result, _, _ = run_module(tmp_path, cfg, read("abort_self.py"), backend)
    assert result.problem.startswith("not gradable: the check was killed by signal SIGSEGV"), result.problem
    good_child_after(cfg, backend)


# -- fake results ------------------------------------------------------------------------

@pytest.mark.parametrize("name, why", [
    ("always_equal_return.py", "returned AlwaysEqual; it must write C and return None"),
    ("always_equal_argument.py", "argument 2 of type AlwaysEqual"),
])
def test_fake_result_objects_fail(grade_text, tmp_path, cfg, name, why):
    """Graded: the grammar zeroes a module with a class. Past the grammar, the launch check refuses the object."""
    r = grade_text("naive", read(name))
    assert "a class: a kernel module holds only" in shortcut(r).output and r.score == 0
    assert not any(c.status == "passed" for c in by_key(r, "correct"))
    result, A, B = run_module(tmp_path, cfg, read(name), sandbox.backend("auto")[0])
    assert why in result.facts["shapes"][0]["error"]["message"], result.facts
    good_after(cfg)


@pytest.mark.parametrize("name, why", [
    ("ndarray_subclass.py", "argument 2 of type AlwaysEqualArray"),
    ("object_dtype.py", "argument 2 of type ndarray"),
])
def test_fake_result_arrays_are_zeroed_by_the_grammar_and_refused_at_launch(grade_text, tmp_path, cfg, name, why):
    """Graded: the grammar zeroes them (they make host arrays). Past it, the launch check refuses the array."""
    r = grade_text("naive", read(name))
    assert "numpy may only name dtypes" in shortcut(r).output and r.score == 0
    result, A, B = run_module(tmp_path, cfg, read(name), sandbox.backend("auto")[0])
    assert why in result.facts["shapes"][0]["error"]["message"], result.facts
    good_after(cfg)


def test_a_launch_on_a_stream_of_its_own_is_refused_past_the_grammar(tmp_path, cfg):
    """The grammar has no cuda.stream; past it, the child refuses a launch on another stream (the end event is
    recorded on the default one)."""
    text = mutate("naive", (NAIVE_LAUNCH, "    stream = cuda.stream()\n"
                                          "    matmul_naive_kernel[blocks, (BLOCK, BLOCK), stream](A, B, C)"))
    result, _, _ = run_module(tmp_path, cfg, text, sandbox.backend("auto")[0])
    # the launcher runs in the build child alone, which has no GPU to make a stream with
    assert "the launcher asks CUDA for more than kernel launches (line 40: stream = cuda.stream())" in \
        result.facts["shapes"][0]["error"]["message"], result.facts


# -- tampering ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, flagged", [
    ("patch_numpy.py", "np.allclose"),
    ("patch_autograder.py", "imports autograder.checks.correct"),
])
def test_patching_the_judges_changes_nothing(grade_text, cfg, name, flagged):
    r = grade_text("naive", read(name))
    assert flagged in shortcut(r).output and r.score == 0
    failed(r, "correct")  # judged in the grader's process: the child's patches do not reach it
    good_after(cfg)


def test_rewriting_grader_files_fails(tmp_path, cfg, backend):
    watched = [os.path.join(ROOT, "autograder", "checks", "correct.py"), os.path.join(ROOT, "autograder", "child", "entry.py"),
               os.path.join(SOLUTIONS, NAIVE.filename), np.__file__]
    before = {p: os.stat(p).st_mtime_ns for p in watched}
    result, A, B = run_module(tmp_path, cfg, read("tamper_files.py", GRADER=ROOT), backend)
    assert_clean(result, held=5)
    assert correct(result, A, B), result.problem or result.log
    assert {p: os.stat(p).st_mtime_ns for p in watched} == before
    assert not glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "sitecustomize.py"))
    good_child_after(cfg, backend)


def test_shipped_conftest_sitecustomize_numpy_are_never_imported(tmp_path, cfg):
    folder = tmp_path / "submission"
    folder.mkdir()
    for name in os.listdir(os.path.join(ADV, "shipped")):  # stored as NAME.py.txt: pytest would import a conftest.py
        shutil.copy(os.path.join(ADV, "shipped", name), folder / name.removesuffix(".txt"))
    shutil.copy(os.path.join(SOLUTIONS, NAIVE.filename), folder)
    c = copy.deepcopy(cfg)
    c["limits"]["jobs"] = 2
    report = engine.grade(str(folder), device="sim", seed=5, cfg=c)
    assert report.stages == ["naive"] and report.score == report.max_score > 0, [
        (c.name, c.output) for c in report.checks if c.status == "failed"]


# -- snooping and caching ----------------------------------------------------------------

def test_snooping_finds_nothing(tmp_path, cfg, backend):
    other = tmp_path / "other-student"
    other.mkdir()
    (other / "s1_naive.py").write_text("# another student's work\n")
    os.chmod(tmp_path, 0o755)
    text = read("snoop.py", GRADER=ROOT, CANARY=other / "s1_naive.py", CANARY_DIR=other)
    result, _, _ = run_module(tmp_path, cfg, text, backend)
    assert_clean(result, held=8)
    assert "another student" not in result.log and "BEGIN SOLUTION" not in result.log
    good_child_after(cfg, backend)


def test_the_graders_compiled_kernels_are_read_only(tmp_path, cfg, backend):
    """The grader's kernel folder (runner/kernel_cache.py) is read-only to a child: a submission cannot swap the
    reference it is timed against (a folder the parent marks writable is the one it may write)."""
    grader, stage = tmp_path / "grader-kernels", tmp_path / "stage-kernels"
    grader.mkdir()
    stage.mkdir()
    os.chmod(stage, 0o777)
    (grader / "references-naive_coalesced_kernel-17.py312.nbi").write_bytes(b"compiled by the grader")
    result, A, B = run_module(tmp_path, cfg, read("tamper_kernel_cache.py"), backend,
                              dirs=((str(grader), "grader", False), (str(stage), "stage", True)))
    assert_clean(result, held=2)
    assert "STAGE WRITABLE" in result.log and correct(result, A, B), result.problem or result.log
    assert [p.name for p in grader.iterdir()] == ["references-naive_coalesced_kernel-17.py312.nbi"]
    assert (grader / "references-naive_coalesced_kernel-17.py312.nbi").read_bytes() == b"compiled by the grader"
    assert (stage / "mine.nbi").read_bytes() == b"own kernels"


def test_nothing_is_cached_across_runs(tmp_path, cfg, backend):
    text = read("cache_outputs.py", GRADER=ROOT)
    for _ in range(2):
        result, _, _ = run_module(tmp_path, cfg, text, backend)
        assert_clean(result, held=4)
    assert not glob.glob(os.path.join(ROOT, "**", ".matmul-cache.npy"), recursive=True)
    good_child_after(cfg, backend)


# -- shortcuts ---------------------------------------------------------------------------

def test_numpy_product_on_the_host(grade_text, cfg):
    r = grade_text("naive", read("numpy_dot.py"))
    assert "np.dot" in shortcut(r).output and r.score == 0
    failed(r, "correct")  # only the replayed kernel launches write C, on a freshly poisoned C
    good_after(cfg)


# Every attack is also caught by the kernel-module grammar, which scores the whole stage 0.
SCAN = {"forge_results_json.py": ["loops run over range", "try"], "forge_result_file.py": ["imports os", "os._exit"],
        "forge_result_pickle.py": ["imports os", "a class", "np.empty"], "forge_result_huge.py": ["imports os"],
        "kill_parent.py": ["imports os", "imports signal"], "abort_self.py": ["imports os", "imports signal"],
        "ndarray_subclass.py": ["a class", "np.zeros"], "object_dtype.py": ["np.empty", "the name object"],
        "patch_numpy.py": ["assignment to np.allclose", "np.linalg"], "patch_autograder.py": ["imports autograder"],
        "patch_pytest.py": ["imports pytest", "imports _pytest"], "tamper_files.py": ["imports site", "a loop"],
        "snoop.py": ["imports glob", "a call at module level"], "cache_outputs.py": ["imports os", "a loop"],
        "cupy_shortcut.py": ["imports cupy"], "cublas_ctypes.py": ["imports ctypes", "__import__", "getattr"],
        "numpy_dot.py": ["np.dot", "copy_to_host"], "hang_sleep.py": ["imports signal", "imports time"],
        "daemon_escape.py": ["imports os"], "fork_bomb.py": ["imports os"], "memory_bomb.py": ["try", "a loop"],
        "disk_fill.py": ["imports errno", "a loop"], "stdout_flood.py": ["imports sys"],
        "sockets.py": ["imports socket"], "gpu_memory_bomb.py": ["a list", ".append"]}


@pytest.mark.parametrize("name", sorted(SCAN))
def test_static_scan_flags_the_attack(name):
    from autograder.grammar import violations
    findings = "\n".join(violations(read(name, GRADER="/g", CANARY="/c", CANARY_DIR="/d", RESULTS="/r", PORT=1,
                                              ABSTRACT="a", LISTEN=2, SECONDS=3)))
    for expected in SCAN[name]:
        assert expected in findings, findings


# -- hangs -------------------------------------------------------------------------------

def test_python_loop_is_stopped(grade_text, cfg):
    r = grade_text("naive", read("hang_python.py"), check_timeout_s=3)
    # the launcher runs in the build alone: it is stopped there, and no shape has a plan to run
    assert "not gradable: the check did not finish within 3 s" in failed(r, "compiles")
    assert "the kernels were not built (see the compile check): not gradable: the check did not finish within 3 s" \
        in failed(r, "correct")
    good_after(cfg)


def test_sleeper_ignoring_signals_is_stopped(tmp_path, cfg, backend):
    started = time.monotonic()
    result, _, _ = run_module(tmp_path, cfg, read("hang_sleep.py"), backend, timeout=3)
    assert result.problem.startswith("not gradable: the check did not finish within 3 s")
    assert time.monotonic() - started < 20
    good_child_after(cfg, backend)


def _processes(argv):
    found = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                if f.read().split(b"\0")[:2] == argv:
                    found.append(path)
        except OSError:
            pass
    return found


def test_daemon_does_not_outlive_the_check(tmp_path, cfg, backend):
    seconds = 7000 + os.getpid() % 1000
    result, A, B = run_module(tmp_path, cfg, read("daemon_escape.py", SECONDS=seconds), backend)
    assert correct(result, A, B), result.problem or result.log
    assert not _processes([b"sleep", str(seconds).encode()]), "a process of the check outlived it"
    good_child_after(cfg, backend)


# -- resource exhaustion -----------------------------------------------------------------

def test_fork_bomb_is_contained(tmp_path, cfg, backend):
    """The bomb holds its processes while a good submission is graded beside it, then is killed."""
    held = {}
    bomb = threading.Thread(target=lambda: held.update(result=run_module(
        tmp_path, cfg, read("fork_bomb.py"), backend, timeout=20, processes=200)[0]))
    bomb.start()
    time.sleep(3)
    good_after(cfg, backend)  # a whole grade at the same time: its children have uids of their own
    bomb.join()
    result = held["result"]
    assert "HELD: fork failed" in result.log, result.log
    assert result.problem.startswith("not gradable: the check did not finish"), result.problem
    assert result.uid is None or not box._uid_pids(result.uid), "processes of the bomb outlived the check"
    good_child_after(cfg, backend)


def test_memory_bomb_is_a_clean_failure(tmp_path, cfg, backend):
    result, _, _ = run_module(tmp_path, cfg, read("memory_bomb.py"), backend, address_space_bytes=3 * 2**30)
    assert "HELD: 50 GiB refused" in result.log and "BROKEN" not in result.log, result.log
    assert result.facts["import_error"]["message"].startswith("MemoryError"), result.facts
    good_child_after(cfg, backend)


def test_memory_bomb_in_a_child_without_address_space_limit(tmp_path, cfg):
    """PTX-compile and GPU children have no RLIMIT_AS (CUDA needs the address space): RLIMIT_DATA holds."""
    require_sandbox()
    path = tmp_path / NAIVE.filename
    path.write_text(read("memory_bomb.py"), encoding="utf-8")
    job = {"task": "compile", "device": "ptx", "module": NAIVE.module, "module_path": str(path),
           "kernel": NAIVE.kernel, "launcher": NAIVE.launcher, "cc": [9, 0]}
    result = sandbox.run_child(job, {**cfg["limits"], "data_bytes": 3 * 2**30})
    assert "HELD: 50 GiB refused" in result.log, result.log
    assert result.facts["import_error"]["message"].startswith("MemoryError"), result.facts
    good_after(cfg)


def test_disk_fill_stays_in_its_tmpfs(tmp_path, cfg, backend):
    free = shutil.disk_usage(tempfile.gettempdir()).free
    result, A, B = run_module(tmp_path, cfg, read("disk_fill.py"), backend, scratch_bytes=32 * 2**20,
                              file_bytes=16 * 2**20)
    assert_clean(result, held=5)
    assert "HELD: file size limit in /tmp at 16 MiB" in result.log and "ENOSPC" in result.log, result.log
    assert correct(result, A, B), result.problem or result.log
    assert shutil.disk_usage(tempfile.gettempdir()).free > free - 2**30
    good_child_after(cfg, backend)


def test_stdout_flood_is_capped(tmp_path, cfg, backend):
    result, _, _ = run_module(tmp_path, cfg, read("stdout_flood.py"), backend, file_bytes=8 * 2**20)
    assert "File too large" in result.facts["import_error"]["message"], result.facts
    assert len(result.log) <= cfg["limits"]["log_bytes"] + 100 and "flood" in result.log
    good_child_after(cfg, backend)


# -- sockets -----------------------------------------------------------------------------

def test_sockets_reach_nothing(tmp_path, cfg, backend):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"autograder-test-{os.getpid()}"
    abstract.bind("\0" + name)
    abstract.listen()
    abstract.settimeout(0.1)
    try:
        text = read("sockets.py", PORT=server.getsockname()[1], ABSTRACT=name, LISTEN=18000 + os.getpid() % 1000)
        result, _, _ = run_module(tmp_path, cfg, text, backend)
        assert_clean(result, held=4)
        for listener in (server, abstract):
            with pytest.raises(socket.timeout):
                listener.accept()
    finally:
        server.close()
        abstract.close()
    good_child_after(cfg, backend)


# -- out-of-bounds writes and races ------------------------------------------------------

@pytest.mark.parametrize("name", ["store one past the edge", "store far past C"])
def test_out_of_bounds_writes(grade_text, cfg, name):
    out = failed(grade_text("naive", KNOWN_BAD[name].text), "correct")
    assert "IndexError" in out and "outside an array" in out
    good_after(cfg)


def test_race_is_caught_on_every_run(tmp_path, cfg):
    """The race detector's verdict on a racy tiled kernel is the same in three runs."""
    from autograder.submission import StageSource
    stage = stages.find("tiled")
    src = StageSource(stage, stage.filename, KNOWN_BAD["stage 2 without second barrier"].text)
    for run in range(3):
        workdir = tmp_path / f"run{run}"
        workdir.mkdir()
        g = engine.StageGrader(src, "sim", cfg, np.random.default_rng(run), str(workdir))
        M = 2 * 16
        inputs = {"A0": np.ones((M, M), np.float32), "B0": np.ones((M, M), np.float32)}
        g.build_alone()
        job, why = g.sim_job([(M, M, M)], count=1, instrument=True)
        assert not why, why
        result = g.run(job, inputs)
        races = [c for c in g.judge_instruments(result) if c.key == "races"][0]
        assert races.status == "failed" and "write-after-read" in races.output, races.output
    good_after(cfg)


# -- the sandbox itself ------------------------------------------------------------------

def test_sandbox_view_and_identity(tmp_path, cfg, backend):
    text = read("kill_parent.py").replace('print("ALIVE after the kills")', '''print("ALIVE after the kills")
import sys
print("UID", os.getuid(), os.getgid(), os.getgroups())
print("ROOT", sorted(os.listdir("/")))
print("GRADER", sorted(os.listdir("/grader")), sorted(os.listdir("/job")))
print("STATUS", [l for l in open("/proc/self/status").read().splitlines() if l.startswith(("CapEff", "NoNewPrivs"))])''')
    result, A, B = run_module(tmp_path, cfg, text, backend)
    assert correct(result, A, B), result.problem or result.log
    log = result.log
    if os.geteuid() == 0:
        uid = int(log.split("UID ")[1].split()[0])
        assert box.UID_BASE <= uid < box.UID_BASE + box.UID_SLOTS and "[]" in log.split("UID ")[1].split("\n")[0]
        assert "'CapEff:\\t0000000000000000'" in log and "'NoNewPrivs:\\t1'" in log, log
    assert "GRADER ['autograder'] ['inputs.npz', 'result.npz', 's1_naive.py']" in log, log
    root = set(eval(log.split("ROOT ")[1].split("\n")[0]))
    python = {p.strip("/").split("/")[0] for p in view._host_paths()}  # the Python and venv folders' tops
    assert root <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "sys", "proc", "dev", "tmp",
                    "grader", "job"} | python, root
    assert not root & {"home", "root", "var", "srv", "mnt", "media", "boot", "run"} - python, root


def test_sandbox_setting_bwrap_is_enforced(tmp_path, cfg, monkeypatch):
    """sandbox = "bwrap" where bubblewrap cannot run: every check is "not gradable", never a silent 0."""
    monkeypatch.setitem(backends._probed, "bwrap", ("unavailable", "bwrap not installed"))
    job = {"task": "compile", "device": "ptx", "module": NAIVE.module,
           "module_path": os.path.join(SOLUTIONS, NAIVE.filename)}
    result = sandbox.run_child(job, sim_limits(cfg, sandbox="bwrap"))
    assert result.problem.startswith("not gradable: the grading sandbox is not available (bwrap not installed)")


def test_no_sandbox_warns_once(capsys, monkeypatch):
    monkeypatch.setattr(backends, "_warned", [])
    monkeypatch.setitem(backends._probed, "none", ("none", "sandbox = \"none\" in config.toml"))
    assert sandbox.backend("none")[0] == "none"
    sandbox.backend("none")
    err = capsys.readouterr().err
    assert err.count("WARNING") == 1 and "WITHOUT ANY SANDBOX" in err and "apt-get install -y bubblewrap" in err


# -- GPU tier: skipped with the reason where there is no GPU -----------------------------

def grade_gpu(text_or_path, tmp_path, cfg, **limits):
    path = text_or_path
    if not os.path.exists(str(text_or_path)):
        path = tmp_path / NAIVE.filename
        path.write_text(text_or_path, encoding="utf-8")
    c = copy.deepcopy(cfg)
    c["limits"].update(limits)
    return engine.grade(str(path), stage=NAIVE, device="gpu", seed=3, cfg=c)


def good_after_gpu(tmp_path, cfg):
    r = grade_gpu(os.path.join(SOLUTIONS, NAIVE.filename), tmp_path, cfg)
    assert r.score == r.max_score > 0, [(c.name, c.output) for c in r.checks if c.status != "passed"]
    return r


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
def test_gpu_sandbox_reaches_the_gpu(tmp_path, cfg):
    r = good_after_gpu(tmp_path, cfg)
    assert sandbox.backend(cfg["limits"].get("sandbox", "auto"))[0] in ("bwrap", "unshare")
    assert by_key(r, "speed")[0].status == "passed"


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
def test_gpu_memory_exhaustion(tmp_path, cfg, monkeypatch):
    """The grammar zeroes the module (cuda.device_array, a list); past it, the launcher runs only in the build child,
    which has no GPU: the allocation fails there, with a message that says what a launcher may do, and no GPU
    memory is ever taken. The next submission gets the whole GPU."""
    r = grade_gpu(read("gpu_memory_bomb.py"), tmp_path, cfg)
    assert "cuda.device_array" in shortcut(r).output and r.score == 0
    from autograder.checks import shortcuts
    monkeypatch.setattr(shortcuts, "violations", lambda source: [])
    r = grade_gpu(read("gpu_memory_bomb.py"), tmp_path, cfg)
    out = failed(r, "correct")
    assert "asks CUDA for more than kernel launches (line 25" in out and "no streams, copies or allocations" in out, out
    good_after_gpu(tmp_path, cfg)


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
@pytest.mark.parametrize("name, why", [("store one past the edge", "written past the end of C"),
                                       ("store far past C", "GPU reported an error")])
def test_gpu_out_of_bounds_writes(tmp_path, cfg, name, why):
    out = failed(grade_gpu(KNOWN_BAD[name].text, tmp_path, cfg), "correct")
    assert why in out, out
    good_after_gpu(tmp_path, cfg)


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
def test_gpu_kernel_that_never_ends(tmp_path, cfg):
    r = grade_gpu(KNOWN_BAD["kernel never ends"].text, tmp_path, cfg, check_timeout_s=20)
    checks = by_key(r, "correct")
    first, rest = checks[0], checks[1:]
    assert first.status == "failed" and "did not finish within 5 s of its kernels' launch" in first.output, \
        first.output  # after_start_s, before the 20 s limit
    # the groups cut short for its sake count neither way (a re-grade is flagged), or failed on their own
    assert all(c.status == "failed" or (c.status == "skipped" and c.regrade) for c in rest), [c.output for c in rest]
    assert not any(c.score for c in checks)
    good_after_gpu(tmp_path, cfg)


@pytest.mark.gpu
@pytest.mark.skipif(not engine.gpu_available(), reason=NO_GPU)
def test_gpu_cupy_shortcut(tmp_path, cfg):
    r = grade_gpu(read("cupy_shortcut.py"), tmp_path, cfg)
    assert "imports cupy" in shortcut(r).output and r.score == 0
    failed(r, "correct")
    good_after_gpu(tmp_path, cfg)
