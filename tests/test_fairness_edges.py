"""A student's file never stops the class nor zeroes an honest student: a notebook nested deep behind a stray
quote, a scratch file that defines two stages. Each through the real path: the class run or the CLI."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

DEMO = os.path.join(ROOT, "demo_course")


def course_with(tmp_path, files):
    course = tmp_path / "course"
    for student, named in files.items():
        folder = course / "submitted" / student / "matmul"
        folder.mkdir(parents=True)
        for name, text in named.items():
            (folder / name).write_text(text, encoding="utf-8")
    for name in ("nbgrader_config.py", "autograder.toml"):
        shutil.copy(os.path.join(DEMO, name), course)
    return course


@pytest.mark.filterwarnings("ignore::Warning")
def test_a_deep_notebook_behind_a_stray_quote_is_one_students_note_in_every_run(tmp_path):
    """The depth check paired quotes from the top of the text; the decoder of a broken notebook starts where its
    cells start. A stray quote before "cells" made the check pass and the decoder raise RecursionError: the
    student had no row, and every later run died reading the notebook for formgrader's copy."""
    from course import grade_class
    deep = '{"metadata": {} " "cells": [' + "[" * 50000 + "]" * 50000 + "]}"
    course = course_with(tmp_path, {"deb": {"s1_naive.ipynb": deep}})
    for workers, force in ((1, False), (2, True)):
        grader = grade_class.ClassGrader(str(course), device="sim", out=open(os.devnull, "w"), workers=workers,
                                         force=force)
        grader.run()
        results = json.loads((course / "feedback" / "deb" / "matmul" / "results.json").read_text())
        assert results["score"] == 0
        assert "nests more than 64 levels deep" in json.dumps(results)
        with open(course / "lms_upload.csv", encoding="utf-8") as f:
            assert [r["student_id"] for r in csv.DictReader(f)] == ["deb"]


