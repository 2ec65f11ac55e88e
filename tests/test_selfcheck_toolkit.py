"""The self-check where the CUDA compiler is not installed: the self-check wheel with its plain dependencies
(numba-cuda without the cu13 extra, so no NVVM, libdevice or CUDA runtime library). Its compile check says what is
missing and how to add it, and counts neither way; a kernel the compiler rejects still fails."""
import glob
import json
import os
import re
import site
import subprocess
import sys

import pytest

from autograder.selfcheck import TOOLKIT_INSTALL, toolkit_missing
from conftest import ROOT

# the child's view of the file system with an empty folder over each folder of the CUDA toolkit's libraries
DRIVER = r"""
import json, runpy, sys
from autograder.sandbox import box
hidden = json.loads(sys.argv[1])
view = box.view
box.view = lambda *a, **k: view(*a, **k) + [("tmpfs", 1 << 20, folder) for folder in hidden]
from autograder.selfcheck import check
report = check(sys.argv[2], runpy.run_path(sys.argv[3]), plot=False)
print("SKIPPED=" + json.dumps(report.skipped))
"""


def toolkit_folders():
    """Every folder this machine holds NVVM, libdevice or the CUDA runtime library in, where numba-cuda looks."""
    names = ("libnvvm.so*", "libdevice*.bc", "libcudart.so*")
    roots = [os.path.join(sp, "nvidia") for sp in site.getsitepackages()] + glob.glob("/usr/local/cuda*")
    roots += [os.environ[k] for k in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX") if os.environ.get(k)]
    files = [f for root in roots for name in names for f in glob.glob(os.path.join(root, "**", name), recursive=True)]
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    files += [line.split("=>")[-1].strip() for line in cache.splitlines() if "libnvvm" in line or "libcudart" in line]
    return sorted({os.path.dirname(os.path.realpath(f)) for f in files})


@pytest.mark.parametrize("error, missing", [
    ('DynamicLibNotFoundError: Failure finding "libnvvm.so.4 or libnvvm.so": No such file: libnvvm.so.4 or '
     'libnvvm.so\n  listdir("/venv/lib/python3.11/site-packages/nvidia/cu13/lib"):', "libnvvm.so.4 or libnvvm.so"),
    ('DynamicLibNotFoundError: Failure finding "libcudart.so.13 or libcudart.so.12": No such file', "libcudart.so.13"),
    ("NvvmSupportError: libNVVM is not available", "libNVVM is not available"),
    ("NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`", "libNVVM cannot be found"),
    ("TypingError: Failed in cuda mode pipeline (step: nopython frontend)\nUnknown attribute 'foo'", ""),
    ("NvvmError: Failed to compile\n<unnamed> (12, 5): parse expected type", ""),
    ("NameError: name 'TILE_PAD' is not defined (line 4: sA = cuda.shared.array((TILE, TILE_PAD), float32))", ""),
])
def test_a_missing_compiler_is_told_from_a_rejected_kernel(error, missing):
    found = toolkit_missing(error)
    assert (missing in found) if missing else found == "", (error, found)


@pytest.mark.slow
def test_self_check_without_the_cuda_compiler_says_so_and_counts_neither_way(tmp_path):
    """A correct tiled kernel, checked where the compile child finds no CUDA library (as after `pip install` of the
    wheel alone): SKIP with the missing library and the install command, never FAIL; the other checks still run."""
    hidden = toolkit_folders()
    system = [d for d in hidden if glob.glob(os.path.join(d, "libc.so*"))]
    if system:
        pytest.skip(f"the CUDA libraries are in a system library folder this test cannot hide: {system}")
    solution = os.path.join(ROOT, "solutions", "s2_tiled.py")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(hidden), "tiled", solution], capture_output=True,
                       text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    if "PASS  matmul_tiled_kernel is a CUDA kernel that compiles" in p.stdout:
        pytest.skip(f"the compile child found the CUDA compiler outside the folders hidden from it: {hidden}")
    assert "FAIL" not in p.stdout, p.stdout
    assert "SKIP  the GPU compile and the shared-memory check" in p.stdout, p.stdout
    said = " ".join(p.stdout.split())
    assert re.search(r"the CUDA compiler's libraries are not installed here \(lib\S+ .*not found\)", said), said
    assert TOOLKIT_INSTALL in said and "these checks count neither way" in said, said
    assert re.search(r"(\d+) of \1 self-checks passed \(all passed; not run here: the GPU compile", said), said
    skipped = json.loads(p.stdout.split("SKIPPED=", 1)[1])
    assert [name for name, _ in skipped] == ["the GPU compile and the shared-memory check"]


