"""How a class run's worker processes live and end: SIGTERM unwinds a grade in progress (its temporary folders and
sandbox children removed), a worker ends with the run that started it, and SIGUSR1 prints where a process waits."""
import faulthandler
import os
import signal
import sys
import threading
import time

from autograder import procstat

_stopping = threading.Event()


def sigterm_unwinds():
    """SIGTERM raises SystemExit where the process is: every `finally` and temporary folder of a grade in progress
    is cleaned up (the student's code and the children's inputs), and the sandbox kills its children, before the
    process ends. Python's default ends it at once and leaves them behind.

    The grade's checks do not wait for their limits meanwhile: a grade's thread pools finish the checks already
    queued before the SystemExit leaves them, and a never-ending kernel's child ran to its time limit (25 s and more)
    each, so the children this process starts from now on are stopped at once (stop_children)."""
    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)   # a second SIGTERM ends it at once
        stop_children()
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)


def stopping():
    """Whether this process was told to end (SIGTERM): it starts no more grading."""
    return _stopping.is_set()


def _children():
    """[(pid, process group)] of this process's children, from /proc (none where there is no /proc)."""
    me, found = os.getpid(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        stat = procstat.read(f"/proc/{name}/stat") if name.isdigit() else None
        if stat and int(stat[1][1]) == me:     # the fields after "pid (command)": state, ppid, pgrp, ...
            found.append((int(name), int(stat[1][2])))
    return found


def stop_children(every_s=0.05):
    """Kill this process's children now and every `every_s` until the process ends, each with its process group (a
    sandboxed check is one: the sandbox stops a check so at its limit too). The checks it stops end as the grade
    unwinds; none of their verdicts is kept."""
    if _stopping.is_set():
        return
    _stopping.set()

    def kill():
        while True:
            for pid, group in _children():
                try:
                    if group == pid:
                        os.killpg(pid, signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(every_s)
    threading.Thread(target=kill, name="stop-children", daemon=True).start()


def end_with_the_parent():
    """A worker ends when the class run that started it ends, however it ends (kill -9 included): the kernel sends
    it SIGTERM (PR_SET_PDEATHSIG), which unwinds it as sigterm_unwinds says."""
    sigterm_unwinds()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent was gone before the request took effect
        raise SystemExit(143)


def stacks_on_usr1():
    """`kill -USR1 PID` makes this process print every thread's stack to stderr: where a run is waiting."""
    try:
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)
    except (AttributeError, ValueError, OSError):  # no stderr with a file descriptor: nothing to print to
        pass
