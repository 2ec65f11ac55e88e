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


def grader_folder(cfg):
    """A callable that waits for this process's folder of the grader's kernels and returns it, or None where
    they could not be compiled (each timing child then compiles them itself)."""
    key = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    with _lock:
        if key not in _made:
            private = tempfile.mkdtemp(prefix="grader-kernels-")  # 0700: no other user reaches the folder
            atexit.register(shutil.rmtree, private, True)
            folder = os.path.join(private, "kernels")
            os.mkdir(folder)
            os.chmod(folder, 0o777)  # the compiling child runs as a uid of its own
            _made[key] = (folder, _executor.submit(_compile, folder, dict(cfg["limits"])))
    folder, future = _made[key]
    return lambda: folder if future.result() else None


def _compile(folder, limits):
    result = sandbox.run_child({"task": "warm", "device": "gpu", "projection_columns": 2}, limits, None, (),
                               limits["gpu_start_s"], dirs=((folder, "grader", True),))
    if result.problem or result.facts.get("import_error") or result.facts.get("task_error"):
        return False
    os.chmod(folder, 0o755)
    return result.facts.get("kernels_loaded", 0) + result.facts.get("kernels_compiled", 0) > 0