def test_the_student_setup_pins_what_the_course_pins():
    """The README's student section names the packages a student's own environment needs, with this course's pins,
    and says to activate it."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    students = readme.split("## For students", 1)[1].split("\n## ", 1)[0]
    requirements = open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8").read()
    for pin in ("numba-cuda[cu13]==0.30.4", "numba==0.68.1", "numpy>=2.0,<2.5", "notebook>=7,<8"):
        assert pin in requirements, pin
        assert pin in students, pin
    assert "source " in students and "bin/activate" in students
    assert TOOLKIT_INSTALL.split(" ", 2)[2].strip('"') in students


GRADE_DRIVER = r"""
import json, sys
from autograder.sandbox import box
hidden = json.loads(sys.argv[1])
view = box.view
box.view = lambda *a, **k: view(*a, **k) + [("tmpfs", 1 << 20, folder) for folder in hidden]
from autograder import engine, stages
r = engine.grade(sys.argv[2], stage=stages.find("tiled"), device="sim", seed=4)
print("CHECKS=" + json.dumps([[c.key, c.status, c.regrade, c.output[:300]] for c in r.checks]))
"""


@pytest.mark.slow
def test_a_grading_machine_without_the_cuda_compiler_costs_no_point(tmp_path):
    """`python -m autograder grade` where the children find no CUDA library: the compile and shared-memory checks
    failed, though the self-check said SKIP. They are the grader's fault now: skipped, flagged for a re-grade; no
    check fails for the stage 2 solution (the simulator runs the typed plans where only the compiler is missing)."""
    hidden = toolkit_folders()
    if [d for d in hidden if glob.glob(os.path.join(d, "libc.so*"))]:
        pytest.skip("the CUDA libraries are in a system library folder this test cannot hide")
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-c", GRADE_DRIVER, json.dumps(hidden), os.path.join(ROOT, "solutions",
                        "s2_tiled.py")], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    checks = json.loads(p.stdout.split("CHECKS=", 1)[1])
    if all(status == "passed" for key, status, _, _ in checks if key != "speed"):
        pytest.skip(f"the children found the CUDA compiler outside the folders hidden from them: {hidden}")
    assert not [c for c in checks if c[1] == "failed"], checks
    for key in ("compiles", "shared_memory"):
        (row,) = [c for c in checks if c[0] == key]
        assert row[1] == "skipped" and row[2] and "no CUDA compiler" in row[3], row


OUT_OF_ORDER = r"""
import os, runpy, sys
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
from numba import cuda                          # a cell run before the setup cell: Numba is imported first
print("GPU=" + str(cuda.is_available()))
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"       # then the setup cell, too late
from autograder.selfcheck import check
namespace = runpy.run_path(sys.argv[1])
namespace["check"] = check
check("naive", namespace, plot=False)
"""


def test_a_self_check_run_out_of_order_says_to_restart_and_cites_no_line_of_its_own():
    """Numba imported before the setup cell chose the simulator, on a machine without a GPU: the self-check says
    what happened and what to do, not "in the GPU", and never cites a line of its own package as a cell's line."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    p = subprocess.run([sys.executable, "-c", OUT_OF_ORDER, os.path.join(ROOT, "solutions", "s1_naive.py")],
                       capture_output=True, text=True, env=env, timeout=600)
    if "GPU=True" in p.stdout:
        pytest.skip("this machine has a GPU: the self-check runs on it")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    said = " ".join(p.stdout.split())
    assert "in the GPU" not in said and "of the cell defining check" not in said, said
    assert "the CUDA simulator is off" in said and "run the cells from the top" in said, said
    assert "FAIL" not in said, said


def test_the_self_checks_own_functions_are_not_taken_for_cells():
    """`check`, imported into the notebook, lives in the package: a traceback line in it is no cell's line."""
    from autograder import selfcheck
    namespace = {"__name__": "__main__", "check": selfcheck.check}
    exec(compile("def matmul_naive(A, B, C):\n    pass\n", "<cell 7>", "exec"), namespace)
    assert selfcheck._cell_files(namespace) == {"<cell 7>": ["matmul_naive"]}
