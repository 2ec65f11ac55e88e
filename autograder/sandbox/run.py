"""Trusted parent side: run one job in a fresh sandboxed child and read back what it reports."""
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .backends import backend
from .box import Box, child_env, is_root
from .limits import limited
from .paths import BOX_GRADER, BOX_TMP, GRADER_ROOT
from .. import protocol as schema
from ..outcome import code, grader, time_limit

code_fault = code

DEFAULTS = {"sandbox": "auto", "processes": 2048}
MALFORMED = "not gradable: the child's report was malformed"  # the student's code: its process wrote the report


@dataclass
class ChildResult:
    facts: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)
    problem: str = ""       # why no trustworthy result came back ("" when one did): an outcome.Why, with its fault
    log: str = ""           # the capped tail of the child's stdout and stderr
    seconds: float = 0.0
    sandbox: str = ""       # the backend that ran it: bwrap, unshare or none
    uid: int = None         # the uid it ran as, when the grader could give it one of its own
    timed_out: bool = False  # stopped at its time limit
    started: int = 0         # how many shapes a "run" child said it began (child/entry.tell)
    cancelled: bool = False  # stopped early because `cancel` was set (another check of the stage did not finish)


def _limit(limits, key):
    return limits.get(key, DEFAULTS.get(key))


def _env(job, scratch, box):
    """The child's environment; a GPU tool sharing a folder with the tool's other runs on the GPU (ncu's lock file,
    gpu/tools.ToolTurn) has it as its TMPDIR."""
    env = box.env(child_env(job["device"], scratch))
    if job.get("tool_tmp"):
        env["TMPDIR"] = box.dir_inside("tool_tmp")
    return env


