"""Start one grading child and collect what it reports, whatever it does.

Each check runs in a fresh interpreter (``python -I``: no user site, no
PYTHONPATH, no script folder on sys.path) in its own process session with a
wall-clock limit; on timeout the whole process group is killed. Output goes to
a capped log file, resource limits apply, and the only thing read back is the
child's ``result.npz``, loaded without pickle and checked against a nonce the
parent drew for this run.
"""
import json
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

GRADER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = os.path.join(GRADER_ROOT, "autograder", "child.py")


@dataclass
class ChildResult:
    facts: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    problem: str = ""       # why no trustworthy result came back ("" when one did)
    log: str = ""           # the capped tail of the child's stdout and stderr
    seconds: float = 0.0


def _limits(cfg):
    def apply():
        resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_s"] + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cfg.get("address_space_bytes"):
            resource.setrlimit(resource.RLIMIT_AS, (cfg["address_space_bytes"],) * 2)
    return apply


def child_env(device, scratch):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch, "TMPDIR": scratch,
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "NUMBA_CACHE_DIR": scratch,
           "LANG": "C.UTF-8"}
    for key, value in os.environ.items():  # the GPU driver and toolkit location, nothing else
        if key.startswith(("CUDA_", "NVIDIA_", "LD_LIBRARY_PATH", "NUMBA_CUDA_")):
            env[key] = value
    if device == "sim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def run_child(job, limits, inputs=None, wrapper=(), timeout=None):
    """Run ``job`` in a fresh child; never raises for anything the child does."""
    scratch = tempfile.mkdtemp(prefix="grade-")
    nonce = secrets.token_hex(16)
    started = time.perf_counter()
    log_path = os.path.join(scratch, "output.log")
    try:
        if inputs:
            np.savez(os.path.join(scratch, "inputs.npz"), **inputs)
        payload = json.dumps({**job, "nonce": nonce, "grader_root": GRADER_ROOT}).encode()
        cmd = [*wrapper, sys.executable, "-I", CHILD, scratch]
        timeout = timeout or limits["check_timeout_s"]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=scratch, env=child_env(job["device"], scratch),
                                    start_new_session=True, preexec_fn=_limits(limits))
            try:
                proc.stdin.write(payload)
                proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            _kill_group(proc)
        result = ChildResult(log=_tail(log_path, limits["log_bytes"]), seconds=time.perf_counter() - started)
        if timed_out:
            result.problem = (f"did not finish within {timeout:.0f} s and was stopped: look for a loop that never"
                              " ends (a while loop whose condition never changes, or a barrier not all threads reach)")
            return result
        result.facts, result.arrays, result.problem = _read_result(scratch, nonce, proc.returncode, limits)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _tail(path, limit):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace")
        return ("[... output cut ...]\n" if size > limit else "") + text
    except OSError:
        return ""


def _read_result(scratch, nonce, returncode, limits):
    path = os.path.join(scratch, "result.npz")
    if not os.path.isfile(path):
        if returncode and returncode < 0:
            return {}, {}, f"the check was killed by signal {signal.Signals(-returncode).name}"
        return {}, {}, f"the code exited (status {returncode}) before the check finished: do not call sys.exit, os._exit or kill processes"
    if os.path.getsize(path) > limits["result_bytes"]:
        return {}, {}, "the check's result was larger than any real result: not gradable"
    try:
        with np.load(path, allow_pickle=False) as data:
            facts = json.loads(str(data["facts"]))
            arrays = {k: np.array(data[k]) for k in data.files if k != "facts"}
    except Exception as exc:
        return {}, {}, f"the check's result could not be read ({type(exc).__name__}): not gradable"
    if not isinstance(facts, dict) or facts.get("nonce") != nonce:
        return {}, {}, "the check's result was not written by the grader (forged or tampered output): not gradable"
    if any(a.dtype != np.float32 for a in arrays.values()):
        return {}, {}, "the check's result holds arrays of the wrong type (forged output): not gradable"
    return facts, arrays, ""
