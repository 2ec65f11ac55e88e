"""Trusted parent side: the grader's compiled kernels, made once per grading process.

Every timing child runs the same grader kernels (the reference it is timed
against, the input fills, the projection). A child that runs no student code
compiles them into a folder once per process and GPU (``task_warm``); timing
children then see that folder read-only (runner/kernel_cache.py) and load the
kernels instead of compiling them, about a second of CPU each time.
"""
import atexit
import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import sandbox

_made = {}
_lock = threading.Lock()
_executor = ThreadPoolExecutor(1, thread_name_prefix="grader-kernels")


class GraderKernels:
    """This process's folder of the grader's kernels: `folder` at once (a timing child sees it from its start),
    `wait()` once they are compiled (a timing child loads them only after that)."""

    def __init__(self, folder, future):
        self.folder, self._future = folder, future

    def wait(self):
        """The folder once the kernels are in it, or None where they could not be compiled (a timing child then
        finds no entry and compiles them itself)."""
        return self.folder if self._future.result() else None


def grader_folder(cfg):
    """GraderKernels of this process (and GPU): the folder of the grader's kernels, compiled once."""
    key = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    with _lock:
        if key not in _made:
            private = tempfile.mkdtemp(prefix="grader-kernels-")  # 0700: no other user reaches the folder
            atexit.register(shutil.rmtree, private, True)
            folder = os.path.join(private, "kernels")
            os.mkdir(folder)
            os.chmod(folder, 0o777)  # the compiling child runs as a uid of its own
            _made[key] = (folder, _executor.submit(_compile, folder, dict(cfg["limits"])))
    return GraderKernels(*_made[key])


def _compile(folder, limits):
    from ..gpu.slot import hold_gpu
    with hold_gpu():  # a CUDA context: never while another grading process's kernel is timed on this GPU
        result = sandbox.run_child({"task": "warm", "device": "gpu", "projection_columns": 2}, limits, None, (),
                                   limits["gpu_start_s"], dirs=((folder, "grader", True),))
    if result.problem or result.facts.get("import_error") or result.facts.get("task_error"):
        return False
    os.chmod(folder, 0o755)
    return result.facts.get("kernels_loaded", 0) + result.facts.get("kernels_compiled", 0) > 0