def run_child(job, limits, inputs=None, wrapper=(), timeout=None, cancel=None, turn=None, work=None, dirs=()):
    """Run ``job`` in a fresh sandboxed child; never raises for anything the child does.

    `timeout` (seconds, default the config's check_timeout_s) stops it; so does `cancel` (anything with an
    is_set() method, polled four times a second) once it is set. The child tells on a pipe where its work is
    (child/entry.tell: each shape it begins, and its kernels about to run); with `work` (seconds), from each time
    its kernels are about to run it has at most `work` seconds left, so a kernel that never ends is stopped soon
    after its launch rather than at the end of a limit sized for a slow start.

    `dirs`: (host folder, name, writable) triples the child sees as /kernels/<name> (job["kernel_dirs"][name]):
    the compiled-kernel caches of autograder/runner/kernel_cache.py.

    `turn` makes a child of parts (the timing child, a runner started before its plan existed): at the end of a
    part it says so on a pipe and waits. Once the child started, ``turn(ready)`` is called (a list of such
    functions: one per wait, in order), where ``ready(seconds)`` waits at most that long for the child to reach
    its wait (or to have ended) and says whether it did (`_Started`; ``ready.give_inputs(arrays)`` gives a child
    started without inputs its inputs, read after its next "go"); turn returns "" to let the child go on (it then
    gets `timeout` from the last "go") or why it must not, and the child is stopped with that as its problem. It
    may also return a dict: the child goes on, and gets those fields of its job only now, with its "go"
    (gpu/tools.py); the report is checked against the whole job."""
    started = time.perf_counter()
    name, why = backend(_limit(limits, "sandbox"))
    if name == "unavailable":
        return ChildResult(problem=grader(f"not gradable: the grading sandbox is not available ({why}); "
                                          "an instructor must install bubblewrap or change [limits] sandbox"))
    nonce = secrets.token_hex(16)
    timeout = timeout or limits["check_timeout_s"]
    try:
        box = Box(name, limits, job["device"], {}, wrapper, dirs).__enter__()
    except (OSError, RuntimeError) as exc:
        return ChildResult(problem=grader(f"not gradable: the grading sandbox could not be prepared ({exc})"),
                           sandbox=name)
    try:
        inside = {"result_path": box.place("result.npz")}
        if job.get("module_path"):
            inside["module_path"] = box.place(os.path.basename(job["module_path"]), source=job["module_path"])
        if inputs:
            inside["inputs_path"] = box.place("inputs.npz", data=inputs)
        elif turn is not None:
            box.place("inputs.npz")  # bound now, empty: a turn may give the inputs later (written into this file)
        scratch = BOX_TMP if name != "none" else box.path("tmp")
        os.makedirs(box.path("tmp"), exist_ok=True)
        grader_root = BOX_GRADER if name != "none" else GRADER_ROOT
        child = os.path.join(grader_root, "autograder", "child", "entry.py")
        ready_r, ready_w = os.pipe() if turn is not None else (None, None)
        started_r, started_w = os.pipe()
        extra = {"ready_fd": ready_w} if turn is not None else {}
        extra["started_fd"] = started_w
        if dirs:
            extra["kernel_dirs"] = {d: box.dir_inside(d) for _, d, _ in dirs}
        payload = json.dumps({**job, **inside, **extra, "nonce": nonce, "grader_root": grader_root}).encode()
        cmd = box.command([sys.executable, "-I", child, scratch])
        if hasattr(cancel, "see_outputs"):  # a cancel that reads the tool's log as it is written (engine LogWatch)
            cancel.see_outputs([own for own, _ in box.outputs] or [a for a in wrapper[1:] if a.startswith("/")])
        nproc = _limit(limits, "processes") if (box.uid is not None or not is_root()) else 0
        log_path = box.path("output.log")
        refused = ""
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.Popen(limited(cmd, limits, nproc), stdin=subprocess.PIPE, stdout=log,
                                        stderr=subprocess.STDOUT, cwd=box.path("tmp"),
                                        env=_env(job, scratch, box), start_new_session=True,
                                        pass_fds=tuple(fd for fd in (ready_w, started_w) if fd is not None))
            finally:
                for fd in (ready_w, started_w):
                    if fd is not None:
                        os.close(fd)
            try:
                proc.stdin.write(payload + b"\n")
                if turn is None:
                    proc.stdin.close()
                else:
                    proc.stdin.flush()
                    started_child = _Started(box, ready_r, proc)
                    for step in (turn if isinstance(turn, (list, tuple)) else [turn]):
                        refused = step(started_child)
                        late, refused = (dict(refused), "") if isinstance(refused, dict) else ({}, refused)
                        if refused:
                            break
                        if started_child.inputs is not None and not inputs:
                            inputs = started_child.inputs
                            late["inputs_path"] = started_child.inputs_path
                        job = {**job, **late}
                        proc.stdin.write(b"go\n" + json.dumps(late).encode() + b"\n")
                        proc.stdin.flush()
                    if not refused:
                        proc.stdin.close()
            except BrokenPipeError:
                pass
            finally:
                if ready_r is not None:
                    os.close(ready_r)
            said = [0, False]  # shapes it said it began; whether it said hello (the sandbox started it)
            try:
                timed_out, cancelled = (("", False) if refused else
                                        _wait(proc, timeout, cancel, started_r, work, said))
            finally:
                os.close(started_r)
            stuck = not _kill_group(proc)
        box.deliver()
        result = ChildResult(log=_tail(log_path, limits["log_bytes"]), seconds=time.perf_counter() - started,
                             sandbox=name, uid=box.uid, started=said[0])
        overcount = job["task"] == "run" and said[0] > job.get("count", 0)
        if overcount:  # it said it began more shapes than it was given: nothing it says is believed
            result.started = 0
        if stuck:
            result.timed_out = True
            result.problem = grader(f"not gradable: the check's process did not end within {KILL_WAIT_S:.0f} s of "
                                    "being killed: it is stuck in the operating system, usually in the GPU driver. "
                                    "Tell the instructor: the GPU may need a reset before grading goes on")
            return result
        if overcount:
            result.problem = code_fault(f"{MALFORMED} (it said it began more shapes than the {job['count']} it was given)")
            return result
        if refused:
            result.cancelled, result.problem = True, refused
            return result
        if cancelled:
            result.cancelled = True
            result.problem = time_limit(
                "not gradable: the check did not finish: another check of this stage ran past its time limit, and "
                "this one ran on past the grace it then had (a kernel that never ends is stopped once per stage): "
                "look for a loop that never ends (a while loop whose condition never changes, or a barrier not all "
                "threads reach)")
            return result
        if timed_out:
            result.timed_out = True
            within = (f"within {work:.0f} s of its kernels' launch" if timed_out == "work" else
                      f"within {timeout:.0f} s")
            result.problem = time_limit(f"not gradable: the check did not finish {within} and was stopped: look "
                                        "for a loop that never ends (a while loop whose condition never changes, or "
                                        "a barrier not all threads reach)")
            return result
        code = proc.returncode
        if name != "none" and code > 128 and code - 128 in signal.valid_signals():
            code = 128 - code  # the sandbox's init reports a child killed by signal N as status 128 + N
        result.facts, result.arrays, result.problem = _read_result(box.path("result.npz"), nonce, code, limits,
                                                                   result.log, said[1])
        if not result.problem:
            malformed = schema.check(job, inputs, result.facts, result.arrays, said[0])
            if malformed:
                result.facts, result.arrays = {}, {}
                result.problem = code_fault(f"{MALFORMED} ({malformed})")
        return result
    except OSError as exc:
        return ChildResult(problem=grader(f"not gradable: the grader could not start the check ({exc})"), sandbox=name,
                           seconds=time.perf_counter() - started)
    finally:
        box.__exit__(None, None, None)