def solution(module):
    with open(os.path.join(ROOT, "solutions", module + ".py"), encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow
def test_a_scratch_file_of_two_stages_zeroes_nothing(tmp_path):
    """An extra file that defines stages 1 and 2 (a copy kept to compare) made the CLI exit 2 and the class run give
    0 for correct stages 1 and 2. It is now named in a note and graded for no stage."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "s1_naive.py").write_text(solution("s1_naive"), encoding="utf-8")
    scratch = solution("s1_naive") + "\n\n" + solution("s2_tiled").replace("from numba import cuda", "")
    (folder / "scratch.py").write_text(scratch, encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--device", "sim", "--results",
                        str(tmp_path / "results.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    naive = sum(t["score"] for t in results["tests"] if (t.get("tags") or [""])[0] == "naive")
    assert naive == 8, results["output"]
    text = json.dumps(results)
    assert "scratch.py: not graded, it defines several stages (naive, tiled)" in text
    assert str(tmp_path) not in text                                  # no absolute path of the grader's machine


def _backend():
    from autograder import sandbox
    return sandbox.backend("auto")[0]


def _descends_from(pid, ancestor):
    """Whether process `pid` is a descendant of `ancestor` (a parallel test's grading children are left alone)."""
    for _ in range(64):
        try:
            with open(f"/proc/{pid}/status") as f:
                pid = int(next(ln.split()[1] for ln in f if ln.startswith("PPid:")))
        except (OSError, StopIteration, ValueError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def _kill_children_with_sigkill(stop, killed, after_s=4.0):
    """As the host's out-of-memory killer would: SIGKILL to each grading child (child/entry.py) `after_s` seconds
    after it appeared (it said hello long before)."""
    import signal
    import time
    seen = {}
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if any(c.endswith(b"autograder/child/entry.py") for c in cmd) and _descends_from(pid, os.getpid()):
                first = seen.setdefault(pid, time.monotonic())
                if time.monotonic() - first > after_s and pid not in killed:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                        killed.add(pid)
                    except OSError:
                        pass
        time.sleep(0.05)


def test_a_sigkill_the_grader_did_not_send_is_the_graders_fault(tmp_path, cfg):
    """A check killed by SIGKILL that the grader did not send (the host's out-of-memory killer) was booked as the
    student's code. The grader sends SIGKILL only past a time limit, which it knows: any other is its trouble."""
    import threading
    from test_adversarial import run_module
    stop, killed = threading.Event(), set()
    watcher = threading.Thread(target=_kill_children_with_sigkill, args=(stop, killed), daemon=True)
    watcher.start()
    try:
        text = "import time\ntime.sleep(60)\n" + solution("s1_naive")
        result, _, _ = run_module(tmp_path, cfg, text, _backend(), timeout=90)
    finally:
        stop.set()
    assert killed, "no grading child was seen"
    from autograder.outcome import Fault, fault_of
    assert "SIGKILL, which the grader did not send" in result.problem, result.problem
    assert fault_of(result.problem) is Fault.GRADER


def test_a_missing_result_on_a_full_disk_is_the_graders_fault(tmp_path, cfg, monkeypatch):
    """The host's disk fills after a child started: the child's result write fails and it exits. That was booked as
    the student's code ("do not call sys.exit"); the parent now reads its own disk and says whose it is."""
    import collections
    from autograder.outcome import Fault, fault_of
    from autograder.sandbox import run as sandbox_run
    from test_adversarial import run_module
    real = os.statvfs
    Full = collections.namedtuple("Full", "f_bavail f_frsize")
    monkeypatch.setattr(sandbox_run.os, "statvfs", lambda p: Full(10, 4096) if "result" not in str(p) else real(p))
    text = "import os\nos._exit(1)\n" + solution("s1_naive")
    result, _, _ = run_module(tmp_path, cfg, text, _backend(), timeout=60)
    assert "the grading machine's disk is full (40,960 bytes free" in result.problem, result.problem
    assert fault_of(result.problem) is Fault.GRADER


def _gpu():
    from autograder.gpu.tools import gpu_available
    return gpu_available()


@pytest.mark.skipif(_gpu(), reason="this machine has a GPU: the refusal is for machines without a working one")
def test_the_gpu_tier_without_a_gpu_is_not_gradable_in_the_cli_and_the_ci_script(tmp_path):
    """No working driver: `python -m autograder grade --device gpu` and the GPU CI job graded anyway (2/10, 6/67
    "GPU tier", exit 0). Both refuse now; the CI job's results.json says not gradable and asks for a re-grade."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "s1_naive.py").write_text(solution("s1_naive"), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--device", "gpu", "--results",
                        str(tmp_path / "r.json")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 3 and "no GPU answers nvidia-smi" in p.stderr, p.stdout + p.stderr
    assert not (tmp_path / "r.json").exists()
    env = dict(os.environ, GRADER_PYTHON=sys.executable, STAGES="naive")
    env.pop("GITHUB_OUTPUT", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    p = subprocess.run([os.path.join(ROOT, "classroom", "grade.sh"), str(folder), str(tmp_path / "out"), "gpu"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 3, p.stdout + p.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["score"] == 0 and results["extra_data"]["regrade"] and "not gradable" in results["output"]


def test_an_unwritable_results_path_is_refused_before_grading(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "s1_naive.py").write_text(solution("s1_naive"), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--device", "sim", "--results",
                        str(tmp_path / "no-such-folder" / "r.json")], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "cannot write it" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "nothing was graded" in p.stderr


@pytest.mark.slow
def test_the_cli_counts_a_folders_missing_stages_as_make_grade_does(tmp_path):
    """A folder with stage 1 alone: 8 of 54 in the simulator tier (make grade's score), not 8 of 8; the note gives
    the missing stages' points in this tier."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "s1_naive.py").write_text(solution("s1_naive"), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--device", "sim", "--results",
                        str(tmp_path / "r.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert (results["score"], results["max_score"]) == (8, 54)
    assert "those stages count 0 of 46 points" in json.dumps(results)
    grammar = [t for t in results["tests"] if t["tags"][0] != "naive" and t["tags"][1] == "shortcuts"]
    assert len(grammar) == 4 and all(t["tags"][2] == "skipped" for t in grammar), grammar   # no "PASS" for no code
    assert results["output"].count("not submitted:") <= 1


def _class_of_two(tmp_path):
    """Two students whose kernel never ends: each grade runs until the check's time limit (25 s here)."""
    from course.mutants import KNOWN_BAD
    text = KNOWN_BAD["kernel never ends"].text
    return course_with(tmp_path, {"ann": {"s1_naive.py": text}, "bob": {"s1_naive.py": text}})


def _marked(marker):
    """Pids of the processes whose environment holds `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


def _start_class_run(tmp_path, marker):
    import time
    course = _class_of_two(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch), CLASS_RUN_MARKER=marker)
    p = subprocess.Popen([sys.executable, "-m", "course.grade_class", str(course), "--device", "sim", "--workers", "2"],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until both workers have a grade in progress: its files in TMPDIR
        if len(_marked(marker)) >= 3 and any(scratch.iterdir()):
            break
        time.sleep(0.1)
    time.sleep(1.0)
    return p, scratch


def _wait_gone(marker, seconds=30):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end and _marked(marker):
        time.sleep(0.2)
    return _marked(marker)


@pytest.mark.slow
def test_kill_9_of_a_class_run_leaves_no_worker_alive(tmp_path):
    import signal
    marker = f"kill9-{os.getpid()}-{id(tmp_path)}"
    p, _ = _start_class_run(tmp_path, marker)
    assert len(_marked(marker)) >= 3, "the workers did not start"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    left = _wait_gone(marker, seconds=20)          # under the 25 s check limit a worker left alone would grade on for
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"{len(left)} processes of the class run still alive after kill -9"


@pytest.mark.slow
def test_sigterm_mid_grade_leaves_no_student_code_in_the_temp_folder(tmp_path):
    import signal
    marker = f"term-{os.getpid()}-{id(tmp_path)}"
    p, scratch = _start_class_run(tmp_path, marker)
    assert any(scratch.iterdir()), "no grade was in progress"
    p.send_signal(signal.SIGTERM)
    out = p.communicate(timeout=60)[0].decode()
    assert p.returncode == 130, out
    assert _wait_gone(marker) == []
    assert sorted(x.name for x in scratch.iterdir()) == [], out


def test_a_comment_is_never_cut_after_e_g():
    """The gradebook comment cut the suggested fix off after "e.g.": an abbreviation ends no sentence."""
    from course.feedback import _shorten
    line = ("Wrong results in 12 of 16 tiles. Likely cause: the tile is read before it is written; put a barrier "
            "between the load and the product, e.g. cuda.syncthreads() after sB[ty, tx] = B[...] and before the loop "
            "over k, then compare again.")
    short = _shorten(line, 200)
    assert not short.endswith("e.g.") and short.endswith("Wrong results in 12 of 16 tiles.") or "e.g. cuda" in short
    assert not _shorten(line[:60] + " e.g. more words here and more and more", 70).endswith("e.g.")


def test_the_readme_gives_the_demo_students_scores():
    import re
    from course.demo import STUDENTS
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    said = re.search(r"they score ([\d, and]+) of 54 points", text)[1]
    assert [int(x) for x in re.findall(r"\d+", said)] == [s.expected_total for s in STUDENTS]


RENAMED = r'''
import os, sys, json
from autograder import selfcheck
text = open(os.path.join("solutions", "s1_naive.py")).read().replace("matmul_naive_kernel", "my_kernel")
ns = {"__name__": "__main__"}
exec(compile(text, "<cell 3>", "exec"), ns)
report = selfcheck.check("naive", ns, plot=False)
print(json.dumps(report.results))
'''


def test_the_self_check_names_a_renamed_kernel_and_its_line():
    """A renamed kernel: the message named neither the function it found nor a line."""
    p = subprocess.run([sys.executable, "-c", RENAMED], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    (name, passed, message), = json.loads(p.stdout.strip().splitlines()[-1])
    assert not passed and "matmul_naive_kernel not found" in message
    assert "a CUDA kernel named my_kernel (line " in message and "released name" in message, message


SELFCHECK = r'''
import json, os, sys, time
from autograder import selfcheck
import linecache
text = sys.stdin.read()
linecache.cache["<cell 3>"] = (len(text), None, text.splitlines(True), "<cell 3>")   # as IPython keeps a cell's lines
ns = {"__name__": "__main__"}
exec(compile(text, "<cell 3>", "exec"), ns)
started = time.perf_counter()
report = selfcheck.check("naive", ns, plot=True)
print(json.dumps({"results": report.results, "seconds": time.perf_counter() - started}))
'''


LIMITS = r'''
from autograder import config
load = config.load
def load_with_limits(*args, **kwargs):
    cfg = load(*args, **kwargs)
    cfg["limits"].update(LIMITS)
    return cfg
config.load = load_with_limits
'''


def _selfcheck(text, limits=None):
    """(the self-check's results and seconds, its output) in a simulator process; `limits` overrides [limits] keys
    of the config it reads."""
    driver = (LIMITS.replace("LIMITS)", f"{limits!r})") if limits else "") + SELFCHECK
    p = subprocess.run([sys.executable, "-c", driver], input=text, cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stdout


@pytest.mark.slow
def test_the_self_check_stops_a_never_ending_kernel_at_the_graders_limit():
    """A never-ending kernel hung the notebook's self-check (still running after 180 s) where the grader stops it at
    its limit for the shapes. The self-check now has the grader's limit, says so, and runs nothing more of it."""
    from autograder import config
    from autograder.engine.plan import sim_seconds
    from autograder.stages import find
    from course.mutants import KNOWN_BAD
    # the self-check and the grader read one config: 5 s of start-up here (the grader's 20 s in a course) keeps the
    # test short; the self-check's limit must be the one the grader derives from it
    short = {"sim_start_s": 5.0}
    cfg = config.load()
    cfg["limits"].update(short)
    limit = sim_seconds(cfg, None, next(iter(find("naive").sim_shape_groups(16).values())))
    got, out = _selfcheck(KNOWN_BAD["kernel never ends"].text, short)
    assert got["seconds"] < limit + 15, got["seconds"]
    failed = {name: message for name, ok, message in got["results"] if not ok}
    assert any(f"did not finish within {limit:.0f} s" in m for m in failed.values()), got["results"]


def test_the_self_check_runs_nothing_the_gpu_compiler_rejected():
    """When the compile check failed, the self-check said nothing would run, then ran the kernel anyway."""
    text = solution("s1_naive").replace("        C[row, col] = acc\n",
                                        "        scratch = {}\n        scratch[0] = acc\n        C[row, col] = acc\n")
    got, out = _selfcheck(text)
    results = {name: (ok, message) for name, ok, message in got["results"]}
    compiled = next(v for k, v in results.items() if "compiles" in k or "compile" in k)
    if compiled[0]:
        pytest.skip("this numba compiles the dict for the GPU: no rejected kernel to test with")
    correct = [v for k, v in results.items() if k.startswith("correct results")]
    assert correct and all(not ok and m.startswith("not run:") for ok, m in correct), results


def test_the_self_check_shows_no_numpy_warning_and_the_students_tile():
    """A kernel whose float32 products overflow leaked numpy's RuntimeWarning into the self-check; with TILE = 8 the
    header said TILE = 16."""
    text = solution("s1_naive").replace("        C[row, col] = acc\n",
                                        "        C[row, col] = acc * float32(1e30) * float32(1e30)\n")
    if "float32" not in text.split("def matmul_naive_kernel")[0]:
        text = "from numpy import float32\n" + text
    got, out = _selfcheck(text)
    assert "RuntimeWarning" not in out and "overflow encountered" not in out, out
    assert any(not ok for _, ok, _ in got["results"])                     # wrong results, said by the checks
    tiled = open(os.path.join(ROOT, "solutions", "s2_tiled.py"), encoding="utf-8").read().replace(
        "TILE = 16", "TILE = 8")
    p = subprocess.run([sys.executable, "-c", SELFCHECK.replace('"naive"', '"tiled"')], input=tiled, cwd=ROOT,
                       capture_output=True, text=True, timeout=300, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert "TILE = 8 (not one of the course's tile sizes: checked as 16" in p.stdout, p.stdout[:600]
