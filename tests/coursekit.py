"""Helpers of the course-workflow tests: one released course per test session, notebook execution.

The release (nbgrader generate_assignment) is built once per session and shared by
pytest-xdist workers through a lock file in the session's common temp folder.
"""
import fcntl
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def released_course(tmp_path_factory):
    """A course folder released by course.release (shared by every xdist worker of the session)."""
    from course.release import release
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this session's folder, the same for all its xdist workers
    course = shared / "released-course"
    done = shared / "released-course.done"
    with open(shared / "released-course.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                if course.exists():
                    shutil.rmtree(course)
                release(str(course), quiet=True)
                done.write_text("ok")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return course


def execute(path, cwd, timeout=900, with_grader=True):
    """Execute a notebook top to bottom in a real Jupyter kernel (python3), in the CUDA simulator.

    Returns the executed notebook. The kernel finds the autograder through PYTHONPATH,
    unless with_grader is False (a student's copy without the course's harness)."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(str(path), as_version=4)
    env = os.environ.copy()
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    if with_grader:
        env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
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