class _Started:
    """A started child that waits for its turns, as a turn sees it: call it to wait until it is ready."""

    def __init__(self, box, pipe, proc):
        self.box, self.pipe, self.proc = box, pipe, proc
        self.inputs = self.inputs_path = None

    def __call__(self, seconds):
        return _ready(self.pipe, self.proc, seconds)

    def give_inputs(self, arrays):
        """Write the child's inputs now (into the file bound, empty, at its start); it reads them after its next
        "go". A runner that starts before its inputs are drawn starts sooner (gpu/tools.py)."""
        self.inputs, self.inputs_path = arrays, self.box.place("inputs.npz", data=arrays)


def _ready(pipe, proc, seconds):
    """True once the child said "ready" on its ready pipe (each call takes one), closed it or ended; False after
    `seconds` without."""
    deadline = time.monotonic() + seconds
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if select.select([pipe], [], [], min(remaining, 0.25))[0]:
            os.read(pipe, len(READY))  # the child waits for its "go" before it says the next
            return True
        if proc.poll() is not None:
            return True


def _wait(proc, timeout, cancel, started=None, work=None, said=None):
    """(timed_out, cancelled) once the process ended, ran past its limit or `cancel` was set. timed_out is ""
    (it did not), "start" (past `timeout`) or "work" (past `work` seconds after it last said it started work on
    the `started` pipe; without `work` the words are only counted, in said[0])."""
    said = said if said is not None else [0, False]
    limit = time.monotonic() + timeout
    deadline, why = limit, "start"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _drain(started, said)
            return why, False
        step = min(remaining, 0.25) if (cancel is not None or started is not None) else remaining
        if started is not None:
            if select.select([started], [], [], step)[0]:
                words = os.read(started, 4096)
                _count(words, said)
                if b"b" in words and hasattr(cancel, "begun"):
                    cancel.begun()  # its work began: a grace counts from here (engine/stage.py _Cut)
                if b"s" in words and work is not None:
                    deadline, why = min(limit, time.monotonic() + work), "work"
                    if deadline == limit:
                        why = "start"
                elif not words:
                    started = None  # the child closed it (or ended): the limits stand as they are
            if proc.poll() is not None:
                _drain(started, said)
                return "", False
        else:
            try:
                proc.wait(timeout=step)
                return "", False
            except subprocess.TimeoutExpired:
                pass
        if cancel is not None and cancel.is_set():
            _drain(started, said)
            return "", True


