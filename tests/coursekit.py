"""Helpers of the course-workflow tests: one released course per test session, notebook execution.

The release (nbgrader generate_assignment) is built once per session and shared by
pytest-xdist workers through a lock file in the session's common temp folder.
"""
import fcntl
import os
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def once_per_session(tmp_path_factory, name, build):
    """The folder `name` in the session's common temp folder, built by build(folder) once per test session and
    shared by every xdist worker (a lock file; a marker file says the build finished)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this session's folder, the same for all its xdist workers
    folder = shared / name
    done = shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                if folder.exists():
                    shutil.rmtree(folder)
                build(folder)
                done.write_text("ok")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


@pytest.fixture(scope="session")
def released_course(tmp_path_factory):
    """A course folder released by course.release (shared by every xdist worker of the session)."""
    from course.release import release
    return once_per_session(tmp_path_factory, "released-course", lambda folder: release(str(folder), quiet=True))


def copy_course(src, dest):
    """A course folder with src's settings and submissions, nothing graded."""
    os.makedirs(dest, exist_ok=True)
    for name in ("nbgrader_config.py", "autograder.toml"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), dest)
    shutil.copytree(os.path.join(src, "submitted"), os.path.join(dest, "submitted"))


# eve's stage 1 never ends for K = 1: her child runs to the course's check limit (25 s), then her other groups run
# again with sibling_grace_s to finish (10 s by default; they need under a second). The class runs of the demo course
# that the tests compare (graded_demo_course, the Slurm run) give them 3 s.
DEMO_GRACE_S = 3


def copy_demo_course(dest):
    """copy_course of the demo course, with sibling_grace_s = DEMO_GRACE_S added to its [limits]."""
    from course import DEMO_COURSE
    copy_course(DEMO_COURSE, dest)
    path = os.path.join(dest, "autograder.toml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.count("[limits]\n") == 1, text
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("[limits]\n", f"[limits]\nsibling_grace_s = {DEMO_GRACE_S}\n"))


@pytest.fixture(scope="session")
def graded_demo_course(tmp_path_factory):
    """The demo course (copy_demo_course) graded locally by `python -m course.grade_class COURSE --device sim`, once
    per test session (shared by xdist workers like released_course): (course folder, the run's CompletedProcess,
    seconds).

    Tests may read it; a test that changes it must work on a copy."""
    import json

    def grade(folder):
        copy_demo_course(str(folder / "course"))
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "course.grade_class", str(folder / "course"), "--device", "sim"],
                             cwd=ROOT, capture_output=True, text=True, timeout=900)
        (folder / "run.json").write_text(json.dumps({"returncode": run.returncode, "stdout": run.stdout,
                                                     "stderr": run.stderr, "seconds": time.perf_counter() - started}))
    folder = once_per_session(tmp_path_factory, "graded-demo-course", grade)
    data = json.loads((folder / "run.json").read_text())
    run = subprocess.CompletedProcess([], data["returncode"], data["stdout"], data["stderr"])
    return str(folder / "course"), run, data["seconds"]


def execute(path, cwd, timeout=900, with_grader=True, pythonpath=None):
    """Execute a notebook top to bottom in a real Jupyter kernel (python3), in the CUDA simulator.

    Returns the executed notebook. The kernel finds the autograder through PYTHONPATH (this repository, or
    `pythonpath`: where a student installed the self-check package), unless with_grader is False (a student's copy
    without the course's harness)."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(str(path), as_version=4)
    env = os.environ.copy()
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    if with_grader:
        env["PYTHONPATH"] = (pythonpath or ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)
    return nb


def outputs(nb):
    """[(cell, output)] of every code cell output."""
    return [(cell, out) for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def text_of(out):
    if out.output_type == "stream":
        return out.text
    if out.output_type == "error":
        return f"{out.ename}: {out.evalue}"
    return out.get("data", {}).get("text/plain", "")
