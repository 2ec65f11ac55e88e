"""The process that starts a grade's GPU children keeps the machine to them.

It holds no CUDA context (neither CuPy nor numba's CUDA target is imported there), and numpy's OpenBLAS runs one
thread in it even where a script imported numpy before the grader: OpenBLAS's default, one busy-waiting thread per
core, made a grade of solutions/ 1-1.5 s slower on an H100 (BENCHMARKS.md).
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WATCH = r'''
import importlib.abc, subprocess, sys
tried = []


class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cupy", "numba_cuda") or name == "numba.cuda" or name.startswith("numba.cuda."):
            tried.append(name)
        return None


sys.meta_path.insert(0, Watch())


class Done:
    returncode, stdout, stderr = 0, "NVIDIA H100 80GB HBM3, 580.159.04, 1980 MHz", ""


subprocess.run = lambda *a, **k: Done()
'''


def run(code):
    p = subprocess.run([sys.executable, "-c", WATCH + code + "\nassert not tried, tried\nprint('clean')"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "clean" in p.stdout, p.stdout + p.stderr


def test_the_grading_parent_imports_no_cuda_target():
    run("import autograder.cli, autograder.engine, course.grade_class, tools.profile_grade")


def test_the_gpu_checks_environment_line_imports_no_cuda_target():
    run("import tools.verify_gpu as v\nv.find_tool = lambda name: '/usr/bin/' + name\n"
        "line = v.environment()\nassert 'numba ' in line and 'numpy ' in line and 'H100' in line, line")


BLAS_THREADS = r'''
import ctypes, sys
import numpy
with open("/proc/self/maps") as f:
    path = next(line.split()[-1] for line in f if "openblas" in line.rsplit("/", 1)[-1])
lib = ctypes.CDLL(path)
get = next(getattr(lib, s) for s in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads") if hasattr(lib, s))
before = get()
import autograder.engine
print(before, get())
'''


def blas_threads(env):
    """(OpenBLAS's threads after numpy's import, after the grader's) in a fresh interpreter with `env`."""
    p = subprocess.run([sys.executable, "-c", BLAS_THREADS], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    before, after = map(int, p.stdout.split())
    return before, after


def test_a_script_that_imported_numpy_first_grades_with_one_blas_thread():
    """numpy before the grader: OpenBLAS has started one busy-waiting thread per core, which the grader turns down."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    env["OMP_NUM_THREADS"] = "4"  # what OpenBLAS reads when OPENBLAS_NUM_THREADS is unset (capped by the cores)
    before, after = blas_threads(env)
    if before < 2:
        pytest.skip("one core: OpenBLAS starts no thread to turn down")
    assert after == 1, f"numpy's OpenBLAS kept {after} threads after the grader's import"


def test_a_blas_thread_count_the_user_chose_is_kept():
    assert blas_threads(dict(os.environ, OPENBLAS_NUM_THREADS="2")) == (2, 2) or os.cpu_count() < 2