def _drain(pipe, said):
    """Count the words still waiting in the pipe."""
    while pipe is not None and select.select([pipe], [], [], 0)[0]:
        words = os.read(pipe, 4096)
        if not words:
            return
        _count(words, said)


def _count(words, said):
    """What the child said on its `started` pipe (child/entry.tell): the shapes it began (b"b"), its hello (b"h")."""
    said[0] += words.count(b"b")
    said[1] = said[1] or b"h" in words


READY = b"ready\n"  # what a child says on its ready pipe at each wait (child/entry.py wait_for_turn)
KILL_WAIT_S = 30.0  # a killed process still running after this is stuck in the kernel (a GPU driver call)


def _kill_group(proc, wait=KILL_WAIT_S):
    """Kill the child's process group; True once the child ended, False if it is still there after `wait` s (a
    grade must not hang on one process the driver never lets go)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        return False
    return True


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


SIGNALS = {"SIGXCPU": "it used more CPU time than a check may (cpu_s)",
           "SIGXFSZ": "it wrote more output, or a larger file, than a check may (file_bytes)",
           "SIGSEGV": "a crash: memory the process must not touch",
           "SIGABRT": "the process aborted"}


DISK_FREE_MIN = 16 * 2**20   # below this on the grader's own disk, a missing result is the grader's trouble


def disk_full(folder):
    """Why a child's result could not be written on the grader's disk ("" when there is room): the folder the
    parent gave it for its result is on the host's filesystem, which no child can fill (its own writes go to a
    size-limited tmpfs, its files are capped)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return ""
    free = st.f_bavail * st.f_frsize
    if free >= DISK_FREE_MIN:
        return ""
    return (f"not gradable: the grading machine's disk is full ({free:,} bytes free where the check writes its "
            "result): the grader's trouble, graded again on the next run; free some space")


def _read_result(path, nonce, returncode, limits, log="", hello=True):
    """(facts, arrays, problem) of a finished child. `hello`: the child said so on the parent's pipe before it read
    its job (child/entry.py), so the sandbox started it: what went wrong after is its code's. Without it the sandbox
    did not start the check, the grader's fault, whatever the log says (a child's printout cannot pass for it)."""
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    if not size:
        first = log.lstrip().split("\n", 1)[0]
        if not hello:
            return {}, {}, grader("not gradable: the sandbox could not start the check (status "
                                  f"{returncode}{': ' + first.strip()[:300] if first.strip() else ''})")
        full = disk_full(os.path.dirname(path))
        if full:
            return {}, {}, grader(full)
        if returncode == -signal.SIGKILL:  # the grader sends SIGKILL only past a time limit, handled before this
            return {}, {}, grader("not gradable: the check was killed by SIGKILL, which the grader did not send (the "
                                  "host's out-of-memory killer, or an operator; the grader's own memory limits raise "
                                  "MemoryError instead): graded again on the next run")
        if returncode and returncode < 0:
            sig = signal.Signals(-returncode).name
            return {}, {}, code(f"not gradable: the check was killed by signal {sig} ({SIGNALS.get(sig, 'a crash')})")
        return {}, {}, code(f"not gradable: the code exited (status {returncode}) before the check finished: do not "
                            "call sys.exit, os._exit or kill processes")
    if size > limits["result_bytes"]:
        return {}, {}, code("not gradable: the check's result was larger than any real result")
    try:
        with np.load(path, allow_pickle=False) as data:
            facts = json.loads(str(data["facts"]))
            arrays = {k: np.array(data[k]) for k in data.files if k != "facts"}
    except Exception as exc:
        return {}, {}, code(f"not gradable: the check's result could not be read ({type(exc).__name__})")
    if not isinstance(facts, dict) or facts.get("nonce") != nonce:
        return {}, {}, code("not gradable: the check's result was not written by the grader (forged or tampered "
                            "output)")
    if any(a.dtype != np.float32 for a in arrays.values()):
        return {}, {}, code("not gradable: the check's result holds arrays of the wrong type (forged output)")
    return facts, arrays, ""
